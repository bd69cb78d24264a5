//! Experiments: the built-in targets, launching and timing a target, and
//! the startup matrix (schedulers × workloads × repetitions).

pub mod launch;
pub mod startup;

/// Built-in targets: `iolab probe` and `iolab app`.
pub mod target;
