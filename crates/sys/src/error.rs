//! Error types shared by the library crates.

use std::path::PathBuf;

/// A kernel interface could not be read or parsed. Carries the path and the
/// offending text so the user can look for themselves.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file's content was not in the expected format.
    #[error("{path}: cannot parse {text:?}: {why}")]
    Parse {
        /// The file that held the text.
        path: PathBuf,
        /// The text that did not parse.
        text: String,
        /// What was expected.
        why: String,
    },
}

impl SysError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SysError::Io {
            path: path.into(),
            source,
        }
    }
}

/// The user asked for something that cannot be done as asked: the message
/// says what was wrong and what would be right. The binary maps any error
/// whose chain contains a `UsageError` to exit code 2 ([`is_usage`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl UsageError {
    /// Builds a usage error from anything printable.
    pub fn new(msg: impl Into<String>) -> Self {
        UsageError(msg.into())
    }
}

/// True when `err` or an error in its `source()` chain is a [`UsageError`]:
/// the one place "the user's input was wrong" (exit code 2) is decided.
/// Error types state it by carrying a `UsageError` as the source of their
/// usage variants (not `#[error(transparent)]`, which would skip it), so no
/// type keeps its own list.
pub fn is_usage(err: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(err), |e| e.source()).any(|e| e.is::<UsageError>())
}

/// Reads a sysfs/procfs file and trims the trailing newline.
pub fn read_trimmed(path: &std::path::Path) -> Result<String, SysError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim_end().to_string())
        .map_err(|e| SysError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Wrapper {
        #[error("{0}")]
        Usage(#[from] UsageError),
        #[error(transparent)]
        Hidden(UsageError),
        #[error("reading: {0}")]
        Sys(#[from] SysError),
    }

    #[test]
    fn a_usage_error_anywhere_in_the_chain_is_usage() {
        let u = UsageError::new("no such scheduler");
        assert!(is_usage(&u));
        assert!(is_usage(&Wrapper::Usage(u.clone())));
        // `transparent` forwards `source()` past the inner error itself.
        assert!(!is_usage(&Wrapper::Hidden(u)));
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert!(!is_usage(&Wrapper::Sys(SysError::io("/x", io))));
    }
}
