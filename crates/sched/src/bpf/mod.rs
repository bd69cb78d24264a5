//! Scheduling delay counted in the kernel (`sched.bpf.c`, compiled by
//! scripts/bpf-build.sh into `sched.bpf.o`, embedded here): the tracefs
//! analyser's state machine run on the same three tracepoints, each task's
//! waits summed where they happen instead of recorded one by one. What
//! comes back ([`BpfRecording`]) is per task: switches, run time, and per
//! delay kind the count, sum, min, max with both its ends, and log-linear
//! bins; the report's rows are built from it ([`rows`]) with the same
//! [`Row`] type, so the table, JSON and the seed's summary do not care which
//! collector counted. Exact: counts, sums, averages, minima, maxima and
//! their times. From the bins: median and p99 (within 1/16 of their value)
//! and the standard deviation (from the bins' middles: each delay within
//! 1/16 of its value, so the error is within 1/16 of the delays' root mean
//! square, which for a tight distribution is more than its spread);
//! [`BINS_SOURCE`].
//!
//! Where it differs from the analyser: it has no `sched_process_exec`
//! program, so when a non-leader thread execs and takes over its leader's
//! tid, that tid's last run is lost and the old thread's tid is left
//! Running (the analyser moves the state over); and each CPU's first event
//! is among these three events only (the trace also has waking, fork and
//! the rest), so a task already running at the start may count a little
//! less run time.

use std::collections::BTreeMap;

use aya::maps::HashMap as BpfHash;
use aya::{Ebpf, EbpfLoader};
use iolab_trace::bpf::{
    attach_all, first_line, prepare, Attachment, BpfUnavailable, Link, TracepointKind,
};
use serde::{Deserialize, Serialize};

use crate::group::normalize_comm;
use crate::report::{sort_rows, Row, Selection, SortKey};
use crate::summary::DelaySummary;
use crate::task::DelayKind;

mod bins;

pub use bins::BINS_SOURCE;

/// The compiled programs (CI checks they are what `sched.bpf.c` compiles
/// to).
static OBJECT: &[u8] = include_bytes!("sched.bpf.o");

/// The format tag of a recording written by `sched record --tracer bpf`.
pub const FORMAT: &str = "iolab-sched-bpf/1";

/// Wakeups first: a switch seen before the wakeup programs were attached
/// would begin waits whose wakeup is missed.
const PROGRAMS: [Attachment; 3] = [
    ("sched_wakeup", "sched", "sched_wakeup"),
    ("sched_wakeup_new", "sched", "sched_wakeup_new"),
    ("sched_switch", "sched", "sched_switch"),
];

/// `struct task_key` of sched.bpf.c.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct TaskKey {
    tid: u32,
    life: u32,
}

/// `struct delays`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Delays {
    count: u64,
    sum_ns: u64,
    min_ns: u64,
    max_ns: u64,
    max_start_ns: u64,
    max_end_ns: u64,
    kernel_preempt: u64,
    bins: [u32; bins::NBINS],
}

/// `struct task`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Task {
    comm: [u8; 16],
    switches: u64,
    runtime_ns: u64,
    d: [Delays; 2],
}

// The C's sizes (no padding: the u32 bins array is a multiple of 8 bytes).
const _: () = assert!(std::mem::size_of::<Task>() == 2576);
const _: () = assert!(std::mem::size_of::<Delays>() == 1272);

// SAFETY: plain `repr(C)` integers laid out as sched.bpf.c declares them
// (no padding: the u32 bins array is a multiple of 8 bytes).
unsafe impl aya::Pod for TaskKey {}
unsafe impl aya::Pod for Task {}

/// What the programs could not tell, counted as the tracefs analyser
/// counts it ([`crate::Counters`]), plus a map that had no room.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BpfCounters {
    /// Events the programs ran on.
    pub events: u64,
    /// Switch ins of tasks never seen before: no sample.
    pub unknown_start: u64,
    /// Switch ins of a sleeping task with no wakeup seen: no sample.
    pub missing_wakeup: u64,
    /// Wakeups of a task already runnable or running: ignored.
    pub wakeups_ignored: u64,
    /// Events contradicting the state held: the pending delay dropped.
    pub inconsistent: u64,
    /// Switch outs of a task the CPU was not seen switching in.
    pub untraced_switches: u64,
    /// A task or state the maps had no room for: its events not counted.
    pub no_room: u64,
    /// Runs of the programs the kernel skipped because another BPF
    /// program was running on that CPU (their `recursion_misses`): events
    /// never seen. `None`: a kernel that does not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_program_runs: Option<u64>,
}

