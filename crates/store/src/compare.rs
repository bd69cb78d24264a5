//! `iolab results compare A B`: did a change (kernel patch, tunable,
//! prefetch list, device) make it better, and is the difference real?
//!
//! Matching cells (scheduler × workload, and target where both have the
//! same targets) of two experiments of the same kind, or two named cells,
//! are compared on one metric: the stored runs' own values (start-up time,
//! throughput, IOPS, or any numeric field of the runs' `extra`). Per pair:
//! seed 004's table (average, median, min, max, stddev, diff %), the ratio
//! B/A of the means with Fieller's 95 % interval (the same estimator the
//! start-up tables use against idle), and a verdict from Welch's t-test at
//! 95 % (better or worse by the metric's direction). The verdict does not
//! come from the ratio's interval: where that interval is bounded the two
//! agree (Fieller's pivot at ρ = 1 is Welch's statistic), but a noisy
//! baseline makes Fieller's interval unbounded while the difference of
//! means can still be plain (CI once saw a 3.5× IOPS gain called
//! "undecided" because one of three baseline runs was slow).

use iolab_results::ExperimentKind;
use serde::Serialize;

use std::cmp::Ordering;

use iolab_stats::{ratio_of_means, summarize, welch_test, Ratio, Sample, Summary, LEVEL_95};

use crate::report::ExperimentReport;
use crate::stored::{RunOutcome, RunRecord};

/// What is compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSpec {
    /// `duration` (the run's measured time) or a dotted path into the
    /// run's `extra` (e.g. `bw_bytes`, `clat_ns.percentile.99.000000`).
    pub name: String,
    /// Unit for display.
    pub unit: String,
    /// True when larger values are better (throughput), false for times.
    pub higher_is_better: bool,
    /// Display scale: shown value = stored value × scale.
    pub scale: f64,
}

impl MetricSpec {
    /// The metric an experiment kind is judged by.
    pub fn default_for(kind: &ExperimentKind) -> MetricSpec {
        match kind {
            ExperimentKind::Sweep => MetricSpec {
                name: "bw_bytes".into(),
                unit: "MiB/s".into(),
                higher_is_better: true,
                scale: 1.0 / 1_048_576.0,
            },
            ExperimentKind::SweepMax => MetricSpec {
                name: "iops".into(),
                unit: "IOPS".into(),
                higher_is_better: true,
                scale: 1.0,
            },
            _ => MetricSpec {
                name: "duration".into(),
                unit: "s".into(),
                higher_is_better: false,
                scale: 1.0,
            },
        }
    }

    /// A metric named on the command line: `duration`, or a path into
    /// `extra`; larger is better unless it looks like a time or latency.
    pub fn named(name: &str) -> MetricSpec {
        if name == "duration" {
            return MetricSpec::default_for(&ExperimentKind::Startup);
        }
        let lower = ["lat", "ns", "time", "_us", "_ms", "_s", "cpu"]
            .iter()
            .any(|w| name.contains(w));
        MetricSpec {
            name: name.to_string(),
            unit: String::new(),
            higher_is_better: !lower,
            scale: 1.0,
        }
    }

    /// The run's value, `None` when the run has no such number.
    pub fn value(&self, run: &RunRecord) -> Option<f64> {
        if self.name == "duration" {
            return Some(run.duration_ns as f64 / 1e9);
        }
        let mut v = &run.extra;
        for part in split_path(&self.name) {
            v = v.get(part)?;
        }
        v.as_f64().map(|x| x * self.scale)
    }
}

/// `clat_ns.percentile.99.000000` → `clat_ns`, `percentile`, `99.000000`:
/// a key with a dot inside (fio's percentiles) is kept whole when the
/// dotted form is numeric.
fn split_path(path: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = path;
    while let Some((head, tail)) = rest.split_once('.') {
        if head.chars().all(|c| c.is_ascii_digit()) && tail.chars().all(|c| c.is_ascii_digit()) {
            break;
        }
        parts.push(head);
        rest = tail;
    }
    parts.push(rest);
    parts
}

/// One side of a pair: the values and seed 004's statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// Experiment id.
    pub experiment: i64,
    /// `target/scheduler/workload`.
    pub cell: String,
    /// Every sample, in repetition order.
    pub values: Vec<f64>,
    /// Their statistics (censored runs are lower bounds).
    pub stats: Summary,
}

/// How B stands against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better at 95 %.
    Better,
    /// Significantly worse at 95 %.
    Worse,
    /// Welch's test does not reject equal means at 95 %.
    NoSignificantDifference,
    /// Fewer than two samples a side, or censored runs.
    Undecided,
}

impl Verdict {
    /// Words for the table.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::Undecided => "undecided",
        }
    }
}

