//! Log2 histograms of delays in microseconds, laid out like bcc's
//! `runqlat`/`biolatency` (`usecs : count distribution`), so the shape of
//! a distribution with a long tail is visible at a glance.

use serde::Serialize;

/// Counts per power-of-two bucket of microseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Log2Hist {
    /// One entry per bucket up to the highest non-empty one.
    pub buckets: Vec<Bucket>,
}

/// `low_us ..= high_us`: 0–1, 2–3, 4–7, 8–15 ...
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Lowest delay in the bucket, µs.
    pub low_us: u64,
    /// Highest, µs.
    pub high_us: u64,
    /// Samples.
    pub count: u64,
}

impl Log2Hist {
    /// Histogram of delays given in ns.
    pub fn of(delays_ns: impl IntoIterator<Item = u64>) -> Log2Hist {
        Log2Hist::of_counts(delays_ns.into_iter().map(|d| (d, 1)))
    }

    /// Histogram of (delay ns, how many) pairs: the BPF collector's bins,
    /// each at its middle (a bin lies within one power of two of ns, so
    /// only bins straddling a µs bucket's edge can land one bucket off).
    pub fn of_counts(delays_ns: impl IntoIterator<Item = (u64, u64)>) -> Log2Hist {
        let mut counts = [0u64; 64];
        let mut top = None;
        for (d, n) in delays_ns {
            let us = d / 1000;
            let i = if us < 2 { 0 } else { us.ilog2() as usize };
            counts[i] += n;
            top = top.max(Some(i));
        }
        let Some(top) = top else {
            return Log2Hist::default();
        };
        let buckets = (0..=top)
            .map(|i| Bucket {
                low_us: if i == 0 { 0 } else { 1 << i },
                high_us: (2u64 << i) - 1,
                count: counts[i],
            })
            .collect();
        Log2Hist { buckets }
    }

    /// Samples counted.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// The bcc-style text: one line per bucket with a bar of up to 40
    /// stars scaled to the fullest bucket.
    pub fn render(&self) -> String {
        let max = self.buckets.iter().map(|b| b.count).max().unwrap_or(0);
        let mut out = String::from("     usecs               : count     distribution\n");
        for b in &self.buckets {
            let stars = if max == 0 {
                0
            } else {
                // At most 40: count <= max.
                iolab_sys::cast::usize_of((b.count * 40).div_ceil(max))
            };
            out.push_str(&format!(
                "{:>10} -> {:<10}: {:<9}|{:<40}|\n",
                b.low_us,
                b.high_us,
                b.count,
                "*".repeat(stars)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_land_in_power_of_two_buckets() {
        let h = Log2Hist::of([0, 1_999, 2_000, 3_999, 4_000, 1_000_000]);
        assert_eq!(h.buckets[0].count, 2, "0 and 1 µs");
        assert_eq!(h.buckets[1].count, 2, "2 and 3 µs");
        assert_eq!(h.buckets[2].count, 1, "4 µs");
        let last = h.buckets.last().copied().unwrap_or_default();
        assert_eq!((last.low_us, last.high_us, last.count), (512, 1023, 1));
        assert_eq!(h.total(), 6);
        let text = h.render();
        assert!(text.contains("512 -> 1023"), "{text}");
        assert!(text
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains(&"*".repeat(40))));
    }

    #[test]
    fn an_empty_histogram_has_no_buckets() {
        assert!(Log2Hist::of([]).buckets.is_empty());
    }
}
