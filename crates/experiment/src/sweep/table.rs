//! The sweep's tables, derived only from stored runs (so `iolab sweep`,
//! `iolab results show` and a recomputation agree): one table per access
//! kind, like seed 002's charts, with numjobs/iodepth patterns as rows and
//! schedulers as columns; each cell the median over repetitions with the
//! min–max range (with three repetitions a Student-t interval is mostly
//! width; mean and CI95 are in the JSON).

use serde::Serialize;

use iolab_stats::{summarize, Sample, Summary};
use iolab_store::RunRecord;

use super::plan::{parse_workload, Kind, Pattern};

/// What the table cells show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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
    fn title(self) -> &'static str {
        match self {
            Metric::Bw => "throughput [MiB/s]",
            Metric::Iops => "IOPS",
            Metric::P50 => "completion latency p50 [ms]",
            Metric::P99 => "completion latency p99 [ms]",
            Metric::BioP99 => "block-layer latency p99 [ms] (issue → complete)",
        }
    }

    fn of(self, c: &SweepCell) -> &Summary {
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
                workload: super::plan::workload_name(a.key.0, a.key.1),
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
        }
    }

    fn cell(&self, kind: Kind, pattern: Pattern, scheduler: &str) -> Option<&SweepCell> {
        self.cells
            .iter()
            .find(|c| c.rw == kind && c.pattern == pattern && c.scheduler == scheduler)
    }

    /// The text tables: one per kind, `metric` in the cells.
    pub fn render(&self, metric: Metric, bs_label: &str) -> String {
        let mut out = String::new();
        for &kind in &self.kinds {
            let n = self
                .cells
                .iter()
                .filter(|c| c.rw == kind)
                .map(|c| c.reps.len())
                .max()
                .unwrap_or(0);
            out.push_str(&format!(
                "{}, bs {bs_label}: {}, median (min–max) of {n} rep{}\n",
                kind.title(),
                metric.title(),
                if n == 1 { "" } else { "s" }
            ));
            let mut rows = vec![std::iter::once("jobs/qd".to_string())
                .chain(self.schedulers.iter().cloned())
                .collect::<Vec<_>>()];
            for &p in &self.patterns {
                let mut row = vec![format!("{}/{}", p.numjobs, p.iodepth)];
                for s in &self.schedulers {
                    row.push(
                        self.cell(kind, p, s)
                            .map_or_else(|| "-".to_string(), |c| cell_text(metric.of(c))),
                    );
                }
                rows.push(row);
            }
            out.push_str(&iolab_sys::text::align_columns(&rows, 1));
            out.push('\n');
        }
        out
    }

    /// One CSV row per cell (the table's numbers plus mean and CI95).
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "rw,workload,numjobs,iodepth,scheduler,n,bw_mib_s_median,bw_mib_s_min,bw_mib_s_max,bw_mib_s_mean,bw_mib_s_ci95_low,bw_mib_s_ci95_high,iops_median,clat_p50_ms_median,clat_p99_ms_median,bio_p99_ms_median\n",
        );
        let f = |v: Option<f64>| v.map_or_else(String::new, |x| format!("{x:.3}"));
        for c in &self.cells {
            let b = &c.bw_mib_s;
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                c.rw.rw().as_str(),
                c.workload,
                c.pattern.numjobs,
                c.pattern.iodepth,
                c.scheduler,
                b.n,
                f(b.median),
                f(b.min),
                f(b.max),
                f(b.mean),
                f(b.ci95.as_ref().map(|ci| ci.low)),
                f(b.ci95.as_ref().map(|ci| ci.high)),
                f(c.iops.median),
                f(c.clat_p50_ms.median),
                f(c.clat_p99_ms.median),
                f(c.bio_p99_ms.median),
            ));
        }
        out
    }
}

/// `41.2 (40.1–42.0)`; one decimal, or two when values are under 10.
fn cell_text(s: &Summary) -> String {
    let (Some(med), Some(min), Some(max)) = (s.median, s.min, s.max) else {
        return "-".to_string();
    };
    let d = if max < 10.0 { 2 } else { 1 };
    if s.n < 2 {
        format!("{med:.d$}")
    } else {
        format!("{med:.d$} ({min:.d$}–{max:.d$})")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(s: &str, w: &str, rep: u32, mib: f64) -> RunRecord {
        RunRecord {
            scheduler: s.into(),
            workload: w.into(),
            rep,
            target: "loop9".into(),
            started_at: String::new(),
            duration_ns: 1,
            censored: false,
            timeout_ns: 0,
            exit_code: None,
            signal: None,
            overhead_ns: None,
            background: None,
            config: json!({}),
            extra: json!({
                "bw_bytes": mib * MIB,
                "iops": mib,
                "clat_ns": {"percentile": {"50.000000": 2_000_000, "99.000000": 9_500_000}},
                "bio": {"lost_events": 0, "R": {"lat_p99_us": 7000.0}, "W": {"lat_p99_us": 3000.0}},
            }),
            outcome: iolab_store::RunOutcome::Ok,
            reason: None,
        }
    }

    #[test]
    fn cells_group_reps_and_table_has_patterns_by_schedulers() {
        let runs = vec![
            run("none", "seq-read-1j-1qd", 1, 40.0),
            run("bfq", "seq-read-1j-1qd", 1, 30.0),
            run("none", "seq-read-4j-4qd", 1, 41.0),
            run("none", "seq-read-1j-1qd", 2, 42.0),
            run("none", "seq-read-1j-1qd", 3, 44.0),
            run("bfq", "rand-write-1j-1qd", 1, 20.0),
            run("x", "not-a-sweep", 1, 1.0),
        ];
        let t = SweepTable::from_runs(&runs);
        assert_eq!(t.schedulers, ["none", "bfq"]);
        assert_eq!(t.kinds, [Kind::Read, Kind::RandWrite]);
        assert_eq!(t.patterns.len(), 2);
        let c = t.cell(Kind::Read, t.patterns[0], "none").unwrap();
        assert_eq!(c.reps, [1, 2, 3]);
        assert_eq!(c.bw_mib_s.median, Some(42.0));
        assert_eq!(c.clat_p99_ms.median, Some(9.5));
        let text = t.render(Metric::Bw, "1MiB");
        assert!(
            text.contains(
                "sequential read, bs 1MiB: throughput [MiB/s], median (min–max) of 3 reps"
            ),
            "{text}"
        );
        assert!(text.contains("42.0 (40.0–44.0)"), "{text}");
        assert!(text.contains("random write"), "{text}");
        let first_row = text.lines().nth(1).unwrap();
        assert!(
            first_row.starts_with("jobs/qd")
                && first_row.contains("none")
                && first_row.contains("bfq")
        );
        // 4/4 has no bfq run: a dash, not a number.
        let row44 = text.lines().find(|l| l.starts_with("4/4")).unwrap();
        assert!(row44.trim_end().ends_with('-'), "{row44}");
        let p99 = t.render(Metric::P99, "1MiB");
        assert!(p99.contains("9.50"), "{p99}");
        let bio = t.render(Metric::BioP99, "1MiB");
        assert!(bio.contains("7.00") && bio.contains("3.00"), "{bio}");
    }

    #[test]
    fn csv_has_a_row_per_cell() {
        let runs = vec![
            run("none", "seq-write-1j-4qd", 1, 10.0),
            run("none", "seq-write-1j-4qd", 2, 12.0),
        ];
        let csv = SweepTable::from_runs(&runs).csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[1].starts_with("write,seq-write-1j-4qd,1,4,none,2,11.000,10.000,12.000,11.000,"),
            "{}",
            lines[1]
        );
    }
}
