//! The iolab results store: every experiment, every run's full
//! configuration and raw sample (censored ones included), and the
//! environment, in one SQLite file; statistics derived from the raw samples;
//! exporters and the terminal table.
//!
//! Why SQLite: embedded (no server), one file to copy or attach to a bug
//! report, transactional (a run is either fully recorded or not at all), and
//! queryable by hand with `sqlite3` when iolab's views are not enough.
//!
//! Data flow: [`Store`] (rows) → [`ExperimentReport`] (runs grouped into
//! cells, statistics from `iolab-stats`) → [`export`] (JSON, CSV) and
//! [`render`] (the workload × scheduler table).
#![deny(missing_docs)]

pub mod compare;
mod error;
mod import;
mod report;
pub mod schema;
mod store;
mod stored;
#[cfg(any(test, feature = "test-util"))]
pub mod testutil;
mod time;

pub use error::StoreError;
pub use import::{ImportAction, ImportFrom, Imported};
pub use report::{
    cells_from_runs, CellReport, ExperimentReport, FailedRun, FAILED_SHARE_FLAG, IDLE_WORKLOAD,
};
pub use store::{default_db_path, Store};
pub use stored::{
    Artifact, BackgroundIo, Experiment, ExperimentId, ExperimentSummary, RunId, RunKey, RunOutcome,
    RunRecord, Status,
};
pub use time::{rfc3339, rfc3339_now};
