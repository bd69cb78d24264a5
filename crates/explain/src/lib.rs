//! Where did the time go: a task tree's wall time as on-CPU time, runnable
//! wait and blocked time by named kernel cause (`iolab explain`, and the
//! `explain` artifact of experiment runs).
//!
//! Seed 000 found its causes (jbd2 `start_this_handle`, dirty throttling,
//! `i_data_sem` in `ext4_map_blocks`, `do_get_write_access` on a shadow
//! buffer) by printk-instrumenting a kernel. This crate finds them on a
//! stock kernel: one private trace session ([`iolab_trace`]) follows the
//! target's tasks (`set_event_pid` + `event-fork`) and records
//!
//! - `sched_switch`, with a `stacktrace` trigger on switch-outs into a
//!   sleep (`prev_state & SLEEP_MASK`): the sleeping task's kernel stack;
//! - `sched_waking` (runs in the waker's context: the waker and, with a
//!   second trigger, its stack), `sched_wakeup_new`;
//! - `sched_process_fork` / `sched_process_exit` to follow children.
//!
//! [`timeline::Tracker`] turns them into phases and stalls (switch-out →
//! wakeup → switch-in), [`rules::RuleSet`] (a data file, first match wins)
//! names each stall's cause from its stack, and [`Attribution`] is the
//! result, with [`Attribution::diff`] for comparing runs.
//!
//! The pid filter cannot restrict the stack trigger to followed tasks (a
//! trigger filter has no pid-set test), so switch-outs of other tasks that
//! hand the CPU to a followed one carry a stack too; they are dropped
//! here. Their cost is measured in docs/PERFORMANCE.md.
#![deny(missing_docs)]

pub mod attribution;
pub mod bpf;
mod decode;
pub mod event;
mod explainer;
pub mod pattern;
pub mod procfs;
pub mod report;
pub mod rules;
pub mod stacks;
mod summary;
pub mod timeline;
mod wakers;

pub use attribution::{
    describe_diff, Attribution, CauseDelta, CauseTime, MainThread, Stall, StateSpan, StateSplit,
    ThreadState, Totals,
};
pub use decode::Decoder;
pub use explainer::{ExplainError, Explainer, ExplainerConfig};
pub use rules::{Kind, RuleError, RuleSet};
