//! The sweep's tables, derived only from stored runs (so `iolab sweep`,
//! `iolab results show` and a recomputation agree): one table per access
//! kind, like seed 002's charts, with numjobs/iodepth patterns as rows and
//! schedulers as columns; each cell the median over repetitions with the
//! min–max range (with three repetitions a Student-t interval is mostly
//! width; mean and CI95 are in the JSON).

use serde::Serialize;

use iolab_stats::{summarize, Sample, Summary};
use iolab_store::RunRecord;

use iolab_results::sweep::{parse_workload, workload_name, Kind, Pattern};

/// What the table cells show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Metric {
    /// Throughput, MiB/s (fio's bw).
    Bw,
    /// I/Os per second.
    Iops,
    /// Median completion latency, ms.
    P50,
    /// 99th percentile completion latency, ms.
    P99,
    /// 99th percentile block-layer latency (issue → complete, biolatency's), ms.
    BioP99,
}

impl Metric {
    /// The metric's column title with unit.
    pub fn title(self) -> &'static str {
        match self {
            Metric::Bw => "throughput [MiB/s]",
            Metric::Iops => "IOPS",
            Metric::P50 => "completion latency p50 [ms]",
            Metric::P99 => "completion latency p99 [ms]",
            Metric::BioP99 => "block-layer latency p99 [ms] (issue → complete)",
        }
    }

    /// The metric's statistics in cell `c`.
    pub fn of(self, c: &SweepCell) -> &Summary {
        match self {
            Metric::Bw => &c.bw_mib_s,
            Metric::Iops => &c.iops,
            Metric::P50 => &c.clat_p50_ms,
            Metric::P99 => &c.clat_p99_ms,
            Metric::BioP99 => &c.bio_p99_ms,
        }
    }
}

/// One (kind, pattern, scheduler) cell: every repetition's values and
/// their statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepCell {
    /// Access kind (`read`, `randwrite`, ...).
    pub rw: Kind,
    /// Workload name, e.g. `seq-read-4j-1qd`.
    pub workload: String,
    /// numjobs/iodepth.
    pub pattern: Pattern,
    /// I/O scheduler.
    pub scheduler: String,
    /// Repetition numbers, parallel to the value lists.
    pub reps: Vec<u32>,
    /// Throughput of each repetition, MiB/s.
    pub bw_mib_s_values: Vec<f64>,
    /// Statistics of the throughput.
    pub bw_mib_s: Summary,
    /// Statistics of the IOPS.
    pub iops: Summary,
    /// Statistics of the median completion latency, ms.
    pub clat_p50_ms: Summary,
    /// Statistics of the 99th percentile completion latency, ms.
    pub clat_p99_ms: Summary,
    /// Statistics of the 99th percentile block-layer latency, ms (runs
    /// without a block trace are left out).
    pub bio_p99_ms: Summary,
}

/// Every cell, with the row and column orders of the tables.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepTable {
    /// Schedulers, in column order.
    pub schedulers: Vec<String>,
    /// Patterns, in row order.
    pub patterns: Vec<Pattern>,
    /// Kinds present, in table order.
    pub kinds: Vec<Kind>,
    /// The cells.
    pub cells: Vec<SweepCell>,
    /// Block size of the runs (their stored `config.bs`), bytes.
    pub bs_bytes: Option<u64>,
}

const MIB: f64 = 1_048_576.0;

fn number(v: &serde_json::Value, key: &str) -> Option<f64> {
    v.get(key).and_then(serde_json::Value::as_f64)
}

fn percentile_ms(extra: &serde_json::Value, p: &str) -> Option<f64> {
    extra
        .get("clat_ns")?
        .get("percentile")?
        .get(p)?
        .as_f64()
        .map(|ns| ns / 1e6)
}

/// The block trace's p99 for the run's direction (`extra.bio.R` or `.W`).
fn bio_p99_ms(extra: &serde_json::Value, kind: Kind) -> Option<f64> {
    let op = if kind.reads() { "R" } else { "W" };
    number(extra.get("bio")?.get(op)?, "lat_p99_us").map(|us| us / 1e3)
}

impl SweepTable {
    /// Groups the runs of a sweep into cells; runs whose workload is not a
    /// sweep pattern name are ignored.
    pub fn from_runs(runs: &[RunRecord]) -> SweepTable {
        struct Acc {
            key: (Kind, Pattern, String),
            reps: Vec<u32>,
            vals: [Vec<f64>; 5],
        }
        let mut accs: Vec<Acc> = Vec::new();
        let mut schedulers: Vec<String> = Vec::new();
        let mut patterns: Vec<Pattern> = Vec::new();
        let mut sorted: Vec<&RunRecord> = runs.iter().collect();
        sorted.sort_by_key(|r| r.rep);
        for r in sorted {
            let Some((kind, pattern)) = parse_workload(&r.workload) else {
                continue;
            };
            if !schedulers.contains(&r.scheduler) {
                schedulers.push(r.scheduler.clone());
            }
            if !patterns.contains(&pattern) {
                patterns.push(pattern);
            }
            let key = (kind, pattern, r.scheduler.clone());
            let i = match accs.iter().position(|a| a.key == key) {
                Some(i) => i,
                None => {
                    accs.push(Acc {
                        key,
                        reps: Vec::new(),
                        vals: Default::default(),
                    });
                    accs.len() - 1
                }
            };
            let a = &mut accs[i];
            a.reps.push(r.rep);
            let e = &r.extra;
            let vals = [
                number(e, "bw_bytes").map(|b| b / MIB),
                number(e, "iops"),
                percentile_ms(e, "50.000000"),
                percentile_ms(e, "99.000000"),
                bio_p99_ms(e, kind),
            ];
            for (acc, v) in a.vals.iter_mut().zip(vals) {
                if let Some(v) = v {
                    acc.push(v);
                }
            }
        }
        let kinds = Kind::ALL
            .into_iter()
            .filter(|k| accs.iter().any(|a| a.key.0 == *k))
            .collect();
        let sum = |v: &[f64]| summarize(&Sample::all_exact(v));
        let cells = accs
            .into_iter()
            .map(|a| SweepCell {
                rw: a.key.0,
                workload: workload_name(a.key.0, a.key.1),
                pattern: a.key.1,
                scheduler: a.key.2,
                reps: a.reps,
                bw_mib_s: sum(&a.vals[0]),
                iops: sum(&a.vals[1]),
                clat_p50_ms: sum(&a.vals[2]),
                clat_p99_ms: sum(&a.vals[3]),
                bio_p99_ms: sum(&a.vals[4]),
                bw_mib_s_values: a.vals[0].clone(),
            })
            .collect();
        SweepTable {
            schedulers,
            patterns,
            kinds,
            cells,
            bs_bytes: runs.iter().find_map(|r| r.config.get("bs")?.as_u64()),
        }
    }

    /// The cell of (kind, pattern, scheduler).
    pub fn cell(&self, kind: Kind, pattern: Pattern, scheduler: &str) -> Option<&SweepCell> {
        self.cells
            .iter()
            .find(|c| c.rw == kind && c.pattern == pattern && c.scheduler == scheduler)
    }
}
