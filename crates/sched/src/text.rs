//! `iolab sched report`'s output: the per-task table (perf sched
//! latency's columns) or the seed's summary table, the histogram, work
//! items, and the trace's header and footer; or all of it as JSON with
//! perf's field names beside iolab's.

use std::path::Path;

use regex::Regex;
use serde::Serialize;

use crate::compare::SeedStats;
use crate::hist::Log2Hist;
use crate::{rows, table, Loaded, Row, Selection, SortKey, WakeFrom};

/// One report, computed once and rendered as text or JSON.
pub struct Report {
    rows: Vec<Row>,
    summary: Option<SeedStats>,
    hist: Option<Log2Hist>,
    works: Vec<WorkRow>,
}

impl Report {
    /// The rows of `sel` in `l`, sorted and cut to `limit`; with
    /// `summary` the seed's pooled statistics, with `hist` their log2
    /// histogram.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        l: &Loaded,
        sel: &Selection,
        sort: &[SortKey],
        by_comm: bool,
        limit: Option<usize>,
        summary: bool,
        hist: bool,
    ) -> Report {
        let mut rows = rows(&l.analysis, sel, &l.symbols, by_comm, sort);
        if let Some(n) = limit {
            rows.truncate(n);
        }
        let pooled = sel.pooled(&l.analysis, &l.symbols);
        Report {
            rows,
            summary: summary.then(|| SeedStats::of(pooled.iter().copied())),
            hist: hist.then(|| Log2Hist::of(pooled.iter().map(|(s, e)| e - s))),
            works: work_rows(l, sel.work.as_ref()),
        }
    }

    /// The JSON document (`samples`: every task's raw delays too).
    pub fn json(
        &self,
        path: &Path,
        l: &Loaded,
        sel: &Selection,
        samples: bool,
    ) -> serde_json::Value {
        let json_rows = json_rows(&self.rows);
        let samples = samples.then(|| {
            sel.tasks(&l.analysis, &l.symbols)
                .map(
                    |(t, ss)| serde_json::json!({ "task": t.label(), "tid": t.tid, "samples": ss }),
                )
                .collect::<Vec<_>>()
        });
        serde_json::json!({
            "trace": trace_info(path, l),
            "delay": sel.delay,
            "tasks": json_rows,
            "summary": self.summary,
            "hist": self.hist,
            "works": self.works,
            "samples": samples,
        })
    }

    /// The text report; `delay` names the delays pooled (`wakeup`, ...).
    pub fn text(&self, path: &Path, l: &Loaded, sel: &Selection, delay: &str) -> String {
        let mut out = header(path, l);
        match &self.summary {
            Some(s) => out.push_str(&seed_table(s, delay)),
            None => out.push_str(&table::render_rows(&self.rows)),
        }
        if let Some(h) = &self.hist {
            out.push_str(&format!("\n{} delays ({delay}):\n", h.total()));
            out.push_str(&h.render());
        }
        if sel.work.is_some() && !self.works.is_empty() {
            out.push_str("\nwork items, queued → started:\n");
            out.push_str(&render_works(&self.works));
        }
        out.push_str(&footer(l));
        out
    }
}

/// The rows with perf sched latency's field names beside iolab's.
fn json_rows(rows: &[Row]) -> Vec<JsonRow<'_>> {
    let ms = |v: f64| v / 1e6;
    rows.iter()
        .map(|r| JsonRow {
            row: r,
            runtime_ms: ms(r.runtime_ns as f64),
            avg_delay_ms: r.delay.avg_ns.map(ms),
            max_delay_ms: r.delay.max_ns.map(|v| ms(v as f64)),
            max_delay_start: r.delay.max_start_ns.map(|v| v as f64 / 1e9),
            max_delay_end: r.delay.max_end_ns.map(|v| v as f64 / 1e9),
        })
        .collect()
}

/// A row with perf sched latency's field names alongside iolab's.
#[derive(Serialize)]
struct JsonRow<'a> {
    #[serde(flatten)]
    row: &'a Row,
    runtime_ms: f64,
    avg_delay_ms: Option<f64>,
    max_delay_ms: Option<f64>,
    max_delay_start: Option<f64>,
    max_delay_end: Option<f64>,
}

