//! The `sweep --max` text and CSV tables: IOPS per thread count and
//! scheduler, then each scheduler's maximum with its CPU cost and the
//! ratios to the first scheduler.

use crate::view::max::{MaxBest, MaxTable};

use iolab_sys::units::format_bytes;

/// How one line of the maxima prints a scheduler's [`MaxBest`].
type BestText = fn(&MaxBest) -> String;

/// The text tables, one per kind.
pub fn render(t: &MaxTable) -> String {
    let bs_label = t.bs_bytes.map_or_else(|| "?".to_string(), format_bytes);
    let engine = t.engine.as_deref().unwrap_or("?");
    let mut out = String::new();
    for &kind in &t.kinds {
        let n = t
            .cells
            .iter()
            .filter(|c| c.rw == kind)
            .map(|c| c.samples.len());
        out.push_str(&format!(
            "{}, bs {bs_label}, {engine}: IOPS, median of {}\n",
            kind.title(),
            super::count_of(n.max().unwrap_or(0), "run")
        ));
        let mut rows = vec![super::header_row("threads", &t.schedulers)];
        for &n in &t.threads {
            let mut row = vec![n.to_string()];
            for s in &t.schedulers {
                row.push(
                    t.cell(kind, n, s)
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
            for s in &t.schedulers {
                row.push(t.best(kind, s).map_or_else(|| "-".to_string(), f));
            }
            rows.push(row);
        }
        out.push_str(&iolab_sys::text::align_columns(&rows, 1));
        if let Some(&top) = t.threads.last() {
            let at_top: Vec<&str> = t
                .best
                .iter()
                .filter(|b| b.rw == kind && b.threads == top && t.threads.len() > 1)
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
pub fn csv(t: &MaxTable) -> String {
    let mut out = String::from(
        "rw,threads,scheduler,n,iops_median,iops_min,iops_max,bw_mib_s_median,kernel_us_per_io_median,busy_pct_median\n",
    );
    let f = super::csv_num;
    for c in &t.cells {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            c.rw.fio_rw(),
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
    use iolab_results::max::MaxPoint;
    use iolab_results::sweep::Kind;
    use iolab_store::RunRecord;
    use serde_json::json;

    fn run(s: &str, w: &str, rep: u32, iops: f64, us: f64) -> RunRecord {
        let p = MaxPoint {
            total_ios: iolab_sys::cast::floor_u64(iops * 2.0),
            io_bytes: iolab_sys::cast::floor_u64(iops * 2.0 * 4096.0),
            runtime_s: 2.0,
            iops,
            bw_bytes: iops * 4096.0,
            wall_ns: 2_000_000_000,
            kernel_ns: iolab_sys::cast::floor_u64(iops * 2.0 * us * 1e3),
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
            config: json!({"bs": 4096, "ioengine": "psync", "iodepth": 1}),
            extra: serde_json::to_value(p).unwrap(),
            outcome: iolab_store::RunOutcome::Ok,
            reason: None,
            variant: None,
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
        let text = render(&t);
        assert!(text.contains("random read, bs 4KiB, psync"), "{text}");
        assert!(text.contains("100.0k"), "{text}");
        assert!(text.contains("0.60×"), "{text}");
        assert_eq!(csv(&t).lines().count(), 1 + 4);
    }
}
