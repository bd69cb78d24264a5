//! Per-cell summary of raw samples, honest about censored runs.
//!
//! Without censoring: n, mean, sample standard deviation (n − 1; `None` for
//! n < 2), median, min, max, the 95 % Student t interval of the mean
//! ([`crate::interval`]) and MAD outliers ([`crate::outliers`]).
//!
//! With censored samples (runs stopped at a timeout T, true value ≥ T) the
//! rules follow from what is still known (order statistics under right
//! censoring; Klein & Moeschberger, *Survival Analysis*, §3.2):
//! - The samples are sorted by observed value, exact before censored on
//!   ties. Raising a censored sample to its unknown true value can only move
//!   it up, so an order statistic whose position and all positions below it
//!   hold exact samples is exact; otherwise its observed value is a lower
//!   bound. Hence the **median** is exact while fewer than half the samples
//!   are censored (with a common timeout); otherwise it is reported as a
//!   lower bound (`median_is_lower_bound`), which the table prints as `>T`.
//! - The **mean** of the observed values is a lower bound of the true mean
//!   (`mean_is_lower_bound`). The **standard deviation** and the **confidence
//!   interval** are `None`: the spread of the unknown values is unknown, and
//!   an interval computed from lower bounds would claim a precision that does
//!   not exist. (Imputing T, as many scripts do, silently biases both.)
//! - **max** is a lower bound as soon as one sample is censored; **min** only
//!   if the smallest sample is censored.
//! - **Outliers** are judged among exact samples only: a censored run is
//!   already reported as such, and its value is not a measurement.

use serde::{Deserialize, Serialize};

use crate::descriptive::{mean, median_positions, sample_stddev};
use crate::interval::{mean_ci, ConfidenceInterval, LEVEL_95};
use crate::outliers::outlier_indices;
use crate::sample::Sample;

/// Statistics of one cell (one scheduler × workload × target). Values are in
/// the unit of the samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples, censored included.
    pub n: usize,
    /// Number of censored samples (runs that hit the timeout).
    pub censored: usize,
    /// Arithmetic mean of the observed values; `None` when n = 0.
    pub mean: Option<f64>,
    /// True when some samples are censored: the true mean is at least `mean`.
    pub mean_is_lower_bound: bool,
    /// Sample standard deviation (n − 1); `None` for n < 2 or any censoring.
    pub stddev: Option<f64>,
    /// Median; `None` when n = 0.
    pub median: Option<f64>,
    /// True when half or more of the samples are censored: the true median
    /// is at least `median`.
    pub median_is_lower_bound: bool,
    /// Smallest value; `None` when n = 0.
    pub min: Option<f64>,
    /// True when the smallest sample is censored (all are, with one timeout).
    pub min_is_lower_bound: bool,
    /// Largest value; `None` when n = 0.
    pub max: Option<f64>,
    /// True when any sample is censored.
    pub max_is_lower_bound: bool,
    /// 95 % confidence interval of the mean (Student t, n − 1 dof); `None`
    /// for n < 2 or any censoring.
    pub ci95: Option<ConfidenceInterval>,
    /// Indices (into the input samples) of exact samples flagged as outliers
    /// by the MAD modified z-score (|M| > 3.5).
    pub outliers: Vec<usize>,
}

/// Summarises a cell's raw samples (values must be finite).
pub fn summarize(samples: &[Sample]) -> Summary {
    let n = samples.len();
    let censored = samples.iter().filter(|s| s.censored).count();
    let observed: Vec<f64> = samples.iter().map(|s| s.value).collect();

    let mut sorted = samples.to_vec();
    // Exact before censored on ties: a censored value only bounds from below.
    sorted.sort_by(|a, b| {
        a.value
            .total_cmp(&b.value)
            .then(a.censored.cmp(&b.censored))
    });
    let (median, median_is_lower_bound) = if n == 0 {
        (None, false)
    } else {
        let (lo, hi) = median_positions(n);
        let known = sorted[..=hi].iter().all(|s| !s.censored);
        (Some((sorted[lo].value + sorted[hi].value) / 2.0), !known)
    };

    let (exact_idx, exact): (Vec<usize>, Vec<f64>) = samples
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.censored)
        .map(|(i, s)| (i, s.value))
        .unzip();
    let complete = censored == 0;

    Summary {
        n,
        censored,
        mean: mean(&observed),
        mean_is_lower_bound: !complete,
        stddev: if complete {
            sample_stddev(&exact)
        } else {
            None
        },
        median,
        median_is_lower_bound,
        min: sorted.first().map(|s| s.value),
        min_is_lower_bound: sorted.first().is_some_and(|s| s.censored),
        max: sorted.last().map(|s| s.value),
        max_is_lower_bound: !complete,
        ci95: if complete {
            mean_ci(&exact, LEVEL_95)
        } else {
            None
        },
        outliers: outlier_indices(&exact)
            .into_iter()
            .map(|i| exact_idx[i])
            .collect(),
    }
}

