//! Per-direction accumulators: counts, exact min/max/mean/stddev from
//! running sums, and an HDR histogram (3 significant digits, 1 ns to 1 h)
//! for percentiles. Each worker owns its accumulators (no locks, no
//! allocation per I/O); they are merged when the load ends.

use hdrhistogram::Histogram;

/// The percentiles fio reports by default, in fio's order.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// Everything measured for one direction.
#[derive(Debug, Clone)]
pub struct DirAcc {
    /// Completed I/Os.
    pub ios: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// I/Os that moved fewer bytes than asked.
    pub short_ios: u64,
    /// I/Os without a latency (`gtod_reduce`).
    pub untimed: u64,
    sum_ns: u128,
    sumsq_ns: u128,
    min_ns: u64,
    max_ns: u64,
    hist: Option<Histogram<u64>>,
    /// fio's bins (for json+ and histogram logs).
    pub plat: Option<Box<[u64]>>,
    /// I/Os per fio latency bucket (`latency_ns/us/ms`, see
    /// [`crate::run::sinks::plat::lat_bucket`]).
    pub lat_buckets: [u64; crate::run::sinks::plat::LAT_BUCKETS],
    /// A queueing engine's I/Os split into submission and completion
    /// latency (fio's slat and clat); `None` for the blocking engines,
    /// whose completion latency is the whole latency.
    pub split: Option<Box<Split>>,
    /// cmdprio: each ioprio's latency (lat with `lat_percentiles`, else
    /// clat), as fio's `prios`.
    pub prios: Vec<(u16, DirAcc)>,
}

/// fio's slat and clat, each accumulated as a latency of its own.
#[derive(Debug, Clone)]
pub struct Split {
    /// Preparation to the submit's return.
    pub slat: DirAcc,
    /// The submit's return to the reap.
    pub clat: DirAcc,
}

/// Latency summary of one direction, in nanoseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Latency {
    /// Fastest I/O.
    pub min_ns: u64,
    /// Slowest I/O.
    pub max_ns: u64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// Sample standard deviation (0 for a single I/O).
    pub stddev_ns: f64,
    /// `(percentile, value)` for each of [`PERCENTILES`].
    pub percentiles: Vec<(f64, u64)>,
}

impl Latency {
    /// The value at a percentile listed in [`PERCENTILES`].
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|(_, v)| *v)
    }
}

impl DirAcc {
    /// An accumulator; `used` = false skips the histogram's memory for a
    /// direction the job never does.
    pub fn new(used: bool) -> DirAcc {
        DirAcc {
            ios: 0,
            bytes: 0,
            short_ios: 0,
            untimed: 0,
            sum_ns: 0,
            sumsq_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            hist: used.then(new_hist),
            plat: used.then(|| vec![0u64; crate::run::sinks::plat::NR].into_boxed_slice()),
            lat_buckets: [0; crate::run::sinks::plat::LAT_BUCKETS],
            split: None,
            prios: Vec::new(),
        }
    }

    /// Records one I/O's latency under its ioprio (cmdprio).
    #[inline]
    pub fn record_prio(&mut self, ioprio: u16, ns: u64) {
        match self.prios.iter_mut().find(|(k, _)| *k == ioprio) {
            Some((_, a)) => a.record(0, 0, ns),
            None => {
                let mut a = DirAcc::new(true);
                a.record(0, 0, ns);
                self.prios.push((ioprio, a));
            }
        }
    }

    /// Records the slat/clat split of the I/O [`DirAcc::record`] just
    /// recorded.
    #[inline]
    pub fn record_split(&mut self, slat_ns: u64, clat_ns: u64) {
        let s = self.split.get_or_insert_with(|| {
            Box::new(Split {
                slat: DirAcc::new(true),
                clat: DirAcc::new(true),
            })
        });
        s.slat.record(0, 0, slat_ns);
        s.clat.record(0, 0, clat_ns);
    }

    /// Records one completed I/O.
    #[inline]
    pub fn record(&mut self, bytes: u64, asked: u64, lat_ns: u64) {
        self.ios += 1;
        self.bytes += bytes;
        if bytes < asked {
            self.short_ios += 1;
        }
        let l = u128::from(lat_ns);
        self.sum_ns += l;
        self.sumsq_ns += l * l;
        self.min_ns = self.min_ns.min(lat_ns);
        self.max_ns = self.max_ns.max(lat_ns);
        self.lat_buckets[crate::run::sinks::plat::lat_bucket(lat_ns)] += 1;
        self.hist
            .get_or_insert_with(new_hist)
            .saturating_record(lat_ns.max(1));
        self.plat
            .get_or_insert_with(|| vec![0u64; crate::run::sinks::plat::NR].into_boxed_slice())
            [crate::run::sinks::plat::idx(lat_ns)] += 1;
    }

