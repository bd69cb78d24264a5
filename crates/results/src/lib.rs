//! The results types: what a stored experiment is made of.
//!
//! Experiments (`iolab-experiment`) write these; the store keeps them; the
//! report (`iolab-report`) reads them. Neither side names a kind by a bare
//! string, and the report never depends on the code that ran the
//! experiment: a database written by one iolab is read by another through
//! this vocabulary alone.
//!
//! - [`ExperimentKind`]: `startup`, `sweep`, `sweep-max`, and where each
//!   stores its configuration;
//! - [`ArtifactKind`] and [`ArtifactDoc`]: the documents a run carries
//!   beside its time (block latency histograms, CPU series, attributions);
//! - [`sweep`]: the access kinds and numjobs/iodepth patterns of sweep
//!   cells, and their workload names;
//! - [`max::MaxPoint`]: what one point of `sweep --max` measured;
//! - [`prefetch`]: the prefetch modes and the run variants they name;
//! - [`variant`]: a run's variant split into its plan point and prefetch;
//! - [`boot`]: the boot variants `iolab boot` compares, one registry.
#![deny(missing_docs)]

mod artifact;
pub mod boot;
mod kind;
pub mod max;
pub mod prefetch;
pub mod sweep;
pub mod variant;

pub use artifact::{ArtifactDoc, ArtifactKind};
pub use kind::ExperimentKind;
