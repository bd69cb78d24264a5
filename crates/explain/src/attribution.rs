//! The result: where a task tree's time went. Serialized as the `explain`
//! artifact of a run and as `iolab explain --json`; every field is
//! documented because the struct documents the JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::rules::Kind;

/// Pseudo-cause name of on-CPU time in [`Totals`] and diffs.
pub const ON_CPU: &str = "on-CPU";
/// Pseudo-cause name of runnable time (waiting for a CPU).
pub const RUNNABLE: &str = "runnable (waiting for a CPU)";
/// Pseudo-cause name of time the trace could not account for.
pub const UNTRACED: &str = "untraced";

/// Where the time of a followed task tree went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The task the tree was followed from.
    pub root_pid: i32,
    /// Start of the window, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// End of the window, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// `end_ns - start_ns`.
    pub wall_ns: u64,
    /// Sum over tasks of the time each existed in the window: on_cpu +
    /// runnable + blocked + untraced.
    pub task_ns: u64,
    /// Time on a CPU (switch-in to switch-out).
    pub on_cpu_ns: u64,
    /// Time runnable but not running: after a wakeup (the stalls'
    /// runnable delay) and after preemption.
    pub runnable_ns: u64,
    /// The part of `runnable_ns` that followed a preemption.
    pub preempted_ns: u64,
    /// Time asleep (switch-out in a sleep state to wakeup), every cause.
    pub blocked_ns: u64,
    /// The part of `blocked_ns` in causes of kind `idle` (waiting for a
    /// child, input, a timer, a futex): not system stalls.
    pub idle_ns: u64,
    /// Time the trace could not account for (before a task's first
    /// event, around lost events).
    pub untraced_ns: u64,
    /// Blocked time by cause, largest first.
    pub causes: Vec<CauseTime>,
    /// Blocked time by distinct kernel stack, largest first (the folded
    /// output and the top stacks per cause come from these).
    pub stacks: Vec<StackTime>,
    /// Stalls of at least `min_stall_ns` (switch-out to switch-in),
    /// longest first, at most `MAX_STALLS`.
    pub stalls: Vec<Stall>,
    /// How many stalls reached `min_stall_ns` (the list may be capped).
    pub stalls_over_min: u64,
    /// Threshold of the stall list, ns.
    pub min_stall_ns: u64,
    /// Per task (thread), by first appearance.
    pub tasks: Vec<TaskTime>,
    /// What the trace delivered and lost.
    pub trace: TraceCounts,
    /// On-CPU time from the trace vs the kernel's own accounting.
    pub on_cpu_check: Option<OnCpuCheck>,
    /// The rule table used (`builtin`, or `FILE + builtin`).
    pub rules: String,
    /// The main thread's life in the window, interval by interval: the
    /// root's, or the app's a launcher started (followed late).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_thread: Option<MainThread>,
}

/// A thread's state, split as Perfetto's `main_thread_by_task_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadState {
    /// On a CPU.
    Running,
    /// Waiting for a CPU (after a wakeup or a preemption).
    Runnable,
    /// Uninterruptible sleep (`D`) in `io_schedule*`: the kernel's
    /// `in_iowait`, what delay accounting counts as blkio.
    UninterruptibleIo,
    /// Uninterruptible sleep for anything else (a lock, reclaim).
    UninterruptibleOther,
    /// Interruptible sleep (`S`, and `I`, `T`): waiting for work.
    Sleeping,
    /// Not known (before its first event, around lost events).
    Untraced,
}

/// One interval of the main thread in one state: `[start_ns, end_ns,
/// state]` in the JSON (CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateSpan(pub u64, pub u64, pub ThreadState);

/// The main thread's intervals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MainThread {
    /// Thread id (the process's pid).
    pub tid: i32,
    /// Its comm.
    pub comm: String,
    /// Every interval in the window, in time order, adjacent and
    /// non-overlapping while the thread was followed.
    pub spans: Vec<StateSpan>,
}

