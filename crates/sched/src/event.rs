//! The scheduler events the analysis understands, already decoded: one
//! variant per tracepoint, borrowing its strings from the record so that
//! feeding millions of events allocates nothing.
//!
//! Field meanings follow the tracepoints in `include/trace/events/sched.h`
//! and `include/trace/events/workqueue.h` (kernel 6.x); [`crate::decode`]
//! builds these from raw trace records through the `format` files.

/// A task id as the kernel's sched tracepoints report it (`pid_t`, which
/// is a thread id: every thread has its own).
pub type Tid = i32;

/// One decoded event with where and when it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timed<'a> {
    /// CLOCK_MONOTONIC nanoseconds (trace_clock=mono).
    pub ts_ns: u64,
    /// CPU whose ring buffer held the event.
    pub cpu: u32,
    /// The task that was current on that CPU (`common_pid`).
    pub current: Tid,
    /// What happened.
    pub event: SchedEvent<'a>,
}

/// What happened, per tracepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedEvent<'a> {
    /// `sched_waking`: try_to_wake_up() started on the waker's CPU.
    Waking {
        /// Task being woken.
        tid: Tid,
        /// Its name.
        comm: &'a str,
    },
    /// `sched_wakeup` (`new: false`) or `sched_wakeup_new` (`new: true`):
    /// the task was put on a run queue (or found still on one) and is
    /// runnable from now on. `perf sched latency` measures from here.
    Wakeup {
        /// Task woken.
        tid: Tid,
        /// Its name.
        comm: &'a str,
        /// `sched_wakeup_new`: first wakeup of a freshly forked task.
        new: bool,
    },
    /// `sched_switch` on `cpu`: `prev` leaves the CPU, `next` gets it.
    Switch {
        /// Task switched out.
        prev_tid: Tid,
        /// Its name.
        prev_comm: &'a str,
        /// Its reported state ([`PrevState`]).
        prev_state: PrevState,
        /// Task switched in.
        next_tid: Tid,
        /// Its name.
        next_comm: &'a str,
    },
    /// `sched_migrate_task`: a task moves to another CPU's run queue.
    Migrate {
        /// Task moved.
        tid: Tid,
        /// From.
        orig_cpu: u32,
        /// To.
        dest_cpu: u32,
    },
    /// `sched_process_fork`: `child` exists from now on (a new task, or a
    /// reused tid).
    Fork {
        /// Forking task.
        parent_tid: Tid,
        /// New task.
        child_tid: Tid,
        /// Its name (the parent's, until it execs).
        child_comm: &'a str,
    },
    /// `sched_process_exec`: the task runs a new program; its name changes
    /// (the new one arrives with its next `sched_switch`).
    Exec {
        /// Task id after exec (the thread-group leader's).
        tid: Tid,
        /// Task id before exec (differs when a non-leader thread execs).
        old_tid: Tid,
    },
    /// `sched_process_exit`: the task is exiting; its tid may be reused
    /// after its last switch out.
    Exit {
        /// Task exiting.
        tid: Tid,
        /// Its name.
        comm: &'a str,
    },
    /// `workqueue_queue_work`: a work item was queued (the moment it became
    /// eligible to run).
    WorkQueued {
        /// Address of the `work_struct`.
        work: u64,
        /// Address of its function.
        function: u64,
        /// Name of the workqueue (e.g. `erofs_worker`).
        workqueue: &'a str,
    },
    /// `workqueue_execute_start`: a worker (the current task) starts
    /// running a work item.
    WorkStart {
        /// Address of the `work_struct`.
        work: u64,
        /// Address of its function.
        function: u64,
    },
}

/// `sched_switch`'s `prev_state`: the kernel's reported task state
/// (`__trace_sched_switch_state()`): 0 for runnable, one `TASK_REPORT` bit
/// (S, D, T, t, X, Z, P, I) for the other states, and `TASK_REPORT_MAX`
/// (0x100 since 4.14) alone when the task was preempted ("R+").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrevState(pub i64);

impl PrevState {
    /// Runnable: the task left the CPU without blocking (preempted, or it
    /// yielded), so it waits on a run queue from this moment. Any bit below
    /// `TASK_REPORT_MAX` means a real state; the preemption marker (and any
    /// higher bit a future kernel adds) does not.
    pub fn is_runnable(self) -> bool {
        self.0 & 0xff == 0
    }

    /// Preempted inside the kernel ("R+": `TASK_REPORT_MAX` alone), as
    /// opposed to a plain runnable "R" (0).
    pub fn is_kernel_preempt(self) -> bool {
        self.0 != 0 && self.is_runnable()
    }

    /// The task is dead (EXIT_DEAD `X` or EXIT_ZOMBIE `Z`): this was its
    /// last switch out.
    pub fn is_dead(self) -> bool {
        self.0 & 0x30 != 0
    }

    /// The state letter `perf sched timehist` and `ps` show: R, S, D, T,
    /// t, X, Z, P or I.
    pub fn letter(self) -> char {
        const LETTERS: [char; 8] = ['S', 'D', 'T', 't', 'X', 'Z', 'P', 'I'];
        let low = self.0 & 0xff;
        if low == 0 {
            return 'R';
        }
        LETTERS[low.trailing_zeros() as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prev_state_follows_the_kernel_report_bits() {
        assert!(PrevState(0).is_runnable());
        assert!(PrevState(0x100).is_runnable(), "R+ (preempted)");
        assert!(PrevState(0x100).is_kernel_preempt() && !PrevState(0).is_kernel_preempt());
        assert!(!PrevState(1).is_runnable());
        assert!(!PrevState(0x80).is_runnable(), "I (idle kthread)");
        assert!(!PrevState(0x102).is_runnable(), "D with the preempt bit");
        assert_eq!(PrevState(0x100).letter(), 'R');
        assert_eq!(PrevState(2).letter(), 'D');
        assert_eq!(PrevState(0x80).letter(), 'I');
        assert!(PrevState(0x10).is_dead() && PrevState(0x20).is_dead());
        assert!(!PrevState(1).is_dead());
    }
}
