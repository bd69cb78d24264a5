//! Errors of the recorder: each says what failed and, for bad input, what
//! would be right.

use std::path::PathBuf;

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Bad input (exit code 2).
    #[error("{0}")]
    Usage(#[from] iolab_sys::UsageError),
    /// The command could not be started.
    #[error(transparent)]
    Spawn(#[from] iolab_spawn::SpawnError),
    /// The kernel cannot do what recording needs.
    #[error("{0}")]
    Unsupported(String),
    /// The trace session failed.
    #[error(transparent)]
    Trace(#[from] iolab_trace::TraceError),
    /// A guarded change (drop_caches) failed.
    #[error(transparent)]
    Guard(#[from] iolab_guard::GuardError),
    /// A system call or file failed.
    #[error("{path}: {source}")]
    Io {
        /// What was being accessed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl RecordError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RecordError::Io {
            path: path.into(),
            source,
        }
    }
}
