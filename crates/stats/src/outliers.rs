//! Outlier detection with the modified z-score (B. Iglewicz & D. C. Hoaglin,
//! *How to Detect and Handle Outliers*, ASQC, 1993):
//!
//! `M_i = 0.6745 · (x_i − median) / MAD`, MAD = median of |x_i − median|,
//! and |M_i| > 3.5 flags an outlier — the rule hyperfine uses. It is robust:
//! one wild run cannot inflate the spread that judges it, unlike a z-score
//! built on the mean and the standard deviation. 0.6745 is the 0.75 quantile
//! of the standard normal, which makes MAD/0.6745 estimate σ for normal data.
//!
//! When more than half the values are equal, MAD is 0 and M is undefined;
//! then the mean absolute deviation stands in, `M_i = (x_i − median) /
//! (1.253314 · MeanAD)` (1.253314 = √(π/2) makes MeanAD estimate σ; the
//! convention of IBM SPSS's documentation). If that is 0 too, all values are
//! equal and none is an outlier.
//!
//! Outliers are only flagged, never removed: the summary keeps every sample.
//! Fewer than [`MIN_SAMPLES`] values are never flagged: with three runs the
//! MAD is the distance between the two closest ones, so any ordinary third
//! run "deviates" by many MADs and the flag would only be noise.

use crate::descriptive::{mean, median};

/// |M| above this flags an outlier (Iglewicz & Hoaglin's recommendation).
pub const OUTLIER_THRESHOLD: f64 = 3.5;

/// The fewest values for which outliers are flagged.
pub const MIN_SAMPLES: usize = 5;

/// 0.75 quantile of the standard normal: MAD / 0.6745 estimates σ.
const MAD_TO_SIGMA: f64 = 0.6745;

/// √(π/2): 1.253314 · mean absolute deviation estimates σ.
const MEAN_AD_TO_SIGMA: f64 = 1.253_314;

/// Modified z-score of every value (same order as `xs`); empty for empty.
pub fn modified_z_scores(xs: &[f64]) -> Vec<f64> {
    let Some(med) = median(xs) else {
        return Vec::new();
    };
    let deviations: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&deviations).unwrap_or(0.0);
    let scale = if mad > 0.0 {
        mad / MAD_TO_SIGMA
    } else {
        MEAN_AD_TO_SIGMA * mean(&deviations).unwrap_or(0.0)
    };
    if scale > 0.0 {
        xs.iter().map(|x| (x - med) / scale).collect()
    } else {
        vec![0.0; xs.len()]
    }
}

/// Indices (into `xs`) of the values whose |modified z-score| exceeds
/// [`OUTLIER_THRESHOLD`].
pub fn outlier_indices(xs: &[f64]) -> Vec<usize> {
    if xs.len() < MIN_SAMPLES {
        return Vec::new();
    }
    modified_z_scores(xs)
        .iter()
        .enumerate()
        .filter(|(_, m)| m.abs() > OUTLIER_THRESHOLD)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// median 3, deviations 2 1 0 1 2, MAD 1: M = 0.6745 · (x − 3).
    #[test]
    fn scores_by_hand() {
        let m = modified_z_scores(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        let want = [-1.349, -0.6745, 0.0, 0.6745, 1.349];
        assert!(m.iter().zip(want).all(|(a, b)| close(*a, b)), "{m:?}");
        assert!(outlier_indices(&[1.0, 2.0, 3.0, 4.0, 5.0]).is_empty());
    }

    /// One wild start among steady ones: M(100) = 0.6745 · 97 ≈ 65.4.
    #[test]
    fn flags_a_wild_value() {
        let xs = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert!(close(modified_z_scores(&xs)[4], 0.6745 * 97.0));
        assert_eq!(outlier_indices(&xs), vec![4]);
    }

    /// Just inside and just outside 3.5: median 10, MAD 1 (deviations
    /// 0 1 1 1 1 x), so M = 0.6745 · d: d = 5 → 3.37 (kept), d = 6 → 4.05.
    #[test]
    fn threshold_is_three_and_a_half() {
        assert!(outlier_indices(&[9.0, 10.0, 10.0, 11.0, 9.0, 15.0, 10.0]).is_empty());
        assert_eq!(
            outlier_indices(&[9.0, 10.0, 10.0, 11.0, 9.0, 16.0, 10.0]),
            vec![5]
        );
    }

    /// MAD = 0 (most values equal): the mean absolute deviation stands in.
    /// median 5, deviations 0 0 0 0 8 → MeanAD 1.6, M(13) = 8 / 2.0053 ≈ 3.99.
    #[test]
    fn zero_mad_falls_back_to_mean_deviation() {
        let xs = [5.0, 5.0, 5.0, 5.0, 13.0];
        let m = modified_z_scores(&xs);
        assert!(close(m[4], 8.0 / (1.253_314 * 1.6)), "{m:?}");
        assert_eq!(outlier_indices(&xs), vec![4]);
    }

    #[test]
    fn identical_values_have_no_outliers() {
        assert_eq!(modified_z_scores(&[2.0, 2.0, 2.0]), vec![0.0; 3]);
        assert!(outlier_indices(&[]).is_empty());
    }
}
