//! Rate limiting (`rate`, `rate_iops`), per clone and per direction.
//!
//! The I/O number k of a direction is due at `k * bs / rate` (and
//! `k / rate_iops`) after the start; a clone sleeps until its next I/O is
//! due. This keeps the long-run average exact without a token bucket. A
//! clone that fell behind (a stalled device) may catch up by at most
//! [`MAX_BURST`] worth of I/O, then the schedule slides, so a stall is not
//! followed by a long burst at full speed.
//!
//! With `rate_process=poisson` (fio's), the gaps between I/Os are drawn
//! from an exponential distribution with the same mean, so arrivals form
//! a Poisson process: the next I/O is due at the sum of the gaps so far,
//! as fio's `usec_for_io` keeps `last_usec`. The long-run rate is the
//! same; the bursts and lulls are those of independent clients.

use std::time::Duration;

use rand::{rngs::SmallRng, Rng, SeedableRng};

use crate::job::model::Job;

use crate::job::kinds::{Dir, DirPair};

/// How far behind schedule a clone may be before the schedule slides.
pub const MAX_BURST: Duration = Duration::from_secs(1);

/// The schedule of one clone.
#[derive(Debug, Clone)]
pub struct Pacer {
    bps: DirPair<Option<u64>>,
    iops: DirPair<Option<u64>>,
    bytes: [u64; 2],
    ios: [u64; 2],
    /// How far each direction's schedule has slid.
    slide: [Duration; 2],
    /// Poisson arrivals: the drawn schedule of each direction, and the
    /// generator of its gaps.
    poisson: Option<([Duration; 2], SmallRng)>,
}

impl Pacer {
    /// A pacer for the job, or `None` when it has no limits (no cost);
    /// `seed` seeds the Poisson gaps (the clone's random seed).
    pub fn for_job(job: &Job, seed: u64) -> Option<Pacer> {
        let any = [
            job.rate.read,
            job.rate.write,
            job.rate_iops.read,
            job.rate_iops.write,
        ]
        .iter()
        .any(Option::is_some);
        any.then_some(Pacer {
            bps: job.rate,
            iops: job.rate_iops,
            bytes: [0; 2],
            ios: [0; 2],
            slide: [Duration::ZERO; 2],
            poisson: job.x.rate_poisson.then(|| {
                (
                    [Duration::ZERO; 2],
                    SmallRng::seed_from_u64(seed ^ 0x9e37_79b9),
                )
            }),
        })
    }

    /// How long to wait, `elapsed` after the start, before issuing the next
    /// I/O in `dir`.
    pub fn delay(&mut self, dir: Dir, elapsed: Duration) -> Duration {
        let d = dir as usize;
        let mut due = match &self.poisson {
            Some((drawn, _)) => drawn[d],
            None => {
                let mut due = Duration::ZERO;
                if let Some(r) = self.bps.get(dir) {
                    due = due.max(due_after(self.bytes[d], r));
                }
                if let Some(r) = self.iops.get(dir) {
                    due = due.max(due_after(self.ios[d], r));
                }
                due
            }
        };
        due += self.slide[d];
        if elapsed > due + MAX_BURST {
            self.slide[d] += elapsed - due - MAX_BURST;
            return Duration::ZERO;
        }
        due.saturating_sub(elapsed)
    }

    /// Counts an issued I/O.
    pub fn issued(&mut self, dir: Dir, bytes: u64) {
        self.bytes[dir as usize] += bytes;
        self.ios[dir as usize] += 1;
        if let Some((drawn, rng)) = &mut self.poisson {
            // The mean gap this I/O takes under the stricter limit.
            let mut mean = Duration::ZERO;
            if let Some(r) = self.bps.get(dir) {
                mean = mean.max(due_after(bytes, r));
            }
            if let Some(r) = self.iops.get(dir) {
                mean = mean.max(due_after(1, r));
            }
            // 1 - U is in (0, 1]: ln never sees 0.
            let u: f64 = 1.0 - rng.random::<f64>();
            drawn[dir as usize] += mean.mul_f64(-u.ln());
        }
    }
}

