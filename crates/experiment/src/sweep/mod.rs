//! `iolab sweep`: seed 002's I/O scheduler comparison as one command.
//!
//! For each scheduler × sequential/random × read/write × numjobs/iodepth
//! pattern (1/1, 4/1, 1/4, 4/4; bs 1M) × repetition: a fresh filesystem,
//! dropped caches, one fio-style job through the load engine (io_uring +
//! O_DIRECT, iolab's equivalent of the seed's libaio + direct=1), the CPU
//! and pressure series around it; every run stored as it ends, then one
//! table per access kind with patterns as rows and schedulers as columns.
//!
//! Sizes are scaled to the device instead of the seed's fixed 32 GiB (see
//! [`sizing::scale`]), so the default sweep on the default lab takes minutes.

pub mod config;
pub mod max;
mod measure;
pub mod place;
pub mod plan;
mod progress;
mod record;
pub mod run;
pub mod sizing;
pub mod table;

pub use config::{SweepConfig, SweepPlace};
pub use plan::{Kind, Pattern, SEED_PATTERNS};
pub use run::{run_sweep, SweepFinished, SweepOptions};
pub use sizing::Sizing;
pub use table::{Metric, SweepTable};

/// Why a sweep could not run.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// Bad input.
    #[error(transparent)]
    Usage(#[from] iolab_sys::UsageError),
    /// A kernel interface failed.
    #[error(transparent)]
    Sys(#[from] iolab_sys::SysError),
    /// A guarded change failed.
    #[error(transparent)]
    Guard(#[from] iolab_guard::GuardError),
    /// The lab (or a run's filesystem) failed.
    #[error(transparent)]
    Lab(#[from] iolab_lab::LabError),
    /// The load failed to start.
    #[error(transparent)]
    Load(#[from] iolab_load::LoadError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] iolab_store::StoreError),
    /// A run's job failed while running (I/O error, disk full).
    #[error("run {run} failed: {why}")]
    RunFailed {
        /// scheduler, workload and repetition.
        run: String,
        /// The load engine's message.
        why: String,
    },
    /// A run's filesystem could not be unmounted.
    #[error("could not unmount a run's filesystem: {0}")]
    Unmount(String),
    /// Ctrl-C/SIGTERM stopped a run (handled inside the sweep).
    #[error("interrupted")]
    Interrupted,
}

impl SweepError {
    /// True for mistakes in the user's input (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            SweepError::Usage(_) => true,
            SweepError::Guard(e) => e.is_usage(),
            SweepError::Lab(e) => e.is_usage(),
            SweepError::Store(e) => e.is_usage(),
            SweepError::Load(e) => e.is_usage(),
            _ => false,
        }
    }
}
