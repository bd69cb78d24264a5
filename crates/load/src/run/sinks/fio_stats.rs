//! The rest of what fio reports per job, beyond bytes and latencies:
//! bandwidth and IOPS samples (fio's `bw_*`/`iops_*`), the queue-depth
//! distributions (`iodepth_level`, `iodepth_submit`, `iodepth_complete`),
//! the latency buckets (`latency_ns/us/ms`) and fsync latencies. A clone
//! fills its own; the report merges them as fio merges a group's threads.

use std::time::{Duration, Instant};

use iolab_sys::cast;

use crate::run::sinks::stats::DirAcc;

/// One direction's bandwidth and IOPS samples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Samples {
    /// KiB/s.
    pub bw: Running,
    /// I/Os per second.
    pub iops: Running,
}

/// Samples summed as they come (fio's `add_stat_sample`: Welford's
/// running mean and squared deviations), so a sample per I/O costs no
/// memory.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Running {
    n: u64,
    min: u64,
    max: u64,
    mean: f64,
    m2: f64,
}

impl Running {
    /// Adds one sample.
    #[inline]
    pub fn add(&mut self, v: u64) {
        self.min = if self.n == 0 { v } else { self.min.min(v) };
        self.max = self.max.max(v);
        self.n += 1;
        let x = v as f64;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Their statistics.
    pub fn stats(&self) -> SampleStats {
        if self.n == 0 {
            return SampleStats::default();
        }
        let var = if self.n < 2 {
            0.0
        } else {
            self.m2 / (self.n - 1) as f64
        };
        SampleStats {
            min: self.min,
            max: self.max,
            mean: self.mean,
            dev: var.sqrt(),
            n: self.n,
        }
    }
}

/// Summary of samples (fio's `min/max/mean/dev/samples`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SampleStats {
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub dev: f64,
    /// Number of samples.
    pub n: u64,
}

impl SampleStats {
    /// Statistics of one clone's samples.
    pub fn of(v: &[u64]) -> SampleStats {
        let mut r = Running::default();
        v.iter().for_each(|x| r.add(*x));
        r.stats()
    }

    /// Several clones reported as one job: fio's `sum_stat(..., pure_sum)`
    /// for bandwidth and IOPS adds the clones' minima, maxima and means
    /// (the job's aggregate rate) and their sample counts.
    pub fn sum(parts: &[SampleStats]) -> SampleStats {
        let mut s = SampleStats::default();
        let mut var = 0.0;
        for p in parts.iter().filter(|p| p.n > 0) {
            s.min += p.min;
            s.max += p.max;
            s.mean += p.mean;
            var += p.dev * p.dev;
            s.n += p.n;
        }
        s.dev = var.sqrt();
        s
    }
}

/// Queue-depth distributions, counts per fio bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct DepthMaps {
    /// I/Os by the depth they were queued at: 1, 2, 4, 8, 16, 32, >=64.
    pub level: [u64; 7],
    /// Submit calls by I/Os they carried: 0, 4, 8, 16, 32, 64, >=64.
    pub submit: [u64; 7],
    /// Reaps by I/Os they returned: 0, 4, 8, 16, 32, 64, >=64.
    pub complete: [u64; 7],
}

/// Bucket keys of `iodepth_level`.
pub const LEVEL_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
/// Bucket keys of `iodepth_submit` and `iodepth_complete`.
pub const BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

impl DepthMaps {
    /// `n` I/Os submitted together, leaving `depth` in flight (theirs
    /// included): fio marks a commit's I/Os with the depth after it.
    #[inline]
    pub fn queued(&mut self, depth: usize, n: usize) {
        // 1, 2-3, 4-7, ... 32-63, >=64: below the next power of two.
        self.level[bucket(depth, &[2, 4, 8, 16, 32, 64])] += n as u64;
    }

    /// A submit call that carried `n` I/Os.
    #[inline]
    pub fn submitted(&mut self, n: usize) {
        self.submit[bucket(n, &BATCH_EDGES)] += 1;
    }

    /// A reap that returned `n` completions.
    #[inline]
    pub fn completed(&mut self, n: usize) {
        self.complete[bucket(n, &BATCH_EDGES)] += 1;
    }

    /// Adds another clone's counts.
    pub fn merge(&mut self, o: &DepthMaps) {
        for i in 0..7 {
            self.level[i] += o.level[i];
            self.submit[i] += o.submit[i];
            self.complete[i] += o.complete[i];
        }
    }

