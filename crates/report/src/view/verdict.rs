//! The verdict of a plan with points (`iolab startup --vary`, `--recipe`):
//! per workload, every scheduler × point with the start-up's slowdown
//! against idle, its gain against the baseline, and what it cost the
//! background.
//!
//! The background's cost is what the disk did, not what the load counted:
//! a buffered write counts for the load when the page cache takes it, so a
//! point that lets dirty pages pile up (wbt off, a high dirty ratio) would
//! show a rate the disk never sustained. Each cell's `cell_io` document
//! holds /proc/diskstats over the cell window (from the load's start to
//! its writeback flushed by syncfs); the target group's bytes are taken
//! out of it where iolab's groups exist (without groups the starts' own
//! reads stay in, a few MiB against the load's GiB), and the rest over
//! the window's seconds is the cell's background at the disk. The load's
//! own rate during the starts stays beside it, and a load that counted
//! more than 1.25 × the rate the disk sustained is flagged (a page cache
//! filling). Without a `cell_io` document the load's counters are used,
//! and the row says so.
//!
//! Every row is one comparison with the baseline, and a table of m rows
//! is a family of m − 1: the gain is "told apart" when Holm's adjusted
//! Welch p-value is below 0.05 (family-wise), and its interval is the
//! simultaneous one (Bonferroni, 1 − 0.05/(m − 1) each), so of all the
//! intervals shown the chance that any misses is at most 5 %. Ratios
//! (×idle, the background against the baseline's) take their intervals on
//! the log scale, which never reaches below zero.
//!
//! Rows are ranked on gain: gains told apart first, largest first; cost
//! is the second axis, shown beside it and in the Pareto front (no other
//! row both starts faster and leaves the background as much or more, a
//! difference the cell windows cannot tell apart counting as "as much"). A ratio of two
//! point estimates (gain per cost) is not used: it has no interval worth
//! the name at these sizes. When the best two cannot be told apart, the
//! verdict names the cheaper.
//!
//! The baseline is the first scheduler at the point that sets nothing
//! (every axis `-`), else at the first point: said in the view.

use serde::Serialize;

use iolab_results::{variant, ArtifactKind};
use iolab_stats::{
    holm, ratio_of_means_log, summarize, two_sided_ci_of_difference, welch_p, welch_test, Ratio,
    Sample, Summary, LEVEL_95,
};
use iolab_store::{CellReport, ExperimentReport, RunRecord, IDLE_WORKLOAD};

/// A load that counted more than this × what the disk did over the same
/// cell: the page cache took the difference.
pub const CACHE_GAP: f64 = 1.25;

/// Where a row's background rate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BgSource {
    /// /proc/diskstats over the cell, less the target group's bytes.
    Disk,
    /// The load's own counters (no `cell_io` document for the cell).
    Load,
}

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
    /// Start-up under this load / idle start-up at the same point (95 %,
    /// log scale).
    pub slowdown: Option<Ratio>,
    /// Baseline mean − this mean, s (positive: faster).
    pub gain_s: Option<f64>,
    /// The gain's simultaneous interval over the table's family (Welch,
    /// Bonferroni), s: (low, high).
    pub gain_ci95_s: Option<(f64, f64)>,
    /// Welch's p-value against the baseline, Holm-adjusted over the family.
    pub p_holm: Option<f64>,
    /// Told apart from the baseline: `p_holm` < 0.05.
    pub distinguishable: bool,
    /// The background's rate the cost is taken from, bytes/s (`bg_source`).
    pub bg_bytes_per_s: Option<f64>,
    /// Where that rate comes from.
    pub bg_source: BgSource,
    /// The background at the disk: bytes/s over each cell window (one per
    /// round), mean.
    pub disk_bytes_per_s: Option<f64>,
    /// How many cell windows that mean is over.
    pub disk_windows: usize,
    /// The load's own read + write rate during the starts, bytes/s.
    pub load_bytes_per_s: Option<f64>,
    /// The load's own rate during the starts / the disk's over the cell.
    pub load_over_disk: Option<f64>,
    /// `load_over_disk` above [`CACHE_GAP`]: the page cache took what the
    /// disk did not do.
    pub cache_filling: bool,
    /// Share of the disk's written bytes charged to the load's group (its
    /// io.stat or blkio counters), when iolab's groups were used.
    pub load_write_share: Option<f64>,
    /// That share for the target's group.
    pub target_write_share: Option<f64>,
    /// The background's rate / the baseline's, with its simultaneous
    /// interval on the log scale.
    pub bg_ratio: Option<Ratio>,
    /// 1 − bg_ratio: the share of the background's throughput given up.
    pub bg_cost: Option<f64>,
    /// On the Pareto front of start-up time against background rate.
    pub pareto: bool,
}