/// Time by state between two instants (Perfetto's field names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateSplit {
    /// On a CPU.
    pub running_dur_ns: u64,
    /// Waiting for a CPU.
    pub runnable_dur_ns: u64,
    /// Uninterruptible sleep waiting for I/O.
    pub uninterruptible_io_sleep_dur_ns: u64,
    /// Uninterruptible sleep for anything else.
    pub uninterruptible_non_io_sleep_dur_ns: u64,
    /// Interruptible sleep.
    pub interruptible_sleep_dur_ns: u64,
    /// Followed, state not known.
    pub untraced_dur_ns: u64,
    /// Before the thread's first interval (an app zygote had not forked
    /// yet) or after its last (it had exited).
    pub not_alive_dur_ns: u64,
}

impl StateSplit {
    /// Every part: the length of the interval it was taken over.
    pub fn total_ns(&self) -> u64 {
        self.running_dur_ns
            + self.runnable_dur_ns
            + self.uninterruptible_io_sleep_dur_ns
            + self.uninterruptible_non_io_sleep_dur_ns
            + self.interruptible_sleep_dur_ns
            + self.untraced_dur_ns
            + self.not_alive_dur_ns
    }
}

impl MainThread {
    /// Its time by state from `from` to `to`; what no interval covers is
    /// `not_alive` (before its first or after its last) or `untraced`.
    pub fn split(&self, from: u64, to: u64) -> StateSplit {
        let mut out = StateSplit::default();
        let mut covered = 0u64;
        for &StateSpan(a, b, state) in &self.spans {
            let (a, b) = (a.max(from), b.min(to));
            if b <= a {
                continue;
            }
            let d = b - a;
            covered += d;
            let slot = match state {
                ThreadState::Running => &mut out.running_dur_ns,
                ThreadState::Runnable => &mut out.runnable_dur_ns,
                ThreadState::UninterruptibleIo => &mut out.uninterruptible_io_sleep_dur_ns,
                ThreadState::UninterruptibleOther => &mut out.uninterruptible_non_io_sleep_dur_ns,
                ThreadState::Sleeping => &mut out.interruptible_sleep_dur_ns,
                ThreadState::Untraced => &mut out.untraced_dur_ns,
            };
            *slot += d;
        }
        let first = self.spans.first().map_or(to, |s| s.0.clamp(from, to));
        let last = self.spans.last().map_or(to, |s| s.1.clamp(from, to));
        out.not_alive_dur_ns = (first - from) + (to - last.max(first));
        let window = to.saturating_sub(from);
        // Gaps between intervals (none while followed): untraced.
        out.untraced_dur_ns += window.saturating_sub(covered + out.not_alive_dur_ns);
        out
    }
}

/// Blocked time of one cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseTime {
    /// Cause name (a rule's, or `other`).
    pub cause: String,
    /// Kind of wait.
    pub kind: Kind,
    /// Blocked time, ns (switch-out to wakeup, summed over stalls).
    pub blocked_ns: u64,
    /// Runnable delay after these stalls' wakeups, ns.
    pub runnable_ns: u64,
    /// Share of all blocked time.
    pub share: f64,
    /// Share of non-idle blocked time (`None` for idle causes).
    pub stall_share: Option<f64>,
    /// Number of sleeps.
    pub stalls: u64,
    /// Longest single blocked time, ns.
    pub max_ns: u64,
    /// Who woke the task, by blocked time, largest first (at most 5).
    pub wakers: Vec<WakerTime>,
}

/// Blocked time ended by one waker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakerTime {
    /// Waker: `comm` of a task, or `[softirq]`, `[hardirq]`.
    pub waker: String,
    /// Wakeups.
    pub count: u64,
    /// Blocked time they ended, ns.
    pub blocked_ns: u64,
}

/// Blocked time behind one distinct kernel stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackTime {
    /// The cause the rules gave this stack.
    pub cause: String,
    /// Frames, innermost first (normalized symbol names; empty when the
    /// stall had no stack).
    pub frames: Vec<String>,
    /// Sleeps with this stack.
    pub count: u64,
    /// Blocked time, ns.
    pub blocked_ns: u64,
    /// Runnable delay after the wakeups, ns.
    pub runnable_ns: u64,
}

