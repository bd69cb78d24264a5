//! Experiments: the built-in targets, launching and timing a target, the
//! startup matrix (schedulers × workloads × repetitions) and the scheduler
//! sweep (seed 002's throughput comparison).

pub mod launch;
pub mod pressure;
pub mod startup;
pub mod sweep;

/// Built-in targets: `iolab probe` and `iolab app`.
pub mod target;
