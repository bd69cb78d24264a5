//! The maximum-throughput tables, derived only from stored runs (so the
//! sweep's output, `results show` and a recomputation agree): per access
//! kind, thread counts as rows and schedulers as columns (median IOPS over
//! repetitions), then each scheduler's maximum, where it was reached, its
//! bandwidth, the kernel CPU per I/O there, and the ratio to the first
//! scheduler (BFQ's overhead against none as one number).

use serde::Serialize;

use iolab_stats::{summarize, Sample, Summary};
use iolab_store::RunRecord;

use super::point::MaxPoint;
use crate::sweep::plan::{parse_workload, Kind};

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
}

const MIB: f64 = 1_048_576.0;

/// How one line of the maxima prints a scheduler's [`MaxBest`].
type BestText = fn(&MaxBest) -> String;

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
        MaxTable {
            schedulers,
            threads,
            kinds,
            cells,
            best,
        }
    }

    fn cell(&self, kind: Kind, threads: u32, s: &str) -> Option<&MaxCell> {
        self.cells
            .iter()
            .find(|c| c.rw == kind && c.threads == threads && c.scheduler == s)
    }

    fn best(&self, kind: Kind, s: &str) -> Option<&MaxBest> {
        self.best.iter().find(|b| b.rw == kind && b.scheduler == s)
    }

    /// The text tables, one per kind.
    pub fn render(&self, bs_label: &str, engine: &str) -> String {
        let mut out = String::new();
        for &kind in &self.kinds {
            let n = self
                .cells
                .iter()
                .filter(|c| c.rw == kind)
                .map(|c| c.samples.len())
                .max()
                .unwrap_or(0);
            out.push_str(&format!(
                "{}, bs {bs_label}, {engine}: IOPS, median of {n} run{}\n",
                kind.title(),
                if n == 1 { "" } else { "s" }
            ));
            let head =
                std::iter::once("threads".to_string()).chain(self.schedulers.iter().cloned());
            let mut rows = vec![head.collect::<Vec<_>>()];
            for &t in &self.threads {
                let mut row = vec![t.to_string()];
                for s in &self.schedulers {
                    row.push(
                        self.cell(kind, t, s)
                            .and_then(|c| c.iops.median)
                            .map_or_else(|| "-".to_string(), iops_text),
                    );
                }
                rows.push(row);
            }
            let lines: [(&str, BestText); 7] = [
                ("max IOPS", |b| iops_text(b.iops)),
                ("at threads", |b| b.threads.to_string()),
                ("MiB/s", |b| format!("{:.1}", b.bw_mib_s)),
                ("kernel µs/IO", |b| format!("{:.2}", b.kernel_us_per_io)),
                ("CPU busy %", |b| format!("{:.0}", b.busy_pct)),
                ("IOPS vs 1st", |b| ratio_text(b.iops_vs_first)),
                ("µs/IO vs 1st", |b| ratio_text(b.cpu_vs_first)),
            ];
            for (label, f) in lines {
                let mut row = vec![label.to_string()];
                for s in &self.schedulers {
                    row.push(self.best(kind, s).map_or_else(|| "-".to_string(), f));
                }
                rows.push(row);
            }
            out.push_str(&iolab_sys::text::align_columns(&rows, 1));
            if let Some(&top) = self.threads.last() {
                let at_top: Vec<&str> = self
                    .best
                    .iter()
                    .filter(|b| b.rw == kind && b.threads == top && self.threads.len() > 1)
                    .map(|b| b.scheduler.as_str())
                    .collect();
                if !at_top.is_empty() {
                    out.push_str(&format!(
                        "note: the maximum of {} is at the most threads tried ({top}): the device may sustain more with --threads ...,{}\n",
                        at_top.join(", "),
                        top * 2
                    ));
                }
            }
            out.push('\n');
        }
        out
    }

    /// One CSV row per cell.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "rw,threads,scheduler,n,iops_median,iops_min,iops_max,bw_mib_s_median,kernel_us_per_io_median,busy_pct_median\n",
        );
        let f = |v: Option<f64>| v.map_or_else(String::new, |x| format!("{x:.3}"));
        for c in &self.cells {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{}\n",
                c.rw.rw().as_str(),
                c.threads,
                c.scheduler,
                c.iops.n,
                f(c.iops.median),
                f(c.iops.min),
                f(c.iops.max),
                f(c.bw_mib_s.median),
                f(c.kernel_us_per_io.median),
                f(c.busy_pct.median),
            ));
        }
        out
    }
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

/// `35.0k`, `1.23M`, `812`.
fn iops_text(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn ratio_text(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |r| format!("{r:.2}×"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(s: &str, w: &str, rep: u32, iops: f64, us: f64) -> RunRecord {
        let p = MaxPoint {
            total_ios: (iops * 2.0) as u64,
            io_bytes: (iops * 2.0 * 4096.0) as u64,
            runtime_s: 2.0,
            iops,
            bw_bytes: iops * 4096.0,
            wall_ns: 2_000_000_000,
            kernel_ns: (iops * 2.0 * us * 1e3) as u64,
            kernel_us_per_io: us,
            user_ns: 0,
            busy_pct: 90.0,
            job_sys_ns: 0,
            disk_ios: None,
            disk_bytes: None,
        };
        RunRecord {
            scheduler: s.into(),
            workload: w.into(),
            rep,
            target: "loop9".into(),
            started_at: String::new(),
            duration_ns: 2_000_000_000,
            censored: false,
            timeout_ns: 0,
            exit_code: None,
            signal: None,
            overhead_ns: None,
            background: None,
            config: json!({}),
            extra: serde_json::to_value(p).unwrap(),
            outcome: iolab_store::RunOutcome::Ok,
            reason: None,
        }
    }

    #[test]
    fn maximum_is_the_best_median_and_ratios_use_the_first_column() {
        let runs = vec![
            run("none", "rand-read-1j-1qd", 1, 30_000.0, 10.0),
            run("none", "rand-read-2j-1qd", 1, 100_000.0, 8.0),
            run("none", "rand-read-2j-1qd", 2, 110_000.0, 8.0),
            run("none", "rand-read-2j-1qd", 3, 90_000.0, 8.0),
            run("bfq", "rand-read-1j-1qd", 1, 25_000.0, 12.0),
            run("bfq", "rand-read-2j-1qd", 1, 60_000.0, 16.0),
            run("bfq", "startup-ish", 1, 1e9, 1.0),
        ];
        let t = MaxTable::from_runs(&runs);
        assert_eq!(t.schedulers, vec!["none", "bfq"]);
        assert_eq!(t.threads, vec![1, 2]);
        let none = t.best(Kind::RandRead, "none").unwrap();
        assert_eq!((none.threads, none.iops), (2, 100_000.0));
        let bfq = t.best(Kind::RandRead, "bfq").unwrap();
        assert!((bfq.iops_vs_first.unwrap() - 0.6).abs() < 1e-9);
        assert!((bfq.cpu_vs_first.unwrap() - 2.0).abs() < 1e-9);
        let text = t.render("4KiB", "psync");
        assert!(text.contains("random read, bs 4KiB, psync"), "{text}");
        assert!(text.contains("100.0k"), "{text}");
        assert!(text.contains("0.60×"), "{text}");
        assert_eq!(t.csv().lines().count(), 1 + 4);
    }
}