    /// Records one completed I/O whose latency was not measured
    /// (`gtod_reduce`).
    #[inline]
    pub fn record_untimed(&mut self, bytes: u64, asked: u64) {
        self.ios += 1;
        self.bytes += bytes;
        if bytes < asked {
            self.short_ios += 1;
        }
        self.untimed += 1;
    }

    /// Adds another accumulator (another clone) into this one.
    pub fn merge(&mut self, other: &DirAcc) {
        for (k, o) in &other.prios {
            match self.prios.iter_mut().find(|(m, _)| m == k) {
                Some((_, a)) => a.merge(o),
                None => self.prios.push((*k, o.clone())),
            }
        }
        if let Some(o) = &other.split {
            match &mut self.split {
                Some(m) => {
                    m.slat.merge(&o.slat);
                    m.clat.merge(&o.clat);
                }
                None => self.split = Some(o.clone()),
            }
        }
        self.ios += other.ios;
        self.bytes += other.bytes;
        self.short_ios += other.short_ios;
        self.untimed += other.untimed;
        for (a, b) in self.lat_buckets.iter_mut().zip(other.lat_buckets.iter()) {
            *a += b;
        }
        if let Some(p) = &other.plat {
            let mine = self
                .plat
                .get_or_insert_with(|| vec![0u64; crate::run::sinks::plat::NR].into_boxed_slice());
            for (a, b) in mine.iter_mut().zip(p.iter()) {
                *a += b;
            }
        }
        self.sum_ns += other.sum_ns;
        self.sumsq_ns += other.sumsq_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        if let Some(h) = &other.hist {
            if !h.is_empty() {
                // Same bounds on both sides, so adding cannot fail.
                let _ = self.hist.get_or_insert_with(new_hist).add(h);
            }
        }
    }

    /// The latency summary, `None` without I/O.
    pub fn latency(&self) -> Option<Latency> {
        self.latency_with(&PERCENTILES)
    }

    /// The latency summary at these percentiles (`percentile_list`).
    pub fn latency_with(&self, list: &[f64]) -> Option<Latency> {
        let timed = self.ios - self.untimed;
        if timed == 0 {
            return None;
        }
        let n = timed as f64;
        let mean = self.sum_ns as f64 / n;
        let stddev = if timed < 2 {
            0.0
        } else {
            let var = (self.sumsq_ns as f64 - self.sum_ns as f64 * mean) / (n - 1.0);
            var.max(0.0).sqrt()
        };
        let percentiles = match &self.hist {
            Some(h) => list
                .iter()
                .map(|&p| (p, h.value_at_percentile(p).min(self.max_ns)))
                .collect(),
            None => Vec::new(),
        };
        Some(Latency {
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            mean_ns: mean,
            stddev_ns: stddev,
            percentiles,
        })
    }
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3)
        .expect("constant bounds 1..1h at 3 digits are valid")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments_and_percentiles() {
        let mut a = DirAcc::new(true);
        for v in 1..=1000u64 {
            a.record(4096, 4096, v * 1000);
        }
        let l = a.latency().unwrap();
        assert_eq!((l.min_ns, l.max_ns), (1000, 1_000_000));
        assert!((l.mean_ns - 500_500.0).abs() < 1e-6);
        // stddev of 1..=1000 (sample) is 288.819... times 1000.
        assert!((l.stddev_ns - 288_819.4).abs() < 1.0, "{}", l.stddev_ns);
        let p50 = l.percentile(50.0).unwrap();
        assert!((499_000..=501_000).contains(&p50), "{p50}");
        let p99 = l.percentile(99.0).unwrap();
        assert!((989_000..=991_000).contains(&p99), "{p99}");
        assert_eq!(l.percentiles.len(), PERCENTILES.len());
        assert_eq!(a.bytes, 4096 * 1000);
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (DirAcc::new(true), DirAcc::new(true), DirAcc::new(true));
        for v in [5u64, 10, 15, 20] {
            a.record(1, 1, v);
            all.record(1, 1, v);
        }
        for v in [1u64, 1000, 7] {
            b.record(1, 2, v);
            all.record(1, 2, v);
        }
        a.merge(&b);
        assert_eq!(a.latency(), all.latency());
        assert_eq!((a.ios, a.short_ios), (7, 3));
    }

    #[test]
    fn empty_has_no_latency() {
        let mut e = DirAcc::new(false);
        assert!(e.latency().is_none());
        e.merge(&DirAcc::new(true));
        assert!(e.latency().is_none());
        let mut one = DirAcc::new(false);
        one.record(1, 1, 42);
        assert_eq!(one.latency().unwrap().stddev_ns, 0.0);
    }
}
