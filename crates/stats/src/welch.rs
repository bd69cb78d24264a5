//! Welch's t-test for two means with unequal variances (Welch, 1947),
//! with Welch–Satterthwaite degrees of freedom.
//!
//! `results compare` decides "is B different from A" with this test, not
//! with Fieller's ratio interval: the two agree whenever Fieller's interval
//! is bounded (its pivot at ρ = 1 is this statistic), but when the baseline
//! is noisy enough that its mean's interval reaches zero, Fieller's set is
//! unbounded and says nothing, while the difference of means can still be
//! plainly significant (1 thread against 4 with one slow warm-up run).

use std::cmp::Ordering;

use crate::student_t::two_sided_critical;
use crate::summary::Summary;

/// Outcome of the test at one confidence level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WelchTest {
    /// (x̄ − ȳ) / √(s²ₓ/nₓ + s²ᵧ/nᵧ).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub dof: f64,
    /// `Greater` when x's mean is significantly above y's, `Less` when
    /// below, `Equal` when the difference is not significant.
    pub direction: Ordering,
}

/// Welch's two-sided test of mean(x) = mean(y) at `level` (e.g. 0.95).
/// `None` when either side has fewer than two exact samples or a censored
/// (lower-bound) mean: there is nothing to test.
pub fn welch_test(x: &Summary, y: &Summary, level: f64) -> Option<WelchTest> {
    if x.mean_is_lower_bound || y.mean_is_lower_bound {
        return None;
    }
    let (mx, my) = (x.mean?, y.mean?);
    let a = x.standard_error()?.powi(2);
    let b = y.standard_error()?.powi(2);
    let (nx, ny) = ((x.n - 1) as f64, (y.n - 1) as f64);
    let diff = mx - my;
    if a + b == 0.0 {
        // No spread on either side: any difference is exact.
        let direction = diff.partial_cmp(&0.0)?;
        let t = if diff == 0.0 {
            0.0
        } else {
            diff.signum() * f64::INFINITY
        };
        return Some(WelchTest {
            t,
            dof: nx + ny,
            direction,
        });
    }
    let t = diff / (a + b).sqrt();
    let dof = (a + b).powi(2) / (a * a / nx + b * b / ny);
    // With one side spread-free the formula gives the other side's n − 1.
    let crit = two_sided_critical(level, dof.max(1.0))?;
    let direction = if t > crit {
        Ordering::Greater
    } else if t < -crit {
        Ordering::Less
    } else {
        Ordering::Equal
    };
    Some(WelchTest { t, dof, direction })
}

/// Welch's `level` interval of mean(x) − mean(y): a difference is told at
/// `level` when the interval leaves out zero, and its half-width is the
/// smallest difference these samples could tell (seed 001's question: can
/// 10 boots resolve 2 %?). `None` as for [`welch_test`].
pub fn two_sided_ci_of_difference(
    x: &Summary,
    y: &Summary,
    level: f64,
) -> Option<crate::ConfidenceInterval> {
    if x.mean_is_lower_bound || y.mean_is_lower_bound {
        return None;
    }
    let diff = x.mean? - y.mean?;
    let a = x.standard_error()?.powi(2);
    let b = y.standard_error()?.powi(2);
    let (nx, ny) = ((x.n - 1) as f64, (y.n - 1) as f64);
    let dof = if a + b == 0.0 {
        nx + ny
    } else {
        (a + b).powi(2) / (a * a / nx + b * b / ny)
    };
    let half_width = two_sided_critical(level, dof.max(1.0))? * (a + b).sqrt();
    Some(crate::ConfidenceInterval {
        level,
        low: diff - half_width,
        high: diff + half_width,
        half_width,
        dof,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{summarize, Sample};

    fn s(xs: &[f64]) -> Summary {
        summarize(&Sample::all_exact(xs))
    }

    /// Reference values from Python's `statistics` module on the same data
    /// (variances 0.5 and 0.347): t = −5.636783, dof = 7.747209.
    #[test]
    fn matches_an_independent_computation() {
        let x = s(&[19.1, 20.4, 21.0, 20.2, 19.8]);
        let y = s(&[22.0, 23.1, 21.7, 22.9, 22.4]);
        let w = welch_test(&x, &y, 0.95).unwrap();
        assert!((w.t - -5.636783).abs() < 1e-5, "{w:?}");
        assert!((w.dof - 7.747209).abs() < 1e-5, "{w:?}");
        assert_eq!(w.direction, Ordering::Less);
        // Swapped sides swap the direction.
        assert_eq!(
            welch_test(&y, &x, 0.95).unwrap().direction,
            Ordering::Greater
        );
    }

    /// The case Fieller cannot decide: a baseline whose interval reaches
    /// zero (one slow run) against a side four times larger.
    #[test]
    fn decides_where_the_ratio_interval_is_unbounded() {
        let a = s(&[57_250.8, 26_046.0, 28_485.6]);
        let b = s(&[123_877.3, 130_122.0, 136_394.7]);
        assert!(crate::ratio_of_means(&b, &a).unwrap().ci95.is_none());
        let w = welch_test(&b, &a, 0.95).unwrap();
        assert_eq!(w.direction, Ordering::Greater, "{w:?}");
    }

    #[test]
    fn too_few_or_censored_samples_are_not_tested() {
        assert!(welch_test(&s(&[1.0]), &s(&[2.0, 3.0]), 0.95).is_none());
        let cut = summarize(&[Sample::exact(1.0), Sample::censored_at(2.0)]);
        assert!(welch_test(&cut, &s(&[2.0, 3.0]), 0.95).is_none());
    }

    #[test]
    fn difference_interval_by_hand() {
        // By hand: difference 0.44, variances 0.037 and 0.043, standard
        // error 0.12649, Welch df 7.955, t(0.975, 7.955) = 2.3075:
        // 0.44 ± 0.2919.
        let x = summarize(&Sample::all_exact(&[10.1, 10.4, 9.9, 10.3, 10.2]));
        let y = summarize(&Sample::all_exact(&[9.6, 9.9, 9.7, 10.0, 9.5]));
        let ci = two_sided_ci_of_difference(&x, &y, 0.95).unwrap();
        assert!((ci.dof - 7.955).abs() < 1e-2, "{ci:?}");
        assert!((ci.low - 0.1481).abs() < 1e-3, "{ci:?}");
        assert!((ci.high - 0.7319).abs() < 1e-3, "{ci:?}");
    }
}
