//! Start-up with and without a prefetch list: each prefetch cell beside
//! the plain cell of the same scheduler and workload, and how long the
//! prefetch itself took.

use iolab_results::ArtifactKind;
use serde::Serialize;

use iolab_results::prefetch::mode_of;
use iolab_stats::{ratio_of_means, Ratio};
use iolab_store::{CellReport, ExperimentReport};

/// One with/without pair.
#[derive(Debug, Clone, Serialize)]
pub struct PrefetchPair {
    /// `before` or `parallel`.
    pub mode: String,
    /// Plain starts.
    pub without: CellReport,
    /// Starts with the list read in.
    pub with: CellReport,
    /// mean(with) / mean(without), Fieller's 95 % interval.
    pub ratio: Option<Ratio>,
    /// Mean time the prefetch took, s (not part of a `before` start).
    pub prefetch_s: Option<f64>,
    /// The list's file count and bytes, and the mean residency after it.
    pub list_files: Option<u64>,
    /// Bytes in the list.
    pub list_bytes: Option<u64>,
    /// Mean percent of the list resident after the prefetch.
    pub residency_percent: Option<f64>,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Every pair, in the order the prefetch cells ran.
pub fn pairs(r: &ExperimentReport) -> Vec<PrefetchPair> {
    r.cells
        .iter()
        .filter_map(|with| {
            let mode = mode_of(with.variant.as_deref())?;
            let without = r.cells.iter().find(|c| {
                c.variant.is_none()
                    && c.target == with.target
                    && c.scheduler == with.scheduler
                    && c.workload == with.workload
            })?;
            let docs: Vec<&serde_json::Value> = r
                .artifacts
                .iter()
                .filter(|a| {
                    a.kind == ArtifactKind::Prefetch
                        && a.variant == with.variant
                        && a.target == with.target
                        && a.scheduler == with.scheduler
                        && a.workload == with.workload
                })
                .map(|a| &a.json)
                .collect();
            let field = |k: &str| -> Vec<f64> {
                docs.iter()
                    .filter_map(|j| j["report"][k].as_f64())
                    .collect()
            };
            Some(PrefetchPair {
                mode: mode.to_string(),
                ratio: ratio_of_means(&with.stats, &without.stats),
                prefetch_s: mean(&field("duration_s")),
                list_files: docs.first().and_then(|j| j["list_files"].as_u64()),
                list_bytes: docs.first().and_then(|j| j["list_bytes"].as_u64()),
                residency_percent: mean(&field("residency_percent")),
                without: without.clone(),
                with: with.clone(),
            })
        })
        .collect()
}