    /// Percentages per bucket, as fio prints them. A job whose engine
    /// does one I/O per call (the sync engines) has depth 1 and one I/O
    /// per submit and per completion, which is what fio reports for them.
    pub fn percents(&self) -> [[f64; 7]; 3] {
        let pct = |m: &[u64; 7], sync_at: usize| {
            let total: u64 = m.iter().sum();
            let mut out = [0.0; 7];
            if total == 0 {
                out[sync_at] = 100.0;
            } else {
                for i in 0..7 {
                    out[i] = m[i] as f64 * 100.0 / total as f64;
                }
            }
            out
        };
        [
            pct(&self.level, 0),
            pct(&self.submit, 1),
            pct(&self.complete, 1),
        ]
    }
}

/// Batch buckets: 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
const BATCH_EDGES: [usize; 6] = [1, 5, 9, 17, 33, 65];

/// The index of the first edge above `n` (the last bucket past them all).
fn bucket(n: usize, edges: &[usize]) -> usize {
    edges.iter().position(|&e| n < e).unwrap_or(edges.len())
}

/// fio's latency buckets: `latency_ns`, `latency_us` (10 each: 2, 4, 10,
/// 20, 50, 100, 250, 500, 750, 1000) and `latency_ms` (those, 2000 and
/// `>=2000`); a bucket holds latencies below its key and at or above the
/// previous key.
pub const LAT_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];
pub use crate::run::sinks::plat::{lat_bucket, LAT_BUCKETS};

/// What a clone measures beyond [`DirAcc`].
#[derive(Debug, Clone)]
pub struct FioExtras {
    /// Per direction.
    pub samples: [Samples; 2],
    /// Queue depths.
    pub depth: DepthMaps,
    /// fsync/fdatasync latencies.
    pub sync_lat: DirAcc,
}

impl Default for FioExtras {
    fn default() -> FioExtras {
        FioExtras {
            samples: Default::default(),
            depth: DepthMaps::default(),
            sync_lat: DirAcc::new(false),
        }
    }
}

/// One kind of periodic sample's clock.
#[derive(Debug, Clone)]
struct Grid {
    every: Duration,
    /// When the last sample was taken, and the totals then.
    last: Instant,
    at: [u64; 2],
    next: Instant,
}

/// Takes a clone's bandwidth and IOPS samples as fio's helper thread does
/// (stat.c, `__add_samples`): every `bw_avg_time`/`iops_avg_time` from
/// the epoch, the rate of the bytes or I/Os completed since the last
/// sample (`delta * 1000 / ms`, KiB/s for bandwidth), nothing for a
/// direction with none, and no sample once the runtime is over — the
/// unfinished last interval is not a sample in fio. The clock is the
/// completions': a sample due at T is taken by the first completion at
/// or after T, before that completion counts, so it holds exactly the
/// I/Os completed by T.
#[derive(Debug, Clone, Default)]
pub struct Sampler {
    /// Bandwidth, IOPS; `None` when a per-I/O log takes a sample per I/O.
    every: [Option<u64>; 2],
    grids: [Option<Grid>; 2],
    started: bool,
    /// When the next sample is due (`None` before the first call).
    pub next: Option<Instant>,
}

/// A sample taken: kind (0 bandwidth, 1 IOPS), direction, value, when.
pub type Taken = (usize, usize, u64, Instant);

impl Sampler {
    /// A sampler with the intervals of [`crate::job::extra::LogOpts::sample_every`].
    pub fn new(every: [Option<u64>; 2]) -> Sampler {
        Sampler {
            every,
            ..Default::default()
        }
    }

    /// Whether a kind takes a sample per I/O instead.
    #[inline]
    pub fn per_io(&self, kind: usize) -> bool {
        self.every[kind].is_none()
    }

