//! How a collector fails: the error of the layer it drives, or its own.
//! Whether it is the user's to fix (exit 2) is a `UsageError` in its
//! source chain (`iolab_sys::is_usage`).

use iolab_sys::UsageError;

/// A collector's failure.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// Bad input.
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// A kernel interface failed.
    #[error(transparent)]
    Sys(#[from] iolab_sys::SysError),
    /// A guarded change failed.
    #[error(transparent)]
    Guard(#[from] iolab_guard::GuardError),
    /// Block tracing failed.
    #[error(transparent)]
    Bio(#[from] iolab_bio::BioError),
    /// Attribution failed.
    #[error(transparent)]
    Explain(#[from] iolab_explain::ExplainError),
    /// A collector other than those above failed.
    #[error("{name}: {source}")]
    Collector {
        /// The collector (`sched`).
        name: &'static str,
        /// What failed; the user's to fix (exit 2) when a `UsageError` is
        /// in its chain.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// What it saw could not be turned into the JSON it is stored as.
    #[error("could not serialise {what}: {source}")]
    Serialise {
        /// What was being stored.
        what: String,
        /// serde's reason.
        source: serde_json::Error,
    },
}

impl CollectError {
    /// A failure of collector `name`.
    pub fn collector(
        name: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> CollectError {
        CollectError::Collector {
            name,
            source: Box::new(source),
        }
    }

    /// A serialisation failure of `what`.
    pub fn serialise(what: impl Into<String>) -> impl FnOnce(serde_json::Error) -> CollectError {
        let what = what.into();
        move |source| CollectError::Serialise { what, source }
    }
}

/// `serde_json::to_value`, its failure named.
pub fn to_json<T: serde::Serialize + ?Sized>(
    what: &str,
    v: &T,
) -> Result<serde_json::Value, CollectError> {
    serde_json::to_value(v).map_err(CollectError::serialise(what))
}
