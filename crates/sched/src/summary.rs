//! Statistics of a set of delays, derived from the raw samples: count,
//! mean, median, p99, min, max, sample standard deviation and when the
//! maximum happened. Mean, median and standard deviation come from
//! `iolab-stats` (the same code every iolab table uses; stddev has n − 1 in
//! the denominator and is absent for n < 2). The p99 is the nearest-rank
//! percentile: the smallest sample with at least 99 % of samples at or
//! below it, so it is always a delay that happened.

use serde::Serialize;

/// One delay: when the wait began and ended (ns). The delay is the
/// difference.
pub type Span = (u64, u64);

/// Summary of a set of delays. Times in ns; `None` when there are no
/// samples (or fewer than 2, for the standard deviation).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DelaySummary {
    /// Samples.
    pub count: usize,
    /// Sum of the delays.
    pub total_ns: u64,
    /// Mean.
    pub avg_ns: Option<f64>,
    /// Median (mean of the middle two for an even count).
    pub median_ns: Option<f64>,
    /// 99th percentile, nearest rank.
    pub p99_ns: Option<u64>,
    /// Shortest.
    pub min_ns: Option<u64>,
    /// Longest.
    pub max_ns: Option<u64>,
    /// Sample standard deviation.
    pub stddev_ns: Option<f64>,
    /// When the longest wait began (perf's "Max delay start").
    pub max_start_ns: Option<u64>,
    /// When it ended: the switch in (perf's "Max delay end").
    pub max_end_ns: Option<u64>,
}

impl DelaySummary {
    /// Summarises `spans`. The first of equal maxima wins, as in perf.
    pub fn of(spans: impl IntoIterator<Item = Span>) -> DelaySummary {
        let mut delays: Vec<u64> = Vec::new();
        let mut max: Option<Span> = None;
        for (start, end) in spans {
            let d = end.saturating_sub(start);
            if max.is_none_or(|(s, e)| d > e - s) {
                max = Some((start, end));
            }
            delays.push(d);
        }
        if delays.is_empty() {
            return DelaySummary::default();
        }
        delays.sort_unstable();
        let n = delays.len();
        let as_f64: Vec<f64> = delays.iter().map(|&d| d as f64).collect();
        let rank = (n * 99).div_ceil(100).max(1);
        DelaySummary {
            count: n,
            total_ns: delays.iter().sum(),
            avg_ns: iolab_stats::descriptive::mean(&as_f64),
            median_ns: iolab_stats::descriptive::median_of_sorted(&as_f64),
            p99_ns: Some(delays[rank - 1]),
            min_ns: delays.first().copied(),
            max_ns: delays.last().copied(),
            stddev_ns: iolab_stats::descriptive::sample_stddev(&as_f64),
            max_start_ns: max.map(|m| m.0),
            max_end_ns: max.map(|m| m.1),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_delays() {
        // Delays 10, 20, 30, 40 (µs), the 30 first seen at t=1000.
        let s = DelaySummary::of([(0, 10), (100, 120), (1000, 1040), (200, 230)]);
        assert_eq!(s.count, 4);
        assert_eq!(s.avg_ns, Some(25.0));
        assert_eq!(s.median_ns, Some(25.0));
        assert_eq!(s.min_ns, Some(10));
        assert_eq!(s.max_ns, Some(40));
        assert_eq!(s.p99_ns, Some(40));
        assert_eq!((s.max_start_ns, s.max_end_ns), (Some(1000), Some(1040)));
        let sd = s.stddev_ns.unwrap_or(0.0);
        assert!((sd - 12.909_944).abs() < 1e-5, "{sd}");
        assert_eq!(s.total_ns, 100);
    }

    proptest::proptest! {
        #[test]
        fn statistics_stay_within_the_samples(delays in proptest::collection::vec(0u64..10_000_000, 1..200)) {
            let s = DelaySummary::of(delays.iter().enumerate().map(|(i, &d)| (i as u64 * 10, i as u64 * 10 + d)));
            let (min, max) = (s.min_ns.unwrap() as f64, s.max_ns.unwrap() as f64);
            for v in [s.avg_ns.unwrap(), s.median_ns.unwrap(), s.p99_ns.unwrap() as f64] {
                proptest::prop_assert!(min <= v && v <= max);
            }
            proptest::prop_assert_eq!(s.count, delays.len());
            proptest::prop_assert_eq!(s.max_end_ns.unwrap() - s.max_start_ns.unwrap(), s.max_ns.unwrap());
            proptest::prop_assert!(delays.contains(&s.p99_ns.unwrap()));
        }
    }

    #[test]
    fn p99_is_a_delay_that_happened() {
        let spans: Vec<Span> = (1..=1000).map(|d| (0, d)).collect();
        let s = DelaySummary::of(spans);
        assert_eq!(s.p99_ns, Some(990));
        let s = DelaySummary::of([(0, 5)]);
        assert_eq!((s.p99_ns, s.stddev_ns), (Some(5), None));
        assert_eq!(DelaySummary::of([]).count, 0);
    }
}
