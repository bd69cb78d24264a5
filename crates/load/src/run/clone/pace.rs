//! When a clone's next I/O may go: its rate limits (`rate`, `rate_iops`)
//! and their floor (`ratemin`, `rate_iops_min`), flow (`flow`), think time
//! (`thinktime`), and `latency_target`'s depth search, which decides how
//! deep its queue may be.

use std::time::{Duration, Instant};

use crate::job::kinds::Dir;
use crate::job::model::Job;
use crate::run::clone::result::Failure;
use crate::run::clone::spec::CloneSpec;
use crate::run::lat_target::{LatTarget, LatTargetOpts, Step};
use crate::run::rate::Pacer;
use crate::run::sinks::timeline::Timeline;

/// What decides when the next I/O goes.
pub(crate) struct Pace {
    pacer: Option<Pacer>,
    /// `latency_target`: the depth search, and a step a completion asked.
    lat: Option<LatTarget>,
    lat_pending: Option<Step>,
    /// `ratemin`/`rate_iops_min` window: start, bytes and I/Os at start.
    min_window: Option<(Instant, [u64; 2], [u64; 2])>,
}

impl Pace {
    pub(super) fn new(job: &Job, seed: u64, go: Instant) -> Pace {
        let min_window = (job.x.ratemin.read.is_some()
            || job.x.ratemin.write.is_some()
            || job.x.rate_iops_min.read.is_some()
            || job.x.rate_iops_min.write.is_some())
        .then_some((go, [0; 2], [0; 2]));
        let lat = job.x.latency_target.map(|target| {
            let o = LatTargetOpts {
                target,
                window: job.x.latency_window,
                percentile: job.x.latency_percentile,
                run: job.x.latency_run,
            };
            // A blocking engine has one I/O at a time, whatever iodepth
            // says: the search cannot go deeper than that.
            let depth = if job.ioengine.queues() {
                job.iodepth
            } else {
                1
            };
            LatTarget::new(o, depth, go, 0)
        });
        Pace {
            pacer: Pacer::for_job(job, seed),
            lat,
            lat_pending: None,
            min_window,
        }
    }

    /// True when completions feed it (the `ratemin` floor, the depth
    /// search): they take the slow path.
    pub(super) fn watches_completions(&self) -> bool {
        self.min_window.is_some() || self.lat.is_some()
    }

    /// True when a rate limit applies.
    pub(super) fn paced(&self) -> bool {
        self.pacer.is_some()
    }

    /// True while `latency_target` searches.
    #[inline]
    pub(super) fn searching(&self) -> bool {
        self.lat.is_some()
    }

    /// How deep the queue may be now: `slots`, or less while
    /// `latency_target` searches.
    #[inline]
    pub(super) fn queue_depth(&self, slots: usize) -> usize {
        self.lat
            .as_ref()
            .map_or(slots, |l| (l.depth() as usize).min(slots).max(1))
    }

    /// The depth `latency_target` settled on.
    pub(super) fn lat_depth(&self) -> Option<u32> {
        self.lat.as_ref().map(LatTarget::depth)
    }

    /// Between turns, while measuring: the step a completion raised, else
    /// the window's verdict on `ios` I/Os at `now`. Over the target at
    /// depth 1 is also the failure to stop the clone with (fio's
    /// lat_fatal: ETIMEDOUT).
    pub(super) fn lat_turn(
        &mut self,
        job: &Job,
        now: Instant,
        ios: u64,
    ) -> (Step, Option<Failure>) {
        let Some(l) = &mut self.lat else {
            return (Step::Go, None);
        };
        let step = self.lat_pending.take().unwrap_or_else(|| l.check(now, ios));
        let fatal = (step == Step::Fatal).then(|| {
            let target = l.target();
            Failure {
                errno: libc::ETIMEDOUT,
                message: format!(
                    "job {}: latency over latency_target={target:?} at queue depth 1: no depth meets it",
                    job.name
                ),
            }
        });
        (step, fatal)
    }

    /// A completion of latency `lat` for the depth search (`ios` so far);
    /// a step it asks for waits for the next turn.
    pub(super) fn lat_completed(&mut self, lat: Duration, now: Instant, ios: u64) {
        if let Some(l) = &mut self.lat {
            let step = l.completed(lat, now, ios);
            if step != Step::Go {
                self.lat_pending.get_or_insert(step);
            }
        }
    }

    /// The measurement restarts at `now`: so does the search's window.
    pub(super) fn restart(&mut self, now: Instant) {
        if let Some(l) = &mut self.lat {
            l.restart(now);
        }
    }

