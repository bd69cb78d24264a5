//! Scheduling latency of every task, from the kernel's `sched_*`
//! tracepoints: the analysis behind `iolab sched record|report|compare`.
//!
//! For each task (`comm:tid`) it measures run time, switches and every
//! wait for a CPU, split into
//! - **wakeup delay**: `sched_wakeup` → switched in (what `perf sched
//!   latency` calls delay, and the seed's "became eligible to run → started
//!   running"), and
//! - **preemption delay**: switched out while runnable (`prev_state` R or
//!   R+) → switched in again,
//!
//! keeping every raw sample so that any statistic (average, median, p99,
//! min, max, standard deviation, time of the maximum, log2 histograms) and
//! any selection or grouping is derived exactly. With workqueue events it
//! also attributes a worker's delay to the work function it then ran, and
//! measures work items from queueing to execution.
//!
//! Pipeline: trace file ([`source`]) → decoded events ([`decode`],
//! [`event`]) → [`analyze::Analyzer`] → [`analyze::Analysis`] →
//! [`report::rows`] / [`compare`] → [`table`], [`hist`] or JSON.
//!
//! # Definitions, and where they differ from `perf sched latency`
//!
//! Same as perf: a wakeup delay runs from `sched_wakeup` (or
//! `sched_wakeup_new`) of a sleeping task to its switch in; a preemption
//! delay from a switch out in a runnable state to the next switch in; a
//! wakeup of a task already runnable or running is ignored; "Max delay
//! start/end" are the two ends of the longest; the idle task is not a task.
//! Different, on purpose:
//! - **Split**: iolab reports wakeup and preemption delays separately
//!   (Wakeups/Preempts columns, `--delay`) besides perf's combined "Avg
//!   delay", plus median, p99 and stddev; every raw sample is kept.
//! - **R+**: perf before 6.9 decodes `prev_state` by indexing a string with
//!   the raw value, so an in-kernel preemption (R+, 0x100) does not start a
//!   wait there; iolab counts it (and marks the sample `kernel_preempt`).
//! - **Unknown start**: perf books a 0 ms delay (and a switch) for a task
//!   first seen switching in; iolab books nothing and counts it in
//!   [`Counters::unknown_start`].
//! - **Switches**: perf's column counts its delay samples; iolab's counts
//!   every switch in seen (samples are Wakeups + Preempts).
//! - **Runtime**: perf sums `sched_stat_runtime` (fair-class tasks only);
//!   iolab sums switch in → switch out for every class (a task running
//!   when the trace starts counts from its CPU's first event).
//! - **Grouping**: perf merges tasks of the same name unless `-p`; iolab
//!   reports per task unless `--by-comm`, which also normalises instance
//!   numbers ([`group`]).
//! - **Names**: iolab shows the kernel's `comm` from the events (no
//!   workqueue suffix: `kworker/u8:2`, where perf's /proc-based name is
//!   `kworker/u8:2-events_unbound`).
//! - **Gaps**: a switch the kernel did not trace, or lost events, drop the
//!   pending delay in both; iolab counts them ([`Counters`]) and prints the
//!   lost-event count with every output.
//! - **Clock**: CLOCK_MONOTONIC (perf's default is its own clock unless
//!   `-k CLOCK_MONOTONIC`).
//! - `--from waking` starts wakeup delays at `sched_waking` instead
//!   (Perfetto's definition), which perf does not offer.
#![deny(missing_docs)]

pub mod analyze;
pub mod bpf;
pub mod compare;
pub mod decode;
pub mod event;
pub mod group;
pub mod hist;
pub mod report;
pub mod source;
pub mod summary;
pub mod table;
pub mod task;
pub mod text;
pub mod work;

#[cfg(test)]
mod analyze_tests;

pub use analyze::{Analysis, Analyzer, Counters, WakeFrom};
pub use event::{PrevState, SchedEvent, Tid, Timed};
pub use report::{rows, DelaySelect, Row, Selection, SortKey};
pub use source::{analyze_file, session_config, start_recording, Loaded, RecordOptions};
pub use summary::DelaySummary;
pub use task::{DelayKind, DelaySample, TaskStats};
pub use work::{Symbols, WorkSample, WorkStats};

/// Errors of the scheduling-latency analysis.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    /// Bad input from the user (exit code 2): the text says what would be
    /// right.
    #[error("{0}")]
    Usage(#[from] iolab_sys::UsageError),
    /// Recording or reading the trace failed (a file that is not a trace
    /// is the trace crate's usage error).
    #[error(transparent)]
    Trace(#[from] iolab_trace::TraceError),
}

impl SchedError {
    /// A usage error saying `msg`.
    pub(crate) fn usage(msg: impl Into<String>) -> SchedError {
        SchedError::Usage(iolab_sys::UsageError::new(msg))
    }
}
