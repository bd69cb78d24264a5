//! The verdict of a plan with points (`iolab startup --vary`, `--recipe`):
//! per workload, every scheduler × point with the start-up's slowdown
//! against idle (Fieller's 95 % interval), its gain against the baseline
//! (Welch's 95 % interval of the difference), and what it cost the
//! background: the load's throughput during the starts against the
//! baseline's (a ratio of means with Fieller's interval). Rows are ranked
//! by start-up gain per background cost (gains told apart from the
//! baseline at 95 % before those that are not), the Pareto front (no other row
//! both starts faster and leaves the background more) is marked, and the
//! verdict says when the two best are not distinguishable.
//!
//! The baseline is the first scheduler at the point that sets nothing
//! (every axis `-`), else at the first point: said in the view.

use serde::Serialize;

use iolab_results::variant;
use iolab_stats::{
    ratio_of_means, summarize, two_sided_ci_of_difference, welch_test, Ratio, Sample, Summary,
    LEVEL_95,
};
use iolab_store::{CellReport, ExperimentReport, RunRecord, IDLE_WORKLOAD};

/// A background cost below this counts as free when ranking (gain per
/// cost would otherwise divide by nothing).
pub const FREE_COST: f64 = 0.01;

/// One scheduler × point of one workload.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictRow {
    /// Rank, 1 = best (the baseline has one too).
    pub rank: usize,
    /// I/O scheduler.
    pub scheduler: String,
    /// The point's text (`name=value; ...`), empty without axes.
    pub point: String,
    /// True for the baseline row.
    pub baseline: bool,
    /// Start-up samples.
    pub n: usize,
    /// Mean start-up, s.
    pub startup_s: Option<f64>,
    /// Its 95 % half-width, s.
    pub startup_ci95_s: Option<f64>,
    /// Start-up under this load / idle start-up at the same point.
    pub slowdown: Option<Ratio>,
    /// Baseline mean − this mean, s (positive: faster).
    pub gain_s: Option<f64>,
    /// Welch's 95 % interval of that gain, s: (low, high).
    pub gain_ci95_s: Option<(f64, f64)>,
    /// The gain's interval leaves out zero.
    pub distinguishable: bool,
    /// The load's read + write throughput during the starts, bytes/s.
    pub bg_bytes_per_s: Option<f64>,
    /// That throughput / the baseline's, with Fieller's interval.
    pub bg_ratio: Option<Ratio>,
    /// 1 − bg_ratio: the share of the background's throughput given up.
    pub bg_cost: Option<f64>,
    /// Relative start-up gain / max(bg_cost, 1 %): the ranking key.
    pub gain_per_cost: Option<f64>,
    /// On the Pareto front of start-up time against background throughput.
    pub pareto: bool,
}

/// The ranked rows of one workload.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictTable {
    /// The background workload.
    pub workload: String,
    /// Ranked rows, best first.
    pub rows: Vec<VerdictRow>,
    /// When the two best rows cannot be told apart at 95 % (Welch): their
    /// names.
    pub best_two_alike: Option<(String, String)>,
}

/// The verdict of an experiment with points.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictView {
    /// `SCHEDULER @ POINT` of the baseline.
    pub baseline: String,
    /// One table per loaded workload.
    pub tables: Vec<VerdictTable>,
}

/// The verdict, for an experiment whose runs have points; `None` otherwise.
pub fn verdict(r: &ExperimentReport) -> Option<VerdictView> {
    let cells: Vec<&CellReport> = r
        .cells
        .iter()
        .filter(|c| variant::prefetch_of(c.variant.as_deref()).is_none())
        .filter(|c| variant::point_of(c.variant.as_deref()).is_some())
        .collect();
    let first = cells.first()?;
    let point = |c: &CellReport| variant::point_of(c.variant.as_deref()).unwrap_or_default();
    let unset = |p: &str| variant::settings_of(p).iter().all(|(_, v)| *v == "-");
    let base_sched = first.scheduler.clone();
    let base_point = cells
        .iter()
        .filter(|c| c.scheduler == base_sched)
        .map(|c| point(c))
        .find(|p| unset(p))
        .unwrap_or_else(|| point(first));
    let mut workloads: Vec<String> = Vec::new();
    for c in &cells {
        if c.workload != IDLE_WORKLOAD && !workloads.contains(&c.workload) {
            workloads.push(c.workload.clone());
        }
    }
    let tables = workloads
        .into_iter()
        .map(|w| table(r, &cells, &w, &base_sched, &base_point))
        .collect();
    Some(VerdictView {
        baseline: format!("{base_sched} @ {base_point}"),
        tables,
    })
}

