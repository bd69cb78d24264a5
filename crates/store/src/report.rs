//! An experiment's runs grouped into cells (target × scheduler × workload)
//! with statistics computed by `iolab-stats` from the raw samples. This is
//! what the exporters serialize and the table renders, so every view shows
//! the same numbers, recomputable from the stored runs.

use serde::{Deserialize, Serialize};

use iolab_stats::{ratio_of_means, summarize, Ratio, Sample, Summary};

use crate::error::StoreError;
use crate::store::Store;
use crate::stored::{Artifact, Experiment, ExperimentId, RunOutcome, RunRecord};

/// The workload every other one is compared with (S's `idle`, the thesis's
/// "idle baseline").
pub const IDLE_WORKLOAD: &str = "idle";

const NS_PER_S: f64 = 1e9;

/// A cell is flagged when more than this share of its starts failed: its
/// statistics then describe only the starts that happened to succeed, a
/// biased subset (a target that crashes under load is faster when it
/// crashes early).
pub const FAILED_SHARE_FLAG: f64 = 0.2;

/// Statistics of one cell. Times are in seconds (`unit`), like hyperfine's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellReport {
    /// What was timed.
    pub target: String,
    /// The runs' variant (e.g. `prefetch:before`); `None` for plain runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// I/O scheduler.
    pub scheduler: String,
    /// Background workload.
    pub workload: String,
    /// Unit of every time in this cell: `"s"`.
    pub unit: String,
    /// The longest timeout among the cell's runs, s (`>T` in the table).
    pub timeout: f64,
    /// Repetition numbers of the samples (`ok` and `censored` runs), in order.
    pub reps: Vec<u32>,
    /// Measured time of each sample (parallel to `reps`), s; for a
    /// censored run the time it was stopped at. `outliers` index into it.
    pub times: Vec<f64>,
    /// n, censored, mean, median, stddev, min, max, ci95, outliers: of the
    /// samples only; failed and invalid runs are never part of them.
    #[serde(flatten)]
    pub stats: Summary,
    /// Runs whose target failed (`outcome = failed`): kept, not samples.
    #[serde(default)]
    pub failed: usize,
    /// Runs whose conditions did not hold (`outcome = invalid`, e.g. the
    /// background load had ended): kept, not samples.
    #[serde(default)]
    pub invalid: usize,
    /// Every failed or invalid run of the cell with its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_samples: Vec<FailedRun>,
    /// True when more than [`FAILED_SHARE_FLAG`] of the cell's runs failed
    /// or were invalid: its statistics describe a biased subset.
    #[serde(default)]
    pub flagged: bool,
    /// Background read throughput achieved during the cell's samples
    /// (the load's own counters), bytes/s, mean over runs;
    /// `None` without a measurement (idle, sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bg_read_bw_bytes: Option<f64>,
    /// As `bg_read_bw_bytes`, for writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bg_write_bw_bytes: Option<f64>,
    /// Mean relative to the same target and scheduler under `idle`, with
    /// Fieller's 95 % interval; `None` for the idle cell itself or without
    /// an idle cell.
    pub ratio_to_idle: Option<Ratio>,
}

/// An experiment with every run and the per-cell statistics derived from
/// them: the content of `iolab results show --json` and of the exports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentReport {
    /// The experiment, its configuration and environment.
    pub experiment: Experiment,
    /// Per-cell statistics, computed from `runs`.
    pub cells: Vec<CellReport>,
    /// Every run as recorded, censored ones included.
    pub runs: Vec<RunRecord>,
    /// Documents attached to the runs (latency histograms, CPU series, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
}

impl ExperimentReport {
    /// Derives the cells from the runs.
    pub fn new(experiment: Experiment, runs: Vec<RunRecord>) -> Self {
        ExperimentReport {
            experiment,
            cells: cells_from_runs(&runs),
            runs,
            artifacts: Vec::new(),
        }
    }
}

impl Store {
    /// The report of one experiment: its record, runs and cell statistics.
    pub fn report(&self, id: ExperimentId) -> Result<ExperimentReport, StoreError> {
        let experiment = self.experiment(id)?;
        let mut report = ExperimentReport::new(experiment, self.runs(id)?);
        report.artifacts = self.artifacts(id, None)?;
        Ok(report)
    }
}

