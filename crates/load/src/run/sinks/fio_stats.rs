//! The rest of what fio reports per job, beyond bytes and latencies:
//! bandwidth and IOPS samples (fio's `bw_*`/`iops_*`), the queue-depth
//! distributions (`iodepth_level`, `iodepth_submit`, `iodepth_complete`),
//! the latency buckets (`latency_ns/us/ms`) and fsync latencies. A clone
//! fills its own; the report merges them as fio merges a group's threads.

use std::time::{Duration, Instant};

use crate::run::sinks::stats::DirAcc;

/// fio's `bw_avg_time`/`iops_avg_time` default: one sample per 500 ms.
pub const SAMPLE_MS: u64 = 500;

/// One direction's samples, one per full window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    /// KiB/s per window.
    pub bw: Vec<u64>,
    /// I/Os per second per window.
    pub iops: Vec<u64>,
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
        if v.is_empty() {
            return SampleStats::default();
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<u64>() as f64 / n;
        let var = if v.len() < 2 {
            0.0
        } else {
            v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0)
        };
        SampleStats {
            min: v.iter().copied().min().unwrap_or(0),
            max: v.iter().copied().max().unwrap_or(0),
            mean,
            dev: var.sqrt(),
            n: v.len() as u64,
        }
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

/// Cuts a clone's completions into sample windows.
#[derive(Debug, Clone, Default)]
pub struct Sampler {
    /// Start of the current window and the totals (bytes, ios) then.
    window: Option<(Instant, [(u64, u64); 2])>,
    /// When the current window ends.
    pub next: Option<Instant>,
}

impl Sampler {
    /// Called with the clone's measured totals per direction at `now`;
    /// records one sample per direction the job uses when a window is
    /// full.
    pub fn tick(
        &mut self,
        now: Instant,
        totals: [(u64, u64); 2],
        used: [bool; 2],
        out: &mut [Samples; 2],
    ) {
        let every = Duration::from_millis(SAMPLE_MS);
        let Some((start, at)) = self.window else {
            self.window = Some((now, totals));
            self.next = Some(now + every);
            return;
        };
        let el = now.saturating_duration_since(start);
        if el < every {
            return;
        }
        let ms = el.as_millis().max(1) as u64;
        for d in 0..2 {
            if used[d] {
                let bytes = totals[d].0 - at[d].0;
                let ios = totals[d].1 - at[d].1;
                out[d].bw.push(bytes * 1000 / ms / 1024);
                out[d].iops.push(ios * 1000 / ms);
            }
        }
        self.window = Some((now, totals));
        self.next = Some(now + every);
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