/// One delay kind of one task, as the kernel summed it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayAgg {
    /// Delays.
    pub count: u64,
    /// Their sum, ns.
    pub sum_ns: u64,
    /// Shortest, ns.
    pub min_ns: u64,
    /// Longest, ns, and when it began and ended (the first of equal
    /// maxima).
    pub max_ns: u64,
    /// When the longest began.
    pub max_start_ns: u64,
    /// When it ended (the switch in).
    pub max_end_ns: u64,
    /// Preempt delays that began with an in-kernel preemption (R+).
    pub kernel_preempt: u64,
    /// Non-empty bins: (index, count) ([`bins`]).
    pub bins: Vec<(u16, u64)>,
}

impl DelayAgg {
    fn of(d: &Delays) -> DelayAgg {
        DelayAgg {
            count: d.count,
            sum_ns: d.sum_ns,
            min_ns: d.min_ns,
            max_ns: d.max_ns,
            max_start_ns: d.max_start_ns,
            max_end_ns: d.max_end_ns,
            kernel_preempt: d.kernel_preempt,
            bins: d
                .bins
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| (u16::try_from(i).unwrap_or(u16::MAX), u64::from(n)))
                .collect(),
        }
    }

    /// Both sets pooled (the earlier of equal maxima kept).
    pub fn merge(&self, o: &DelayAgg) -> DelayAgg {
        if o.count == 0 {
            return self.clone();
        }
        if self.count == 0 {
            return o.clone();
        }
        let mut bins: BTreeMap<u16, u64> = self.bins.iter().copied().collect();
        for &(i, n) in &o.bins {
            *bins.entry(i).or_insert(0) += n;
        }
        let longer = o.max_ns > self.max_ns
            || (o.max_ns == self.max_ns && o.max_start_ns < self.max_start_ns);
        let m = if longer { o } else { self };
        DelayAgg {
            count: self.count + o.count,
            sum_ns: self.sum_ns + o.sum_ns,
            min_ns: self.min_ns.min(o.min_ns),
            max_ns: m.max_ns,
            max_start_ns: m.max_start_ns,
            max_end_ns: m.max_end_ns,
            kernel_preempt: self.kernel_preempt + o.kernel_preempt,
            bins: bins.into_iter().collect(),
        }
    }

    /// The summary the report shows: exact where the kernel kept it
    /// exactly, median, p99 and stddev from the bins.
    pub fn summary(&self) -> DelaySummary {
        if self.count == 0 {
            return DelaySummary::default();
        }
        let n = self.count;
        let avg = self.sum_ns as f64 / n as f64;
        let clamp = |v: f64| v.clamp(self.min_ns as f64, self.max_ns as f64);
        let at_rank = |rank: u64| -> f64 {
            let mut seen = 0;
            for &(i, c) in &self.bins {
                seen += c;
                if seen >= rank {
                    return clamp(bins::mid(i));
                }
            }
            self.max_ns as f64
        };
        let median = if n % 2 == 1 {
            at_rank(n / 2 + 1)
        } else {
            (at_rank(n / 2) + at_rank(n / 2 + 1)) / 2.0
        };
        let rank99 = (n * 99).div_ceil(100).max(1);
        // The p99's bin, at its middle within the range seen.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a bin's value within [min, max] of u64 delays"
        )]
        let p99 = at_rank(rank99).round() as u64;
        let stddev = (n > 1).then(|| {
            let ss: f64 = self
                .bins
                .iter()
                .map(|&(i, c)| c as f64 * (clamp(bins::mid(i)) - avg).powi(2))
                .sum();
            (ss / (n - 1) as f64).sqrt()
        });
        DelaySummary {
            count: usize::try_from(n).unwrap_or(usize::MAX),
            total_ns: self.sum_ns,
            avg_ns: Some(avg),
            median_ns: Some(median),
            p99_ns: Some(p99),
            min_ns: Some(self.min_ns),
            max_ns: Some(self.max_ns),
            stddev_ns: stddev,
            max_start_ns: Some(self.max_start_ns),
            max_end_ns: Some(self.max_end_ns),
        }
    }

    /// (value, count) per bin: what a histogram is drawn from.
    pub fn values(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.bins.iter().map(|&(i, c)| (bins::mid(i), c))
    }
}

