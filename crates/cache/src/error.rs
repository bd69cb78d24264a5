//! Errors of the page-cache crate: each carries the path or the offending
//! text, and says what would have been right.

use std::path::PathBuf;

/// Something the cache or prefetch code could not do.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// A file or directory named by the user could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line of a prefetch list is not in the expected format.
    #[error(
        "{origin}:{line}: {why}: {text:?} (expected `FILE` or `FILE off:len,off:len,...` in bytes)"
    )]
    List {
        /// Where the list came from (a file name or `-` for stdin).
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The offending line.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// The request cannot be done as asked (exit code 2 in the binary).
    #[error("{0}")]
    Usage(String),
}

impl CacheError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CacheError::Io {
            path: path.into(),
            source,
        }
    }

    /// True when the user's input was wrong (bad list, bad path) rather
    /// than the system failing.
    pub fn is_usage(&self) -> bool {
        match self {
            CacheError::List { .. } | CacheError::Usage(_) => true,
            CacheError::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ),
        }
    }
}

impl From<iolab_sys::UsageError> for CacheError {
    fn from(e: iolab_sys::UsageError) -> Self {
        CacheError::Usage(e.0)
    }
}