/// Groups runs into cells (in order of first appearance; within a cell by
/// repetition) and computes each cell's statistics and ratio to idle.
pub fn cells_from_runs(runs: &[RunRecord]) -> Vec<CellReport> {
    type Key<'r> = (&'r str, Option<&'r str>, &'r str, &'r str);
    let mut groups: Vec<(Key, Vec<&RunRecord>)> = Vec::new();
    for run in runs {
        let key = (
            run.target.as_str(),
            run.variant.as_deref(),
            run.scheduler.as_str(),
            run.workload.as_str(),
        );
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(run),
            None => groups.push((key, vec![run])),
        }
    }
    let mut cells: Vec<CellReport> = groups
        .into_iter()
        .map(|((target, variant, scheduler, workload), mut group)| {
            group.sort_by_key(|r| r.rep);
            let all = group.len();
            let (valid, rejected): (Vec<&RunRecord>, Vec<&RunRecord>) =
                group.iter().partition(|r| r.outcome.is_sample());
            let samples: Vec<Sample> = valid.iter().map(|r| sample_of(r)).collect();
            let count = |o: RunOutcome| rejected.iter().filter(|r| r.outcome == o).count();
            let (bg_read_bw_bytes, bg_write_bw_bytes) = background_rates(&valid);
            CellReport {
                target: target.to_string(),
                variant: variant.map(str::to_string),
                scheduler: scheduler.to_string(),
                workload: workload.to_string(),
                unit: "s".to_string(),
                timeout: group.iter().map(|r| r.timeout_ns).max().unwrap_or(0) as f64 / NS_PER_S,
                reps: valid.iter().map(|r| r.rep).collect(),
                times: samples.iter().map(|s| s.value).collect(),
                stats: summarize(&samples),
                failed: count(RunOutcome::Failed),
                invalid: count(RunOutcome::Invalid),
                not_samples: rejected
                    .iter()
                    .map(|r| FailedRun {
                        rep: r.rep,
                        outcome: r.outcome,
                        reason: r.reason.clone().unwrap_or_default(),
                    })
                    .collect(),
                flagged: rejected.len() as f64 > FAILED_SHARE_FLAG * all as f64,
                bg_read_bw_bytes,
                bg_write_bw_bytes,
                ratio_to_idle: None,
            }
        })
        .collect();
    let ratios: Vec<Option<Ratio>> = cells
        .iter()
        .map(|c| {
            if c.workload == IDLE_WORKLOAD {
                return None;
            }
            let idle = cells.iter().find(|b| {
                b.workload == IDLE_WORKLOAD
                    && b.target == c.target
                    && b.variant == c.variant
                    && b.scheduler == c.scheduler
            })?;
            ratio_of_means(&c.stats, &idle.stats)
        })
        .collect();
    for (cell, ratio) in cells.iter_mut().zip(ratios) {
        cell.ratio_to_idle = ratio;
    }
    cells
}

/// A run of a cell that is not a sample, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRun {
    /// Its repetition number.
    pub rep: u32,
    /// `failed` or `invalid`.
    pub outcome: RunOutcome,
    /// What happened (exit status, signal, missing ready line, load end).
    pub reason: String,
}

/// Mean background read and write rates (bytes/s) over runs that measured
/// them; each run's rate is its bytes over its own window.
fn background_rates(runs: &[&RunRecord]) -> (Option<f64>, Option<f64>) {
    let rates: Vec<(f64, f64)> = runs
        .iter()
        .filter_map(|r| r.background)
        .filter(|b| b.seconds > 0.0)
        .map(|b| {
            (
                b.read_bytes as f64 / b.seconds,
                b.write_bytes as f64 / b.seconds,
            )
        })
        .collect();
    if rates.is_empty() {
        return (None, None);
    }
    let n = rates.len() as f64;
    (
        Some(rates.iter().map(|r| r.0).sum::<f64>() / n),
        Some(rates.iter().map(|r| r.1).sum::<f64>() / n),
    )
}

/// A run's raw sample in seconds.
pub(crate) fn sample_of(run: &RunRecord) -> Sample {
    Sample {
        value: run.duration_ns as f64 / NS_PER_S,
        censored: run.censored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    #[test]
    fn failed_and_invalid_runs_are_counted_not_sampled() {
        let mut crash = run("bfq", "1r", 1, 0.0);
        crash.outcome = RunOutcome::Failed;
        crash.reason = Some("killed by signal 11 (SIGSEGV)".into());
        let mut unloaded = run("bfq", "1r", 2, 0.5);
        unloaded.outcome = RunOutcome::Invalid;
        unloaded.reason = Some("the background load had ended".into());
        let runs = vec![
            run("bfq", "1r", 0, 2.0),
            crash,
            unloaded,
            run("bfq", "1r", 3, 4.0),
        ];
        let cells = cells_from_runs(&runs);
        let c = &cells[0];
        // Only the two real starts are samples: a 0 s crash would have
        // pulled the mean from 3.0 down to 1.625.
        assert_eq!(c.times, vec![2.0, 4.0]);
        assert_eq!(c.stats.mean, Some(3.0));
        assert_eq!((c.failed, c.invalid, c.stats.n), (1, 1, 2));
        assert!(c.flagged, "2 of 4 not samples is over the threshold");
        assert_eq!(c.not_samples[0].reason, "killed by signal 11 (SIGSEGV)");
    }

    #[test]
    fn groups_by_cell_and_orders_reps() {
        let runs = vec![
            run("bfq", "idle", 1, 6.5),
            run("bfq", "idle", 0, 6.0),
            run("bfq", "1r1w", 0, 12.0),
            run("none", "1r1w", 0, 60.0),
            run("bfq", "1r1w", 1, 13.0),
        ];
        let cells = cells_from_runs(&runs);
        assert_eq!(cells.len(), 3);
        assert_eq!(
            (cells[0].workload.as_str(), &cells[0].reps),
            ("idle", &vec![0, 1])
        );
        assert_eq!(cells[0].times, vec![6.0, 6.5]);
        assert_eq!(cells[0].ratio_to_idle, None);
        let r = cells[1].ratio_to_idle.as_ref().expect("bfq has idle");
        assert!((r.value - 12.5 / 6.25).abs() < 1e-12);
        // none has no idle cell: no ratio; its only run is censored.
        assert_eq!(cells[2].ratio_to_idle, None);
        assert_eq!((cells[2].stats.censored, cells[2].timeout), (1, 60.0));
    }
}
