//! Ratio of a cell's mean to the idle baseline's mean, with Fieller's
//! confidence interval (E. C. Fieller, "Some problems in interval
//! estimation", JRSS B 16(2), 1954; for unequal variances with
//! Welch–Satterthwaite degrees of freedom as in Tamhane & Logan, 2004, and
//! R's `mratios`).
//!
//! For independent means x̄ (cell) and ȳ (baseline) with squared standard
//! errors a and b, Fieller's interval is the set of ρ with
//! `(x̄ − ρȳ)² ≤ t² (a + ρ² b)`, the roots of
//! `(ȳ² − t²b) ρ² − 2 x̄ȳ ρ + (x̄² − t²a) = 0`.
//!
//! Why Fieller and not the delta method (`ρ ± t·ρ·√(a/x̄² + b/ȳ²)`): the
//! delta method linearises x̄/ȳ and gives a symmetric interval; the ratio's
//! distribution is skewed, more so the noisier the baseline. Fieller's
//! interval is exact for normal means, asymmetric where it should be, and
//! honest when the baseline is too noisy to divide by (g = t²b/ȳ² ≥ 1: the
//! interval is unbounded, reported as `None`). For a well-measured baseline
//! (g → 0) the two agree, which a test checks.
//!
//! The t quantile takes the Welch–Satterthwaite degrees of freedom of the
//! pivot `x̄ − ρ̂ȳ`: ν = (a + ρ̂²b)² / (a²/(nₓ−1) + ρ̂⁴b²/(n_y−1)).
//!
//! Censoring: the ratio of a lower-bound mean to an exact one is a lower
//! bound, of an exact mean to a lower-bound one an upper bound; with both
//! censored nothing is known. Intervals need both means exact.

use serde::{Deserialize, Serialize};

use crate::interval::{ConfidenceInterval, LEVEL_95};
use crate::student_t::two_sided_critical;
use crate::summary::Summary;

/// Whether a value is exact or only bounds the true value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// The value is the estimate.
    Exact,
    /// The true value is at least this.
    Lower,
    /// The true value is at most this.
    Upper,
}

/// A ratio of means, e.g. start-up time under load / idle start-up time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// mean(cell) / mean(baseline).
    pub value: f64,
    /// Whether `value` is exact or a bound (censored runs on either side).
    pub bound: Bound,
    /// Fieller's 95 % interval; `None` when either side has n < 2 or
    /// censored runs, or the baseline is too noisy for a bounded interval.
    pub ci95: Option<ConfidenceInterval>,
}

/// The ratio of `num`'s mean to `den`'s mean; `None` when either mean is
/// unknown, both are bounds, or the baseline mean is not positive.
pub fn ratio_of_means(num: &Summary, den: &Summary) -> Option<Ratio> {
    let (x, y) = (num.mean?, den.mean?);
    // `y > 0` is false for NaN too: no ratio without a positive baseline.
    if y.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let bound = match (num.mean_is_lower_bound, den.mean_is_lower_bound) {
        (false, false) => Bound::Exact,
        (true, false) => Bound::Lower,
        (false, true) => Bound::Upper,
        (true, true) => return None,
    };
    let value = x / y;
    let ci95 = if bound == Bound::Exact {
        fieller_ci(num, den, value)
    } else {
        None
    };
    Some(Ratio { value, bound, ci95 })
}