    /// Called before the completion at `now` counts, with the clone's
    /// measured totals per direction (bytes, I/Os), the epoch and the
    /// runtime's end; takes the samples due, adds them to `out` and hands
    /// each to `taken`.
    pub fn tick(
        &mut self,
        now: Instant,
        epoch: Instant,
        totals: [(u64, u64); 2],
        deadline: Option<Instant>,
        out: &mut [Samples; 2],
        taken: &mut dyn FnMut(Taken),
    ) {
        let of = |kind: usize| totals.map(|t| if kind == 0 { t.0 } else { t.1 });
        if !self.started {
            self.started = true;
            for k in 0..2 {
                self.grids[k] = self.every[k].map(|ms| {
                    let every = Duration::from_millis(ms.max(1));
                    Grid {
                        every,
                        last: epoch,
                        at: of(k),
                        next: epoch + every,
                    }
                });
            }
        }
        for (k, slot) in self.grids.iter_mut().enumerate() {
            let Some(g) = slot else { continue };
            if g.next > now {
                continue;
            }
            if deadline.is_some_and(|d| g.next >= d) {
                *slot = None;
                continue;
            }
            let ms = cast::duration_ms(g.next - g.last).max(1);
            let now_totals = of(k);
            for d in 0..2 {
                let delta = now_totals[d] - g.at[d];
                if delta == 0 {
                    continue;
                }
                let v = if k == 0 {
                    delta * 1000 / ms / 1024
                } else {
                    delta * 1000 / ms
                };
                if k == 0 {
                    out[d].bw.add(v);
                } else {
                    out[d].iops.add(v);
                }
                taken((k, d, v, g.next));
            }
            g.at = now_totals;
            // Intervals with no completion take no sample; the clock
            // moves to the last edge at or before now.
            let since_ns = cast::duration_ns(now - g.next);
            let every_ns = cast::duration_ns(g.every);
            g.last = g.next + Duration::from_nanos(since_ns - since_ns % every_ns);
            g.next = g.last + g.every;
        }
        self.next = self.grids.iter().flatten().map(|g| g.next).min();
        if self.next.is_none() {
            // Nothing more to sample: never due again.
            self.next = Some(now + Duration::from_secs(1 << 30));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_follow_fio() {
        assert_eq!(lat_bucket(0), 0);
        assert_eq!(lat_bucket(1), 0);
        assert_eq!(lat_bucket(2), 1);
        assert_eq!(lat_bucket(999), 9);
        assert_eq!(lat_bucket(1_000), 10);
        assert_eq!(lat_bucket(45_000), 14); // "50" us
        assert_eq!(lat_bucket(999_999), 19);
        assert_eq!(lat_bucket(1_000_000), 20); // "2" ms
        assert_eq!(lat_bucket(1_500_000_000), 30); // "2000" ms
        assert_eq!(lat_bucket(5_000_000_000), 31); // ">=2000"
    }

    #[test]
    fn samples_and_their_sum() {
        let s = SampleStats::of(&[10, 20, 30]);
        assert_eq!((s.min, s.max, s.n), (10, 30, 3));
        assert!((s.mean - 20.0).abs() < 1e-9 && (s.dev - 10.0).abs() < 1e-9);
        let t = SampleStats::sum(&[s, s]);
        assert_eq!((t.min, t.max, t.n), (20, 60, 6));
        assert!((t.mean - 40.0).abs() < 1e-9);
    }

    #[test]
    fn samples_follow_fios_helper_thread() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let mut s = Sampler::new([Some(500), Some(500)]);
        let mut out: [Samples; 2] = Default::default();
        let mut taken = Vec::new();
        // One 4 KiB read per ms, none from 600 to 2099 ms, runtime 3 s.
        for (ios, m) in (1..3000u64)
            .filter(|m| !(600..2100).contains(m))
            .enumerate()
        {
            let ios = ios as u64;
            if s.next.is_none_or(|n| ms(m) >= n) {
                let totals = [(ios * 4096, ios), (0, 0)];
                s.tick(ms(m), t0, totals, Some(ms(3000)), &mut out, &mut |x| {
                    taken.push(x)
                });
            }
        }
        let at = |k: usize| -> Vec<(u64, u64)> {
            taken
                .iter()
                .filter(|x| x.0 == k)
                .map(|x| (cast::duration_ms(x.3.duration_since(t0)), x.2))
                .collect()
        };
        // Each sample holds the I/Os completed before its time; a window
        // without I/O takes none, and the unfinished last one none.
        assert_eq!(
            at(1),
            vec![(500, 998), (1000, 200), (2500, 800)],
            "{taken:?}"
        );
        assert_eq!(at(0)[0], (500, 499 * 4096 * 1000 / 500 / 1024));
        assert_eq!(out[0].iops.stats().n, 3);
        assert_eq!(out[1].iops.stats().n, 0);
    }

    #[test]
    fn depth_maps_default_to_sync() {
        let p = DepthMaps::default().percents();
        assert_eq!(p[0][0], 100.0);
        assert_eq!(p[1][1], 100.0);
        let mut m = DepthMaps::default();
        assert_eq!(
            [0, 1, 4, 5, 64, 65].map(|n| bucket(n, &BATCH_EDGES)),
            [0, 1, 1, 2, 5, 6]
        );
        m.queued(1, 1);
        m.queued(4, 1);
        m.queued(70, 1);
        m.submitted(0);
        m.submitted(3);
        let p = m.percents();
        assert!((p[0][0] - 100.0 / 3.0).abs() < 1e-9 && (p[0][6] - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(p[1][0], 50.0);
    }
}
