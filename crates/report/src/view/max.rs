//! The maximum-throughput tables, derived only from stored runs (so the
//! sweep's output, `results show` and a recomputation agree): per access
//! kind, thread counts as rows and schedulers as columns (median IOPS over
//! repetitions), then each scheduler's maximum, where it was reached, its
//! bandwidth, the kernel CPU per I/O there, and the ratio to the first
//! scheduler (BFQ's overhead against none as one number).

use serde::Serialize;

use iolab_stats::{summarize, Sample, Summary};
use iolab_store::RunRecord;

use iolab_results::max::MaxPoint;
use iolab_results::sweep::{parse_workload, Kind};

/// One (kind, threads, scheduler) point over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxCell {
    /// Access kind.
    pub rw: Kind,
    /// Threads.
    pub threads: u32,
    /// Scheduler.
    pub scheduler: String,
    /// Every repetition's measurement, in repetition order.
    pub samples: Vec<MaxPoint>,
    /// IOPS statistics.
    pub iops: Summary,
    /// Throughput statistics, MiB/s.
    pub bw_mib_s: Summary,
    /// Kernel CPU per I/O statistics, µs.
    pub kernel_us_per_io: Summary,
    /// CPU busy statistics, percent of all CPUs.
    pub busy_pct: Summary,
}

/// A scheduler's maximum for one kind: the thread count whose median IOPS
/// is highest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxBest {
    /// Access kind.
    pub rw: Kind,
    /// Scheduler.
    pub scheduler: String,
    /// Threads at the maximum.
    pub threads: u32,
    /// Median IOPS there.
    pub iops: f64,
    /// Median throughput there, MiB/s.
    pub bw_mib_s: f64,
    /// Median kernel CPU per I/O there, µs.
    pub kernel_us_per_io: f64,
    /// Median CPU busy there, percent.
    pub busy_pct: f64,
    /// `iops` over the first scheduler's maximum (the table's first
    /// column, `none` by default).
    pub iops_vs_first: Option<f64>,
    /// `kernel_us_per_io` over the first scheduler's.
    pub cpu_vs_first: Option<f64>,
}

/// Every cell and every maximum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxTable {
    /// Schedulers, in column order.
    pub schedulers: Vec<String>,
    /// Thread counts, in row order.
    pub threads: Vec<u32>,
    /// Kinds present, in table order.
    pub kinds: Vec<Kind>,
    /// The cells.
    pub cells: Vec<MaxCell>,
    /// Per kind and scheduler, the maximum.
    pub best: Vec<MaxBest>,
    /// Block size of the points (their stored `config.bs`), bytes.
    pub bs_bytes: Option<u64>,
    /// How every thread did its I/O: `psync`, or `io_uring qd N per
    /// thread` (the points' stored `config.ioengine` and `iodepth`).
    pub engine: Option<String>,
}

const MIB: f64 = 1_048_576.0;

fn stat(points: &[MaxPoint], f: impl Fn(&MaxPoint) -> f64) -> Summary {
    let s: Vec<Sample> = points.iter().map(|p| Sample::exact(f(p))).collect();
    summarize(&s)
}

impl MaxTable {
    /// Groups the runs; runs that are not max-sweep points are ignored.
    pub fn from_runs(runs: &[RunRecord]) -> MaxTable {
        let mut sorted: Vec<&RunRecord> = runs.iter().collect();
        sorted.sort_by_key(|r| r.rep);
        let mut groups: Vec<((Kind, u32, String), Vec<MaxPoint>)> = Vec::new();
        let mut schedulers: Vec<String> = Vec::new();
        let mut threads: Vec<u32> = Vec::new();
        for r in sorted {
            let Some((kind, pattern)) = parse_workload(&r.workload) else {
                continue;
            };
            let Ok(p) = serde_json::from_value::<MaxPoint>(r.extra.clone()) else {
                continue;
            };
            if !schedulers.contains(&r.scheduler) {
                schedulers.push(r.scheduler.clone());
            }
            if !threads.contains(&pattern.numjobs) {
                threads.push(pattern.numjobs);
            }
            let key = (kind, pattern.numjobs, r.scheduler.clone());
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(p),
                None => groups.push((key, vec![p])),
            }
        }
        threads.sort_unstable();
        let kinds: Vec<Kind> = Kind::ALL
            .into_iter()
            .filter(|k| groups.iter().any(|((gk, _, _), _)| gk == k))
            .collect();
        let cells: Vec<MaxCell> = groups
            .into_iter()
            .map(|((rw, threads, scheduler), samples)| MaxCell {
                iops: stat(&samples, |p| p.iops),
                bw_mib_s: stat(&samples, |p| p.bw_bytes / MIB),
                kernel_us_per_io: stat(&samples, |p| p.kernel_us_per_io),
                busy_pct: stat(&samples, |p| p.busy_pct),
                rw,
                threads,
                scheduler,
                samples,
            })
            .collect();
        let best = best_of(&cells, &kinds, &schedulers);
        let config = runs.first().map(|r| &r.config);
        MaxTable {
            schedulers,
            threads,
            kinds,
            cells,
            best,
            bs_bytes: config.and_then(|c| c.get("bs")?.as_u64()),
            engine: config.and_then(engine_words),
        }
    }

    /// The cell of (kind, threads, scheduler).
    pub fn cell(&self, kind: Kind, threads: u32, s: &str) -> Option<&MaxCell> {
        self.cells
            .iter()
            .find(|c| c.rw == kind && c.threads == threads && c.scheduler == s)
    }

    /// A scheduler's maximum for one kind.
    pub fn best(&self, kind: Kind, s: &str) -> Option<&MaxBest> {
        self.best.iter().find(|b| b.rw == kind && b.scheduler == s)
    }
}

/// `psync`, or `io_uring qd 8 per thread`, from a point's configuration.
fn engine_words(config: &serde_json::Value) -> Option<String> {
    let engine = config.get("ioengine")?.as_str()?;
    Some(
        match config.get("iodepth").and_then(serde_json::Value::as_u64) {
            Some(d) if d > 1 => format!("{engine} qd {d} per thread"),
            _ => engine.to_string(),
        },
    )
}

fn best_of(cells: &[MaxCell], kinds: &[Kind], schedulers: &[String]) -> Vec<MaxBest> {
    let mut best = Vec::new();
    for &kind in kinds {
        let mut first: Option<(f64, f64)> = None;
        for s in schedulers {
            let top = cells
                .iter()
                .filter(|c| c.rw == kind && &c.scheduler == s)
                .filter_map(|c| c.iops.median.map(|m| (m, c)))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            let Some((iops, c)) = top else { continue };
            let cpu = c.kernel_us_per_io.median.unwrap_or(0.0);
            let (iops_vs_first, cpu_vs_first) = match first {
                None => {
                    first = Some((iops, cpu));
                    (Some(1.0), Some(1.0))
                }
                Some((fi, fc)) => ((fi > 0.0).then(|| iops / fi), (fc > 0.0).then(|| cpu / fc)),
            };
            best.push(MaxBest {
                rw: kind,
                scheduler: s.clone(),
                threads: c.threads,
                iops,
                bw_mib_s: c.bw_mib_s.median.unwrap_or(0.0),
                kernel_us_per_io: cpu,
                busy_pct: c.busy_pct.median.unwrap_or(0.0),
                iops_vs_first,
                cpu_vs_first,
            });
        }
    }
    best
}
