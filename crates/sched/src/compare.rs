//! The seed's tables: Average / Median / Minimum / Maximum / Standard
//! deviation of a set of delays in µs (`--summary`), and two such sets
//! side by side with the relative difference (`iolab sched compare`), as
//! in the EROFS patch's "workqueue vs kthread_worker" table.

use serde::Serialize;

use crate::summary::{DelaySummary, Span};

/// The seed's statistics of one set of delays, in µs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SeedStats {
    /// Delays.
    pub samples: usize,
    /// Mean.
    pub average_us: Option<f64>,
    /// Median.
    pub median_us: Option<f64>,
    /// Shortest.
    pub minimum_us: Option<f64>,
    /// Longest.
    pub maximum_us: Option<f64>,
    /// Sample standard deviation (n − 1).
    pub stddev_us: Option<f64>,
    /// 99th percentile (nearest rank); not in the seed, kept for tails.
    pub p99_us: Option<f64>,
}

impl SeedStats {
    /// Statistics of `spans` (ns).
    pub fn of(spans: impl IntoIterator<Item = Span>) -> SeedStats {
        SeedStats::of_summary(&DelaySummary::of(spans))
    }

    /// The same statistics of a summary made elsewhere (the BPF
    /// collector's, from its sums and bins).
    pub fn of_summary(s: &DelaySummary) -> SeedStats {
        let us = |ns: f64| ns / 1000.0;
        SeedStats {
            samples: s.count,
            average_us: s.avg_ns.map(us),
            median_us: s.median_ns.map(us),
            minimum_us: s.min_ns.map(|v| us(v as f64)),
            maximum_us: s.max_ns.map(|v| us(v as f64)),
            stddev_us: s.stddev_ns.map(us),
            p99_us: s.p99_ns.map(|v| us(v as f64)),
        }
    }

    /// `(label, value)` per line of the seed's table.
    pub fn lines(&self) -> [(&'static str, Option<f64>); 6] {
        [
            ("Average (us)", self.average_us),
            ("Median (us)", self.median_us),
            ("Minimum (us)", self.minimum_us),
            ("Maximum (us)", self.maximum_us),
            ("Standard deviation (us)", self.stddev_us),
            ("P99 (us)", self.p99_us),
        ]
    }
}

/// Relative change from `a` to `b` in percent (`None` when `a` is 0 or
/// either is missing).
pub fn diff_pct(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => Some((b - a) / a * 100.0),
        _ => None,
    }
}

/// Two sets of delays side by side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Label of the first ("before").
    pub a_label: String,
    /// Its statistics.
    pub a: SeedStats,
    /// Events the kernel dropped while recording `a`.
    pub a_lost_events: u64,
    /// Label of the second ("after").
    pub b_label: String,
    /// Its statistics.
    pub b: SeedStats,
    /// Events dropped while recording `b`.
    pub b_lost_events: u64,
    /// `(b − a) / a` in percent, per line of the seed's table.
    pub diff_pct: DiffPct,
}

/// Per-statistic relative differences.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffPct {
    /// Of the averages.
    pub average: Option<f64>,
    /// Of the medians.
    pub median: Option<f64>,
    /// Of the minima.
    pub minimum: Option<f64>,
    /// Of the maxima.
    pub maximum: Option<f64>,
    /// Of the standard deviations.
    pub stddev: Option<f64>,
    /// Of the 99th percentiles.
    pub p99: Option<f64>,
}

impl Comparison {
    /// Compares two sets.
    pub fn new(
        a_label: &str,
        a: SeedStats,
        a_lost: u64,
        b_label: &str,
        b: SeedStats,
        b_lost: u64,
    ) -> Comparison {
        let diff_pct = DiffPct {
            average: diff_pct(a.average_us, b.average_us),
            median: diff_pct(a.median_us, b.median_us),
            minimum: diff_pct(a.minimum_us, b.minimum_us),
            maximum: diff_pct(a.maximum_us, b.maximum_us),
            stddev: diff_pct(a.stddev_us, b.stddev_us),
            p99: diff_pct(a.p99_us, b.p99_us),
        };
        Comparison {
            a_label: a_label.to_string(),
            a,
            a_lost_events: a_lost,
            b_label: b_label.to_string(),
            b,
            b_lost_events: b_lost,
            diff_pct,
        }
    }

    /// The table as text.
    pub fn render(&self) -> String {
        let d = &self.diff_pct;
        let diffs = [d.average, d.median, d.minimum, d.maximum, d.stddev, d.p99];
        let mut rows = vec![vec![
            String::new(),
            self.a_label.clone(),
            self.b_label.clone(),
            "diff".to_string(),
        ]];
        for (((label, a), (_, b)), diff) in
            self.a.lines().into_iter().zip(self.b.lines()).zip(diffs)
        {
            rows.push(vec![label.to_string(), us(a), us(b), pct(diff)]);
        }
        rows.push(vec![
            "Samples".into(),
            self.a.samples.to_string(),
            self.b.samples.to_string(),
            String::new(),
        ]);
        rows.push(vec![
            "Lost events".into(),
            self.a_lost_events.to_string(),
            self.b_lost_events.to_string(),
            String::new(),
        ]);
        iolab_sys::text::align_columns(&rows, 1)
    }
}

/// One statistic in µs, one decimal (`-` when absent).
pub fn us(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| format!("{v:+.2}%"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_table_reports_relative_change() {
        // The seed's averages: 15253 → 2914 µs is −80.89 %.
        let d = diff_pct(Some(15253.0), Some(2914.0)).unwrap_or(0.0);
        assert!((d + 80.895).abs() < 0.01, "{d}");
        assert_eq!(diff_pct(Some(0.0), Some(1.0)), None);
        let a = SeedStats::of([(0, 10_000), (0, 20_000)]);
        let b = SeedStats::of([(0, 5_000), (0, 5_000)]);
        assert_eq!(a.average_us, Some(15.0));
        let c = Comparison::new("wq", a, 0, "sync", b, 3);
        assert_eq!(c.diff_pct.average.map(|v| v.round()), Some(-67.0));
        let text = c.render();
        assert!(
            text.contains("Average (us)") && text.contains("-66.67%"),
            "{text}"
        );
        assert!(
            text.contains("Lost events") && text.contains(" 3"),
            "{text}"
        );
    }
}