/// One task (one life of a task id), as the kernel summed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BpfTask {
    /// Task id.
    pub tid: i32,
    /// Its latest name.
    pub comm: String,
    /// Lives of this tid before this one (a tid reused after its task
    /// died).
    pub life: u32,
    /// Switch ins.
    pub switches: u64,
    /// Time on CPU, ns.
    pub runtime_ns: u64,
    /// Woken → switched in.
    pub wakeup: DelayAgg,
    /// Preempted → switched in.
    pub preempt: DelayAgg,
}

impl BpfTask {
    /// `comm:tid`, as the trace's tasks are labelled.
    pub fn label(&self) -> String {
        format!("{}:{}", self.comm, self.tid)
    }

    fn kind(&self, k: DelayKind) -> &DelayAgg {
        match k {
            DelayKind::Wakeup => &self.wakeup,
            DelayKind::Preempt => &self.preempt,
        }
    }
}

/// What `sched record --tracer bpf` writes: every task's sums, the
/// counters, and how it was collected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BpfRecording {
    /// [`FORMAT`].
    pub format: String,
    /// `bpf`.
    pub tracer: String,
    /// How the programs were attached.
    pub attach: String,
    /// CLOCK_MONOTONIC ns at attach and at detach.
    pub start_ns: u64,
    /// At detach.
    pub end_ns: u64,
    /// What could not be counted.
    pub counters: BpfCounters,
    /// Where median, p99 and stddev come from.
    pub percentiles_from: String,
    /// Tasks the maps had room for.
    pub task_slots: u32,
    /// Every task seen.
    pub tasks: Vec<BpfTask>,
}

impl BpfRecording {
    /// Seconds between attach and detach.
    pub fn duration_s(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }

    /// The selected tasks' delays of the selected kinds, pooled.
    pub fn pooled(&self, sel: &Selection) -> DelayAgg {
        let mut all = DelayAgg::default();
        for t in self.tasks.iter().filter(|t| selected(sel, t)) {
            for k in [DelayKind::Wakeup, DelayKind::Preempt] {
                if sel.delay.admits(k) {
                    all = all.merge(t.kind(k));
                }
            }
        }
        all
    }
}

fn selected(sel: &Selection, t: &BpfTask) -> bool {
    sel.comm.as_ref().is_none_or(|re| re.is_match(&t.comm)) && sel.tid.is_none_or(|id| id == t.tid)
}

/// The report's rows from a BPF recording: one per selected task, or per
/// name group with `by_comm`, sorted by `sort`, as [`crate::rows`] does
/// for a trace. `sel.work` cannot apply (no work items are counted).
pub fn rows(rec: &BpfRecording, sel: &Selection, by_comm: bool, sort: &[SortKey]) -> Vec<Row> {
    let tasks: Vec<&BpfTask> = rec.tasks.iter().filter(|t| selected(sel, t)).collect();
    let row = |task: String, comm: String, tid: Option<i32>, members: &[&BpfTask]| {
        let pool = |k: DelayKind| {
            members
                .iter()
                .fold(DelayAgg::default(), |a, t| a.merge(t.kind(k)))
        };
        let (w, p) = (pool(DelayKind::Wakeup), pool(DelayKind::Preempt));
        Row {
            task,
            comm,
            tid,
            tasks: members.len(),
            runtime_ns: members.iter().map(|t| t.runtime_ns).sum(),
            switches: members.iter().map(|t| t.switches).sum(),
            delay: w.merge(&p).summary(),
            wakeup: w.summary(),
            preempt: p.summary(),
        }
    };
    let mut out: Vec<Row> = if by_comm {
        let mut groups: BTreeMap<String, Vec<&BpfTask>> = BTreeMap::new();
        for t in &tasks {
            groups.entry(normalize_comm(&t.comm)).or_default().push(t);
        }
        groups
            .into_iter()
            .map(|(name, m)| {
                let (label, tid) = if m.len() == 1 {
                    (m[0].label(), Some(m[0].tid))
                } else {
                    (format!("{name}:({})", m.len()), None)
                };
                row(label, name, tid, &m)
            })
            .collect()
    } else {
        tasks
            .iter()
            .map(|t| row(t.label(), t.comm.clone(), Some(t.tid), &[t]))
            .collect()
    };
    sort_rows(&mut out, sort);
    out
}

/// The collector, attached.
pub struct SchedBpf {
    ebpf: Ebpf,
    links: Vec<Link>,
    slots: u32,
    start_ns: u64,
}

