//! Explain's data per cell: the mean time per start by cause (on-CPU,
//! runnable, each non-idle blocking cause, untraced — the same totals as
//! the "where the extra time went" table), and the folded stacks of every
//! start of the cell summed, for a flame graph.

use iolab_results::ArtifactKind;
use std::collections::BTreeMap;

use serde::Serialize;

use iolab_explain::{Attribution, Totals};
use iolab_store::ExperimentReport;

/// Mean seconds per start by cause, for one cell.
#[derive(Debug, Clone, Serialize)]
pub struct CauseStack {
    /// Scheduler.
    pub scheduler: String,
    /// Workload.
    pub workload: String,
    /// Starts averaged.
    pub n: usize,
    /// Of which cut off at the timeout (their attribution ends there).
    pub censored: usize,
    /// (cause, mean seconds per start), largest first.
    pub causes: Vec<(String, f64)>,
    /// The same means in ns, as explain's `Totals` (for diffs).
    pub mean_ns: Totals,
}

/// A cell's folded stacks (`cause;outer;...;inner microseconds`), summed
/// over its starts.
#[derive(Debug, Clone, Serialize)]
pub struct FlameCell {
    /// Scheduler.
    pub scheduler: String,
    /// Workload.
    pub workload: String,
    /// Starts summed.
    pub n: usize,
    /// Folded lines, largest first.
    pub folded: Vec<String>,
}

fn attributions(r: &ExperimentReport) -> Vec<((String, String), Vec<Attribution>)> {
    let mut by: Vec<((String, String), Vec<Attribution>)> = Vec::new();
    for a in r
        .artifacts
        .iter()
        .filter(|a| a.kind == ArtifactKind::Explain)
    {
        let Some(workload) = super::plain_workload(&a.workload, a.variant.as_deref()) else {
            continue;
        };
        let Ok(attr) = serde_json::from_value::<Attribution>(a.json.clone()) else {
            continue;
        };
        let key = (a.scheduler.clone(), workload);
        match by.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(attr),
            None => by.push((key, vec![attr])),
        }
    }
    by
}

/// Mean totals per cell, in run order.
pub fn cause_stacks(r: &ExperimentReport) -> Vec<CauseStack> {
    attributions(r)
        .into_iter()
        .map(|((scheduler, workload), attrs)| {
            let totals: Vec<Totals> = attrs.iter().map(Attribution::totals).collect();
            let mean_ns = Totals::mean(&totals);
            let mut causes: Vec<(String, f64)> = mean_ns
                .0
                .iter()
                .map(|(k, ns)| (k.clone(), ns / 1e9))
                .collect();
            let censored = r
                .runs
                .iter()
                .filter(|x| x.scheduler == scheduler && x.censored)
                .filter(|x| {
                    super::plain_workload(&x.workload, x.variant.as_deref()).as_deref()
                        == Some(workload.as_str())
                })
                .count();
            causes.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            CauseStack {
                scheduler,
                workload,
                n: attrs.len(),
                censored,
                causes,
                mean_ns,
            }
        })
        .collect()
}

/// Summed folded stacks per cell, in run order.
pub fn flame_cells(r: &ExperimentReport) -> Vec<FlameCell> {
    attributions(r)
        .into_iter()
        .map(|((scheduler, workload), attrs)| {
            let mut sum: BTreeMap<String, u64> = BTreeMap::new();
            for a in &attrs {
                for line in iolab_explain::report::folded::render(a).lines() {
                    if let Some((stack, v)) = line.rsplit_once(' ') {
                        *sum.entry(stack.to_string()).or_default() += v.parse::<u64>().unwrap_or(0);
                    }
                }
            }
            let mut lines: Vec<(String, u64)> = sum.into_iter().collect();
            lines.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            FlameCell {
                scheduler,
                workload,
                n: attrs.len(),
                folded: lines.into_iter().map(|(s, v)| format!("{s} {v}")).collect(),
            }
        })
        .collect()
}