/// The ratio of `num`'s mean to `den`'s mean with its interval at `level`
/// on the log scale: ln x̄ − ln ȳ ± t·√(a/x̄² + b/ȳ²) (the delta method
/// for the logarithm, Welch–Satterthwaite degrees of freedom), mapped back
/// with exp. Why beside Fieller: for quantities that cannot be negative
/// (times, rates) an interval must not reach below zero, and at n = 3
/// Fieller's does when the numerator is noisy ("3.23 [−0.73, 7.30]"); the
/// log interval stays positive, is asymmetric the way a ratio is, and
/// takes any `level` (a family's Bonferroni level). `None` as for
/// [`ratio_of_means`], and for a mean that is not positive.
pub fn ratio_of_means_log(num: &Summary, den: &Summary, level: f64) -> Option<Ratio> {
    let mut r = ratio_of_means(num, den)?;
    r.ci95 = None;
    let (x, y) = (num.mean?, den.mean?);
    if r.bound != Bound::Exact || x <= 0.0 {
        return Some(r);
    }
    let (Some(sa), Some(sb)) = (num.standard_error(), den.standard_error()) else {
        return Some(r);
    };
    let (u, v) = ((sa / x).powi(2), (sb / y).powi(2));
    let (nx, ny) = ((num.n - 1) as f64, (den.n - 1) as f64);
    let dof = if u + v == 0.0 {
        nx + ny
    } else {
        (u + v).powi(2) / (u * u / nx + v * v / ny)
    };
    let t = two_sided_critical(level, dof.max(1.0))?;
    let hw = t * (u + v).sqrt();
    let (low, high) = (r.value * (-hw).exp(), r.value * hw.exp());
    r.ci95 = Some(ConfidenceInterval {
        level,
        low,
        high,
        half_width: (r.value - low).max(high - r.value),
        dof,
    });
    Some(r)
}

fn fieller_ci(num: &Summary, den: &Summary, rho: f64) -> Option<ConfidenceInterval> {
    let (x, y) = (num.mean?, den.mean?);
    let a = num.standard_error()?.powi(2);
    let b = den.standard_error()?.powi(2);
    let (nx, ny) = ((num.n - 1) as f64, (den.n - 1) as f64);
    let pivot_var = a + rho * rho * b;
    if pivot_var == 0.0 {
        // No spread on either side: the ratio is known exactly.
        return Some(interval(rho, rho, rho, nx + ny));
    }
    let dof = pivot_var.powi(2) / (a * a / nx + rho.powi(4) * b * b / ny);
    let t = two_sided_critical(LEVEL_95, dof)?;
    let (low, high) = fieller_roots(x, a, y, b, t)?;
    Some(interval(rho, low, high, dof))
}

/// Ends of Fieller's interval for x̄/ȳ with squared standard errors a, b and
/// critical value t; `None` when it is unbounded (t²b ≥ ȳ²).
fn fieller_roots(x: f64, a: f64, y: f64, b: f64, t: f64) -> Option<(f64, f64)> {
    let t2 = t * t;
    let qa = y * y - t2 * b;
    if qa.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    // Discriminant B² − AC, simplified: t²(a·A + b·x̄²) ≥ 0 when A > 0.
    let root = (t2 * (a * qa + b * x * x)).sqrt();
    Some(((x * y - root) / qa, (x * y + root) / qa))
}

