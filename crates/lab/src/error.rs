//! Lab errors: each says what was wrong and, where it can, what to do.

use std::path::PathBuf;

use iolab_guard::GuardError;
use iolab_sys::{SysError, UsageError};

/// Why a lab could not be created, found, inspected or removed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The request was wrong (bad flags, existing name, no room).
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// A change to system state failed (or was refused as bad usage).
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// A kernel interface could not be read.
    #[error(transparent)]
    Sys(#[from] SysError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// What was being accessed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A lab's metadata file does not hold what iolab wrote.
    #[error("lab metadata {path} is damaged: {why}; `iolab lab down NAME` still removes the lab")]
    Meta {
        /// The metadata file.
        path: PathBuf,
        /// The parse error.
        why: String,
    },
    /// Another live process holds the lab's journal (e.g. a concurrent
    /// `iolab lab down`).
    #[error("lab {name:?} is in use by iolab pid {holder}: wait for it to finish and try again")]
    InUse {
        /// Lab name.
        name: String,
        /// Pid holding the journal's lock, `?` if unknown.
        holder: String,
    },
    /// Ctrl-C or SIGTERM arrived while the lab was being made.
    #[error("interrupted: the half-made lab is being undone")]
    Interrupted,
}

impl LabError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LabError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn usage(msg: impl Into<String>) -> Self {
        LabError::Usage(UsageError::new(msg))
    }
}
