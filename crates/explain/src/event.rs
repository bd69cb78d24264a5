//! The scheduler events the stall tracker consumes, decoded from trace
//! records ([`crate::decode`]) or built by tests.

use std::sync::Arc;

/// One frame: a normalized kernel symbol name ([`crate::pattern::normalize`]).
pub type Frame = Arc<str>;

/// `prev_state` bits of `sched_switch` (include/linux/sched.h,
/// `TASK_REPORT` and `TASK_REPORT_MAX` in `__trace_sched_switch_state`).
pub mod state {
    /// TASK_INTERRUPTIBLE: `S`.
    pub const INTERRUPTIBLE: u64 = 0x01;
    /// TASK_UNINTERRUPTIBLE: `D`.
    pub const UNINTERRUPTIBLE: u64 = 0x02;
    /// __TASK_STOPPED: `T`.
    pub const STOPPED: u64 = 0x04;
    /// __TASK_TRACED: `t`.
    pub const TRACED: u64 = 0x08;
    /// EXIT_DEAD: `X`.
    pub const DEAD: u64 = 0x10;
    /// EXIT_ZOMBIE: `Z`.
    pub const ZOMBIE: u64 = 0x20;
    /// TASK_PARKED: `P`.
    pub const PARKED: u64 = 0x40;
    /// TASK_REPORT_IDLE (TASK_IDLE sleeps): `I`.
    pub const IDLE: u64 = 0x80;
    /// The bits of a switch-out into a sleep: the filter of the stack
    /// trigger (`prev_state & SLEEP_MASK`).
    pub const SLEEP_MASK: u64 = INTERRUPTIBLE | UNINTERRUPTIBLE | STOPPED | TRACED | PARKED | IDLE;
}

/// What a switch-out's `prev_state` says the task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaving {
    /// Still runnable: preempted, or yielded.
    Runnable,
    /// Went to sleep, with its state letter (`S`, `D`, `I`, `T`, `P`).
    Sleep(char),
    /// Exited.
    Dead,
}

impl Leaving {
    /// Interprets `prev_state`.
    pub fn from_state(prev_state: u64) -> Leaving {
        use state::*;
        if prev_state & (DEAD | ZOMBIE) != 0 {
            Leaving::Dead
        } else if prev_state & UNINTERRUPTIBLE != 0 {
            Leaving::Sleep('D')
        } else if prev_state & INTERRUPTIBLE != 0 {
            Leaving::Sleep('S')
        } else if prev_state & IDLE != 0 {
            Leaving::Sleep('I')
        } else if prev_state & (STOPPED | TRACED) != 0 {
            Leaving::Sleep('T')
        } else if prev_state & PARKED != 0 {
            Leaving::Sleep('P')
        } else {
            Leaving::Runnable
        }
    }
}

/// The context a wakeup ran in (`common_flags` of `sched_waking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakerContext {
    /// A task: `common_pid` is the waker.
    Task,
    /// A softirq (e.g. block I/O completion), on top of whatever ran.
    SoftIrq,
    /// A hard interrupt.
    HardIrq,
    /// An NMI.
    Nmi,
}

impl WakerContext {
    /// From `common_flags` (TRACE_FLAG_HARDIRQ 0x08, TRACE_FLAG_SOFTIRQ
    /// 0x10, TRACE_FLAG_NMI 0x40 in kernel/trace/trace.h).
    pub fn from_flags(flags: u64) -> WakerContext {
        if flags & 0x40 != 0 {
            WakerContext::Nmi
        } else if flags & 0x08 != 0 {
            WakerContext::HardIrq
        } else if flags & 0x10 != 0 {
            WakerContext::SoftIrq
        } else {
            WakerContext::Task
        }
    }
}

/// One decoded scheduler event. Borrowed text lives in the trace record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedEvent<'a> {
    /// `sched_switch`: `prev` leaves the CPU, `next` gets it.
    Switch {
        /// Timestamp, CLOCK_MONOTONIC ns.
        ts_ns: u64,
        /// Leaving task.
        prev_pid: i32,
        /// Its comm.
        prev_comm: &'a str,
        /// Its state (see [`state`]).
        prev_state: u64,
        /// Arriving task.
        next_pid: i32,
        /// Its comm.
        next_comm: &'a str,
        /// The leaving task's kernel stack, innermost first, when the stack
        /// trigger fired (sleeps of followed tasks).
        stack: Option<Vec<Frame>>,
    },
    /// `sched_waking`: `pid` is being woken by the current context.
    Waking {
        /// Timestamp.
        ts_ns: u64,
        /// Woken task.
        pid: i32,
        /// The task current when the wakeup ran (`common_pid`).
        waker_pid: i32,
        /// Interrupt or task context.
        context: WakerContext,
        /// The waker's stack, innermost first, when recorded.
        waker_stack: Option<Vec<Frame>>,
    },
    /// `sched_wakeup_new`: a new task is first made runnable.
    WakeupNew {
        /// Timestamp.
        ts_ns: u64,
        /// The new task.
        pid: i32,
    },
    /// `sched_process_fork`: a task (or thread) was created.
    Fork {
        /// Timestamp.
        ts_ns: u64,
        /// Creator.
        parent_pid: i32,
        /// New task.
        child_pid: i32,
        /// Its comm.
        child_comm: &'a str,
    },
    /// `sched_process_exit`: a task is exiting.
    Exit {
        /// Timestamp.
        ts_ns: u64,
        /// The task.
        pid: i32,
    },
    /// `sched_stat_runtime`: the task ran for `runtime_ns` up to now (at
    /// a tick, or as it leaves the CPU, just before its switch-out).
    Runtime {
        /// Timestamp.
        ts_ns: u64,
        /// The task.
        pid: i32,
        /// CPU time since the last such event or its switch-in, ns.
        runtime_ns: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prev_state_letters() {
        assert_eq!(Leaving::from_state(0), Leaving::Runnable);
        assert_eq!(Leaving::from_state(0x100), Leaving::Runnable); // R+ (preempted)
        assert_eq!(Leaving::from_state(1), Leaving::Sleep('S'));
        assert_eq!(Leaving::from_state(2), Leaving::Sleep('D'));
        assert_eq!(Leaving::from_state(0x80), Leaving::Sleep('I'));
        assert_eq!(Leaving::from_state(0x10), Leaving::Dead);
        assert_eq!(Leaving::from_state(0x20), Leaving::Dead);
    }

    #[test]
    fn flags_give_context() {
        assert_eq!(WakerContext::from_flags(0x01), WakerContext::Task);
        assert_eq!(WakerContext::from_flags(0x11), WakerContext::SoftIrq);
        assert_eq!(WakerContext::from_flags(0x09), WakerContext::HardIrq);
        assert_eq!(WakerContext::from_flags(0x48), WakerContext::Nmi);
    }
}
