//! What the store holds: experiments and their runs. Every serialized field
//! is documented here, so these structs also document the JSON export.

use std::fmt;
use std::str::FromStr;

use iolab_results::{ArtifactKind, ExperimentKind};
use iolab_sys::UsageError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Identifier of an experiment (`iolab results show ID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExperimentId(pub i64);

impl fmt::Display for ExperimentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for ExperimentId {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, UsageError> {
        match s.trim().parse::<i64>() {
            Ok(id) if id > 0 => Ok(ExperimentId(id)),
            _ => Err(UsageError::new(format!(
                "experiment id must be a positive integer such as 3 \
                 (`iolab results list` shows them), got {s:?}"
            ))),
        }
    }
}

/// Identifier of a recorded run (the database row), returned by
/// [`crate::Store::record_run`] so documents can be attached to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

/// A document attached to a run (see [`crate::Store::add_artifact`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// The run it belongs to.
    pub run_id: RunId,
    /// Scheduler of that run.
    pub scheduler: String,
    /// Workload of that run.
    pub workload: String,
    /// Target of that run.
    pub target: String,
    /// Repetition of that run.
    pub rep: u32,
    /// Variant of that run (see [`RunRecord::variant`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// What the document is: `latency_hist`, `cpu`, `psi`, `explain`, ...
    pub kind: ArtifactKind,
    /// The document, raw samples included.
    pub json: Value,
}

/// Lifecycle of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Still running (or crashed: see [`Experiment::status`]).
    Running,
    /// Every planned run finished.
    Done,
    /// Stopped early (Ctrl-C, SIGTERM, crash); `--resume ID` continues it.
    Interrupted,
}

impl Status {
    /// The word stored in the database and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Done => "done",
            Status::Interrupted => "interrupted",
        }
    }

    /// How an experiment ended: `Interrupted` when it was stopped early.
    pub fn ended(interrupted: bool) -> Status {
        if interrupted {
            Status::Interrupted
        } else {
            Status::Done
        }
    }

    /// Parses the stored word.
    pub fn parse(s: &str) -> Option<Status> {
        [Status::Running, Status::Done, Status::Interrupted]
            .into_iter()
            .find(|st| st.as_str() == s)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Background I/O the workload achieved during one run. For a startup:
/// the bytes the background load itself read and wrote, by its own
/// counters (0 in an idle cell); the device's /proc/diskstats counters
/// over the same window are in the run's `extra`, and the whole cell's,
/// flushed, in its `cell_io` artifact. (Startups stored by earlier iolab
/// counted the device's traffic less the target's wait4 rusage.) For a
/// sweep run: the device's counters over the job's window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BackgroundIo {
    /// Bytes read from the device during the window, not by the target.
    pub read_bytes: u64,
    /// Bytes written to the device during the window, not by the target.
    pub write_bytes: u64,
    /// Length of the window in seconds.
    pub seconds: f64,
}

/// One timed run (one repetition of one cell), exactly as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// I/O scheduler of the device under test (`none`, `mq-deadline`, `bfq`, ...).
    pub scheduler: String,
    /// Background workload name (`idle`, `1r`, `5r5w-seq`, or a job file).
    pub workload: String,
    /// Repetition number within the cell, from 0.
    pub rep: u32,
    /// What was timed (the command line, or `probe`/`app`).
    pub target: String,
    /// Wall-clock start, RFC 3339 UTC (see [`crate::rfc3339_now`]).
    pub started_at: String,
    /// Measured time from exec to exit (or readiness), monotonic clock, ns.
    /// For a censored run, the time at which it was stopped.
    pub duration_ns: u64,
    /// True when the run hit the timeout: the true time is ≥ `duration_ns`.
    pub censored: bool,
    /// The timeout in force, ns.
    pub timeout_ns: u64,
    /// Exit code when the target exited normally.
    pub exit_code: Option<i32>,
    /// Signal number when the target was killed (e.g. 9 at the timeout).
    pub signal: Option<i32>,
    /// The harness's own time around the measurement (spawn and wait
    /// overhead), ns, when measured.
    pub overhead_ns: Option<u64>,
    /// Background I/O achieved during the run, when measured.
    pub background: Option<BackgroundIo>,
    /// Full configuration of this run (scheduler tunables, priorities,
    /// cold-cache method, ...), as the experiment recorded it.
    pub config: Value,
    /// Extra raw samples of this run (e.g. the probe's slow operations).
    #[serde(default)]
    pub extra: Value,
    /// What the run is worth: `ok` and `censored` runs are samples;
    /// `failed` (the target failed) and `invalid` (the conditions of the
    /// cell did not hold, e.g. the background load had ended) are kept
    /// but excluded from every statistic.
    #[serde(default)]
    pub outcome: RunOutcome,
    /// Why a run is `failed` or `invalid`, in words (exit status, signal,
    /// missing ready line, load that ended); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What else this run did differently from the plain runs of its cell,
    /// e.g. `prefetch:before` (the app's files read in first); `None` for
    /// a plain run. Runs of one variant form their own cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// The outcome of one run, as stored (column `run.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    /// Measured: the target became ready within the timeout.
    #[default]
    Ok,
    /// Timed out: the true time is at least `duration_ns` (a lower bound).
    Censored,
    /// The target failed: a non-zero exit, a signal iolab did not send, or
    /// an exit before its ready line/file. Not a sample.
    Failed,
    /// The run's conditions did not hold (the background load ended or
    /// failed during or before it). Not a sample.
    Invalid,
}