/// One compared pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairComparison {
    /// The cell's key, as both sides share it.
    pub key: String,
    /// A, the reference.
    pub a: Side,
    /// B, the candidate.
    pub b: Side,
    /// mean(B) − mean(A).
    pub diff: Option<f64>,
    /// 100 × (mean(B) − mean(A)) / mean(A): seed 004's "diff %".
    pub diff_pct: Option<f64>,
    /// mean(B) / mean(A) with Fieller's 95 % interval.
    pub ratio: Option<Ratio>,
    /// B against A.
    pub verdict: Verdict,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Experiment kind of both.
    pub kind: ExperimentKind,
    /// The metric.
    pub metric: MetricSpec,
    /// Every matched pair.
    pub pairs: Vec<PairComparison>,
    /// Cells only A has.
    pub only_a: Vec<String>,
    /// Cells only B has.
    pub only_b: Vec<String>,
}

/// A cell named on the command line (`SCHEDULER/WORKLOAD`, or
/// `TARGET/SCHEDULER/WORKLOAD`; a variant's cell is `WORKLOAD +VARIANT`,
/// e.g. `bfq/idle +prefetch:before`).
pub fn parse_cell(spec: &str) -> Result<(Option<String>, String, String), String> {
    let parts: Vec<&str> = spec.split('/').collect();
    match parts.as_slice() {
        [s, w] if !s.is_empty() && !w.is_empty() => Ok((None, s.to_string(), w.to_string())),
        [t, s, w] if !s.is_empty() && !w.is_empty() => {
            Ok((Some(t.to_string()), s.to_string(), w.to_string()))
        }
        _ => Err(format!(
            "cell {spec:?}: expected SCHEDULER/WORKLOAD or TARGET/SCHEDULER/WORKLOAD, e.g. bfq/seq-write"
        )),
    }
}

type Key = (String, String, String);

