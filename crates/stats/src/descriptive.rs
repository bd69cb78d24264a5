//! Descriptive statistics of exact values: mean, sample standard deviation,
//! median.
//!
//! The standard deviation is the *sample* one, with Bessel's correction
//! (divide by n − 1), because it estimates the spread of start-up times in
//! general, not of these n runs only; it is `None` for n < 2, where no spread
//! can be estimated (hyperfine does the same). Computed in two passes (mean,
//! then squared deviations), which is accurate for the few-dozen samples a
//! cell holds (Chan, Golub & LeVeque, "Algorithms for computing the sample
//! variance", 1983).

/// Arithmetic mean; `None` for an empty slice.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    Some(xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Sample standard deviation (n − 1 in the denominator); `None` for n < 2.
pub fn sample_stddev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// Median: the middle value, or the mean of the two middle values for an
/// even count; `None` for an empty slice.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

/// Median of values already sorted ascending.
pub fn median_of_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let (lo, hi) = median_positions(n);
    Some((sorted[lo] + sorted[hi]) / 2.0)
}

/// The sorted positions the median of `n > 0` values is taken from: the same
/// index twice for odd `n`, the two middle indices for even `n`.
pub fn median_positions(n: usize) -> (usize, usize) {
    (n.saturating_sub(1) / 2, n / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The classic example: population sd 2, sample sd sqrt(32/7).
    const DATA: [f64; 8] = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];

    #[test]
    fn mean_of_known_data() {
        assert_eq!(mean(&DATA), Some(5.0));
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn sample_stddev_uses_n_minus_one() {
        let s = sample_stddev(&DATA).expect("n >= 2");
        assert!((s - (32.0f64 / 7.0).sqrt()).abs() < 1e-12, "{s}");
        assert!((s - 2.138_089_935).abs() < 1e-9);
    }

    #[test]
    fn stddev_is_none_below_two_samples() {
        assert_eq!(sample_stddev(&[3.0]), None);
        assert_eq!(sample_stddev(&[]), None);
        assert_eq!(sample_stddev(&[3.0, 3.0]), Some(0.0));
    }

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&DATA), Some(4.5));
        assert_eq!(median(&[9.0, 1.0, 5.0]), Some(5.0));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn median_positions_pick_the_middle() {
        assert_eq!(median_positions(1), (0, 0));
        assert_eq!(median_positions(4), (1, 2));
        assert_eq!(median_positions(5), (2, 2));
    }
}