    /// `flow`: how long this job waits for its flow share (zero without
    /// `flow`).
    pub(super) fn flow_wait(spec: &CloneSpec, job: &Job) -> Duration {
        if job.x.flow == 0 {
            return Duration::ZERO;
        }
        spec.shared.flow_wait(spec.job_idx, job.x.flow_sleep)
    }

    /// The rate limit's word on an I/O of `dir`: the direction it goes in
    /// now (counted as issued), or the direction to keep it in and how long
    /// to wait. Without a limit every I/O is due.
    pub(super) fn due(
        &mut self,
        job: &Job,
        time: &mut Timeline,
        dir: Dir,
        len: u64,
    ) -> Result<Dir, (Dir, Duration)> {
        if self.pacer.is_none() {
            return Ok(dir);
        }
        time.tick(Instant::now());
        let elapsed = time.now.saturating_duration_since(time.go);
        let mixed = job.reads() && job.writes() && (1..100).contains(&job.rwmixread);
        let mut dir = dir;
        if let Some(p) = self.pacer.as_mut() {
            let mut wait = p.delay(dir, elapsed);
            // fio's rate_ddir: a mixed job ahead of its rate in the
            // drawn direction takes the other one if that is due,
            // else waits for whichever is due first. Drawing again
            // and waiting would leave the slower direction behind
            // its rate (927 of 1000 paced reads in 2 s before).
            if mixed && !wait.is_zero() && dir != Dir::Trim {
                let other = if dir == Dir::Read {
                    Dir::Write
                } else {
                    Dir::Read
                };
                let w = p.delay(other, elapsed);
                if w < wait {
                    (dir, wait) = (other, w);
                }
            }
            if !wait.is_zero() {
                return Err((dir, wait));
            }
            p.issued(dir, len);
        }
        Ok(dir)
    }

    /// `thinktime` after every `thinktime_blocks` I/Os (`issued` so far):
    /// spin for `thinktime_spin`, sleep the rest.
    pub(super) fn think(job: &Job, issued: u64, time: &mut Timeline) {
        let x = &job.x;
        if x.thinktime.is_zero() || issued % u64::from(x.thinktime_blocks.max(1)) != 0 {
            return;
        }
        let spin = x.thinktime_spin.min(x.thinktime);
        let t0 = Instant::now();
        while t0.elapsed() < spin {
            std::hint::spin_loop();
        }
        let rest = x.thinktime - spin;
        if !rest.is_zero() {
            std::thread::sleep(rest);
        }
        time.tick(Instant::now());
    }

    /// The `ratemin`/`rate_iops_min` floor, once a `ratecycle` has passed
    /// since the window began: the failure when a direction the job uses
    /// ran below it, else a new window from `totals` (bytes and I/Os per
    /// direction so far).
    pub(super) fn below_floor(
        &mut self,
        job: &Job,
        now: Instant,
        totals: [(u64, u64); 2],
    ) -> Option<Failure> {
        let (start, bytes0, ios0) = self.min_window?;
        let cycle = job.x.ratecycle;
        let el = now.saturating_duration_since(start);
        if el < cycle {
            return None;
        }
        for (i, dir) in [(0, Dir::Read), (1, Dir::Write)] {
            let secs = el.as_secs_f64();
            let bw = (totals[i].0 - bytes0[i]) as f64 / secs;
            let iops = (totals[i].1 - ios0[i]) as f64 / secs;
            let uses = if i == 0 { job.reads() } else { job.writes() };
            if !uses {
                continue;
            }
            let low_bw = job.x.ratemin.get(dir).filter(|m| bw < *m as f64);
            let low_iops = job.x.rate_iops_min.get(dir).filter(|m| iops < *m as f64);
            if low_bw.is_some() || low_iops.is_some() {
                let what = match (low_bw, low_iops) {
                    (Some(m), _) => format!("{:.0} B/s, below ratemin={m}", bw),
                    (_, Some(m)) => format!("{iops:.0} IOPS, below rate_iops_min={m}"),
                    _ => String::new(),
                };
                return Some(Failure {
                    errno: 0,
                    message: format!(
                        "job {}: {} ran at {what} over the last {} ms (ratecycle); the job stopped, results so far are kept",
                        job.name,
                        if i == 0 { "reading" } else { "writing" },
                        el.as_millis()
                    ),
                });
            }
        }
        self.min_window = Some((now, [totals[0].0, totals[1].0], [totals[0].1, totals[1].1]));
        None
    }
}