impl RunOutcome {
    /// The word stored in the database and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Ok => "ok",
            RunOutcome::Censored => "censored",
            RunOutcome::Failed => "failed",
            RunOutcome::Invalid => "invalid",
        }
    }

    /// Parses the stored word.
    pub fn parse(s: &str) -> Option<RunOutcome> {
        [
            RunOutcome::Ok,
            RunOutcome::Censored,
            RunOutcome::Failed,
            RunOutcome::Invalid,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }

    /// True for the outcomes whose time is a sample (exact or censored).
    pub fn is_sample(self) -> bool {
        matches!(self, RunOutcome::Ok | RunOutcome::Censored)
    }
}

/// Identifies a repetition for `--resume`: which (scheduler, workload,
/// variant, rep) of an experiment already has a recorded run. The target
/// is not part of it: an experiment has one, and a sweep's (its device's
/// name) changes when a resumed sweep makes a new lab.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RunKey {
    /// Scheduler.
    pub scheduler: String,
    /// Workload.
    pub workload: String,
    /// Variant (see [`RunRecord::variant`]).
    pub variant: Option<String>,
    /// Repetition number.
    pub rep: u32,
}

impl RunKey {
    /// A key of a plain run (no variant).
    pub fn new(scheduler: &str, workload: &str, rep: u32) -> Self {
        RunKey {
            scheduler: scheduler.to_string(),
            workload: workload.to_string(),
            variant: None,
            rep,
        }
    }

    /// The same key for a run of `variant`.
    pub fn with_variant(mut self, variant: Option<&str>) -> Self {
        self.variant = variant.map(str::to_string);
        self
    }
}

/// One experiment with its configuration and environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// Identifier.
    pub id: ExperimentId,
    /// Creation time, RFC 3339 UTC.
    pub created: String,
    /// Kind of experiment, e.g. `startup`.
    pub kind: ExperimentKind,
    /// The command line that created it.
    pub command_line: String,
    /// Status. A `running` experiment whose process is gone (crash,
    /// SIGKILL) reads as `interrupted`.
    pub status: Status,
    /// Full configuration (the matrix and every option).
    pub config: Value,
    /// Environment: kernel, device, filesystem, vm settings, CPUs, memory.
    pub environment: Value,
    /// Where it ran, when it was imported from another machine's database
    /// (`hostname`, `machine_id`, `via`, `remote_id`, `imported_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Value>,
}

/// One line of `iolab results list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSummary {
    /// Identifier.
    pub id: ExperimentId,
    /// Creation time, RFC 3339 UTC.
    pub created: String,
    /// Kind of experiment, e.g. `startup`.
    pub kind: ExperimentKind,
    /// Status (see [`Experiment::status`]).
    pub status: Status,
    /// Distinct (scheduler, workload, target) cells with at least one run.
    pub cells: usize,
    /// Recorded runs.
    pub runs: usize,
    /// Runs that hit the timeout.
    pub censored: usize,
    /// The command line that created it.
    pub command_line: String,
    /// The host it ran on, when imported from another machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_id_parses_positive_integers_only() {
        assert_eq!("7".parse::<ExperimentId>(), Ok(ExperimentId(7)));
        let err = "x".parse::<ExperimentId>().expect_err("not a number");
        assert!(err.0.contains("positive integer"), "{err}");
        assert!("0".parse::<ExperimentId>().is_err());
    }

    #[test]
    fn status_round_trips() {
        for s in [Status::Running, Status::Done, Status::Interrupted] {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert_eq!(Status::parse("finished"), None);
        assert_eq!(
            serde_json::to_string(&Status::Interrupted).expect("json"),
            "\"interrupted\""
        );
    }
}
