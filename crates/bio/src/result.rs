//! What a finished trace holds, and the documents derived from it: every
//! output carries the same counters ([`TraceCounts`]), lost events first.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::event::Dev;
use crate::hist::{self, LatencyHist};
use crate::perfetto::{self, PerfettoInput};
use crate::request::BioRequest;
use crate::summary::{self, ProcessRow};
use crate::tracker::TrackerStats;

/// A finished block trace.
#[derive(Debug, Clone, Default)]
pub struct BioTrace {
    /// Every completed request that passed the filters, in completion
    /// order (empty when the session was told not to keep them).
    pub requests: Vec<BioRequest>,
    /// Completed requests that passed the filters (kept or not).
    pub completed: u64,
    /// Names of the disks seen.
    pub disks: BTreeMap<Dev, String>,
    /// CLOCK_MONOTONIC ns when tracing started.
    pub start_ns: u64,
    /// … and when it stopped.
    pub end_ns: u64,
    /// Events decoded.
    pub events: u64,
    /// Events the kernel dropped (full buffer): the trace is incomplete
    /// when this is not 0.
    pub lost_events: u64,
    /// BPF: runs of iolab's programs the kernel skipped because another
    /// BPF program was running on that CPU (their `recursion_misses`),
    /// each an event never seen and counted in `lost_events` too. `None`:
    /// tracefs, or a kernel that does not count them.
    pub skipped_program_runs: Option<u64>,
    /// BPF: the traced disks' own counters beside what the programs
    /// counted (completions they were never run for). `None`: tracefs.
    pub diskstats_check: Option<crate::bpf::DiskstatsCheck>,
    /// Events delivered out of time order by the merge (0 in practice).
    pub out_of_order: u64,
    /// What the tracker counted besides completions.
    pub tracker: TrackerStats,
    /// Requests seen but not completed when tracing stopped.
    pub in_flight_at_end: u64,
    /// Completed requests dropped by the pid filter.
    pub filtered_out: u64,
}

/// The counters every output reports.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TraceCounts {
    /// Events the kernel dropped: anything but 0 means missing requests.
    pub lost_events: u64,
    /// BPF: runs of iolab's programs the kernel skipped because another
    /// BPF program was running on that CPU (their `recursion_misses`),
    /// each an event never seen and counted in `lost_events` too. `None`:
    /// tracefs, or a kernel that does not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_program_runs: Option<u64>,
    /// BPF: completions /proc/diskstats counted while the programs were
    /// attached that they never counted (and were not told they missed),
    /// counted in `lost_events` too. `None`: tracefs (its buffer counts
    /// what it drops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_completions: Option<u64>,
    /// Events decoded.
    pub events: u64,
    /// Completed requests reported.
    pub requests: u64,
    /// Seconds traced.
    pub duration_s: f64,
    /// Completions whose request was issued before tracing started (or
    /// whose issue was lost).
    pub unmatched_completions: u64,
    /// Requests still in flight when tracing stopped.
    pub in_flight_at_end: u64,
    /// Requests merged into a neighbour before issue.
    pub merged_requests: u64,
    /// Requeues.
    pub requeues: u64,
}

impl TraceCounts {
    /// Why events were lost, for after the count: the kernel's skipped
    /// program runs apart from `full` (a buffer or table with no room).
    fn incomplete(&self, full: &str) -> String {
        if self.lost_events == 0 {
            return String::new();
        }
        let skipped = self.skipped_program_runs.unwrap_or(0);
        let missed = self.missed_completions.unwrap_or(0);
        let mut why = Vec::new();
        if skipped > 0 {
            why.push(format!(
                "{skipped} program runs skipped by the kernel while another BPF program ran on the CPU"
            ));
        }
        if missed > 0 {
            why.push(format!(
                "{missed} completions /proc/diskstats counted that the programs were never run for"
            ));
        }
        if self.lost_events > skipped + missed {
            why.push(full.to_string());
        }
        format!(" (INCOMPLETE: {})", why.join("; "))
    }

    /// What the trace's edges cut, for the end of a counters line: requests
    /// issued before it started, and still in flight when it stopped.
    fn edges(&self) -> String {
        let mut s = String::new();
        if self.unmatched_completions > 0 {
            s.push_str(&format!(
                ", {} completions of requests issued before the start",
                self.unmatched_completions
            ));
        }
        if self.in_flight_at_end > 0 {
            s.push_str(&format!(", {} in flight at the end", self.in_flight_at_end));
        }
        s
    }
}

