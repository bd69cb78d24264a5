//! What the analysis keeps per task: every raw delay sample, run time and
//! switch count. Statistics are derived from the samples later
//! ([`crate::summary`]), never accumulated on the fly, so any selection or
//! grouping can be recomputed exactly.

use serde::Serialize;

use crate::event::Tid;

/// Why a task was waiting for a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DelayKind {
    /// Woken (`sched_wakeup`/`sched_wakeup_new`) → switched in: the
    /// scheduling latency of the seed and of `perf sched latency`.
    Wakeup,
    /// Switched out while runnable (preempted or yielded, `prev_state` R)
    /// → switched in again: time spent on a run queue after losing the CPU.
    Preempt,
}

/// One wait for a CPU, with both ends (CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DelaySample {
    /// Wakeup or preemption.
    pub kind: DelayKind,
    /// When the task became runnable: the `sched_wakeup` (or switch-out).
    pub ready_ns: u64,
    /// The `sched_waking` before the wakeup, when recorded (0: none).
    /// Equal to or before `ready_ns`; the difference is the wakeup's own
    /// path (e.g. a remote-CPU wake list IPI).
    pub waking_ns: u64,
    /// When it was switched in.
    pub start_ns: u64,
    /// The CPU it was switched in on.
    pub cpu: u32,
    /// It was migrated to another CPU while waiting.
    pub migrated: bool,
    /// Preempt delays: the switch out was an involuntary preemption inside
    /// the kernel (`prev_state` "R+"), not a reschedule of a runnable task
    /// (plain "R": on return to user space, cond_resched(), yield).
    pub kernel_preempt: bool,
    /// The kind of work item the task ran first after this switch in
    /// (workqueue workers): an index into `Analysis::works`.
    pub work: Option<u32>,
}

impl DelaySample {
    /// The delay itself.
    pub fn delay_ns(&self) -> u64 {
        self.start_ns - self.ready_ns
    }

    /// The delay measured from `sched_waking` instead, when recorded.
    pub fn delay_from_waking_ns(&self) -> u64 {
        if self.waking_ns == 0 {
            self.delay_ns()
        } else {
            self.start_ns - self.waking_ns
        }
    }
}

/// One task's life within the trace (a tid reused after an exit is a new
/// `TaskStats`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskStats {
    /// Task id.
    pub tid: Tid,
    /// Its latest name (as `perf sched latency` shows it).
    pub comm: String,
    /// Earlier names (before an exec or a `prctl(PR_SET_NAME)`), oldest
    /// first.
    pub old_comms: Vec<String>,
    /// Time on a CPU: switch in → switch out, ns. A task already running
    /// when the trace starts counts from its CPU's first event.
    pub runtime_ns: u64,
    /// Times it was switched in.
    pub switches: u64,
    /// Every wait for a CPU, in time order.
    pub samples: Vec<DelaySample>,
    /// First event naming the task.
    pub first_ns: u64,
    /// Last event naming the task.
    pub last_ns: u64,
    /// `sched_process_exit` seen.
    pub exited: bool,
}

impl TaskStats {
    pub(crate) fn new(tid: Tid, comm: &str, ts_ns: u64) -> TaskStats {
        TaskStats {
            tid,
            comm: comm.to_string(),
            old_comms: Vec::new(),
            runtime_ns: 0,
            switches: 0,
            samples: Vec::new(),
            first_ns: ts_ns,
            last_ns: ts_ns,
            exited: false,
        }
    }

    /// Records a (possibly) new name; empty names (events without one)
    /// never replace a known name.
    pub(crate) fn set_comm(&mut self, comm: &str) {
        if comm.is_empty() || comm == self.comm {
            return;
        }
        if self.comm.is_empty() {
            self.comm = comm.to_string();
        } else {
            let old = std::mem::replace(&mut self.comm, comm.to_string());
            self.old_comms.push(old);
        }
    }

    /// `comm:tid`, the name `perf sched latency` gives a task.
    pub fn label(&self) -> String {
        format!("{}:{}", self.comm, self.tid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_change_but_remember_the_old_ones() {
        let mut t = TaskStats::new(7, "sh", 1);
        t.set_comm("");
        t.set_comm("sh");
        t.set_comm("sleep");
        assert_eq!(t.comm, "sleep");
        assert_eq!(t.old_comms, vec!["sh".to_string()]);
        assert_eq!(t.label(), "sleep:7");
    }

    #[test]
    fn delays_from_waking_fall_back_to_the_wakeup() {
        let s = DelaySample {
            kind: DelayKind::Wakeup,
            ready_ns: 100,
            waking_ns: 0,
            start_ns: 150,
            cpu: 0,
            migrated: false,
            kernel_preempt: false,
            work: None,
        };
        assert_eq!(s.delay_ns(), 50);
        assert_eq!(s.delay_from_waking_ns(), 50);
        let s = DelaySample { waking_ns: 90, ..s };
        assert_eq!(s.delay_from_waking_ns(), 60);
    }
}
