//! `--explain`: where the target's time went, from its tasks' switch-out
//! stacks (as `iolab explain`), stored as the run's attribution
//! (`explain`). Follows the target's process tree from before its exec.
//! Its summary is the start's main thread by state ([`super::main_thread`]),
//! its I/O waits checked against the kernel's delay accounting, which is
//! turned on (`kernel.task_delayacct`, through the guard) while it runs.

use iolab_explain::Explainer;
use iolab_results::{ArtifactDoc, ArtifactKind};
use iolab_sys::taskstats::{self, Delays, ExitListener};
use iolab_sys::UsageError;

use super::{main_thread, Collected, Collector, Entry, Flag, Needs, RunEnd, Scope};
use crate::CollectError;

/// The registry entry.
pub const ENTRY: Entry = Entry {
    name: "explain",
    flag: Flag::Switch("explain"),
    help: "attribute every start's stalls to kernel paths (as `iolab explain`); each run stores its attribution (`explain`) and the table gains, per cell, the top causes of the difference from idle",
    needs: Needs::Target,
    root: true,
    start,
};

/// Turns the kernel's delay accounting on (`kernel.task_delayacct`,
/// through the guard), once: a task is only accounted when it was forked
/// with it on, so this runs before the experiment's first launch. True
/// when it is on.
pub fn delay_accounting(guard: &iolab_guard::Guard) -> bool {
    std::fs::read_to_string("/proc/sys/kernel/task_delayacct").is_ok_and(|v| v.trim() == "1")
        || guard.set_sysctl("kernel.task_delayacct", "1").is_ok()
}

struct Explain {
    explainer: Explainer,
    /// The main thread: the target's, or the app's once followed.
    main: i32,
    followed_late: bool,
    /// Exits' delay totals; `None` where taskstats is missing.
    exits: Option<ExitListener>,
    /// The main thread's totals when the window began (the held target's
    /// just before its release, an app's when followed), and when
    /// (CLOCK_MONOTONIC ns): the check compares what both saw after it.
    baseline: Option<(Delays, u64)>,
}

/// `tid`'s delay totals now, and when.
fn baseline_of(tid: i32) -> Option<(Delays, u64)> {
    let at = iolab_trace::monotonic_ns();
    taskstats::of_thread(tid).ok().map(|d| (d, at))
}

fn start(scope: &Scope<'_>) -> Result<Box<dyn Collector>, CollectError> {
    let pid = scope
        .target
        .ok_or_else(|| UsageError::new("--explain needs a target to follow"))?;
    // Best effort: without delay accounting the split is still measured,
    // only not cross-checked (the summary then has no `delayacct`).
    let exits = delay_accounting(scope.guard)
        .then(|| ExitListener::start().ok())
        .flatten();
    let explainer = Explainer::start(scope.guard, pid)?;
    // Last, just before the target is released: what it waited for while
    // tracing was set up (a cold fork's page faults) is not the start's.
    let baseline = exits.as_ref().and_then(|_| baseline_of(pid));
    Ok(Box::new(Explain {
        explainer,
        main: pid,
        followed_late: false,
        exits,
        baseline,
    }))
}

impl Collector for Explain {
    fn follow(&mut self, pid: i32) -> Result<bool, CollectError> {
        self.explainer.follow_late(pid)?;
        self.main = pid;
        self.followed_late = true;
        self.baseline = self.exits.as_ref().and_then(|_| baseline_of(pid));
        Ok(true)
    }

    fn stop(self: Box<Self>, end: &RunEnd) -> Result<Collected, CollectError> {
        let Explain {
            explainer,
            main,
            followed_late,
            exits,
            baseline,
        } = *self;
        // A main thread still alive is asked now, as the trace ends; one
        // that exited was reported at its exit.
        let live = exits.as_ref().and_then(|_| taskstats::of_thread(main).ok());
        let attribution = explainer.finish_with_cpu(end.target_cpu_ns)?;
        let at_exit = exits
            .and_then(|l| l.finish().ok())
            .and_then(|e| e.by_tid.get(&main).copied());
        let end_delays = match (at_exit, live) {
            (Some(d), _) => Some((d, "taskstats at exit")),
            (None, Some(d)) => Some((d, "taskstats at the end of the trace")),
            (None, None) => None,
        };
        let delays = match (end_delays, baseline) {
            (Some((d, source)), Some((b, at))) => Some(main_thread::DelayCheck {
                source,
                since_ns: at,
                blkio_delay_ns: d.blkio_delay_ns.saturating_sub(b.blkio_delay_ns),
                blkio_count: d.blkio_count.saturating_sub(b.blkio_count),
                cpu_delay_ns: d.cpu_delay_ns.saturating_sub(b.cpu_delay_ns),
            }),
            _ => None,
        };
        let summary = end
            .window_ns
            .and_then(|w| main_thread::summary(&attribution, w, delays, followed_late));
        Ok(Collected {
            docs: vec![ArtifactDoc::of(ArtifactKind::Explain, &attribution)
                .map_err(CollectError::serialise("the attribution"))?],
            summary,
            // A target's view: no one-shot command runs it.
            ..Collected::default()
        })
    }
}