/// The `--hist` document and the per-run `latency_hist` artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BioHistograms {
    /// Counters (lost events first).
    #[serde(flatten)]
    pub counts: TraceCounts,
    /// One histogram per disk and operation.
    pub histograms: Vec<LatencyHist>,
    /// What counted them: `tracefs` (every request's events read by
    /// iolab) or `bpf` (counted in the kernel).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tracer: String,
    /// How BPF programs were attached: `tp_btf` (the arguments typed by
    /// the kernel's BTF, their fields read with plain loads),
    /// `raw_tracepoint` (read with helper calls, CO-RE) or `tracepoint`
    /// (the trace record built first: more per event); a lower rung says
    /// why the higher was not used.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub attach: String,
    /// BPF on a bio-based device: how its bios went through the CPUs'
    /// slots (bio.bpf.c's `slots`) rather than the hash table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<SlotCounts>,
    /// A start-up's requests apart: the app's (its processes, followed
    /// from its first one) and the rest's (the load, the kernel's
    /// writeback), each counted in the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_owner: Option<OwnerSplit>,
    /// BPF: the traced disks' own counters (/proc/diskstats) beside what
    /// the programs counted, read while they were attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diskstats_check: Option<crate::bpf::DiskstatsCheck>,
}

/// The histograms split by the task that queued each request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnerSplit {
    /// Requests queued by the app's processes.
    pub app: Vec<LatencyHist>,
    /// Requests queued by anything else, and, where the kernel has
    /// block_io_start (≥ 6.5), those first seen at their issue: made
    /// before the programs were attached, or flushes the kernel built
    /// (an fsync's device flush); their issuer is whoever ran the queue,
    /// not their owner.
    pub rest: Vec<LatencyHist>,
    /// App processes forked when the programs' set was full (their
    /// requests counted as the rest's): 0 unless the app forked > 4096.
    pub app_processes_not_followed: u64,
    /// Why the split was asked for and not made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The BPF programs' per-CPU bio slots: a bio spilled into the hash table
/// (another queued on its CPU before it completed), or completed on
/// another CPU than its slot's (its task moved). Neither is a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotCounts {
    /// CPUs searched (0: the kernel has no per-CPU lookup, all in the table).
    pub cpus: u32,
    /// Bios moved from a slot into the table.
    pub spilled: u64,
    /// Bios taken from another CPU's slot.
    pub from_other_cpu: u64,
}

/// The `--summary` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BioSummary {
    /// Counters (lost events first).
    #[serde(flatten)]
    pub counts: TraceCounts,
    /// One row per process, disk and operation.
    pub processes: Vec<ProcessRow>,
}

impl BioTrace {
    /// A disk's name (`MAJ:MIN` when unknown).
    pub fn disk_name(&self, dev: Dev) -> String {
        self.disks
            .get(&dev)
            .cloned()
            .unwrap_or_else(|| dev.to_string())
    }

    /// The counters.
    pub fn counts(&self) -> TraceCounts {
        TraceCounts {
            lost_events: self.lost_events,
            skipped_program_runs: self.skipped_program_runs,
            missed_completions: self
                .diskstats_check
                .as_ref()
                .filter(|c| !c.disks.is_empty())
                .map(|c| c.missed),
            events: self.events,
            requests: self.completed,
            duration_s: self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9,
            unmatched_completions: self.tracker.unmatched_completions,
            in_flight_at_end: self.in_flight_at_end,
            merged_requests: self.tracker.merged_requests,
            requeues: self.tracker.requeues,
        }
    }

    /// One human line with the counters, for stderr or a table footer.
    pub fn counts_line(&self) -> String {
        let c = self.counts();
        let mut s = format!(
            "{} requests in {:.1} s from {} events, {} lost",
            c.requests, c.duration_s, c.events, c.lost_events
        );
        s.push_str(&c.incomplete("a trace buffer or table was full"));
        s + &c.edges()
    }

    /// biolatency-style histograms per disk and operation.
    pub fn histograms(&self) -> BioHistograms {
        BioHistograms {
            counts: self.counts(),
            histograms: hist::histograms(&self.requests, &mut |d| self.disk_name(d)),
            tracer: "tracefs".into(),
            slots: None,
            by_owner: None,
            attach: String::new(),
            diskstats_check: self.diskstats_check.clone(),
        }
    }

    /// Per-process summary.
    pub fn summary(&self) -> BioSummary {
        BioSummary {
            counts: self.counts(),
            processes: summary::summarize(&self.requests, &mut |d| self.disk_name(d)),
        }
    }

    /// Writes the Chrome-JSON (Perfetto) trace.
    pub fn write_perfetto(&self, w: &mut impl Write) -> io::Result<()> {
        let disks: BTreeMap<Dev, String> = self
            .requests
            .iter()
            .map(|r| (r.dev, self.disk_name(r.dev)))
            .collect();
        perfetto::write(
            w,
            &PerfettoInput {
                requests: &self.requests,
                disks: &disks,
                t0_ns: self.start_ns,
                events: self.events,
                lost_events: self.lost_events,
            },
        )
    }
}

