//! Experiments: one engine ([`engine`]) with three bodies on it — the
//! startup matrix ([`startup`]: schedulers × workloads × repetitions of a
//! target's start), seed 002's sweep and seed 003's maximum-throughput
//! sweep ([`sweep`]) — the places they run on ([`place`]), the collectors
//! that observe their runs ([`collect`]), the targets a startup starts
//! ([`target`]) and how one is launched and timed ([`launch`]); and
//! `iolab load`'s session ([`load_session`]: a load with the guard and
//! the collectors, which the load crate does without).

pub mod app_process;
pub mod boot;
pub mod control;
pub use iolab_collect as collect;
pub mod engine;
mod error;
pub mod launch;
mod leftover;
pub mod load_session;
pub mod place;
pub mod pressure;
pub mod probe;
mod schedulers;
pub mod startup;
pub mod sweep;
pub mod targets;

pub use error::{to_json, ExperimentError};
pub use schedulers::Schedulers;
