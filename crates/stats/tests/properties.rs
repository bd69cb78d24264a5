//! Property tests: invariants that must hold for any data, not just the
//! hand-computed examples in the unit tests.
#![allow(clippy::unwrap_used)]

use iolab_stats::{
    mean_ci, modified_z_scores, outlier_indices, ratio_of_means, summarize, Bound, Sample, LEVEL_95,
};
use proptest::prelude::*;

/// Start-up-like times: positive, finite, 0.001 .. 1000 (seconds).
fn times(min_len: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(0.001f64..1000.0, min_len..40)
}

fn rel_close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

proptest! {
    #[test]
    fn order_statistics_are_ordered(xs in times(1)) {
        let s = summarize(&Sample::all_exact(&xs));
        let (min, med, max, mean) = (s.min.unwrap(), s.median.unwrap(), s.max.unwrap(), s.mean.unwrap());
        prop_assert!(min <= med && med <= max);
        prop_assert!(min <= mean * (1.0 + 1e-12) && mean <= max * (1.0 + 1e-12));
        prop_assert_eq!(s.n, xs.len());
    }

    #[test]
    fn interval_contains_the_mean(xs in times(2)) {
        let s = summarize(&Sample::all_exact(&xs));
        let ci = s.ci95.unwrap();
        prop_assert!(ci.contains(s.mean.unwrap()));
        prop_assert!(ci.half_width >= 0.0);
        prop_assert_eq!(ci.dof, (xs.len() - 1) as f64);
    }

    /// The same spread measured twice as often gives a narrower interval.
    #[test]
    fn interval_shrinks_with_more_samples(xs in times(2)) {
        prop_assume!(xs.iter().any(|x| *x != xs[0]));
        let twice: Vec<f64> = xs.iter().chain(xs.iter()).copied().collect();
        let one = mean_ci(&xs, LEVEL_95).unwrap().half_width;
        let two = mean_ci(&twice, LEVEL_95).unwrap().half_width;
        prop_assert!(two < one, "{two} >= {one}");
    }

    #[test]
    fn ratio_of_a_cell_to_itself_is_one(xs in times(1)) {
        let s = summarize(&Sample::all_exact(&xs));
        let r = ratio_of_means(&s, &s).unwrap();
        prop_assert!(rel_close(r.value, 1.0));
        prop_assert_eq!(r.bound, Bound::Exact);
        if let Some(ci) = r.ci95 {
            prop_assert!(ci.contains(1.0));
        }
    }

    /// Statistics scale with the data (seconds vs milliseconds); ratios,
    /// outlier flags and censoring flags do not change.
    #[test]
    fn scale_invariance(xs in times(2), ys in times(2), k in 0.001f64..1000.0) {
        let scaled = |v: &[f64]| v.iter().map(|x| x * k).collect::<Vec<_>>();
        let (a, b) = (summarize(&Sample::all_exact(&xs)), summarize(&Sample::all_exact(&ys)));
        let (ak, bk) = (summarize(&Sample::all_exact(&scaled(&xs))), summarize(&Sample::all_exact(&scaled(&ys))));
        prop_assert!(rel_close(ak.mean.unwrap(), k * a.mean.unwrap()));
        prop_assert!(rel_close(ak.median.unwrap(), k * a.median.unwrap()));
        prop_assert!((ak.stddev.unwrap() - k * a.stddev.unwrap()).abs() <= 1e-7 * k * a.mean.unwrap());
        prop_assert!((ak.ci95.unwrap().half_width - k * a.ci95.unwrap().half_width).abs() <= 1e-7 * k * a.mean.unwrap());
        prop_assert_eq!(&ak.outliers, &a.outliers);
        let (r, rk) = (ratio_of_means(&a, &b).unwrap(), ratio_of_means(&ak, &bk).unwrap());
        prop_assert!(rel_close(r.value, rk.value));
        prop_assert_eq!(r.ci95.is_some(), rk.ci95.is_some());
        if let (Some(c), Some(ck)) = (r.ci95, rk.ci95) {
            prop_assert!((c.low - ck.low).abs() <= 1e-6 * r.value);
            prop_assert!((c.high - ck.high).abs() <= 1e-6 * r.value);
        }
    }

    /// Modified z-scores ignore shifts and positive scalings.
    #[test]
    fn outlier_scores_are_affine_invariant(xs in times(1), shift in -100.0f64..100.0, k in 0.01f64..100.0) {
        let moved: Vec<f64> = xs.iter().map(|x| k * x + shift).collect();
        let (m, mm) = (modified_z_scores(&xs), modified_z_scores(&moved));
        for (a, b) in m.iter().zip(&mm) {
            prop_assert!((a - b).abs() <= 1e-6 * a.abs().max(1.0), "{a} vs {b}");
        }
        // At least half the values lie within one MAD of the median.
        prop_assert!(2 * outlier_indices(&xs).len() <= xs.len());
    }

    /// While fewer than half are censored, the reported median does not
    /// depend on the censored runs' unknown true values.
    #[test]
    fn known_median_ignores_censored_values(
        exact in prop::collection::vec(0.001f64..50.0, 1..20),
        extra in prop::collection::vec(0.0f64..1000.0, 0..19),
    ) {
        let censored = extra.len().min(exact.len() - 1);
        let build = |raise: f64| -> Vec<Sample> {
            let mut v = Sample::all_exact(&exact);
            v.extend(extra[..censored].iter().map(|e| Sample::censored_at(60.0 + raise * e)));
            v
        };
        let (s0, s1) = (summarize(&build(0.0)), summarize(&build(1.0)));
        prop_assert!(!s0.median_is_lower_bound);
        prop_assert_eq!(s0.median, s1.median);
        prop_assert_eq!(s0.censored, censored);
        prop_assert_eq!(s0.mean_is_lower_bound, censored > 0);
    }

    /// With half or more censored, the median is flagged as a bound and the
    /// mean never carries an interval.
    #[test]
    fn censored_majority_is_a_bound(
        exact in prop::collection::vec(0.001f64..50.0, 0..10),
        extra in 0usize..10,
    ) {
        let censored = exact.len().max(1) + extra;
        let mut v = Sample::all_exact(&exact);
        v.extend((0..censored).map(|_| Sample::censored_at(60.0)));
        let s = summarize(&v);
        prop_assert!(s.median_is_lower_bound && s.max_is_lower_bound);
        prop_assert!(s.ci95.is_none() && s.stddev.is_none());
        prop_assert!(s.median.unwrap() <= 60.0);
    }
}