/// One stall: a sleep from switch-out to switch-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// Switch-out time, CLOCK_MONOTONIC ns.
    pub ts_ns: u64,
    /// Thread id.
    pub tid: i32,
    /// Its comm.
    pub comm: String,
    /// Cause.
    pub cause: String,
    /// Sleep state: `D` (uninterruptible), `S`, `I`, `T`, `P`.
    pub state: String,
    /// Switch-out to wakeup, ns.
    pub blocked_ns: u64,
    /// Wakeup to switch-in, ns.
    pub runnable_ns: u64,
    /// `blocked_ns + runnable_ns`.
    pub duration_ns: u64,
    /// Who woke it (`comm:pid`, `[softirq]`, ...), when seen.
    pub waker: Option<String>,
    /// Where the waker was (first frame of its stack past the wakeup
    /// machinery, e.g. `blk_update_request`), when recorded.
    pub waker_site: Option<String>,
    /// The function the task blocked in (innermost frame past the wait
    /// machinery).
    pub site: Option<String>,
    /// The lock's name, when the rule names it (e.g. `i_data_sem`).
    pub lock: Option<String>,
    /// The system call or fault it blocked in (`fsync`, `read`, `page
    /// fault`).
    pub syscall: Option<String>,
    /// True when it was still asleep at the end of the window.
    pub open: bool,
    /// Its kernel stack, innermost first.
    pub stack: Vec<String>,
}

/// One task's (thread's) time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskTime {
    /// Thread id.
    pub tid: i32,
    /// Last comm seen.
    pub comm: String,
    /// The task that forked it, when seen.
    pub parent: Option<i32>,
    /// First time in the window, ns.
    pub start_ns: u64,
    /// Exit time, or the end of the window.
    pub end_ns: u64,
    /// True when it exited in the window.
    pub exited: bool,
    /// On-CPU time, ns.
    pub on_cpu_ns: u64,
    /// Runnable time, ns.
    pub runnable_ns: u64,
    /// Part of `runnable_ns` after preemption.
    pub preempted_ns: u64,
    /// Blocked time, ns.
    pub blocked_ns: u64,
    /// Part of `blocked_ns` in idle causes.
    pub idle_ns: u64,
    /// Part of `blocked_ns` in uninterruptible sleep waiting for I/O
    /// (`io_schedule*` on the stack: the kernel's `in_iowait`).
    #[serde(default)]
    pub d_io_ns: u64,
    /// Part of `blocked_ns` in uninterruptible sleep for anything else.
    #[serde(default)]
    pub d_other_ns: u64,
    /// Untraced time, ns.
    pub untraced_ns: u64,
    /// Context switches out.
    pub switches: u64,
    /// Sleeps.
    pub sleeps: u64,
    /// Blocked time by cause, largest first.
    pub causes: Vec<(String, u64)>,
}

/// What the trace delivered and lost, and how consistent it was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceCounts {
    /// Events delivered.
    pub events: u64,
    /// Events the kernel lost (a full buffer).
    pub lost: u64,
    /// Sleeps whose wakeup was not seen (switched in without one).
    pub missing_wakeups: u64,
    /// Sleeps recorded without a stack.
    pub missing_stacks: u64,
    /// Events that contradicted the task's known state (a lost event in
    /// between): the interval is counted as untraced.
    pub inconsistent: u64,
    /// Events the cross-CPU merge delivered after a newer one (committed
    /// late on their CPU); 0 in a healthy trace.
    #[serde(default)]
    pub out_of_order: u64,
    /// Switch-ins the trace did not record, dated from the CPU time the
    /// kernel reported as the task ran (`sched_stat_runtime`).
    #[serde(default)]
    pub inferred_switch_ins: u64,
    /// On-CPU time from those inferred switch-ins to the next switch-out:
    /// an estimate (the kernel's runtime can include up to a few ms from
    /// before the switch-in, after an EEVDF delayed dequeue), the rest of
    /// the on-CPU time is from recorded switch pairs.
    #[serde(default)]
    pub inferred_on_cpu_ns: u64,
}

