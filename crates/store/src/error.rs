//! Errors of the results store. Messages name the database file and say what
//! to do; the ones the user fixes by changing the command line (a different
//! `--db`, an existing id) are [`StoreError::Usage`] (exit 2).

use std::path::{Path, PathBuf};

use iolab_sys::UsageError;

use crate::stored::ExperimentId;

/// A results-store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The same repetition was recorded twice (a resume bug).
    #[error(
        "experiment {id} already has run {scheduler}/{workload}/{target} rep {rep} \
         in {path}; a resumed experiment must skip completed runs"
    )]
    DuplicateRun {
        /// The experiment.
        id: ExperimentId,
        /// Scheduler of the run.
        scheduler: String,
        /// Workload of the run.
        workload: String,
        /// Target of the run.
        target: String,
        /// Repetition.
        rep: u32,
        /// The database file.
        path: PathBuf,
    },
    /// A query failed.
    #[error("results database {path}: {source}")]
    Sql {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// Stored data is not what this iolab expects (hand-edited database?).
    #[error("results database {path}: {what}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What is wrong, with the offending text.
        what: String,
    },
    /// The user asked for something that cannot be done as asked: a
    /// database that cannot be opened or created where `--db` points, one
    /// written by a newer iolab, an experiment id it does not hold.
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// A database to import could not be copied.
    #[error("cannot import {path}: {source}")]
    Import {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An export could not be serialized.
    #[error("cannot export as {format}: {why}")]
    Export {
        /// The format.
        format: &'static str,
        /// Why.
        why: String,
    },
}

impl StoreError {
    /// A usage error saying `msg`.
    pub(crate) fn usage(msg: impl Into<String>) -> StoreError {
        StoreError::Usage(UsageError::new(msg))
    }

    /// The database file `path` could not be opened or initialised.
    pub(crate) fn open(path: &Path, source: &rusqlite::Error) -> StoreError {
        StoreError::usage(format!(
            "cannot use results database {}: {source}; choose a writable file with --db PATH",
            path.display()
        ))
    }

    /// The database's directory `path` could not be created.
    pub(crate) fn create_dir(path: &Path, source: &std::io::Error) -> StoreError {
        StoreError::usage(format!(
            "cannot create {} for the results database: {source}; \
             choose a writable location with --db PATH",
            path.display()
        ))
    }

    /// The database `path` was written by a newer iolab: its `user_version`
    /// is `found`, the newest this build knows `known`.
    pub(crate) fn newer_schema(path: &Path, found: i64, known: i64) -> StoreError {
        StoreError::usage(format!(
            "{} has schema version {found} but this iolab knows only up to {known}: \
             upgrade iolab or pass another --db PATH",
            path.display()
        ))
    }

    /// No experiment in `path` has the id `id`.
    pub(crate) fn no_such_experiment(id: ExperimentId, path: &Path) -> StoreError {
        StoreError::usage(format!(
            "no experiment {id} in {}: `iolab results list` shows the ids",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_file_and_the_fix() {
        let e = StoreError::create_dir(
            Path::new("/nope/dir"),
            &std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        let msg = e.to_string();
        assert!(
            msg.contains("/nope/dir") && msg.contains("--db PATH"),
            "{msg}"
        );
        assert!(iolab_sys::is_usage(&e));
        let missing = StoreError::no_such_experiment(ExperimentId(9), Path::new("r.db"));
        assert!(iolab_sys::is_usage(&missing) && missing.to_string().contains("results list"));
        let corrupt = StoreError::Corrupt {
            path: "r.db".into(),
            what: "x".into(),
        };
        assert!(!iolab_sys::is_usage(&corrupt));
    }
}
