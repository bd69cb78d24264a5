//! The state an engine's loop drives ([`Run`]): one clone's job, clock,
//! random stream and fate (its failure, the errors it continued past),
//! and the parts that own the rest — what is drawn and issued
//! ([`Issuer`]), where it goes in the files ([`Placement`]), when it may
//! go ([`Pace`]), where completions are counted ([`Tally`]), and what is
//! written and verified ([`Data`]). Each part's methods are in its own
//! file; `Run`'s are where the parts meet.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rand::SeedableRng;

use crate::job::kinds::Dir;
use crate::job::model::Job;
use crate::run::clone::complete::Tally;
use crate::run::clone::data::Data;
use crate::run::clone::issue::Issuer;
use crate::run::clone::pace::Pace;
use crate::run::clone::place::Placement;
use crate::run::clone::result::{CloneResult, Continued, Failure};
use crate::run::clone::spec::{seed_for, CloneSpec};
use crate::run::shared::JobShared;
use crate::run::sinks::cpu::CpuUse;
use crate::run::sinks::timeline::Timeline;

/// The state an engine's loop drives.
pub struct Run<'a> {
    pub(super) spec: &'a CloneSpec,
    /// This job's shared state (stop flag, flow and steadystate totals).
    pub(super) me: &'a JobShared,
    /// The job.
    pub job: &'a Job,
    /// The clock.
    pub time: Timeline,
    /// Set when the clone failed.
    pub failure: Option<Failure>,
    /// Errors continued past (`continue_on_error`).
    pub(super) continued: Continued,
    /// The clone's random stream (buffer contents, cmdprio's draws).
    pub(super) rng: rand::rngs::SmallRng,
    pub(super) issue: Issuer,
    pub(super) place: Placement,
    pub(super) pace: Pace,
    pub(super) tally: Tally,
    pub(super) data: Data,
}

/// What an engine should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Issue this I/O: direction, offset, length.
    Io(Dir, u64, u64),
    /// The rate limit wants this long before the next I/O.
    Wait(Duration),
    /// A loop ended and its writes are to be verified: complete every I/O
    /// in flight, then call [`Run::drained`] (fio's do_io drains before
    /// do_verify).
    Drain,
    /// The clone is done.
    Done,
}

impl<'a> Run<'a> {
    pub(crate) fn new(spec: &'a CloneSpec, go: Instant) -> Result<Run<'a>, String> {
        let job = &*spec.job;
        let seed = seed_for(spec);
        // The parts that can fail are made in the order their files are
        // read, opened or reset: verify's state, the logs, the zones, the
        // iolog.
        let data = Data::new(spec, seed)?;
        let pace = Pace::new(job, seed, go);
        let slow = job.x.flow != 0 || pace.watches_completions();
        let tally = Tally::new(spec, go, slow)?;
        let place = Placement::new(spec)?;
        let issue = Issuer::new(spec, seed, place.zones(), go)?;
        Ok(Run {
            spec,
            me: &spec.shared.jobs[spec.job_idx],
            job,
            time: Timeline::new(job, go),
            failure: None,
            continued: Default::default(),
            rng: rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5eed),
            issue,
            place,
            pace,
            tally,
            data,
        })
    }

    /// The (first) target path, for messages.
    pub fn path(&self) -> &Path {
        self.place.path()
    }

    /// A failed I/O at offset `v`, naming its file and offset.
    pub fn io_failure(&self, err: &std::io::Error, dir: Dir, v: u64) -> Failure {
        let (path, off) = self.place.names.locate(v);
        Failure::io(self.job, err, dir, path, off)
    }

    /// True when I/O latencies are measured (not `gtod_reduce`).
    #[inline]
    pub fn timed(&self) -> bool {
        self.tally.timed
    }