/// The ranked rows of one workload.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictTable {
    /// The background workload.
    pub workload: String,
    /// Ranked rows, best first.
    pub rows: Vec<VerdictRow>,
    /// Comparisons with the baseline in this table (the family Holm and
    /// the simultaneous intervals are over).
    pub family: usize,
    /// The level of each simultaneous interval (1 − 0.05/family).
    pub interval_level: f64,
    /// When the two best rows cannot be told apart at 95 % (Welch): their
    /// names, the one that costs the background less first.
    pub best_two_alike: Option<(String, String)>,
}

/// The verdict of an experiment with points.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictView {
    /// `SCHEDULER @ POINT` of the baseline.
    pub baseline: String,
    /// One table per loaded workload.
    pub tables: Vec<VerdictTable>,
    /// Settings the plan asked for that would do nothing in a cell, each
    /// `under SCHED: SETTING (point POINT): REASON`; their points ran as
    /// the point without them (stored as the experiment's `inert`).
    pub inert: Vec<String>,
    /// Where a recipe's values come from (the experiment's
    /// `recipe_sources`: Android's, per AOSP file and tag).
    pub sources: Vec<String>,
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
    let cfg = &r.experiment.config;
    // Stored only by plans that had any (absent: none).
    let inert = cfg["inert"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            let f = |k: &str| i[k].as_str().unwrap_or("?");
            format!(
                "under {}: {} (point {}): {}",
                f("scheduler"),
                f("setting"),
                f("point"),
                f("reason")
            )
        })
        .collect();
    let sources = cfg["recipe_sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect();
    Some(VerdictView {
        baseline: format!("{base_sched} @ {base_point}"),
        tables,
        inert,
        sources,
    })
}