fn interval(rho: f64, low: f64, high: f64, dof: f64) -> ConfidenceInterval {
    ConfidenceInterval {
        level: LEVEL_95,
        low,
        high,
        half_width: (rho - low).max(high - rho),
        dof,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Sample;
    use crate::summary::summarize;

    fn cell(xs: &[f64]) -> Summary {
        summarize(&Sample::all_exact(xs))
    }

    /// x̄ = 10, a = 1, ȳ = 5, b = 0.25, t = 2: A = 24, B = 50, C = 96,
    /// B² − AC = 196, roots (50 ± 14)/24 = 1.5 and 2.6667.
    #[test]
    fn fieller_roots_by_hand() {
        let (lo, hi) = fieller_roots(10.0, 1.0, 5.0, 0.25, 2.0).expect("bounded");
        assert!((lo - 1.5).abs() < 1e-12 && (hi - 64.0 / 24.0).abs() < 1e-12);
        // Asymmetric around 2: the ratio's skew.
        assert!(hi - 2.0 > 2.0 - lo);
    }

    #[test]
    fn noisy_baseline_gives_no_interval() {
        assert_eq!(fieller_roots(10.0, 1.0, 1.0, 1.0, 2.0), None);
    }

    /// A tight baseline: Fieller ≈ delta method.
    #[test]
    fn agrees_with_delta_method_for_a_precise_baseline() {
        let load = cell(&[12.1, 12.6, 11.8, 12.4, 12.2, 12.9, 11.9, 12.3, 12.5, 12.0]);
        let idle = cell(&[6.35, 6.37, 6.36, 6.36, 6.35, 6.37, 6.36, 6.36, 6.35, 6.37]);
        let r = ratio_of_means(&load, &idle).expect("ratio");
        let ci = r.ci95.expect("bounded");
        let (x, y) = (load.mean.expect("x"), idle.mean.expect("y"));
        let a = load.standard_error().expect("a").powi(2);
        let b = idle.standard_error().expect("b").powi(2);
        let delta_se = r.value * (a / (x * x) + b / (y * y)).sqrt();
        let delta_hw = two_sided_critical(0.95, ci.dof).expect("t") * delta_se;
        assert!(
            (ci.half_width - delta_hw).abs() / delta_hw < 0.01,
            "{ci:?} vs {delta_hw}"
        );
        assert!(ci.contains(r.value) && r.bound == Bound::Exact);
    }

    #[test]
    fn ratio_to_itself_is_one() {
        let c = cell(&[6.1, 6.4, 6.3, 6.2]);
        let r = ratio_of_means(&c, &c).expect("ratio");
        assert_eq!(r.value, 1.0);
        assert!(r.ci95.expect("bounded").contains(1.0));
    }

    #[test]
    fn censoring_turns_the_ratio_into_a_bound() {
        let idle = cell(&[6.0, 6.5]);
        let stuck = summarize(&[Sample::exact(20.0), Sample::censored_at(60.0)]);
        let r = ratio_of_means(&stuck, &idle).expect("ratio");
        assert_eq!((r.bound, r.ci95.is_none()), (Bound::Lower, true));
        let inv = ratio_of_means(&idle, &stuck).expect("ratio");
        assert_eq!(inv.bound, Bound::Upper);
        assert_eq!(ratio_of_means(&stuck, &stuck), None);
    }

    #[test]
    fn no_ratio_without_a_positive_baseline() {
        assert_eq!(ratio_of_means(&cell(&[1.0]), &cell(&[])), None);
        assert_eq!(ratio_of_means(&cell(&[1.0]), &cell(&[0.0])), None);
        let single = ratio_of_means(&cell(&[3.0]), &cell(&[1.5])).expect("ratio");
        assert_eq!((single.value, single.ci95), (2.0, None));
    }

    #[test]
    fn zero_spread_gives_a_point_interval() {
        let r = ratio_of_means(&cell(&[4.0, 4.0]), &cell(&[2.0, 2.0])).expect("ratio");
        let ci = r.ci95.expect("point");
        assert_eq!((ci.low, ci.high), (2.0, 2.0));
    }

    /// At n = 3 with a noisy numerator Fieller's lower end goes below
    /// zero; the log interval stays positive and holds the estimate.
    #[test]
    fn log_interval_never_crosses_zero() {
        let noisy = cell(&[0.5, 3.0, 6.2]);
        let base = cell(&[1.0, 1.05, 0.95]);
        let f = ratio_of_means(&noisy, &base).expect("ratio");
        assert!(f.ci95.expect("bounded").low < 0.0, "{f:?}");
        let l = ratio_of_means_log(&noisy, &base, 0.95).expect("ratio");
        let ci = l.ci95.expect("bounded");
        assert!(ci.low > 0.0 && ci.contains(l.value), "{ci:?}");
        // A stricter level widens it.
        let wide = ratio_of_means_log(&noisy, &base, 0.99)
            .expect("r")
            .ci95
            .expect("b");
        assert!(wide.low < ci.low && wide.high > ci.high);
        // ln(2) ± t·√(u+v) by hand for a case with no spread on the base.
        let x = cell(&[1.8, 2.2]);
        let y = cell(&[1.0, 1.0]);
        let r = ratio_of_means_log(&x, &y, 0.95)
            .expect("r")
            .ci95
            .expect("b");
        let se = x.standard_error().expect("se") / 2.0;
        let t = two_sided_critical(0.95, 1.0).expect("t");
        assert!((r.high - 2.0 * (t * se).exp()).abs() < 1e-9, "{r:?}");
    }
}
