//! Confidence interval of the mean: the textbook two-sided Student t
//! interval `mean ± t(1 − α/2, n − 1) · s / √n` (Student, "The probable
//! error of a mean", Biometrika 6, 1908; any statistics text, e.g. Montgomery
//! & Runger, *Applied Statistics and Probability for Engineers*, §8.2).
//!
//! Why not the S suite's: S (`utilities/calc_avg_and_co.sh`) prints
//! `width · q / 2` with `q = sqrt(k / (n (n − 1)))`, where `k` sums every
//! squared deviation *p times* (a loop `for i = 1..p` with p = 95 or 99, the
//! confidence level), and `width` is read from the **one-sided** column of a
//! t table (6.314 for 1 dof at "95"). So its half-width is
//! `t(p, n−1) · (√p / 2) · s/√n`: about 4.9 × the standard error times a
//! one-sided quantile. For n = 10 at 95 % that is 1.833 · 4.87 = 8.93 SE
//! against the correct 2.262 SE, ≈ 3.9× too wide; at the 99 % that
//! `calc_overall_stats.sh` asks for, ≈ 4.3×. The test
//! `s_suite_interval_is_about_four_times_too_wide` reproduces the arithmetic.
//!
//! The t interval assumes roughly normal, independent runs; with the 5–10
//! repetitions a matrix affords, that is the standard choice (a bootstrap
//! needs more samples to be trustworthy). Censored samples make the mean
//! itself unknown, so [`crate::summary`] gives no interval for them.

use serde::{Deserialize, Serialize};

use crate::descriptive::{mean, sample_stddev};
use crate::student_t::two_sided_critical;

/// The confidence level iolab reports.
pub const LEVEL_95: f64 = 0.95;

/// A two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceInterval {
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Half the width, the `±` part (for an asymmetric interval, such as
    /// Fieller's, the larger of the two distances from the estimate).
    pub half_width: f64,
    /// Degrees of freedom of the t quantile used (fractional for Welch).
    pub dof: f64,
}

impl ConfidenceInterval {
    /// True when `x` lies within the interval (ends included).
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// The `level` confidence interval of the mean of exact values; `None` for
/// fewer than two values (no spread to estimate).
pub fn mean_ci(xs: &[f64], level: f64) -> Option<ConfidenceInterval> {
    let m = mean(xs)?;
    let s = sample_stddev(xs)?;
    let dof = (xs.len() - 1) as f64;
    let half_width = two_sided_critical(level, dof)? * s / (xs.len() as f64).sqrt();
    Some(ConfidenceInterval {
        level,
        low: m - half_width,
        high: m + half_width,
        half_width,
        dof,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Student's sleep data (the paired differences, group 1 − group 2), as
    /// in R's `t.test(extra ~ group, data = sleep, paired = TRUE)`:
    /// mean −1.58, 95 % CI −2.4598858 … −0.7001142, df = 9.
    #[test]
    fn matches_r_on_students_sleep_data() {
        let d = [-1.2, -2.4, -1.3, -1.3, 0.0, -1.0, -1.8, -0.8, -4.6, -1.4];
        let ci = mean_ci(&d, LEVEL_95).expect("n = 10");
        assert_eq!(ci.dof, 9.0);
        assert!(close(ci.low, -2.459_885_8, 2e-5), "{ci:?}");
        assert!(close(ci.high, -0.700_114_2, 2e-5), "{ci:?}");
    }

    /// [2, 4, 4, 4, 5, 5, 7, 9]: mean 5, s = √(32/7), t(0.975, 7) = 2.3646;
    /// R: `t.test(c(2,4,4,4,5,5,7,9))` → 3.212504 … 6.787496.
    #[test]
    fn matches_r_on_small_integers() {
        let ci = mean_ci(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], LEVEL_95).expect("n = 8");
        assert!(close(ci.low, 3.212_504, 2e-5), "{ci:?}");
        assert!(close(ci.high, 6.787_496, 2e-5), "{ci:?}");
        assert!(close(ci.half_width, 1.787_496, 2e-5));
        assert!(ci.contains(5.0));
    }

    #[test]
    fn none_below_two_samples() {
        assert_eq!(mean_ci(&[1.0], LEVEL_95), None);
        assert_eq!(mean_ci(&[], LEVEL_95), None);
    }

    #[test]
    fn zero_spread_gives_a_point() {
        let ci = mean_ci(&[3.0, 3.0, 3.0], LEVEL_95).expect("n = 3");
        assert_eq!((ci.low, ci.high, ci.half_width), (3.0, 3.0, 0.0));
    }

    /// S's formula, transcribed from calc_avg_and_co.sh, against ours.
    #[test]
    fn s_suite_interval_is_about_four_times_too_wide() {
        let xs = [6.1, 6.4, 6.2, 6.5, 6.3, 6.0, 6.6, 6.2, 6.4, 6.1];
        let n = xs.len() as f64;
        let m = mean(&xs).expect("n > 0");
        let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
        let s_suite = |p: f64, one_sided_t: f64| {
            let k = p * ss; // the inner loop adds each deviation p times
            one_sided_t * (k / (n * (n - 1.0))).sqrt() / 2.0
        };
        let ours95 = mean_ci(&xs, 0.95).expect("n = 10").half_width;
        let ours99 = mean_ci(&xs, 0.99).expect("n = 10").half_width;
        // S's table, dof 9: 1.833 ("95"), 2.821 ("99").
        let r95 = s_suite(95.0, 1.833) / ours95;
        let r99 = s_suite(99.0, 2.821) / ours99;
        assert!((3.8..4.1).contains(&r95), "{r95}");
        assert!((4.2..4.5).contains(&r99), "{r99}");
    }
}
