//! Start-up time per scheduler × workload: the stored cells (mean, CI,
//! every sample) and each start's outcome, for the bar chart.

use serde::Serialize;

use iolab_store::{CellReport, ExperimentReport};

use super::first_seen;

/// One start as drawn: a dot, an arrow at the timeout, or a failure mark.
#[derive(Debug, Clone, Serialize)]
pub struct Start {
    /// Repetition.
    pub rep: u32,
    /// Measured time, s (for a censored start: when it was stopped).
    pub seconds: f64,
    /// `ok`, `censored`, `failed` or `invalid`.
    pub outcome: String,
}

/// One cell: the store's statistics and every start.
#[derive(Debug, Clone, Serialize)]
pub struct StartupCell {
    /// The store's cell (n, mean, median, CI95, ratio to idle, ...).
    pub cell: CellReport,
    /// Every start of the cell, samples and not.
    pub starts: Vec<Start>,
}

/// The plain starts (no prefetch) of a startup experiment, at every plan
/// point.
#[derive(Debug, Clone, Serialize)]
pub struct StartupView {
    /// Schedulers in the order they ran.
    pub schedulers: Vec<String>,
    /// The plan's points in the order they ran (`--vary`); empty without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<String>,
    /// Workloads in the order they ran.
    pub workloads: Vec<String>,
    /// Targets (one per app, usually one).
    pub targets: Vec<String>,
    /// The cells.
    pub cells: Vec<StartupCell>,
}

impl StartupView {
    /// The view of `r`'s plain starts.
    pub fn of(r: &ExperimentReport) -> StartupView {
        let cells: Vec<&CellReport> = r
            .cells
            .iter()
            .filter(|c| iolab_results::variant::prefetch_of(c.variant.as_deref()).is_none())
            .collect();
        let points: Vec<String> = cells
            .iter()
            .filter_map(|c| iolab_results::variant::point_of(c.variant.as_deref()))
            .collect();
        StartupView {
            schedulers: first_seen(cells.iter().map(|c| c.scheduler.as_str())),
            points: first_seen(points.iter().map(String::as_str)),
            workloads: first_seen(cells.iter().map(|c| c.workload.as_str())),
            targets: first_seen(cells.iter().map(|c| c.target.as_str())),
            cells: cells
                .into_iter()
                .map(|c| StartupCell {
                    starts: r
                        .runs
                        .iter()
                        .filter(|x| {
                            x.target == c.target
                                && x.scheduler == c.scheduler
                                && x.workload == c.workload
                                && x.variant == c.variant
                        })
                        .map(|x| Start {
                            rep: x.rep,
                            seconds: x.duration_ns as f64 / 1e9,
                            outcome: x.outcome.as_str().to_string(),
                        })
                        .collect(),
                    cell: c.clone(),
                })
                .collect(),
        }
    }
}
