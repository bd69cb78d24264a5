//! Errors of the page-cache crate: each carries the path or the offending
//! text, and says what would have been right.

use std::path::PathBuf;

use iolab_sys::UsageError;

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
    /// A file or directory named by the user does not exist (`path: why`);
    /// apart from [`CacheError::Usage`] so the binary can say what it
    /// expected.
    #[error("{0}")]
    Missing(#[source] UsageError),
    /// The request cannot be done as asked, or a prefetch list is not in
    /// the expected format (exit code 2 in the binary).
    #[error("{0}")]
    Usage(#[from] UsageError),
}

impl CacheError {
    /// Wraps an I/O error with the path it concerns: a path that does not
    /// exist is the user's to fix ([`CacheError::Missing`]), any other
    /// failure the system's.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        match source.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
                CacheError::Missing(UsageError::new(format!("{}: {source}", path.display())))
            }
            _ => CacheError::Io { path, source },
        }
    }

    /// A usage error saying `msg`.
    pub fn usage(msg: impl Into<String>) -> Self {
        CacheError::Usage(UsageError::new(msg))
    }

    /// Line `line` (from 1) of the prefetch list from `origin` (a file name
    /// or `-` for stdin), `text`, is not in the expected format: `why`.
    pub fn list(origin: &str, line: usize, text: &str, why: &str) -> Self {
        CacheError::usage(format!(
            "{origin}:{line}: {why}: {text:?} (expected `FILE` or `FILE off:len,off:len,...` in bytes)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_path_that_does_not_exist_is_the_users_to_fix() {
        let missing = CacheError::io("/no/such", std::io::ErrorKind::NotFound.into());
        assert!(matches!(missing, CacheError::Missing(_)));
        assert!(iolab_sys::is_usage(&missing));
        let denied = CacheError::io("/root/x", std::io::ErrorKind::PermissionDenied.into());
        assert!(!iolab_sys::is_usage(&denied));
        // The same text either way: `path: why`.
        assert!(missing.to_string().starts_with("/no/such: "), "{missing}");
        assert!(denied.to_string().starts_with("/root/x: "), "{denied}");
    }
}