/// Tasks the maps hold: twice the threads alive now plus room for 4096
/// more, at most 65536 (each costs 2.6 KB of kernel memory, preallocated;
/// a task beyond is counted in `no_room`, never silently dropped).
fn task_slots() -> Result<u32, BpfUnavailable> {
    let proc_root = std::path::Path::new("/proc");
    let unreadable = |e: std::io::Error| BpfUnavailable(format!("counting tasks in /proc: {e}"));
    let mut n = 0usize;
    for pid in iolab_sys::process::pids(proc_root).map_err(unreadable)? {
        // A process gone meanwhile has no threads.
        n += iolab_sys::process::tids(proc_root, pid).map_or(0, |t| t.len());
    }
    Ok(u32::try_from((2 * n + 4096).min(65_536)).unwrap_or(65_536))
}

impl SchedBpf {
    /// Loads and attaches the programs on sched_switch, sched_wakeup and
    /// sched_wakeup_new, with each field's offset from the events' tracefs
    /// formats (no BTF needed); tracefs is mounted through `guard` where
    /// it is not.
    pub fn start(guard: &iolab_guard::Guard) -> Result<SchedBpf, BpfUnavailable> {
        prepare(guard)?;
        let off = iolab_trace::bpf::event_offsets(
            "sched",
            &[
                (
                    "sw",
                    "sched_switch",
                    &[
                        "prev_comm",
                        "prev_pid",
                        "prev_state",
                        "next_comm",
                        "next_pid",
                    ],
                ),
                ("wk", "sched_wakeup", &["comm", "pid"]),
                ("wn", "sched_wakeup_new", &["comm", "pid"]),
            ],
        )?;
        let slots = task_slots()?;
        let mut loader = EbpfLoader::new();
        for (name, value) in &off {
            loader.override_global(name, value, true);
        }
        for map in ["tasks", "states", "lives"] {
            loader.map_max_entries(map, slots);
        }
        let mut ebpf = loader.load(OBJECT).map_err(|e| {
            BpfUnavailable(format!(
                "loading iolab's scheduler programs: {}",
                first_line(&e)
            ))
        })?;
        let links = attach_all(&mut ebpf, &PROGRAMS, TracepointKind::Classic)?;
        Ok(SchedBpf {
            ebpf,
            links,
            slots,
            start_ns: iolab_trace::monotonic_ns(),
        })
    }

    /// Detaches and reads what the programs counted.
    pub fn finish(mut self) -> Result<BpfRecording, BpfUnavailable> {
        let end_ns = iolab_trace::monotonic_ns();
        let skipped =
            iolab_trace::bpf::detach_all(&mut self.ebpf, std::mem::take(&mut self.links))?;
        let read = |e: &dyn std::fmt::Display| BpfUnavailable(format!("reading a map: {e}"));
        let c: [u64; 7] = iolab_trace::bpf::counters(&self.ebpf)?;
        let counters = BpfCounters {
            events: c[0],
            unknown_start: c[1],
            missing_wakeup: c[2],
            wakeups_ignored: c[3],
            inconsistent: c[4],
            untraced_switches: c[5],
            no_room: c[6],
            skipped_program_runs: skipped,
        };
        let map: BpfHash<_, TaskKey, Task> = BpfHash::try_from(
            self.ebpf
                .map("tasks")
                .ok_or_else(|| BpfUnavailable("no tasks map".into()))?,
        )
        .map_err(|e| read(&e))?;
        let mut tasks = Vec::new();
        for entry in map.iter() {
            let (k, t) = entry.map_err(|e| read(&e))?;
            let end = t.comm.iter().position(|&b| b == 0).unwrap_or(t.comm.len());
            tasks.push(BpfTask {
                tid: i32::try_from(k.tid).unwrap_or(i32::MAX),
                comm: String::from_utf8_lossy(&t.comm[..end]).into_owned(),
                life: k.life,
                switches: t.switches,
                runtime_ns: t.runtime_ns,
                wakeup: DelayAgg::of(&t.d[0]),
                preempt: DelayAgg::of(&t.d[1]),
            });
        }
        tasks.sort_by_key(|t| (t.tid, t.life));
        Ok(BpfRecording {
            format: FORMAT.into(),
            tracer: "bpf".into(),
            attach: "tracepoint".into(),
            start_ns: self.start_ns,
            end_ns,
            counters,
            percentiles_from: BINS_SOURCE.into(),
            task_slots: self.slots,
            tasks,
        })
    }
}
