//! Views: what each stored experiment shows, as data. Nothing here makes a
//! string for a person; the renderers (`text`, `html`, JSON by serde) do.
//!
//! One [`ExperimentView`] per experiment, whatever its kind: the sections
//! that kind has data for are `Some`/non-empty, the rest are empty, so a
//! renderer walks one structure and a new kind adds a section here.

pub mod applied;
pub mod bio;
pub mod cpu;
pub mod display;
pub mod explain;
pub mod main_thread;
pub mod max;
pub mod observed;
pub mod prefetch;
pub mod startup;
pub mod sweep;
pub mod verdict;

use serde::Serialize;
use serde_json::Value;

use iolab_results::ExperimentKind;

use iolab_store::ExperimentReport;
use max::MaxTable;
use sweep::SweepTable;

/// Everything the report shows of one experiment, and the stored report it
/// is a view of (for the formats that export the stored data as it is:
/// JSON, CSV).
#[derive(Debug, Clone, Serialize)]
pub struct ExperimentView<'r> {
    /// The stored experiment, runs and cells the view derives from.
    #[serde(skip)]
    pub stored: &'r ExperimentReport,
    /// Experiment id.
    pub id: i64,
    /// `startup`, `sweep`, `sweep-max`.
    pub kind: ExperimentKind,
    /// Lifecycle status.
    pub status: String,
    /// Creation time, RFC 3339.
    pub created: String,
    /// The command line that made it (rerun it to reproduce).
    pub command_line: String,
    /// Kernel, CPU, device, scheduler tunables, lab backend.
    pub environment: Value,
    /// The experiment's configuration as stored.
    pub config: Value,
    /// Start-up cells (plain starts, no prefetch).
    pub startup: Option<startup::StartupView>,
    /// A plan's verdict: per workload, each scheduler × point ranked by
    /// start-up gain per background cost (`--vary`, `--recipe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<verdict::VerdictView>,
    /// Per loaded cell of a plan: each setting as read back, and the
    /// groups' bytes against the disk's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<applied::AppliedCell>,
    /// Sweep cells (`sweep`).
    pub sweep: Option<SweepTable>,
    /// Maximum-throughput points (`sweep --max`).
    pub max: Option<MaxTable>,
    /// Start-up with and without prefetch.
    pub prefetch: Vec<prefetch::PrefetchPair>,
    /// Where the time of the starts went, per cell (explain).
    pub causes: Vec<explain::CauseStack>,
    /// Flame graphs' folded stacks, per cell (explain).
    pub flames: Vec<explain::FlameCell>,
    /// Per-request block latency distributions, per scheduler and direction.
    pub latency: Vec<bio::LatencyView>,
    /// CPU utilisation and pressure over time, per run.
    pub cpu: Vec<cpu::CpuRun>,
    /// The collectors' headline numbers, per cell.
    pub observed: Option<observed::ObservedView>,
    /// The start's main thread by state, per cell (explain).
    pub main_thread: Option<main_thread::MainThreadView>,
    /// Time to initial and full display per cell, when starts have both.
    pub display: Option<Vec<display::DisplayCell>>,
    /// Runs that are not samples, with their reasons.
    pub not_samples: Vec<NotSample>,
}

/// A run that is not part of any statistic.
#[derive(Debug, Clone, Serialize)]
pub struct NotSample {
    /// Cell key `scheduler/workload`.
    pub cell: String,
    /// Repetition.
    pub rep: u32,
    /// `failed` or `invalid`.
    pub outcome: String,
    /// Why.
    pub reason: String,
}

impl<'r> ExperimentView<'r> {
    /// The view of one stored experiment.
    pub fn of(r: &'r ExperimentReport) -> ExperimentView<'r> {
        let e = &r.experiment;
        let kind = &e.kind;
        ExperimentView {
            stored: r,
            id: e.id.0,
            kind: e.kind.clone(),
            status: e.status.as_str().to_string(),
            created: e.created.clone(),
            command_line: e.command_line.clone(),
            environment: e.environment.clone(),
            config: e.config.clone(),
            startup: (*kind == ExperimentKind::Startup).then(|| startup::StartupView::of(r)),
            verdict: verdict::verdict(r),
            applied: applied::applied(r),
            sweep: (*kind == ExperimentKind::Sweep).then(|| SweepTable::from_runs(&r.runs)),
            max: (*kind == ExperimentKind::SweepMax).then(|| MaxTable::from_runs(&r.runs)),
            prefetch: prefetch::pairs(r),
            causes: explain::cause_stacks(r),
            flames: explain::flame_cells(r),
            latency: bio::latency_views(r),
            cpu: cpu::cpu_runs(r),
            observed: observed::observed(r),
            main_thread: main_thread::main_thread(r),
            display: display::display(r),
            not_samples: r
                .runs
                .iter()
                .filter(|x| !x.outcome.is_sample())
                .map(|x| NotSample {
                    cell: format!(
                        "{}/{}{}",
                        x.scheduler,
                        x.workload,
                        x.variant
                            .as_deref()
                            .map_or_else(String::new, |v| format!(" @ {v}"))
                    ),
                    rep: x.rep,
                    outcome: x.outcome.as_str().to_string(),
                    reason: x
                        .reason
                        .clone()
                        .unwrap_or_else(|| "(no reason stored)".into()),
                })
                .collect(),
        }
    }
}

/// The workload a per-cell view shows a run or document under: its own
/// for a plain run, `WORKLOAD @ POINT` for a run at a plan point (so the
/// points of one scheduler and workload stay apart); `None` for a
/// prefetch variant, which those views leave to the prefetch view.
pub fn plain_workload(workload: &str, variant: Option<&str>) -> Option<String> {
    if iolab_results::variant::prefetch_of(variant).is_some() {
        return None;
    }
    Some(match iolab_results::variant::point_of(variant) {
        Some(p) => format!("{workload} @ {p}"),
        None => workload.to_string(),
    })
}

/// Order of first appearance, without repeats.
pub(crate) fn first_seen<'a>(it: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in it {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    out
}