/// On-CPU time from the trace against the kernel's own accounting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnCpuCheck {
    /// `wait4` (rusage of the reaped tree) or `schedstat` (per-thread
    /// `/proc/<tid>/schedstat` deltas).
    pub source: String,
    /// On-CPU time of the same tasks from switch pairs, ns.
    pub traced_ns: u64,
    /// The kernel's figure, ns.
    pub measured_ns: u64,
    /// `traced_ns - measured_ns`.
    pub diff_ns: i64,
}

impl OnCpuCheck {
    /// Builds a check.
    pub fn new(source: &str, traced_ns: u64, measured_ns: u64) -> OnCpuCheck {
        OnCpuCheck {
            source: source.to_string(),
            traced_ns,
            measured_ns,
            diff_ns: traced_ns as i64 - measured_ns as i64,
        }
    }
}

/// One cause's change between two runs (or means of runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseDelta {
    /// Cause, or [`ON_CPU`], [`RUNNABLE`], [`UNTRACED`].
    pub cause: String,
    /// Change, ns (positive: more time than the base).
    pub delta_ns: i64,
    /// `delta_ns` over the sum of the positive deltas.
    pub share: f64,
}

/// Time by cause, comparable between runs: on-CPU, runnable, untraced and
/// every non-idle cause (idle causes — waiting for a child, input, a timer
/// — are left out: a shell waiting for its child would count the child's
/// slowdown twice).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals(pub BTreeMap<String, f64>);

impl Totals {
    /// The mean of several runs' totals (a cause absent from a run counts
    /// as 0 there).
    pub fn mean(runs: &[Totals]) -> Totals {
        let mut sum = BTreeMap::<String, f64>::new();
        for t in runs {
            for (k, v) in &t.0 {
                *sum.entry(k.clone()).or_default() += v;
            }
        }
        let n = runs.len().max(1) as f64;
        Totals(sum.into_iter().map(|(k, v)| (k, v / n)).collect())
    }

    /// The change from `base`, largest increase first.
    pub fn diff(&self, base: &Totals) -> Vec<CauseDelta> {
        let keys: std::collections::BTreeSet<&String> =
            self.0.keys().chain(base.0.keys()).collect();
        let mut out: Vec<CauseDelta> = keys
            .into_iter()
            .map(|k| {
                let a = self.0.get(k).copied().unwrap_or(0.0);
                let b = base.0.get(k).copied().unwrap_or(0.0);
                CauseDelta {
                    cause: k.clone(),
                    delta_ns: iolab_sys::cast::round_i64(a - b),
                    share: 0.0,
                }
            })
            .filter(|d| d.delta_ns != 0)
            .collect();
        let positive: i64 = out.iter().map(|d| d.delta_ns.max(0)).sum();
        for d in &mut out {
            d.share = if positive > 0 {
                d.delta_ns as f64 / positive as f64
            } else {
                0.0
            };
        }
        out.sort_by(|a, b| b.delta_ns.cmp(&a.delta_ns).then(a.cause.cmp(&b.cause)));
        out
    }
}

impl Attribution {
    /// Time by cause for comparisons (see [`Totals`]).
    pub fn totals(&self) -> Totals {
        let mut m = BTreeMap::new();
        m.insert(ON_CPU.to_string(), self.on_cpu_ns as f64);
        m.insert(RUNNABLE.to_string(), self.runnable_ns as f64);
        m.insert(UNTRACED.to_string(), self.untraced_ns as f64);
        for c in self.causes.iter().filter(|c| c.kind != Kind::Idle) {
            m.insert(c.cause.clone(), c.blocked_ns as f64);
        }
        Totals(m)
    }