impl BioHistograms {
    /// The histograms as biolatency prints them, then the counters line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for h in &self.histograms {
            out.push_str(&hist::render(h));
            out.push('\n');
        }
        if self.histograms.is_empty() {
            out.push_str("no requests completed\n");
        }
        out
    }

    /// One human line with the counters and who counted them.
    pub fn counts_line(&self) -> String {
        let c = &self.counts;
        let mut s = format!(
            "{} requests in {:.1} s, counted by {}",
            c.requests,
            c.duration_s,
            if self.tracer == "bpf" {
                format!("BPF in the kernel ({})", self.attach)
            } else {
                "tracefs".to_string()
            }
        );
        s.push_str(&format!(", {} lost", c.lost_events));
        s.push_str(&c.incomplete("a map or buffer was full"));
        s + &c.edges()
    }

    /// One line per histogram: disk, op, count and percentiles (for
    /// appending to another command's report).
    pub fn summary_lines(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, who: &str, h: &LatencyHist| {
            out.push_str(&format!(
                "bio {who}{} {}: {} requests, lat µs p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}\n",
                h.disk, h.op, h.count, h.lat.p50_us, h.lat.p90_us, h.lat.p99_us, h.lat.p99_9_us, h.lat.max_us
            ));
        };
        for h in &self.histograms {
            line(&mut out, "", h);
        }
        if let Some(o) = &self.by_owner {
            match &o.unavailable {
                Some(why) => out.push_str(&format!("bio app/rest: not split: {why}\n")),
                None => {
                    for h in &o.app {
                        line(&mut out, "app ", h);
                    }
                    for h in &o.rest {
                        line(&mut out, "rest ", h);
                    }
                }
            }
        }
        out.push_str(&format!(
            "bio trace: {} events, {} lost\n",
            self.counts.events, self.counts.lost_events
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::{Comm, Rwbs};
    use crate::request::Origin;
    use crate::testutil::LOOP0;

    fn trace() -> BioTrace {
        let r = BioRequest {
            dev: LOOP0,
            sector: 0,
            nr_sector: 8,
            rwbs: Rwbs::parse(b"R"),
            comm: Comm::new(b"fio"),
            tid: 1,
            pid: 1,
            queue_ns: Some(1_000),
            issue_ns: Some(2_000),
            complete_ns: 12_000,
            requeues: 0,
            error: 0,
            origin: Origin::IoStart,
        };
        BioTrace {
            requests: vec![r],
            completed: 1,
            disks: [(LOOP0, "loop0".to_string())].into(),
            start_ns: 0,
            end_ns: 2_000_000_000,
            events: 4,
            lost_events: 3,
            ..BioTrace::default()
        }
    }

    #[test]
    fn skipped_program_runs_are_named_as_the_loss() {
        let mut t = trace();
        t.skipped_program_runs = Some(2);
        let line = t.counts_line();
        assert!(
            line.contains("3 lost (INCOMPLETE: 2 program runs skipped by the kernel"),
            "{line}"
        );
        assert!(
            line.contains("; a trace buffer or table was full)"),
            "{line}"
        );
        let h = serde_json::to_value(t.histograms()).unwrap();
        assert_eq!(h["skipped_program_runs"], 2);
        t.skipped_program_runs = Some(3);
        assert!(!t.counts_line().contains("was full"));
        // tracefs: no such field in the documents.
        t.skipped_program_runs = None;
        let h = serde_json::to_value(t.histograms()).unwrap();
        assert!(h.get("skipped_program_runs").is_none());
    }

    #[test]
    fn every_document_reports_lost_events() {
        let t = trace();
        let h = serde_json::to_value(t.histograms()).unwrap();
        assert_eq!(h["lost_events"], 3);
        assert_eq!(h["histograms"][0]["disk"], "loop0");
        let s = serde_json::to_value(t.summary()).unwrap();
        assert_eq!(s["lost_events"], 3);
        assert_eq!(s["processes"][0]["comm"], "fio");
        let mut out = Vec::new();
        t.write_perfetto(&mut out).unwrap();
        let p: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(p["otherData"]["lost_events"], 3);
        assert!(t.counts_line().contains("3 lost (INCOMPLETE"));
        assert!(t.histograms().summary_lines().contains("3 lost"));
    }

    #[test]
    fn histogram_document_round_trips() {
        let h = trace().histograms();
        let text = serde_json::to_string(&h).unwrap();
        let back: BioHistograms = serde_json::from_str(&text).unwrap();
        assert_eq!(back, h);
        assert!((back.counts.duration_s - 2.0).abs() < 1e-12);
    }
}