/// When `done` units are due at `per_sec` units per second.
pub fn due_after(done: u64, per_sec: u64) -> Duration {
    let ns = u128::from(done) * 1_000_000_000 / u128::from(per_sec.max(1));
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn job(rate: Option<u64>, iops: Option<u64>) -> Job {
        let mut j = Job::new("r");
        j.rate = DirPair {
            read: rate,
            write: None,
        };
        j.rate_iops = DirPair {
            read: iops,
            write: None,
        };
        j
    }

    #[test]
    fn no_limits_no_pacer() {
        assert!(Pacer::for_job(&Job::new("x"), 1).is_none());
    }

    #[test]
    fn bandwidth_schedule() {
        // 1 MiB/s in 64 KiB I/Os: the 17th I/O is due after one second.
        let mut p = Pacer::for_job(&job(Some(1 << 20), None), 1).unwrap();
        assert_eq!(p.delay(Dir::Read, Duration::ZERO), Duration::ZERO);
        for _ in 0..16 {
            p.issued(Dir::Read, 64 << 10);
        }
        assert_eq!(
            p.delay(Dir::Read, Duration::from_millis(250)),
            Duration::from_millis(750)
        );
        assert_eq!(
            p.delay(Dir::Read, Duration::from_millis(1200)),
            Duration::ZERO
        );
        // Writes are unlimited.
        p.issued(Dir::Write, 1 << 30);
        assert_eq!(p.delay(Dir::Write, Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn the_stricter_limit_wins() {
        // 100 IOPS and 1 GiB/s with 4 KiB I/Os: IOPS bind.
        let mut p = Pacer::for_job(&job(Some(1 << 30), Some(100)), 1).unwrap();
        for _ in 0..50 {
            p.issued(Dir::Read, 4096);
        }
        assert_eq!(
            p.delay(Dir::Read, Duration::ZERO),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn stalls_do_not_become_long_bursts() {
        let mut p = Pacer::for_job(&job(None, Some(10)), 1).unwrap();
        p.issued(Dir::Read, 4096); // next due at 0.1 s
                                   // Stalled until 5 s: allowed to be 1 s behind at most.
        assert_eq!(p.delay(Dir::Read, Duration::from_secs(5)), Duration::ZERO);
        for _ in 0..10 {
            p.issued(Dir::Read, 4096);
        }
        // 11 issued: due at 1.1 s + slide 3.9 s = 5.0 s.
        assert_eq!(p.delay(Dir::Read, Duration::from_secs(5)), Duration::ZERO);
        p.issued(Dir::Read, 4096);
        assert_eq!(
            p.delay(Dir::Read, Duration::from_secs(5)),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn poisson_gaps_keep_the_mean_and_vary_like_an_exponential() {
        // 1000 IOPS: gaps average 1 ms with a standard deviation equal to
        // the mean (coefficient of variation 1), where linear pacing has
        // every gap exactly 1 ms.
        let mut j = job(None, Some(1000));
        j.x.rate_poisson = true;
        let mut p = Pacer::for_job(&j, 42).unwrap();
        let n = 20_000;
        let mut gaps = Vec::with_capacity(n);
        let mut last = Duration::ZERO;
        for _ in 0..n {
            p.issued(Dir::Read, 4096);
            let due = p.delay(Dir::Read, Duration::ZERO);
            gaps.push((due - last).as_secs_f64());
            last = due;
        }
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!((mean - 1e-3).abs() < 0.03e-3, "mean gap {mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "cv {}",
            var.sqrt() / mean
        );
        // Same seed, same schedule: runs are repeatable.
        let mut q = Pacer::for_job(&j, 42).unwrap();
        q.issued(Dir::Read, 4096);
        let mut r = Pacer::for_job(&j, 42).unwrap();
        r.issued(Dir::Read, 4096);
        assert_eq!(
            q.delay(Dir::Read, Duration::ZERO),
            r.delay(Dir::Read, Duration::ZERO)
        );
    }

    #[test]
    fn due_math() {
        assert_eq!(due_after(3, 2), Duration::from_millis(1500));
        assert_eq!(due_after(0, 7), Duration::ZERO);
        assert_eq!(due_after(1, 0), Duration::from_secs(1));
    }
}