#[derive(Serialize)]
struct JsonTrace<'a> {
    file: &'a Path,
    events: u64,
    lost_events: u64,
    out_of_order: u64,
    start_ns: u64,
    end_ns: Option<u64>,
    duration_s: f64,
    complete: bool,
    wake_from: WakeFrom,
    counters: crate::Counters,
}

fn trace_info<'a>(path: &'a Path, l: &Loaded) -> JsonTrace<'a> {
    let end = l.meta.end_ns.unwrap_or(l.analysis.last_ns);
    JsonTrace {
        file: path,
        events: l.stats.events,
        lost_events: l.stats.lost,
        out_of_order: l.stats.out_of_order,
        start_ns: l.meta.start_ns,
        end_ns: l.meta.end_ns,
        duration_s: end.saturating_sub(l.meta.start_ns) as f64 / 1e9,
        complete: l.meta.complete(),
        wake_from: l.analysis.wake_from,
        counters: l.analysis.counters,
    }
}

fn header(path: &Path, l: &Loaded) -> String {
    let t = trace_info(path, l);
    let from = match l.analysis.wake_from {
        WakeFrom::Wakeup => "sched_wakeup",
        WakeFrom::Waking => "sched_waking",
    };
    format!(
        "{}: {} events, {} lost, {:.1} s{}; wakeup delays from {from}\n",
        path.display(),
        t.events,
        t.lost_events,
        t.duration_s,
        if t.complete {
            ""
        } else {
            " (recording cut short)"
        }
    )
}

fn footer(l: &Loaded) -> String {
    let c = &l.analysis.counters;
    let mut out = format!(
        "not measured: {} switch-ins of tasks already running or runnable at the start, {} without a recorded wakeup, {} switch-ins the kernel did not trace, {} inconsistent",
        c.unknown_start, c.missing_wakeup, c.untraced_switches, c.inconsistent
    );
    if l.stats.lost > 0 {
        out.push_str(&format!(
            "\nwarning: the kernel dropped {} events; delays spanning a loss may be missing or overstated: record again with a larger --buffer-size",
            l.stats.lost
        ));
    }
    out.push('\n');
    out
}

fn seed_table(s: &SeedStats, delay: &str) -> String {
    let mut rows = vec![vec![String::new(), format!("{delay} delay")]];
    for (label, v) in s.lines() {
        rows.push(vec![label.to_string(), crate::compare::us(v)]);
    }
    rows.push(vec!["Samples".into(), s.samples.to_string()]);
    iolab_sys::text::align_columns(&rows, 1)
}

#[derive(Serialize)]
struct WorkRow {
    work: String,
    items: usize,
    avg_us: Option<f64>,
    median_us: Option<f64>,
    p99_us: Option<f64>,
    max_us: Option<f64>,
}

fn work_rows(l: &Loaded, filter: Option<&Regex>) -> Vec<WorkRow> {
    let mut out: Vec<WorkRow> = l
        .analysis
        .works
        .iter()
        .map(|w| (w.label(&l.symbols), w))
        .filter(|(label, w)| !w.samples.is_empty() && filter.is_none_or(|re| re.is_match(label)))
        .map(|(work, w)| {
            let s = SeedStats::of(w.samples.iter().map(|s| (s.queued_ns, s.start_ns)));
            WorkRow {
                work,
                items: s.samples,
                avg_us: s.average_us,
                median_us: s.median_us,
                p99_us: s.p99_us,
                max_us: s.maximum_us,
            }
        })
        .collect();
    out.sort_by(|a, b| b.items.cmp(&a.items).then(a.work.cmp(&b.work)));
    out
}

fn render_works(works: &[WorkRow]) -> String {
    let us = crate::compare::us;
    let mut rows = vec![["Work", "Items", "Avg us", "Median us", "P99 us", "Max us"]
        .map(String::from)
        .to_vec()];
    for w in works {
        rows.push(vec![
            w.work.clone(),
            w.items.to_string(),
            us(w.avg_us),
            us(w.median_us),
            us(w.p99_us),
            us(w.max_us),
        ]);
    }
    iolab_sys::text::align_columns(&rows, 1)
}

