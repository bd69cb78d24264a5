//! The one error type of the experiment layer: every failure of a
//! startup, sweep or max sweep (and of the engine under them). Bad input
//! (exit code 2) is a `UsageError` in its source chain
//! (`iolab_sys::is_usage`); anything else is a failure (1).

use iolab_sys::UsageError;

/// Why an experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// Bad input.
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// A kernel interface failed.
    #[error(transparent)]
    Sys(#[from] iolab_sys::SysError),
    /// A guarded change failed.
    #[error(transparent)]
    Guard(#[from] iolab_guard::GuardError),
    /// The lab (or a run's filesystem) failed.
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
    /// A collector failed.
    #[error(transparent)]
    Collect(#[from] iolab_collect::CollectError),
    /// A result could not be turned into the JSON it is stored as.
    #[error("could not serialise {what}: {source}")]
    Serialise {
        /// What was being stored.
        what: String,
        /// serde's reason.
        source: serde_json::Error,
    },
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
}

impl ExperimentError {
    /// A serialisation failure of `what`.
    pub fn serialise(what: impl Into<String>) -> impl FnOnce(serde_json::Error) -> ExperimentError {
        let what = what.into();
        move |source| ExperimentError::Serialise { what, source }
    }
}

/// `serde_json::to_value`, its failure named.
pub fn to_json<T: serde::Serialize + ?Sized>(
    what: &str,
    v: &T,
) -> Result<serde_json::Value, ExperimentError> {
    serde_json::to_value(v).map_err(ExperimentError::serialise(what))
}
