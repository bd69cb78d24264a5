//! Guard errors: each carries the path or resource and what would be right.

use std::path::PathBuf;

use iolab_sys::UsageError;

/// Why a change could not be made or undone.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The request itself was wrong (unknown scheduler, missing device).
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// Another live iolab process is changing the same resource.
    #[error("{resource} is being changed by another iolab run (pid {holder}); wait for it to finish or use another device")]
    Busy {
        /// The contended resource, e.g. `block-loop3`.
        resource: String,
        /// Pid recorded in the lock file, 0 if unknown.
        holder: i32,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// What was being accessed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An external command (losetup, mkfs) failed.
    #[error("{command} failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A journal line could not be parsed.
    #[error("journal {path} is damaged at line {line}: {why}")]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The parse error.
        why: String,
    },
}

impl GuardError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        GuardError::Io {
            path: path.into(),
            source,
        }
    }
}

impl From<iolab_sys::SysError> for GuardError {
    fn from(e: iolab_sys::SysError) -> Self {
        match e {
            iolab_sys::SysError::Io { path, source } => GuardError::Io { path, source },
            other => GuardError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other(other.to_string()),
            },
        }
    }
}