/// The background's rate in each sample start of `c`, bytes/s.
fn bg_summary(r: &ExperimentReport, c: &CellReport) -> Summary {
    let rates: Vec<f64> = r
        .runs
        .iter()
        .filter(|x| same_cell(x, c) && x.outcome.is_sample())
        .filter_map(|x| x.background.as_ref())
        .filter(|b| b.seconds > 0.0)
        .map(|b| (b.read_bytes + b.write_bytes) as f64 / b.seconds)
        .collect();
    summarize(&Sample::all_exact(&rates))
}

fn same_cell(x: &RunRecord, c: &CellReport) -> bool {
    x.target == c.target
        && x.scheduler == c.scheduler
        && x.workload == c.workload
        && x.variant == c.variant
}

fn table(
    r: &ExperimentReport,
    cells: &[&CellReport],
    workload: &str,
    base_sched: &str,
    base_point: &str,
) -> VerdictTable {
    let mine: Vec<&CellReport> = cells
        .iter()
        .copied()
        .filter(|c| c.workload == workload)
        .collect();
    let point = |c: &CellReport| variant::point_of(c.variant.as_deref()).unwrap_or_default();
    let base = mine
        .iter()
        .copied()
        .find(|c| c.scheduler == base_sched && point(c) == base_point);
    let base_bg = base.map(|b| bg_summary(r, b));
    let mut rows: Vec<VerdictRow> = mine
        .iter()
        .map(|c| {
            let bg = bg_summary(r, c);
            let is_base = base.is_some_and(|b| std::ptr::eq(b, *c));
            let gain_s = match (base.and_then(|b| b.stats.mean), c.stats.mean) {
                (Some(b), Some(m)) => Some(b - m),
                _ => None,
            };
            let gain_ci = base
                .and_then(|b| two_sided_ci_of_difference(&b.stats, &c.stats, LEVEL_95))
                .map(|ci| (ci.low, ci.high));
            let bg_ratio = base_bg.as_ref().and_then(|b| ratio_of_means(&bg, b));
            let bg_cost = bg_ratio.as_ref().map(|x| 1.0 - x.value);
            let rel_gain = match (gain_s, base.and_then(|b| b.stats.mean)) {
                (Some(g), Some(b)) if b > 0.0 => Some(g / b),
                _ => None,
            };
            let gain_per_cost = match (rel_gain, bg_cost) {
                (Some(g), Some(cost)) if g > 0.0 && !is_base => Some(g / cost.max(FREE_COST)),
                _ => None,
            };
            VerdictRow {
                rank: 0,
                scheduler: c.scheduler.clone(),
                point: point(c),
                baseline: is_base,
                n: c.stats.n,
                startup_s: c.stats.mean,
                startup_ci95_s: c.stats.ci95.as_ref().map(|ci| ci.half_width),
                slowdown: c.ratio_to_idle.clone(),
                gain_s,
                gain_ci95_s: gain_ci,
                distinguishable: gain_ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0),
                bg_bytes_per_s: bg.mean,
                bg_ratio,
                bg_cost,
                gain_per_cost,
                pareto: false,
            }
        })
        .collect();
    // Pareto: no other row starts faster and leaves the background at
    // least as much, one of them strictly.
    let front: Vec<bool> = rows
        .iter()
        .map(|a| {
            let (Some(ta), Some(ba)) = (a.startup_s, a.bg_bytes_per_s) else {
                return false;
            };
            !rows.iter().any(|b| match (b.startup_s, b.bg_bytes_per_s) {
                (Some(tb), Some(bb)) => tb <= ta && bb >= ba && (tb < ta || bb > ba),
                _ => false,
            })
        })
        .collect();
    for (row, f) in rows.iter_mut().zip(front) {
        row.pareto = f;
    }
    // Gain per cost first (only rows that gained), gains told apart from
    // the baseline before those that are not; then the rest by gain.
    rows.sort_by(|a, b| match (a.gain_per_cost, b.gain_per_cost) {
        (Some(x), Some(y)) => b
            .distinguishable
            .cmp(&a.distinguishable)
            .then(y.total_cmp(&x)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => b
            .gain_s
            .unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&a.gain_s.unwrap_or(f64::NEG_INFINITY)),
    });
    for (i, row) in rows.iter_mut().enumerate() {
        row.rank = i + 1;
    }
    let best_two_alike = match (rows.first(), rows.get(1)) {
        (Some(a), Some(b)) => {
            let cell = |row: &VerdictRow| {
                mine.iter()
                    .copied()
                    .find(|c| c.scheduler == row.scheduler && point(c) == row.point)
            };
            match (cell(a), cell(b)) {
                (Some(x), Some(y)) => welch_test(&x.stats, &y.stats, LEVEL_95)
                    .filter(|w| w.direction == std::cmp::Ordering::Equal)
                    .map(|_| (name(a), name(b))),
                _ => None,
            }
        }
        _ => None,
    };
    VerdictTable {
        workload: workload.to_string(),
        rows,
        best_two_alike,
    }
}

