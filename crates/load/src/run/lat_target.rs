//! `latency_target`: fio's search for the deepest queue that keeps I/O
//! latency under a target (io_u.c, `lat_target_*`), step for step.
//!
//! The queue starts at depth 1. Every `latency_window` the share of I/Os
//! at or under the target is judged against `latency_percentile`: met, the
//! depth doubles (or, once a depth has failed, bisects towards it); missed
//! — or, at 100 %, at the first I/O over the target — the depth bisects
//! down towards the last depth that met it, after the I/Os in flight
//! complete. A job still over the target at depth 1 fails with ETIMEDOUT,
//! as fio's does. When a window leaves the depth unchanged the search is
//! over: the statistics restart, one more window runs at that depth, and
//! the job ends (unless `latency_run`, which keeps adjusting). The depth
//! reached is fio's `latency_depth`.

use std::time::{Duration, Instant};

/// The options, as the job gives them.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LatTargetOpts {
    /// `latency_target`.
    pub target: Duration,
    /// `latency_window`.
    pub window: Duration,
    /// `latency_percentile` (default 100).
    pub percentile: f64,
    /// `latency_run`: keep adjusting.
    pub run: bool,
}

/// What the loop is to do after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Go on at [`LatTarget::depth`].
    Go,
    /// Let the I/Os in flight complete first (the depth went down).
    Quiesce,
    /// Converged: complete what is in flight, restart the statistics and
    /// run one more window.
    FinalWindow,
    /// The final window is over: the job is done.
    Done,
    /// Over the target at depth 1: the job fails (ETIMEDOUT).
    Fatal,
}

/// The search's state.
#[derive(Debug, Clone)]
pub struct LatTarget {
    o: LatTargetOpts,
    iodepth: u32,
    qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    failed: u64,
    cycle_start: Instant,
    cycle_ios: u64,
    end_run: bool,
}

impl LatTarget {
    /// The search for a job of `iodepth`, starting at `now` with `ios`
    /// completed.
    pub fn new(o: LatTargetOpts, iodepth: u32, now: Instant, ios: u64) -> LatTarget {
        LatTarget {
            o,
            iodepth: iodepth.max(1),
            qd: 1,
            low: 1,
            high: iodepth.max(1),
            stable: 0,
            failed: 0,
            cycle_start: now,
            cycle_ios: ios,
            end_run: false,
        }
    }

    /// The depth to keep the queue at now (fio's `latency_qd`).
    #[inline]
    pub fn depth(&self) -> u32 {
        self.qd
    }

    /// The latency the search holds the job to (`latency_target`).
    pub fn target(&self) -> Duration {
        self.o.target
    }

    /// A completed I/O of `lat` (fio checks its total latency).
    pub fn completed(&mut self, lat: Duration, now: Instant, ios: u64) -> Step {
        if lat <= self.o.target {
            return Step::Go;
        }
        if self.o.percentile < 100.0 {
            self.failed += 1;
            return Step::Go;
        }
        self.failed_step(now, ios)
    }

    /// Called between turns with the I/Os completed so far: judges a
    /// window once it has passed.
    pub fn check(&mut self, now: Instant, ios: u64) -> Step {
        if now.saturating_duration_since(self.cycle_start) < self.o.window {
            return Step::Go;
        }
        let n = ios.saturating_sub(self.cycle_ios);
        let ok = if n == 0 {
            100.0
        } else {
            (n.saturating_sub(self.failed)) as f64 * 100.0 / n as f64
        };
        if ok >= self.o.percentile {
            self.success(now, ios)
        } else {
            self.failed_step(now, ios)
        }
    }

    /// The statistics restarted (the final window): counts start at 0.
    pub fn restart(&mut self, now: Instant) {
        self.new_cycle(now, 0);
    }

    fn new_cycle(&mut self, now: Instant, ios: u64) {
        self.cycle_start = now;
        self.cycle_ios = ios;
        self.failed = 0;
    }

    fn failed_step(&mut self, now: Instant, ios: u64) -> Step {
        if self.qd == 1 {
            return Step::Fatal;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = (self.qd + self.low) / 2;
        self.stable = 0;
        self.new_cycle(now, ios);
        Step::Quiesce
    }

    fn success(&mut self, now: Instant, ios: u64) -> Step {
        let qd = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            // Stuck one below a failed depth: try it again after three
            // good windows (fio's heuristic).
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.qd = if self.high != self.iodepth {
            (self.qd + self.high) / 2
        } else {
            self.qd * 2
        };
        self.qd = self.qd.min(self.iodepth);
        let step = if !self.o.run && self.qd == qd {
            if self.end_run {
                Step::Done
            } else {
                self.end_run = true;
                Step::FinalWindow
            }
        } else {
            Step::Go
        };
        self.new_cycle(now, ios);
        step
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn opts() -> LatTargetOpts {
        LatTargetOpts {
            target: Duration::from_micros(100),
            window: Duration::from_millis(10),
            percentile: 100.0,
            run: false,
        }
    }

    /// A device whose latency is 30 us per I/O in flight: the target
    /// (100 us) holds up to depth 3. The search finds 3 as fio's would.
    #[test]
    fn the_search_settles_on_the_deepest_depth_under_the_target() {
        let t0 = Instant::now();
        let mut l = LatTarget::new(opts(), 16, t0, 0);
        let mut now = t0;
        let mut ios = 0;
        let mut trail = vec![l.depth()];
        for _ in 0..200 {
            now += Duration::from_millis(11);
            let lat = Duration::from_micros(30 * u64::from(l.depth()));
            ios += 100;
            let mut step = l.completed(lat, now, ios);
            if step == Step::Go {
                step = l.check(now, ios);
            }
            trail.push(l.depth());
            if step == Step::Done {
                break;
            }
            assert_ne!(step, Step::Fatal, "{trail:?}");
        }
        assert_eq!(l.depth(), 3, "{trail:?}");
        assert_eq!(&trail[..4], &[1, 2, 4, 3], "{trail:?}");
    }

    /// The final window starts with the statistics at 0 (a restarted
    /// count must not underflow the window's I/Os) and ends the search.
    #[test]
    fn the_final_window_counts_from_the_restart() {
        let t0 = Instant::now();
        let mut l = LatTarget::new(opts(), 1, t0, 0);
        let later = t0 + Duration::from_millis(20);
        assert_eq!(l.check(later, 500), Step::FinalWindow);
        l.restart(later);
        assert_eq!(l.check(later + Duration::from_millis(20), 40), Step::Done);
    }

    #[test]
    fn over_the_target_at_depth_one_is_fatal() {
        let t0 = Instant::now();
        let mut l = LatTarget::new(opts(), 8, t0, 0);
        assert_eq!(l.completed(Duration::from_millis(1), t0, 1), Step::Fatal);
        // Under a percentile, misses are only counted until the window.
        let mut l = LatTarget::new(
            LatTargetOpts {
                percentile: 50.0,
                ..opts()
            },
            8,
            t0,
            0,
        );
        assert_eq!(l.completed(Duration::from_millis(1), t0, 1), Step::Go);
        assert_eq!(l.check(t0 + Duration::from_millis(20), 4), Step::Go);
        assert_eq!(l.depth(), 2);
    }
}
