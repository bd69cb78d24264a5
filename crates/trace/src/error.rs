//! Trace errors: each carries the path or event and what would be right.

use std::path::PathBuf;

use iolab_guard::GuardError;
use iolab_sys::UsageError;

/// Why a trace session, a format file or a trace file failed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The request itself was wrong (unknown event, bad filter): exit code 2.
    #[error(transparent)]
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
    /// A trace file is not one `iolab` wrote, or is damaged.
    #[error("{path}: not a readable iolab trace file: {why}")]
    File {
        /// The trace file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The kernel refused an event setting (filter, trigger, pid list).
    #[error("{path}: the kernel refused {value:?}: {why}")]
    Refused {
        /// The tracefs file written.
        path: PathBuf,
        /// What was written.
        value: String,
        /// The kernel's error (and its `error_log` line when there is one).
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

    pub(crate) fn file(path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        TraceError::File {
            path: path.into(),
            why: why.into(),
        }
    }

    /// True for mistakes in the user's input (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            TraceError::Usage(_) | TraceError::Refused { .. } => true,
            TraceError::Guard(g) => g.is_usage(),
            _ => false,
        }
    }
}