    /// What changed from `idle` (e.g. a start under load against the idle
    /// start), largest increase first.
    pub fn diff(&self, idle: &Attribution) -> Vec<CauseDelta> {
        self.totals().diff(&idle.totals())
    }

    /// Blocked time of `tid` between `from_ns` and `to_ns` by cause,
    /// largest first, from the listed stalls (those of at least
    /// `min_stall_ns`): what an operation timed by the task itself waited
    /// for. Each stall counts only for its overlap with the window.
    pub fn causes_between(&self, tid: i32, from_ns: u64, to_ns: u64) -> Vec<(String, u64)> {
        let mut by = BTreeMap::<&str, u64>::new();
        for s in self.stalls.iter().filter(|s| s.tid == tid) {
            let (a, b) = (s.ts_ns.max(from_ns), (s.ts_ns + s.blocked_ns).min(to_ns));
            if b > a {
                *by.entry(s.cause.as_str()).or_default() += b - a;
            }
        }
        let mut v: Vec<(String, u64)> = by.into_iter().map(|(c, ns)| (c.to_string(), ns)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// The cause with the most non-idle blocked time.
    pub fn top_stall_cause(&self) -> Option<&CauseTime> {
        self.causes
            .iter()
            .filter(|c| c.kind != Kind::Idle)
            .max_by_key(|c| c.blocked_ns)
    }
}

/// `+4.1 s: 62 % journal commit wait, 30 % dirty throttling` — the `top`
/// largest increases of a diff, with the total change.
pub fn describe_diff(deltas: &[CauseDelta], top: usize) -> String {
    let total: i64 = deltas.iter().map(|d| d.delta_ns).sum();
    let parts: Vec<String> = deltas
        .iter()
        // Shares that round to 0 % are noise, not causes.
        .filter(|d| d.delta_ns > 0 && d.share >= 0.005)
        .take(top)
        .map(|d| format!("{:.0} % {}", d.share * 100.0, d.cause))
        .collect();
    let sign = if total >= 0 { "+" } else { "-" };
    let head = format!("{sign}{:.1} s", total.unsigned_abs() as f64 / 1e9);
    if parts.is_empty() {
        head
    } else {
        format!("{head}: {}", parts.join(", "))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn totals(pairs: &[(&str, f64)]) -> Totals {
        Totals(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())
    }

    #[test]
    fn diff_shares_the_positive_change() {
        let idle = totals(&[(ON_CPU, 1e9), ("journal commit wait", 0.0)]);
        let load = totals(&[
            (ON_CPU, 1e9),
            ("journal commit wait", 3e9),
            ("dirty throttling", 1e9),
            (RUNNABLE, 0.5e9),
        ]);
        let d = load.diff(&idle);
        assert_eq!(d[0].cause, "journal commit wait");
        assert!((d[0].share - 3.0 / 4.5).abs() < 1e-9);
        assert_eq!(d.iter().find(|x| x.cause == ON_CPU), None);
        assert_eq!(
            describe_diff(&d, 2),
            "+4.5 s: 67 % journal commit wait, 22 % dirty throttling"
        );
    }

    #[test]
    fn causes_between_clips_stalls_to_the_window() {
        let mut a = crate::report::text::tests::sample();
        // sample(): cat:11 blocked 100..600 ms and 700..1100 ms.
        let ms = 1_000_000;
        let v = a.causes_between(11, 500 * ms, 800 * ms);
        assert_eq!(v, vec![("page-cache read I/O".to_string(), 200 * ms)]);
        assert!(a.causes_between(12, 0, u64::MAX).is_empty());
        a.stalls.clear();
        assert!(a.causes_between(11, 0, u64::MAX).is_empty());
    }

    #[test]
    fn mean_counts_missing_causes_as_zero() {
        let m = Totals::mean(&[totals(&[("a", 2.0)]), totals(&[("b", 4.0)])]);
        assert_eq!(m.0["a"], 1.0);
        assert_eq!(m.0["b"], 2.0);
    }
}
