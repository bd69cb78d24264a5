//! Power, sample size and multiple comparisons for two-sample comparisons
//! of means (Welch): what `iolab boot --resolve 2% --boots auto` plans with
//! and reports.
//!
//! "Can tell" at 80 % power is the difference a comparison with these
//! spreads and sizes would call real 4 times in 5 (the half-width of a 95 %
//! interval is the one it would call real only half the time). The
//! comparisons of several variants with one baseline are corrected with
//! Holm's step-down method (Holm 1979), which keeps the family-wise error
//! at α without Bonferroni's loss of power.

use crate::student_t::t_quantile;
use crate::summary::Summary;

/// Welch's two-sided p-value of mean(x) = mean(y); `None` when either side
/// has fewer than two exact samples.
pub fn welch_p(x: &Summary, y: &Summary) -> Option<f64> {
    if x.mean_is_lower_bound || y.mean_is_lower_bound {
        return None;
    }
    let a = x.standard_error()?.powi(2);
    let b = y.standard_error()?.powi(2);
    let diff = x.mean? - y.mean?;
    if a + b == 0.0 {
        return Some(if diff == 0.0 { 1.0 } else { 0.0 });
    }
    let (nx, ny) = ((x.n - 1) as f64, (y.n - 1) as f64);
    let dof = ((a + b).powi(2) / (a * a / nx + b * b / ny)).max(1.0);
    let t = diff.abs() / (a + b).sqrt();
    let p = 2.0 * (1.0 - distrs::StudentsT::cdf(t, dof));
    Some(p.clamp(0.0, 1.0))
}

/// Holm's adjusted p-values, in the order given: the k-th smallest of m
/// is multiplied by m − k + 1, then made non-decreasing in that order and
/// capped at 1. A comparison is told at family-wise α when its adjusted
/// p-value is below α.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adj = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (k, &i) in order.iter().enumerate() {
        let v = ((m - k) as f64 * p[i]).min(1.0);
        running = running.max(v);
        adj[i] = running;
    }
    adj
}

/// The smallest difference of means a two-sided Welch test at `alpha`
/// tells with probability `power`, for spreads `sd_x`, `sd_y` and sizes
/// `nx`, `ny`: (t₁₋α/₂ + t_power) · √(s²ₓ/nₓ + s²ᵧ/nᵧ). `None` with fewer
/// than two samples on a side.
pub fn detectable(
    sd_x: f64,
    sd_y: f64,
    nx: usize,
    ny: usize,
    alpha: f64,
    power: f64,
) -> Option<f64> {
    if nx < 2 || ny < 2 {
        return None;
    }
    let a = sd_x * sd_x / nx as f64;
    let b = sd_y * sd_y / ny as f64;
    let dof = if a + b == 0.0 {
        (nx + ny - 2) as f64
    } else {
        (a + b).powi(2) / (a * a / (nx - 1) as f64 + b * b / (ny - 1) as f64)
    };
    let dof = dof.max(1.0);
    Some((t_quantile(1.0 - alpha / 2.0, dof)? + t_quantile(power, dof)?) * (a + b).sqrt())
}

/// Samples per side for [`detectable`] to reach `delta` (equal sizes), at
/// least 2; `cap` when even that many would not.
pub fn samples_needed(
    sd_x: f64,
    sd_y: f64,
    delta: f64,
    alpha: f64,
    power: f64,
    cap: usize,
) -> usize {
    if delta <= 0.0 {
        return cap;
    }
    (2..=cap)
        .find(|&n| detectable(sd_x, sd_y, n, n, alpha, power).is_some_and(|d| d <= delta))
        .unwrap_or(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{summarize, Sample};

    fn s(xs: &[f64]) -> Summary {
        summarize(&Sample::all_exact(xs))
    }

    /// welch.rs's data (t = −5.636783, dof = 7.747209): the two tails of
    /// Student's t beyond |t|, integrated numerically (Simpson, 2·10⁶
    /// steps) outside this crate: p = 0.00054846.
    #[test]
    fn welchs_p_matches_an_independent_integration() {
        let x = s(&[19.1, 20.4, 21.0, 20.2, 19.8]);
        let y = s(&[22.0, 23.1, 21.7, 22.9, 22.4]);
        let p = welch_p(&x, &y).unwrap();
        assert!((p - 0.000_548_46).abs() < 2e-7, "{p}");
        let same = welch_p(&x, &x).unwrap();
        assert!((same - 1.0).abs() < 1e-9, "{same}");
    }

    /// Worked by hand as R's p.adjust(method = "holm") does: 0.005×4,
    /// 0.01×3, 0.03×2, then 0.04×1 raised to the running maximum 0.06.
    #[test]
    fn holm_matches_r() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
        assert_eq!(holm(&[0.02, 0.3]), vec![0.04, 0.3]);
    }

    /// A normal approximation check: with σ = 1 on both sides, 80 % power
    /// at α = 0.05 needs n ≈ 2·(1.96 + 0.84)² / δ² = 15.7 per side for
    /// δ = 1 (17 with t quantiles, as G*Power gives).
    #[test]
    fn samples_needed_matches_the_textbook() {
        let n = samples_needed(1.0, 1.0, 1.0, 0.05, 0.8, 100);
        assert!((16..=18).contains(&n), "{n}");
        let d = detectable(1.0, 1.0, n, n, 0.05, 0.8).unwrap();
        assert!(d <= 1.0);
        assert!(detectable(1.0, 1.0, n - 1, n - 1, 0.05, 0.8).unwrap() > 1.0);
        assert_eq!(samples_needed(1.0, 1.0, 0.01, 0.05, 0.8, 20), 20);
        assert!(detectable(1.0, 1.0, 1, 5, 0.05, 0.8).is_none());
    }
}