/// `SCHEDULER @ POINT`.
pub fn name(row: &VerdictRow) -> String {
    format!("{} @ {}", row.scheduler, row.point)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iolab_store::testutil::{experiment, run};
    use iolab_store::BackgroundIo;

    fn r(sched: &str, w: &str, point: &str, rep: u32, secs: f64, bg: u64) -> RunRecord {
        let mut x = run(sched, w, rep, secs);
        x.variant = Some(point.to_string());
        if w != "idle" {
            x.background = Some(BackgroundIo {
                read_bytes: bg,
                write_bytes: 0,
                seconds: 1.0,
            });
        }
        x
    }

    #[test]
    fn ranks_by_gain_per_cost_marks_the_front_and_knows_the_baseline() {
        let base = "wbt_lat_usec=-; load.ioprio=-";
        let idle_prio = "wbt_lat_usec=-; load.ioprio=idle";
        let no_wbt = "wbt_lat_usec=0; load.ioprio=-";
        let mut runs = Vec::new();
        for rep in 1..=4 {
            let j = f64::from(rep) * 0.01;
            for p in [base, idle_prio, no_wbt] {
                runs.push(r("bfq", "idle", p, rep, 1.0 + j, 0));
            }
            // Baseline: slow, full background.
            runs.push(r(
                "bfq",
                "1r1w",
                base,
                rep,
                4.0 + j,
                100_000_000 + u64::from(rep),
            ));
            // Idle class: fast, half the background.
            runs.push(r(
                "bfq",
                "1r1w",
                idle_prio,
                rep,
                1.5 + j,
                50_000_000 + u64::from(rep),
            ));
            // No wbt: a little faster, the background a little more.
            runs.push(r(
                "bfq",
                "1r1w",
                no_wbt,
                rep,
                3.0 + j,
                100_000_010 + u64::from(rep),
            ));
        }
        let rep = iolab_store::ExperimentReport::new(
            experiment(iolab_results::ExperimentKind::Startup),
            runs,
        );
        let v = verdict(&rep).unwrap();
        assert_eq!(v.baseline, format!("bfq @ {base}"));
        let t = &v.tables[0];
        assert_eq!(t.workload, "1r1w");
        // no_wbt: 25 % faster for ~0 % cost → gain/cost 25; idle class:
        // 62.5 % faster for 50 % → 1.25.
        assert_eq!(t.rows[0].point, no_wbt);
        assert_eq!(t.rows[1].point, idle_prio);
        assert!(t.rows[2].baseline);
        assert!(t.rows[0].pareto && t.rows[1].pareto && !t.rows[2].pareto);
        assert!(t.rows[0].distinguishable);
        let cost = t.rows[1].bg_cost.unwrap();
        assert!((cost - 0.5).abs() < 0.01, "{cost}");
        let s = t.rows[1].slowdown.as_ref().unwrap().value;
        assert!((s - 1.5 / 1.0).abs() < 0.05, "{s}");
        assert!(t.best_two_alike.is_none());
    }

    #[test]
    fn experiments_without_points_have_no_verdict() {
        let rep = iolab_store::ExperimentReport::new(
            experiment(iolab_results::ExperimentKind::Startup),
            vec![run("bfq", "idle", 1, 1.0)],
        );
        assert!(verdict(&rep).is_none());
    }
}
