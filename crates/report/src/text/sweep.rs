//! The sweep's text and CSV tables: one table per access kind, like seed
//! 002's charts, with numjobs/iodepth patterns as rows and schedulers as
//! columns; each cell the median over repetitions with the min–max range.

use crate::view::sweep::{Metric, SweepTable};
use iolab_stats::Summary;
use iolab_sys::units::format_bytes;

/// The text tables: one per kind, `metric` in the cells.
pub fn render(t: &SweepTable, metric: Metric) -> String {
    let bs_label = t.bs_bytes.map_or_else(|| "?".to_string(), format_bytes);
    let mut out = String::new();
    for &kind in &t.kinds {
        let n = t
            .cells
            .iter()
            .filter(|c| c.rw == kind)
            .map(|c| c.reps.len());
        out.push_str(&format!(
            "{}, bs {bs_label}: {}, median (min–max) of {}\n",
            kind.title(),
            metric.title(),
            super::count_of(n.max().unwrap_or(0), "rep")
        ));
        let mut rows = vec![super::header_row("jobs/qd", &t.schedulers)];
        for &p in &t.patterns {
            let mut row = vec![format!("{}/{}", p.numjobs, p.iodepth)];
            for s in &t.schedulers {
                row.push(
                    t.cell(kind, p, s)
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
pub fn csv(t: &SweepTable) -> String {
    let mut out = String::from(
        "rw,workload,numjobs,iodepth,scheduler,n,bw_mib_s_median,bw_mib_s_min,bw_mib_s_max,bw_mib_s_mean,bw_mib_s_ci95_low,bw_mib_s_ci95_high,iops_median,clat_p50_ms_median,clat_p99_ms_median,bio_p99_ms_median\n",
    );
    let f = super::csv_num;
    for c in &t.cells {
        let b = &c.bw_mib_s;
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            c.rw.fio_rw(),
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
    use iolab_results::sweep::Kind;
    use iolab_store::RunRecord;
    use serde_json::json;

    const MIB: f64 = 1_048_576.0;

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
            config: json!({"bs": 1048576}),
            extra: json!({
                "bw_bytes": mib * MIB,
                "iops": mib,
                "clat_ns": {"percentile": {"50.000000": 2_000_000, "99.000000": 9_500_000}},
                "bio": {"lost_events": 0, "R": {"lat_p99_us": 7000.0}, "W": {"lat_p99_us": 3000.0}},
            }),
            outcome: iolab_store::RunOutcome::Ok,
            reason: None,
            variant: None,
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
        let text = render(&t, Metric::Bw);
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
        let p99 = render(&t, Metric::P99);
        assert!(p99.contains("9.50"), "{p99}");
        let bio = render(&t, Metric::BioP99);
        assert!(bio.contains("7.00") && bio.contains("3.00"), "{bio}");
    }

    #[test]
    fn csv_has_a_row_per_cell() {
        let runs = vec![
            run("none", "seq-write-1j-4qd", 1, 10.0),
            run("none", "seq-write-1j-4qd", 2, 12.0),
        ];
        let csv = csv(&SweepTable::from_runs(&runs));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[1].starts_with("write,seq-write-1j-4qd,1,4,none,2,11.000,10.000,12.000,11.000,"),
            "{}",
            lines[1]
        );
    }
}
