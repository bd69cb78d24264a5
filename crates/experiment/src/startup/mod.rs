//! The startup matrix behind `iolab startup` and `iolab demo`: schedulers ×
//! workloads × repetitions for one target, every start stored as it ends.

mod background;
mod cell;
mod cold;
pub mod config;
pub mod observe;
pub mod place;
pub mod plan;
pub mod prefetch;
mod progress;
pub mod run;
mod setup;

pub use cell::last_lines;
pub use config::{Cold, Place, ReadyWhen, StartupConfig};
pub use observe::Observe;
pub use prefetch::{PrefetchConfig, PrefetchMode, PrefetchSource};
pub use run::{run_startup, Finished, RunOptions};

/// Why an experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// Bad input.
    #[error(transparent)]
    Usage(#[from] iolab_sys::UsageError),
    /// A kernel interface failed.
    #[error(transparent)]
    Sys(#[from] iolab_sys::SysError),
    /// A guarded change failed.
    #[error(transparent)]
    Guard(#[from] iolab_guard::GuardError),
    /// The lab failed.
    #[error(transparent)]
    Lab(#[from] iolab_lab::LabError),
    /// The load failed.
    #[error(transparent)]
    Load(#[from] iolab_load::LoadError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] iolab_store::StoreError),
    /// The target could not be launched.
    #[error(transparent)]
    Launch(#[from] crate::launch::LaunchError),
    /// A prefetch list could not be read or read in.
    #[error(transparent)]
    Cache(#[from] iolab_cache::CacheError),
    /// Recording the prefetch list failed.
    #[error(transparent)]
    Record(#[from] iolab_record::RecordError),
    /// Block tracing (`--trace bio`) failed.
    #[error(transparent)]
    Bio(#[from] iolab_bio::BioError),
    /// Attribution (`--explain`) failed.
    #[error(transparent)]
    Explain(#[from] iolab_explain::ExplainError),
}

impl StartupError {
    /// True for mistakes in the user's input (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            StartupError::Usage(_) => true,
            StartupError::Guard(e) => e.is_usage(),
            StartupError::Lab(e) => e.is_usage(),
            StartupError::Store(e) => e.is_usage(),
            StartupError::Load(e) => e.is_usage(),
            StartupError::Launch(e) => {
                matches!(e, crate::launch::LaunchError::Spawn(e) if e.is_usage())
            }
            StartupError::Cache(e) => e.is_usage(),
            StartupError::Record(e) => e.is_usage(),
            StartupError::Bio(e) => e.is_usage(),
            StartupError::Explain(e) => e.is_usage(),
            StartupError::Sys(_) => false,
        }
    }
}
