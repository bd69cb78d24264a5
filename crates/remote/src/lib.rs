//! Running iolab where the problem lives: a board over ssh, a phone over
//! adb. The device gets the matching static binary once (cached by hash),
//! runs the experiment as root with its own guard (so a dropped
//! connection leaves it restored and the run resumable), and its results
//! database comes back as a consistent snapshot for `results import`.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

pub mod binary;
pub mod host;
pub mod quote;
pub mod transport;

pub use host::{RemoteHost, Root};
pub use transport::{Adb, Ssh, Transport};

/// Why a remote operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The user asked for something that cannot work as asked.
    #[error("{0}")]
    Usage(#[from] iolab_sys::UsageError),
    /// A local file could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The device refused or the connection failed.
    #[error("{via}: {what}: {why}")]
    Remote {
        /// `ssh root@board`, `adb SERIAL`.
        via: String,
        /// What was being done.
        what: String,
        /// What went wrong.
        why: String,
    },
}

impl RemoteError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> RemoteError {
        RemoteError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An error the user fixes by changing the command line, saying `msg`.
    pub(crate) fn usage(msg: impl Into<String>) -> RemoteError {
        RemoteError::Usage(iolab_sys::UsageError::new(msg))
    }
}