/// `iolab sched report` of a BPF recording: the same table, summary and
/// histogram as a trace's, from the kernel's sums; its header names the
/// collector and its footer what could not be counted.
pub struct BpfReport {
    rows: Vec<Row>,
    summary: Option<SeedStats>,
    hist: Option<Log2Hist>,
}

impl BpfReport {
    /// The rows of `sel` in `rec`, sorted and cut to `limit`; with
    /// `summary` the seed's pooled statistics, with `hist` a log2
    /// histogram of the pooled bins.
    pub fn of(
        rec: &crate::bpf::BpfRecording,
        sel: &Selection,
        sort: &[SortKey],
        by_comm: bool,
        limit: Option<usize>,
        summary: bool,
        hist: bool,
    ) -> BpfReport {
        let mut rows = crate::bpf::rows(rec, sel, by_comm, sort);
        if let Some(n) = limit {
            rows.truncate(n);
        }
        let pooled = rec.pooled(sel);
        BpfReport {
            rows,
            summary: summary.then(|| SeedStats::of_summary(&pooled.summary())),
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a bin's middle: a non-negative ns value below 2^40"
            )]
            hist: hist.then(|| Log2Hist::of_counts(pooled.values().map(|(v, n)| (v as u64, n)))),
        }
    }

    /// The JSON document: the recording's header, rows (with perf's field
    /// names), summary, histogram.
    pub fn json(
        &self,
        path: &Path,
        rec: &crate::bpf::BpfRecording,
        sel: &Selection,
    ) -> serde_json::Value {
        let json_rows = json_rows(&self.rows);
        serde_json::json!({
            "trace": {
                "file": path,
                "tracer": rec.tracer,
                "attach": rec.attach,
                "events": rec.counters.events,
                "lost_events": rec.counters.no_room + rec.counters.skipped_program_runs.unwrap_or(0),
                "start_ns": rec.start_ns,
                "end_ns": rec.end_ns,
                "duration_s": rec.duration_s(),
                "wake_from": WakeFrom::Wakeup,
                "counters": rec.counters,
                "percentiles_from": rec.percentiles_from,
            },
            "delay": sel.delay,
            "tasks": json_rows,
            "summary": self.summary,
            "hist": self.hist,
        })
    }

    /// The text report; `delay` names the delays pooled.
    pub fn text(&self, path: &Path, rec: &crate::bpf::BpfRecording, delay: &str) -> String {
        let mut out = format!(
            "{}: counted in the kernel (bpf, {}), {} events, {:.1} s; wakeup delays from sched_wakeup\n",
            path.display(),
            rec.attach,
            rec.counters.events,
            rec.duration_s()
        );
        match &self.summary {
            Some(s) => out.push_str(&seed_table(s, delay)),
            None => out.push_str(&table::render_rows(&self.rows)),
        }
        if let Some(h) = &self.hist {
            out.push_str(&format!("\n{} delays ({delay}):\n", h.total()));
            out.push_str(&h.render());
        }
        let c = &rec.counters;
        out.push_str(&format!(
            "not measured: {} switch-ins of tasks already running or runnable at the start, {} without a seen wakeup, {} switch-ins not seen, {} inconsistent\nmedian and p99 from the kernel's bins (within 1/16), stddev from their middles; count, avg, min and max exact\n",
            c.unknown_start, c.missing_wakeup, c.untraced_switches, c.inconsistent
        ));
        if c.no_room > 0 {
            out.push_str(&format!(
                "warning: {} events found the programs' maps full ({} tasks): those tasks' delays are missing\n",
                c.no_room, rec.task_slots
            ));
        }
        if let Some(n) = c.skipped_program_runs.filter(|&n| n > 0) {
            out.push_str(&format!(
                "warning: the kernel skipped {n} runs of the programs (another BPF program was running on that CPU): those events' delays are missing\n"
            ));
        }
        out
    }
}