impl Summary {
    /// Number of samples that completed.
    pub fn exact(&self) -> usize {
        self.n - self.censored
    }

    /// Standard error of the mean, s/√n, when the mean is exact and n ≥ 2.
    pub fn standard_error(&self) -> Option<f64> {
        Some(self.stddev? / (self.n as f64).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(xs: &[f64]) -> Vec<Sample> {
        Sample::all_exact(xs)
    }

    #[test]
    fn complete_cell_has_every_statistic() {
        let s = summarize(&exact(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]));
        assert_eq!((s.n, s.censored, s.exact()), (8, 0, 8));
        assert_eq!(s.mean, Some(5.0));
        assert_eq!(s.median, Some(4.5));
        assert_eq!((s.min, s.max), (Some(2.0), Some(9.0)));
        assert!(!s.mean_is_lower_bound && !s.median_is_lower_bound);
        assert!(!s.min_is_lower_bound && !s.max_is_lower_bound);
        let ci = s.ci95.expect("n = 8");
        assert!((ci.low - 3.212_504).abs() < 2e-5);
        let se = s.standard_error().expect("n = 8");
        assert!((se - (32.0f64 / 7.0 / 8.0).sqrt()).abs() < 1e-12);
        // MAD = 0.5 here (five deviations of 0.5), so 9 scores
        // 0.6745 · 4.5 / 0.5 = 6.07: flagged, though only flagged.
        assert_eq!(s.outliers, vec![7]);
    }

    #[test]
    fn empty_and_single() {
        let e = summarize(&[]);
        assert_eq!(
            (e.n, e.mean, e.median, e.min, e.ci95),
            (0, None, None, None, None)
        );
        let one = summarize(&exact(&[6.36]));
        assert_eq!((one.mean, one.stddev, one.ci95), (Some(6.36), None, None));
    }

    /// 2 of 5 censored at 60: the median (3rd of 5) is still exact.
    #[test]
    fn minority_censored_keeps_the_median() {
        let mut v = exact(&[12.0, 10.0, 11.0]);
        v.push(Sample::censored_at(60.0));
        v.push(Sample::censored_at(60.0));
        let s = summarize(&v);
        assert_eq!((s.n, s.censored), (5, 2));
        assert_eq!(s.median, Some(12.0));
        assert!(!s.median_is_lower_bound);
        assert_eq!(s.mean, Some(30.6));
        assert!(s.mean_is_lower_bound);
        assert_eq!((s.stddev, s.ci95), (None, None));
        assert_eq!(s.max, Some(60.0));
        assert!(s.max_is_lower_bound && !s.min_is_lower_bound);
    }

    /// 3 of 5 censored: the median is only known to be ≥ 60 (">60").
    #[test]
    fn majority_censored_bounds_the_median() {
        let v = vec![
            Sample::censored_at(60.0),
            Sample::exact(20.0),
            Sample::censored_at(60.0),
            Sample::exact(25.0),
            Sample::censored_at(60.0),
        ];
        let s = summarize(&v);
        assert_eq!(s.median, Some(60.0));
        assert!(s.median_is_lower_bound);
    }

    /// Exactly half of an even count: (x + T)/2 is only a lower bound.
    #[test]
    fn half_censored_even_count_bounds_the_median() {
        let v = vec![
            Sample::exact(5.0),
            Sample::exact(6.0),
            Sample::censored_at(60.0),
            Sample::censored_at(60.0),
        ];
        let s = summarize(&v);
        assert_eq!(s.median, Some(33.0));
        assert!(s.median_is_lower_bound);
    }

    /// A censored sample tied with an exact one sorts above it.
    #[test]
    fn ties_put_exact_first() {
        let v = vec![
            Sample::censored_at(5.0),
            Sample::exact(5.0),
            Sample::exact(1.0),
        ];
        let s = summarize(&v);
        assert_eq!(s.median, Some(5.0));
        assert!(!s.median_is_lower_bound);
        let all = summarize(&[Sample::censored_at(60.0)]);
        assert!(all.min_is_lower_bound && all.median_is_lower_bound);
    }

    #[test]
    fn outlier_indices_point_into_the_input() {
        let v = vec![
            Sample::censored_at(60.0),
            Sample::exact(1.0),
            Sample::exact(2.0),
            Sample::exact(3.0),
            Sample::exact(4.0),
            Sample::exact(100.0),
        ];
        assert_eq!(summarize(&v).outliers, vec![5]);
    }
}
