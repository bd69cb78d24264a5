//! Per-request block latency (issue → complete) from the runs'
//! `latency_hist` artifacts: the log2 buckets of every traced run of a
//! cell, summed per scheduler, workload and direction.

use iolab_results::ArtifactKind;
use std::collections::BTreeMap;

use serde::Serialize;

use iolab_bio::BioHistograms;
use iolab_store::ExperimentReport;

use super::first_seen;

/// One scheduler's distribution in a (workload, direction).
#[derive(Debug, Clone, Serialize)]
pub struct LatencySeries {
    /// Scheduler.
    pub scheduler: String,
    /// Requests counted.
    pub count: u64,
    /// Runs whose traces were summed.
    pub runs: usize,
    /// `[low_us, high_us, count]` per log2 bucket, in order.
    pub buckets: Vec<(u64, u64, u64)>,
}

/// Every scheduler's distribution for one workload and direction.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyView {
    /// Workload (startup) or pattern (sweep).
    pub workload: String,
    /// `R`, `W`, `D`, `F`, `N` (biosnoop's T column).
    pub op: String,
    /// Whose requests: `app` (the start's own) or `rest` (the load, the
    /// kernel's writeback) where the traces split them; none for all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// One series per scheduler, in run order.
    pub series: Vec<LatencySeries>,
}

/// Sums the traced runs' histograms.
pub fn latency_views(r: &ExperimentReport) -> Vec<LatencyView> {
    type Key = (String, String, Option<String>);
    /// Summed bucket counts and the number of runs summed.
    type Sum = (BTreeMap<(u64, u64), u64>, usize);
    let mut sums: BTreeMap<(Key, String), Sum> = BTreeMap::new();
    let mut order: Vec<Key> = Vec::new();
    for a in r
        .artifacts
        .iter()
        .filter(|a| a.kind == ArtifactKind::LatencyHist)
    {
        let Some(workload) = super::plain_workload(&a.workload, a.variant.as_deref()) else {
            continue;
        };
        let Ok(doc) = serde_json::from_value::<BioHistograms>(a.json.clone()) else {
            continue;
        };
        let split = doc
            .by_owner
            .filter(|o| o.unavailable.is_none())
            .map(|o| {
                let app = o.app.into_iter().map(|h| (Some("app".to_string()), h));
                let rest = o.rest.into_iter().map(|h| (Some("rest".to_string()), h));
                app.chain(rest).collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let all = doc.histograms.into_iter().map(|h| (None, h));
        for (owner, h) in all.chain(split) {
            let key = (workload.clone(), h.op.clone(), owner);
            if !order.contains(&key) {
                order.push(key.clone());
            }
            let slot = sums.entry((key, a.scheduler.clone())).or_default();
            slot.1 += 1;
            for b in &h.buckets {
                *slot.0.entry((b.low_us, b.high_us)).or_default() += b.count;
            }
        }
    }
    let schedulers = first_seen(r.runs.iter().map(|x| x.scheduler.as_str()));
    order
        .into_iter()
        .map(|key| LatencyView {
            series: schedulers
                .iter()
                .filter_map(|s| {
                    let (b, runs) = sums.get(&(key.clone(), s.clone()))?;
                    Some(LatencySeries {
                        scheduler: s.clone(),
                        count: b.values().sum(),
                        runs: *runs,
                        buckets: b.iter().map(|((l, h), c)| (*l, *h, *c)).collect(),
                    })
                })
                .collect(),
            workload: key.0,
            op: key.1,
            owner: key.2,
        })
        .collect()
}