/// The load's own rate in each sample start of `c`, bytes/s.
fn load_summary(r: &ExperimentReport, c: &CellReport) -> Summary {
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

/// What the disk did in `c`'s cell windows (one `cell_io` document each).
struct DiskSide {
    /// The background at the disk, bytes/s, per window.
    rates: Vec<f64>,
    /// Σ group writes / Σ disk writes, (load, target).
    write_share: (Option<f64>, Option<f64>),
}

fn disk_side(r: &ExperimentReport, c: &CellReport) -> DiskSide {
    let point = variant::point_of(c.variant.as_deref());
    let mut rates = Vec::new();
    let (mut dw, mut lw, mut tw, mut grouped) = (0u64, 0u64, 0u64, false);
    for a in r.artifacts.iter().filter(|a| {
        a.kind == ArtifactKind::CellIo
            && a.target == c.target
            && a.scheduler == c.scheduler
            && a.workload == c.workload
            && variant::point_of(a.variant.as_deref()) == point
    }) {
        let j = &a.json;
        let (Some(rd), Some(wr), Some(secs)) = (
            j["device_read_bytes"].as_u64(),
            j["device_write_bytes"].as_u64(),
            j["seconds"].as_f64().filter(|s| *s > 0.0),
        ) else {
            continue;
        };
        let g = &j["groups"];
        let bytes = |who: &str, k: &str| g[who][k].as_u64();
        // What the disk did for the background: all of it but the target's
        // own I/O where its group counted it (the starts are not the load).
        let target = bytes("target", "read_bytes").unwrap_or(0)
            + bytes("target", "write_bytes").unwrap_or(0);
        let bg = (rd + wr).saturating_sub(target);
        rates.push(bg as f64 / secs);
        dw += wr;
        if let (Some(l), Some(t)) = (bytes("load", "write_bytes"), bytes("target", "write_bytes")) {
            grouped = true;
            lw += l;
            tw += t;
        }
    }
    let share = |x: u64| (grouped && dw > 0).then(|| x as f64 / dw as f64);
    DiskSide {
        write_share: (share(lw), share(tw)),
        rates,
    }
}

fn same_cell(x: &RunRecord, c: &CellReport) -> bool {
    x.target == c.target
        && x.scheduler == c.scheduler
        && x.workload == c.workload
        && x.variant == c.variant
}

/// One cell's background: the rates the cost is taken from, and whence.
fn background(r: &ExperimentReport, c: &CellReport) -> (Summary, BgSource, DiskSide, Summary) {
    let disk = disk_side(r, c);
    let load = load_summary(r, c);
    if disk.rates.is_empty() {
        (load.clone(), BgSource::Load, disk, load)
    } else {
        let s = summarize(&Sample::all_exact(&disk.rates));
        (s, BgSource::Disk, disk, load)
    }
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
    let idle_of = |c: &CellReport| {
        cells.iter().copied().find(|i| {
            i.workload == IDLE_WORKLOAD && i.scheduler == c.scheduler && point(i) == point(c)
        })
    };
    let base = mine
        .iter()
        .copied()
        .find(|c| c.scheduler == base_sched && point(c) == base_point);
    let base_bg = base.map(|b| background(r, b));
    let family = mine
        .len()
        .saturating_sub(usize::from(base.is_some()))
        .max(1);
    let level = 1.0 - (1.0 - LEVEL_95) / family as f64;
    // Holm over the rows' p-values against the baseline, in row order.
    let ps: Vec<Option<f64>> = mine
        .iter()
        .map(|c| {
            let b = base?;
            (!std::ptr::eq(b, *c))
                .then(|| welch_p(&b.stats, &c.stats))
                .flatten()
        })
        .collect();
    let known: Vec<f64> = ps.iter().flatten().copied().collect();
    let mut adjusted = holm(&known).into_iter();
    let p_holm: Vec<Option<f64>> = ps.iter().map(|p| p.and_then(|_| adjusted.next())).collect();
    let mut rows: Vec<VerdictRow> = mine
        .iter()
        .zip(p_holm)
        .map(|(c, p_holm)| {
            let (bg, source, disk, load) = background(r, c);
            let is_base = base.is_some_and(|b| std::ptr::eq(b, *c));
            let gain_s = match (base.and_then(|b| b.stats.mean), c.stats.mean) {
                (Some(b), Some(m)) => Some(b - m),
                _ => None,
            };
            let gain_ci = base
                .filter(|_| !is_base)
                .and_then(|b| two_sided_ci_of_difference(&b.stats, &c.stats, level))
                .map(|ci| (ci.low, ci.high));
            // The cost compares like with like: the disk's rate against the
            // baseline's disk rate, the load's against the load's.
            let bg_ratio = base_bg.as_ref().and_then(|(b, bs, _, bl)| {
                if *bs == source {
                    ratio_of_means_log(&bg, b, level)
                } else {
                    ratio_of_means_log(&load, bl, level)
                }
            });
            let bg_cost = bg_ratio.as_ref().map(|x| 1.0 - x.value);
            let disk_rate = summarize(&Sample::all_exact(&disk.rates)).mean;
            let load_over_disk = match (load.mean, disk_rate) {
                (Some(l), Some(d)) if d > 0.0 => Some(l / d),
                _ => None,
            };
            let slowdown =
                idle_of(c).and_then(|i| ratio_of_means_log(&c.stats, &i.stats, LEVEL_95));
            VerdictRow {
                rank: 0,
                scheduler: c.scheduler.clone(),
                point: point(c),
                baseline: is_base,
                n: c.stats.n,
                startup_s: c.stats.mean,
                startup_ci95_s: c.stats.ci95.as_ref().map(|ci| ci.half_width),
                slowdown: slowdown.or_else(|| c.ratio_to_idle.clone()),
                gain_s,
                gain_ci95_s: gain_ci,
                p_holm,
                distinguishable: p_holm.is_some_and(|p| p < 1.0 - LEVEL_95),
                bg_bytes_per_s: bg.mean,
                bg_source: source,
                disk_bytes_per_s: disk_rate,
                disk_windows: disk.rates.len(),
                load_bytes_per_s: load.mean,
                load_over_disk,
                cache_filling: load_over_disk.is_some_and(|g| g > CACHE_GAP),
                load_write_share: disk.write_share.0,
                target_write_share: disk.write_share.1,
                bg_ratio,
                bg_cost,
                pareto: false,
            }
        })
        .collect();
    // Pareto: no other row starts faster and leaves the background at
    // least as much, one of them strictly. "At least as much" includes a
    // background the cell windows cannot tell apart (Welch, 95 %): a row
    // seconds slower is not on the front for a rate the disk did not
    // measurably sustain more of (a page cache filling does not count).
    let bgs: Vec<Summary> = mine.iter().map(|c| background(r, c).0).collect();
    let front: Vec<bool> = rows
        .iter()
        .zip(&bgs)
        .map(|(a, sa)| {
            let (Some(ta), Some(ba)) = (a.startup_s, a.bg_bytes_per_s) else {
                return false;
            };
            !rows
                .iter()
                .zip(&bgs)
                .any(|(b, sb)| match (b.startup_s, b.bg_bytes_per_s) {
                    (Some(tb), Some(bb)) => {
                        let alike = welch_test(sb, sa, LEVEL_95)
                            .is_some_and(|w| w.direction == std::cmp::Ordering::Equal);
                        (tb < ta && (bb >= ba || alike)) || (tb <= ta && bb > ba)
                    }
                    _ => false,
                })
        })
        .collect();
    for (row, f) in rows.iter_mut().zip(front) {
        row.pareto = f;
    }
    // Gains told apart first, then by gain, largest first.
    rows.sort_by(|a, b| {
        let told = |x: &VerdictRow| x.distinguishable && x.gain_s.is_some_and(|g| g > 0.0);
        told(b).cmp(&told(a)).then(
            b.gain_s
                .unwrap_or(f64::NEG_INFINITY)
                .total_cmp(&a.gain_s.unwrap_or(f64::NEG_INFINITY)),
        )
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
                    .map(|_| {
                        let rate = |r: &VerdictRow| r.bg_bytes_per_s.unwrap_or(0.0);
                        if rate(b) > rate(a) {
                            (name(b), name(a))
                        } else {
                            (name(a), name(b))
                        }
                    }),
                _ => None,
            }
        }
        _ => None,
    };
    VerdictTable {
        workload: workload.to_string(),
        rows,
        family,
        interval_level: level,
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
    use iolab_store::{Artifact, BackgroundIo, RunId};

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

    /// A cell window's `cell_io` document: the disk did `disk` bytes over
    /// one second (the target's group 1 MB of it), the load counted `load`.
    fn window(sched: &str, w: &str, point: &str, round: u32, disk: u64, load: u64) -> Artifact {
        Artifact {
            run_id: RunId(i64::from(round)),
            scheduler: sched.into(),
            workload: w.into(),
            target: "app".into(),
            rep: round,
            variant: Some(point.into()),
            kind: ArtifactKind::CellIo,
            json: serde_json::json!({
                "seconds": 1.0,
                "device_read_bytes": 1_000_000,
                "device_write_bytes": disk,
                "load_read_bytes": 0,
                "load_write_bytes": load,
                "groups": {"hierarchy": "cgroup v2 at /sys/fs/cgroup",
                    "target": {"read_bytes": 1_000_000, "write_bytes": 0},
                    "load": {"read_bytes": 0, "write_bytes": disk * 9 / 10}},
            }),
        }
    }

    #[test]
    fn ranks_on_gain_costs_from_the_disk_and_flags_a_filling_cache() {
        let base = "wbt_lat_usec=-; load.ioprio=-";
        let idle_prio = "wbt_lat_usec=-; load.ioprio=idle";
        let no_wbt = "wbt_lat_usec=0; load.ioprio=-";
        let noise = "wbt_lat_usec=-; load.ioprio=be:7";
        let mut runs = Vec::new();
        let mut docs = Vec::new();
        for rep in 1..=4u32 {
            let j = f64::from(rep) * 0.01;
            let d = u64::from(rep) * 100_000;
            for p in [base, idle_prio, no_wbt, noise] {
                runs.push(r("bfq", "idle", p, rep, 1.0 + j, 0));
            }
            // Baseline: slow; the load counted what the disk did.
            runs.push(r("bfq", "1r1w", base, rep, 4.0 + j, 100_000_000));
            docs.push(window(
                "bfq",
                "1r1w",
                base,
                rep,
                100_000_000 + d,
                100_000_000,
            ));
            // Idle class: fast, half the background.
            runs.push(r("bfq", "1r1w", idle_prio, rep, 1.5 + j, 50_000_000));
            docs.push(window(
                "bfq",
                "1r1w",
                idle_prio,
                rep,
                50_000_000 + d,
                50_000_000,
            ));
            // No wbt: faster; the load counted twice the baseline's (the
            // page cache took it) while the disk did 40 %.
            runs.push(r("bfq", "1r1w", no_wbt, rep, 3.0 + j, 200_000_000));
            docs.push(window(
                "bfq",
                "1r1w",
                no_wbt,
                rep,
                40_000_000 + d,
                200_000_000,
            ));
            // As slow as the baseline, noisy: never told apart.
            runs.push(r(
                "bfq",
                "1r1w",
                noise,
                rep,
                4.0 + 3.0 * (j - 0.025),
                100_000_000,
            ));
            docs.push(window(
                "bfq",
                "1r1w",
                noise,
                rep,
                100_000_000 + d,
                100_000_000,
            ));
        }
        let mut rep = iolab_store::ExperimentReport::new(
            experiment(iolab_results::ExperimentKind::Startup),
            runs,
        );
        rep.artifacts = docs;
        let v = verdict(&rep).unwrap();
        assert_eq!(v.baseline, format!("bfq @ {base}"));
        let t = &v.tables[0];
        assert_eq!((t.workload.as_str(), t.family), ("1r1w", 3));
        assert!((t.interval_level - (1.0 - 0.05 / 3.0)).abs() < 1e-12);
        // Ranked on gain, told apart first.
        let order: Vec<&str> = t.rows.iter().map(|r| r.point.as_str()).collect();
        assert_eq!(order[..2], [idle_prio, no_wbt]);
        let row = |p: &str| t.rows.iter().find(|r| r.point == p).unwrap();
        assert!(row(idle_prio).distinguishable && row(no_wbt).distinguishable);
        assert!(!row(noise).distinguishable, "{:?}", row(noise).p_holm);
        // Holm: an adjusted p is never below the raw one.
        let raw = welch_p(
            &rep.cells
                .iter()
                .find(|c| c.variant.as_deref() == Some(base) && c.workload == "1r1w")
                .unwrap()
                .stats,
            &rep.cells
                .iter()
                .find(|c| c.variant.as_deref() == Some(noise) && c.workload == "1r1w")
                .unwrap()
                .stats,
        )
        .unwrap();
        assert!(row(noise).p_holm.unwrap() >= raw);
        // The cost is the disk's: no_wbt gave up 60 % of it, though its
        // load counted twice the baseline's; flagged, and off the front
        // (idle class starts faster and leaves the disk more).
        let nw = row(no_wbt);
        assert_eq!(nw.bg_source, BgSource::Disk);
        assert!((nw.bg_cost.unwrap() - 0.6).abs() < 0.01, "{:?}", nw.bg_cost);
        assert!(nw.cache_filling && !row(idle_prio).cache_filling);
        assert!(!nw.pareto && row(idle_prio).pareto);
        assert_eq!(nw.disk_windows, 4);
        // 90 % of the disk's writes were charged to the load's group.
        assert!((nw.load_write_share.unwrap() - 0.9).abs() < 0.01);
        // Log-scale intervals: never below zero.
        for r in &t.rows {
            for x in [&r.slowdown, &r.bg_ratio].into_iter().flatten() {
                if let Some(ci) = &x.ci95 {
                    assert!(ci.low > 0.0 && ci.contains(x.value), "{x:?}");
                }
            }
        }
        let s = row(idle_prio).slowdown.as_ref().unwrap().value;
        assert!((s - 1.5 / 1.0).abs() < 0.05, "{s}");
        assert!(t.best_two_alike.is_none());
    }

    #[test]
    fn a_slower_row_is_off_the_front_for_a_background_the_disk_cannot_tell_apart() {
        let base = "wbt_lat_usec=-";
        let off = "wbt_lat_usec=0";
        let (mut runs, mut docs) = (Vec::new(), Vec::new());
        for rep in 1..=5u32 {
            let j = f64::from(rep) * 0.01;
            let noise = [3, 9, 1, 7, 5][rep as usize - 1] * 1_000_000;
            for p in [base, off] {
                runs.push(r("bfq", "idle", p, rep, 1.0 + j, 0));
            }
            runs.push(r("bfq", "1w", base, rep, 2.0 + j, 40_000_000));
            docs.push(window(
                "bfq",
                "1w",
                base,
                rep,
                36_000_000 + noise,
                40_000_000,
            ));
            // Writeback throttling off: much slower; the load counted ten
            // times the disk, which did a hair more, within its noise.
            runs.push(r("bfq", "1w", off, rep, 6.0 + j, 400_000_000));
            docs.push(window(
                "bfq",
                "1w",
                off,
                rep,
                36_500_000 + noise,
                400_000_000,
            ));
        }
        let mut rep = iolab_store::ExperimentReport::new(
            experiment(iolab_results::ExperimentKind::Startup),
            runs,
        );
        rep.artifacts = docs;
        let t = &verdict(&rep).unwrap().tables[0];
        let row = |p: &str| t.rows.iter().find(|r| r.point == p).unwrap();
        assert!(row(off).disk_bytes_per_s > row(base).disk_bytes_per_s);
        assert!(row(off).cache_filling);
        assert!(!row(off).pareto && row(base).pareto);
    }

    #[test]
    fn without_cell_documents_the_loads_counters_are_used_and_said() {
        let mut runs = Vec::new();
        for rep in 1..=3 {
            runs.push(r("bfq", "idle", "x=-", rep, 1.0, 0));
            runs.push(r("bfq", "idle", "x=1", rep, 1.0, 0));
            runs.push(r("bfq", "1w", "x=-", rep, 2.0 + f64::from(rep) * 0.01, 10));
            runs.push(r("bfq", "1w", "x=1", rep, 1.5 + f64::from(rep) * 0.01, 5));
        }
        let rep = iolab_store::ExperimentReport::new(
            experiment(iolab_results::ExperimentKind::Startup),
            runs,
        );
        let t = &verdict(&rep).unwrap().tables[0];
        assert!(t
            .rows
            .iter()
            .all(|r| r.bg_source == BgSource::Load && r.disk_windows == 0));
        let one = t.rows.iter().find(|r| r.point == "x=1").unwrap();
        assert!((one.bg_cost.unwrap() - 0.5).abs() < 1e-9);
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
