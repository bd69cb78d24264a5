//! Trace errors: each carries the path or event and what would be right.

use std::path::{Path, PathBuf};

use iolab_guard::GuardError;
use iolab_sys::UsageError;

/// Why a trace session, a format file or a trace file failed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The request itself was wrong (unknown event, a filter the kernel
    /// refused, a file that is not an iolab trace file): exit code 2.
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// The guard could not create or remove the instance.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// A tracefs, procfs or trace file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// What was being accessed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A kernel text file (format, header_page, kallsyms, stats) did not
    /// look as documented.
    #[error("{path}: cannot parse {text:?}: {why}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The offending text (one line or field).
        text: String,
        /// What was expected.
        why: String,
    },
}

impl TraceError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TraceError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn parse(path: impl Into<PathBuf>, text: &str, why: impl Into<String>) -> Self {
        TraceError::Parse {
            path: path.into(),
            text: text.chars().take(200).collect(),
            why: why.into(),
        }
    }

    /// A trace file is not one `iolab` wrote, or is damaged: the user
    /// named the wrong file.
    pub(crate) fn file(path: &Path, why: impl std::fmt::Display) -> Self {
        TraceError::Usage(UsageError::new(format!(
            "{}: not a readable iolab trace file: {why}",
            path.display()
        )))
    }

    /// The kernel refused an event setting (filter, trigger, pid list)
    /// written to `path`; `why` is its error (and its `error_log` line when
    /// there is one).
    pub(crate) fn refused(path: &Path, value: &str, why: impl std::fmt::Display) -> Self {
        TraceError::Usage(UsageError::new(format!(
            "{}: the kernel refused {value:?}: {why}",
            path.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_setting_and_a_foreign_file_are_usage_errors() {
        let e = TraceError::refused(
            Path::new("/t/events/sched/filter"),
            "no_field == 1",
            "Invalid argument",
        );
        assert!(iolab_sys::is_usage(&e));
        assert_eq!(
            e.to_string(),
            "/t/events/sched/filter: the kernel refused \"no_field == 1\": Invalid argument"
        );
        let e = TraceError::file(Path::new("x.trace"), "no START section");
        assert!(iolab_sys::is_usage(&e));
        assert_eq!(
            e.to_string(),
            "x.trace: not a readable iolab trace file: no START section"
        );
        let io = TraceError::io("/t/trace_pipe_raw", std::io::Error::other("EIO"));
        assert!(!iolab_sys::is_usage(&io));
    }
}
