//! How a collector fails: the error of the layer it drives, or its own,
//! and whether it is the user's to fix (exit 2).

use iolab_sys::UsageError;

/// A collector's failure.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// Bad input.
    #[error(transparent)]
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
        /// True when the cause is the user's input or machine (exit 2).
        usage: bool,
        /// What failed.
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
    /// True for mistakes in the user's input (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            CollectError::Usage(_) => true,
            CollectError::Guard(e) => e.is_usage(),
            CollectError::Bio(e) => e.is_usage(),
            CollectError::Explain(e) => e.is_usage(),
            CollectError::Collector { usage, .. } => *usage,
            CollectError::Sys(_) | CollectError::Serialise { .. } => false,
        }
    }

    /// A failure of collector `name`; `usage` when it is the user's to
    /// fix (exit 2).
    pub fn collector(
        name: &'static str,
        usage: bool,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> CollectError {
        CollectError::Collector {
            name,
            usage,
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