/// The one cell of `g` that `spec` names.
fn find_cell<'r>(
    g: &[(Key, Vec<&'r RunRecord>)],
    spec: &str,
    id: i64,
) -> Result<(Key, Vec<&'r RunRecord>), String> {
    let (t, s, w) = parse_cell(spec)?;
    let hits: Vec<&(Key, Vec<&RunRecord>)> = g
        .iter()
        .filter(|(k, _)| k.1 == s && k.2 == w && t.as_ref().is_none_or(|t| *t == k.0))
        .collect();
    match hits.as_slice() {
        [one] => Ok((one.0.clone(), one.1.clone())),
        [] => Err(format!("experiment {id} has no cell {spec}")),
        _ => Err(format!(
            "experiment {id} has {spec} for several targets: name it as TARGET/SCHEDULER/WORKLOAD"
        )),
    }
}

fn key_text(k: &Key) -> String {
    format!("{}/{}/{}", k.0, k.1, k.2)
}

fn groups(report: &ExperimentReport) -> Vec<(Key, Vec<&RunRecord>)> {
    let mut g: Vec<(Key, Vec<&RunRecord>)> = Vec::new();
    for r in &report.runs {
        if !matches!(r.outcome, RunOutcome::Ok | RunOutcome::Censored) {
            continue;
        }
        // A variant (e.g. prefetch) is its own cell, matched as part of
        // the workload: `bfq/idle +prefetch:before` (targets may differ
        // between experiments and are then not matched on).
        let workload = match &r.variant {
            Some(v) => format!("{} +{v}", r.workload),
            None => r.workload.clone(),
        };
        let k = (r.target.clone(), r.scheduler.clone(), workload);
        match g.iter_mut().find(|(gk, _)| *gk == k) {
            Some((_, v)) => v.push(r),
            None => g.push((k, vec![r])),
        }
    }
    for (_, v) in &mut g {
        v.sort_by_key(|r| r.rep);
    }
    g
}

fn side(id: i64, key: &Key, runs: &[&RunRecord], m: &MetricSpec) -> Side {
    let samples: Vec<Sample> = runs
        .iter()
        .filter_map(|r| {
            m.value(r).map(|v| Sample {
                value: v,
                // A cut-off run bounds a time from below; a throughput
                // of a cut-off run is still a measured rate.
                censored: r.censored && m.name == "duration",
            })
        })
        .collect();
    Side {
        experiment: id,
        cell: key_text(key),
        values: samples.iter().map(|s| s.value).collect(),
        stats: summarize(&samples),
    }
}

/// Is B's mean significantly above (`Greater`) or below A's, or neither;
/// `None` when it cannot be told.
///
/// Cut-off runs are lower bounds. When exactly one side has them, the test
/// is run with those runs at their bounds: if that side is still
/// significantly the larger, its true values (at least as large) are too —
/// a slow side that timed out against a fast one is a decided difference.
/// Any other outcome with censored runs stays undecided.
fn difference(a: &Side, b: &Side) -> Option<Ordering> {
    if let Some(w) = welch_test(&b.stats, &a.stats, LEVEL_95) {
        return Some(w.direction);
    }
    let at_bounds = |s: &Side| summarize(&Sample::all_exact(&s.values));
    let w = welch_test(&at_bounds(b), &at_bounds(a), LEVEL_95)?;
    match (a.stats.censored > 0, b.stats.censored > 0, w.direction) {
        (false, true, Ordering::Greater) => Some(Ordering::Greater),
        (true, false, Ordering::Less) => Some(Ordering::Less),
        _ => None,
    }
}

/// Compares one pair of sides.
pub fn pair(key: String, a: Side, b: Side, m: &MetricSpec) -> PairComparison {
    let ratio = ratio_of_means(&b.stats, &a.stats);
    let diff = match (a.stats.mean, b.stats.mean) {
        (Some(x), Some(y)) => Some(y - x),
        _ => None,
    };
    let diff_pct = match (a.stats.mean, diff) {
        (Some(x), Some(d)) if x != 0.0 => Some(100.0 * d / x),
        _ => None,
    };
    let verdict = match difference(&a, &b) {
        None => Verdict::Undecided,
        Some(Ordering::Equal) => Verdict::NoSignificantDifference,
        Some(up) => {
            if (up == Ordering::Greater) == m.higher_is_better {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        }
    };
    PairComparison {
        key,
        a,
        b,
        diff,
        diff_pct,
        ratio,
        verdict,
    }
}

/// Compares two experiments cell by cell, or the two cells given.
pub fn compare(
    a: &ExperimentReport,
    b: &ExperimentReport,
    metric: Option<&str>,
    cells: Option<(&str, &str)>,
) -> Result<Comparison, String> {
    let (ka, kb) = (&a.experiment.kind, &b.experiment.kind);
    if ka != kb && cells.is_none() {
        return Err(format!(
            "experiment {} is a {ka} experiment and {} a {kb} one: compare experiments of the same kind, or name two cells with --cells",
            a.experiment.id, b.experiment.id
        ));
    }
    let m = metric.map_or_else(|| MetricSpec::default_for(ka), MetricSpec::named);
    let (ga, gb) = (groups(a), groups(b));
    let (ia, ib) = (a.experiment.id.0, b.experiment.id.0);
    let mut pairs = Vec::new();
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    if let Some((ca, cb)) = cells {
        let (ka, ra) = find_cell(&ga, ca, ia)?;
        let (kb, rb) = find_cell(&gb, cb, ib)?;
        // The target once when both cells share it (it is often a long
        // command line).
        let key = if ka.0 == kb.0 {
            format!("{}/{} vs {}/{}", ka.1, ka.2, kb.1, kb.2)
        } else {
            format!("{} vs {}", key_text(&ka), key_text(&kb))
        };
        pairs.push(pair(
            key,
            side(ia, &ka, &ra, &m),
            side(ib, &kb, &rb, &m),
            &m,
        ));
    } else {
        // Same targets on both sides: match on all three; otherwise (a
        // renamed or different target) on scheduler and workload.
        let ta: Vec<&String> = ga.iter().map(|(k, _)| &k.0).collect();
        let same_targets = gb.iter().all(|(k, _)| ta.contains(&&k.0));
        let matches = |x: &Key, y: &Key| x.1 == y.1 && x.2 == y.2 && (!same_targets || x.0 == y.0);
        for (k, ra) in &ga {
            match gb.iter().find(|(kb, _)| matches(k, kb)) {
                Some((kb, rb)) => {
                    let key = if kb == k {
                        key_text(k)
                    } else {
                        format!("{}/{}", k.1, k.2)
                    };
                    pairs.push(pair(key, side(ia, k, ra, &m), side(ib, kb, rb, &m), &m));
                }
                None => only_a.push(key_text(k)),
            }
        }
        for (k, _) in &gb {
            if !ga.iter().any(|(ka, _)| matches(ka, k)) {
                only_b.push(key_text(k));
            }
        }
        if pairs.is_empty() {
            return Err(format!(
                "experiments {ia} and {ib} have no cell in common (same scheduler and workload): name two cells with --cells A_CELL,B_CELL"
            ));
        }
    }
    Ok(Comparison {
        kind: ka.clone(),
        metric: m,
        pairs,
        only_a,
        only_b,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    fn normal(rng: &mut SmallRng, mean: f64, sd: f64) -> f64 {
        // Box–Muller.
        let (u, v): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random());
        mean + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    fn side_of(values: &[f64]) -> Side {
        Side {
            experiment: 1,
            cell: "t/s/w".into(),
            values: values.to_vec(),
            stats: summarize(&Sample::all_exact(values)),
        }
    }

    /// On synthetic normal samples with a known true ratio, the 95 %
    /// interval covers it in about 95 % of trials, and with equal means
    /// the verdict is "no significant difference" about 95 % of the time.
    #[test]
    fn interval_coverage_on_synthetic_samples() {
        let mut rng = SmallRng::seed_from_u64(7);
        let m = MetricSpec::default_for(&ExperimentKind::Startup);
        let trials = 2000;
        let (mut covered, mut no_diff) = (0, 0);
        for _ in 0..trials {
            let a: Vec<f64> = (0..10).map(|_| normal(&mut rng, 2.0, 0.2)).collect();
            let b: Vec<f64> = (0..10).map(|_| normal(&mut rng, 2.4, 0.3)).collect();
            let p = pair("k".into(), side_of(&a), side_of(&b), &m);
            let ci = p.ratio.unwrap().ci95.unwrap();
            if ci.low <= 1.2 && 1.2 <= ci.high {
                covered += 1;
            }
            let c: Vec<f64> = (0..10).map(|_| normal(&mut rng, 2.0, 0.3)).collect();
            if pair("k".into(), side_of(&a), side_of(&c), &m).verdict
                == Verdict::NoSignificantDifference
            {
                no_diff += 1;
            }
        }
        let cov = covered as f64 / trials as f64;
        let nd = no_diff as f64 / trials as f64;
        assert!((0.93..=0.97).contains(&cov), "coverage {cov}");
        assert!((0.93..=0.97).contains(&nd), "no-difference rate {nd}");
    }

    #[test]
    fn verdict_follows_the_metric_direction() {
        let a = side_of(&[1.0, 1.1, 0.9, 1.0, 1.0]);
        let b = side_of(&[2.0, 2.1, 1.9, 2.0, 2.0]);
        let time = MetricSpec::default_for(&ExperimentKind::Startup);
        let bw = MetricSpec::default_for(&ExperimentKind::Sweep);
        assert_eq!(
            pair("k".into(), a.clone(), b.clone(), &time).verdict,
            Verdict::Worse
        );
        assert_eq!(
            pair("k".into(), a.clone(), b.clone(), &bw).verdict,
            Verdict::Better
        );
        let p = pair("k".into(), a, b, &time);
        assert!((p.diff_pct.unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(
            pair("k".into(), side_of(&[1.0]), side_of(&[2.0]), &time).verdict,
            Verdict::Undecided
        );
    }

    fn censored_side(values: &[f64], cut: &[bool]) -> Side {
        let samples: Vec<Sample> = values
            .iter()
            .zip(cut)
            .map(|(v, c)| Sample {
                value: *v,
                censored: *c,
            })
            .collect();
        Side {
            experiment: 1,
            cell: "c".into(),
            values: values.to_vec(),
            stats: summarize(&samples),
        }
    }

    /// The demo's mq-deadline 1r1w (every start cut off at 5 s) against
    /// BFQ's (1.3 s): decided, since the bounds alone are larger. The other
    /// way round — the censored side the smaller at its bounds — is not.
    #[test]
    fn a_timed_out_side_decides_only_when_its_bounds_already_differ() {
        let time = MetricSpec::default_for(&ExperimentKind::Startup);
        let cut = censored_side(&[5.0, 5.0, 5.0], &[true, true, true]);
        let fast = side_of(&[0.69, 1.56, 1.65]);
        assert_eq!(
            pair("k".into(), cut.clone(), fast.clone(), &time).verdict,
            Verdict::Better
        );
        assert_eq!(
            pair("k".into(), fast, cut.clone(), &time).verdict,
            Verdict::Worse
        );
        let slow = side_of(&[7.0, 7.5, 8.0]);
        assert_eq!(
            pair("k".into(), cut.clone(), slow, &time).verdict,
            Verdict::Undecided
        );
        assert_eq!(
            pair("k".into(), cut.clone(), cut, &time).verdict,
            Verdict::Undecided
        );
    }

    #[test]
    fn paths_keep_fio_percentile_keys_whole() {
        assert_eq!(
            split_path("clat_ns.percentile.99.000000"),
            vec!["clat_ns", "percentile", "99.000000"]
        );
        assert_eq!(split_path("bw_bytes"), vec!["bw_bytes"]);
        assert!(!MetricSpec::named("clat_ns.percentile.99.000000").higher_is_better);
        assert!(MetricSpec::named("iops").higher_is_better);
        assert_eq!(parse_cell("bfq/seq-write").unwrap().1, "bfq");
        assert!(parse_cell("bfq")
            .unwrap_err()
            .contains("SCHEDULER/WORKLOAD"));
    }
}