    /// True when the clone must stop issuing I/O.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.failure.is_some()
            || self.time.past_deadline()
            || self.spec.ctl.stopping()
            || self.me.stop.load(Ordering::Relaxed)
    }

    /// True when a rate limit applies.
    pub fn paced(&self) -> bool {
        self.pace.paced()
    }

    /// Stops the clone (and its siblings) with a failure; the first one
    /// is kept.
    pub fn fail(&mut self, f: Failure) {
        if self.failure.is_none() {
            self.failure = Some(f);
        }
        self.me.stop.store(true, Ordering::Relaxed);
    }

    /// An I/O or verify error: counted and continued past when
    /// `continue_on_error` covers its class and it is one of fio's
    /// non-fatal errors (EIO, EILSEQ: td_error.c), else the clone stops.
    /// `count` is how many I/Os it stands for (bad blocks of a verify
    /// pass). True when the clone goes on.
    pub fn error(&mut self, f: Failure, dir: Dir, count: u64) -> bool {
        let mask = self.job.x.continue_on_error;
        if continues(mask, &self.job.x.ignore_error, f.errno, dir) {
            self.continued.count += count;
            self.continued.first.get_or_insert(f);
            return true;
        }
        // fio counts a fatal error of a class it continues on when the I/O
        // completed at submission (backend.c, io_queue_event), not when a
        // queueing engine reaps it (io_u.c, io_completed).
        if mask & (1 << error_class(f.errno, dir)) != 0 && !self.job.ioengine.queues() {
            self.continued.count += count;
            self.continued.first.get_or_insert(f.clone());
        }
        self.fail(f);
        false
    }

    /// How deep the queue may be now: `slots`, or less while
    /// `latency_target` searches.
    #[inline]
    pub fn queue_depth(&self, slots: usize) -> usize {
        self.pace.queue_depth(slots)
    }

    /// Between turns: what `latency_target` asks (a step a completion
    /// raised, else the window's verdict). Over the target at depth 1
    /// fails the clone with ETIMEDOUT, as fio's lat_fatal does.
    #[inline]
    pub fn lat_turn(&mut self) -> crate::run::lat_target::Step {
        if !self.pace.searching() {
            return crate::run::lat_target::Step::Go;
        }
        self.lat_step()
    }

    #[cold]
    fn lat_step(&mut self) -> crate::run::lat_target::Step {
        if !self.time.measuring() {
            return crate::run::lat_target::Step::Go;
        }
        let (step, fatal) = self
            .pace
            .lat_turn(self.job, self.time.now, self.tally.ios());
        if let Some(f) = fatal {
            self.fail(f);
        }
        step
    }

    /// Restarts the statistics (fio's reset_all_stats/reset_io_stats
    /// before latency_target's final window): what was measured while the
    /// depth was searched is not the result.
    pub fn restart_measurement(&mut self) {
        let now = std::time::Instant::now();
        self.tally.restart(self.job.x.logs.sample_every());
        self.time.restart(now);
        self.pace.restart(now);
    }

    /// A full disk while `fill_device` fills it: the pass is over, not an
    /// error.
    pub fn fill_done(&self, err: &std::io::Error) -> bool {
        self.job.x.fill_device && err.raw_os_error() == Some(libc::ENOSPC)
    }

    pub(crate) fn finish(mut self, out: &mut CloneResult) {
        let end = Instant::now();
        if let Some(start) = self.time.measure_start {
            out.measured = Some((start, end));
            out.cpu = CpuUse::this_thread().since(&self.time.cpu_start);
        }
        self.save_verify_state();
        if let Err(e) = self.issue.finish(end) {
            self.failure.get_or_insert(Failure {
                errno: e.raw_os_error().unwrap_or(0),
                message: format!("job {}: write_iolog: {e}", self.job.name),
            });
        }
        if let Err(e) = self.tally.finish_logs(end) {
            self.failure.get_or_insert(Failure {
                errno: 0,
                message: format!("job {}: {e}", self.job.name),
            });
        }
        out.lat_depth = self.pace.lat_depth();
        out.zone_resets = self.place.zone_resets();
        out.dirs = self.tally.dirs;
        out.fx = self.tally.fx;
        out.syncs = self.tally.syncs;
        out.failure = self.failure;
        out.continued = self.continued;
    }
}

/// fio's error class (td_error_type): 0 read, 1 write, 2 verify.
fn error_class(errno: i32, dir: Dir) -> usize {
    match (errno, dir) {
        (libc::EILSEQ, _) => 2,
        (_, Dir::Read) => 0,
        _ => 1,
    }
}

/// fio's `td_non_fatal_error`: whether a job with `continue_on_error`
/// classes `mask` goes on after `errno` in `dir` (EILSEQ is a verify
/// error, else the direction's): when the class's `ignore_error` list has
/// it, or without a list when it is one of fio's non-fatal errors (EIO,
/// EILSEQ).
pub fn continues(mask: u32, lists: &[Option<Vec<i32>>; 3], errno: i32, dir: Dir) -> bool {
    let class = error_class(errno, dir);
    let listed = match &lists[class] {
        Some(l) => l.contains(&errno),
        None => matches!(errno, libc::EIO | libc::EILSEQ),
    };
    listed && mask & (1 << class) != 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod continue_tests {
    use super::*;

    #[test]
    fn only_fios_non_fatal_errors_of_the_chosen_classes_continue() {
        let (read, write, verify, all) = (1, 2, 4, 0xffff);
        let none = Default::default();
        assert!(continues(read, &none, libc::EIO, Dir::Read));
        assert!(!continues(read, &none, libc::EIO, Dir::Write));
        assert!(continues(write, &none, libc::EIO, Dir::Trim));
        assert!(!continues(write, &none, libc::EILSEQ, Dir::Write));
        assert!(continues(verify, &none, libc::EILSEQ, Dir::Read));
        assert!(!continues(all, &none, libc::ENOSPC, Dir::Write));
        assert!(!continues(all, &none, libc::EINVAL, Dir::Read));
        assert!(!continues(0, &none, libc::EIO, Dir::Read));
        // ignore_error=,ENOSPC: the write list replaces EIO, EILSEQ.
        let lists = [None, Some(vec![libc::ENOSPC]), None];
        assert!(continues(write, &lists, libc::ENOSPC, Dir::Write));
        assert!(!continues(write, &lists, libc::EIO, Dir::Write));
        assert!(continues(read, &lists, libc::EIO, Dir::Read));
    }
}
