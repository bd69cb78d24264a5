//! Errors of the results store. Messages name the database file and say what
//! to do; [`StoreError::is_usage`] marks the ones the user can fix (exit 2).

use std::path::PathBuf;

use crate::stored::ExperimentId;

/// A results-store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file could not be opened or initialised.
    #[error("cannot use results database {path}: {source}; choose a writable file with --db PATH")]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The database's directory could not be created.
    #[error(
        "cannot create {path} for the results database: {source}; \
         choose a writable location with --db PATH"
    )]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The database was written by a newer iolab.
    #[error(
        "{path} has schema version {found} but this iolab knows only up to {known}: \
         upgrade iolab or pass another --db PATH"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// No experiment has this id.
    #[error("no experiment {id} in {path}: `iolab results list` shows the ids")]
    NoSuchExperiment {
        /// The id asked for.
        id: ExperimentId,
        /// The database file.
        path: PathBuf,
    },
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
    /// The user asked for something that cannot be done as asked.
    #[error("{0}")]
    Usage(String),
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
    /// True for errors the user fixes by changing the command line (a
    /// different `--db`, an existing id): the binary exits with code 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            StoreError::Open { .. }
                | StoreError::CreateDir { .. }
                | StoreError::NewerSchema { .. }
                | StoreError::NoSuchExperiment { .. }
                | StoreError::Usage(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_file_and_the_fix() {
        let e = StoreError::CreateDir {
            path: "/nope/dir".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let msg = e.to_string();
        assert!(
            msg.contains("/nope/dir") && msg.contains("--db PATH"),
            "{msg}"
        );
        assert!(e.is_usage());
        let missing = StoreError::NoSuchExperiment {
            id: ExperimentId(9),
            path: "r.db".into(),
        };
        assert!(missing.is_usage() && missing.to_string().contains("results list"));
        let corrupt = StoreError::Corrupt {
            path: "r.db".into(),
            what: "x".into(),
        };
        assert!(!corrupt.is_usage());
    }
}
