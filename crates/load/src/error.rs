//! Errors of the workload engine. Each carries where (file and line, job,
//! path) and what would be right; the user's input is a
//! [`LoadError::Usage`] (exit code 2 in the binary).

use std::path::PathBuf;

use iolab_sys::UsageError;

/// Where an option came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A job file, 1-based line.
    File {
        /// The job file.
        path: PathBuf,
        /// Line number, from 1.
        line: usize,
    },
    /// A command-line flag.
    Flag,
    /// A named workload.
    Named(String),
}

/// Why a load could not be prepared or run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The request cannot be done as asked (bad flag, unsafe target, not
    /// enough free space), or a job file could not be parsed or holds an
    /// unsupported option or a bad value (`FILE:LINE: why`).
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// A file or device could not be opened, created or laid out.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A worker could not start (io_uring unavailable, priority refused).
    #[error("job {job}: {why}")]
    Setup {
        /// The job name.
        job: String,
        /// What failed.
        why: String,
    },
    /// Ctrl-C (or SIGTERM) arrived before the load started.
    #[error("interrupted while {what}")]
    Interrupted {
        /// What was being done.
        what: String,
    },
    /// The guard refused or failed a change (scheduler switch).
    #[error(transparent)]
    Guard(#[from] iolab_guard::GuardError),
    /// The installed fio (`--with-fio`) gave no report.
    #[error("{0}")]
    Fio(String),
}

impl LoadError {
    /// Builds the error for an option at `origin`.
    pub fn at(origin: &Origin, why: impl Into<String>) -> LoadError {
        let why = why.into();
        match origin {
            Origin::File { path, line } => {
                LoadError::Usage(UsageError::new(format!("{}:{line}: {why}", path.display())))
            }
            Origin::Flag => LoadError::Usage(UsageError::new(why)),
            Origin::Named(name) => {
                LoadError::Usage(UsageError::new(format!("workload {name}: {why}")))
            }
        }
    }

    /// An I/O failure on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> LoadError {
        LoadError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn usage(msg: impl Into<String>) -> LoadError {
        LoadError::Usage(UsageError::new(msg))
    }
}
