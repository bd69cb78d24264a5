//! What a clone issues next ([`Issuer`]: its offset pattern or a replayed
//! iolog, loops, trims, the I/O drawn but not yet due, and
//! `write_iolog`'s record of what it issued), and the step an engine takes
//! next, where the clone's parts meet: placement ([`super::place`]),
//! pacing ([`super::pace`]) and verify's read-backs ([`super::data`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::job::kinds::Dir;
use crate::job::model::Job;
use crate::job::replay::{Action, Replay};
use crate::run::clone::pace::Pace;
use crate::run::clone::place::Zoned;
use crate::run::clone::result::Failure;
use crate::run::clone::spec::CloneSpec;
use crate::run::clone::state::{Run, Step};
use crate::run::files::file_set::{drop_cache, virt, FilePatterns, Files};
use crate::run::files::iolog::{Cursor, Writer};
use crate::run::files::pattern::{Next, Shape};
use crate::run::files::zones::Zones;

/// What is drawn and issued.
pub(crate) struct Issuer {
    pub(super) pattern: FilePatterns,
    /// `read_iolog`: the log replayed instead of the pattern, and where
    /// this clone is in it.
    replay: Option<(Arc<Replay>, Cursor)>,
    /// `write_iolog`: the record of what this clone issues.
    iolog: Option<Writer>,
    /// trimwrite: the write that follows the trim just issued.
    then_write: Option<(u64, u64)>,
    /// An I/O drawn from the pattern but not yet due (rate limit, flow).
    pending: Option<(Dir, u64, u64)>,
    /// I/Os issued (`number_ios`, `thinktime_blocks`).
    issued: u64,
    loops_left: u32,
}

impl Issuer {
    /// The clone's pattern over its region (or over one strided zone),
    /// and its iologs; `write_iolog`'s file is created.
    pub(super) fn new(
        spec: &CloneSpec,
        seed: u64,
        zones: Option<&Zones>,
        go: Instant,
    ) -> Result<Issuer, String> {
        let job = &*spec.job;
        let shape = shape_of(spec, zones);
        Ok(Issuer {
            pattern: FilePatterns::new(&shape, spec.targets.len(), seed, job.x.file_service),
            replay: job
                .x
                .read_iolog
                .clone()
                .map(|r| (r, Cursor::new(job.x.replay_no_stall, job.x.replay_scale))),
            iolog: match &job.x.write_iolog {
                Some(p) => Some(Writer::create(p, &spec.targets, go)?),
                None => None,
            },
            then_write: None,
            pending: None,
            issued: 0,
            loops_left: job.loops.max(1),
        })
    }

    /// A loop ended: true when it was the last (`loops`; a time_based
    /// job loops until its runtime ends).
    fn last_loop(&mut self, job: &Job) -> bool {
        if job.time_based {
            return false;
        }
        self.loops_left -= 1;
        self.loops_left == 0
    }

    /// The pattern's direction for a placed I/O: trim patterns walk their
    /// blocks as reads (trim) or writes (trimwrite: each block trimmed,
    /// then written at `offset`) would.
    fn as_trim(&mut self, job: &Job, dir: Dir, offset: u64, len: u64) -> Dir {
        match (job.rw.trims(), dir) {
            (false, d) => d,
            (true, Dir::Read) => Dir::Trim,
            (true, _) => {
                self.then_write = Some((offset, len));
                Dir::Trim
            }
        }
    }

    /// The next action of a replayed log `since` the clone began: `None`
    /// when the log is over, `Err` how long until the next is due.
    fn replayed(&mut self, since: Duration) -> Option<Result<Action, Duration>> {
        let (log, cursor) = self.replay.as_mut()?;
        cursor.next(log, since)
    }

    /// `write_iolog`'s line for an I/O issued at `now`; a failure to
    /// write it ends the record (and the clone).
    fn record(
        &mut self,
        job: &Job,
        now: Instant,
        dir: Dir,
        offset: u64,
        len: u64,
    ) -> Option<Failure> {
        let w = self.iolog.as_mut()?;
        let e = w.io(now, dir, offset, len).err()?;
        self.iolog = None;
        Some(Failure {
            errno: e.raw_os_error().unwrap_or(0),
            message: format!("job {}: write_iolog: {e}", job.name),
        })
    }

    /// `write_iolog`'s record, closed at `end`.
    pub(super) fn finish(&mut self, end: Instant) -> std::io::Result<()> {
        match self.iolog.take() {
            Some(w) => w.finish(end),
            None => Ok(()),
        }
    }
}

impl Run<'_> {
    /// The next I/O to issue, or `None` when the clone is done. Sleeps for
    /// rate limits and think time; starts new passes (dropping the cache
    /// if asked).
    pub fn next(&mut self, file: &Files) -> Option<(Dir, u64, u64)> {
        loop {
            match self.step(file) {
                Step::Io(dir, offset, len) => return Some((dir, offset, len)),
                Step::Done => return None,
                // One I/O at a time: nothing is in flight.
                Step::Drain => self.drained(file),
                Step::Wait(w) => {
                    // Short naps keep stop() responsive.
                    std::thread::sleep(w.min(Duration::from_millis(50)));
                    self.time.tick(Instant::now());
                }
            }
        }
    }

    /// Like [`Run::next`] but returns [`Step::Wait`] instead of sleeping
    /// when the rate limit (or flow control, or think time) says the next
    /// I/O is not due yet, so a queueing engine can reap completions
    /// meanwhile; the I/O is kept for the next call.
    pub fn step(&mut self, file: &Files) -> Step {
        loop {
            if self.stopped() {
                return Step::Done;
            }
            if self
                .job
                .x
                .number_ios
                .is_some_and(|n| self.issue.issued >= n)
            {
                return Step::Done;
            }
            // One branch per I/O for jobs without zones.
            if self.place.zoned() {
                if let Some(z) = self.place.zbd_pending(self.job, &mut self.issue.pattern) {
                    match self.zoned(z) {
                        Some(s) => return s,
                        None => continue,
                    }
                }
            }
            if self.issue.replay.is_some() {
                match self.replay_step(file) {
                    Some(s) => return s,
                    None => continue,
                }
            }
            if let Some((offset, len)) = self.issue.then_write.take() {
                return self.issue(Dir::Write, offset, len);
            }
            if self.issue.pending.is_none()
                && self.place.zone_pass_over(self.spec.io_size)
                && self.issue.last_loop(self.job)
            {
                return Step::Done;
            }
            let (dir, offset, len) = match self.issue.pending.take() {
                Some(io) => io,
                None => match self.issue.pattern.next() {
                    Next::Io(dir, offset, len) => (dir, offset, len),
                    // A zone's pass: a fresh map over the same zone.
                    Next::PassEnd if self.place.zones().is_some() => {
                        self.issue.pattern.new_pass();
                        continue;
                    }
                    Next::PassEnd => {
                        // A zbd pass that found nothing to do (no zone
                        // with data to read) would find nothing again.
                        if self.place.zoned() && self.place.zbd_pass_end() {
                            return Step::Done;
                        }
                        if self.issue.last_loop(self.job) {
                            return Step::Done;
                        }
                        // fio verifies what each loop wrote before the
                        // next (backend.c: do_verify inside the loop of
                        // thread_main), so loops=4 reads back 4 times;
                        // the loop's writes in flight complete first,
                        // else a block rewritten by the next loop would
                        // be checked once for two.
                        if !self.job.time_based && self.data.verifies() {
                            self.issue.pattern.new_pass();
                            return Step::Drain;
                        }
                        self.issue.pattern.new_pass();
                        if self.job.invalidate {
                            file.all().iter().for_each(drop_cache);
                        }
                        continue;
                    }
                },
            };
            let w = Pace::flow_wait(self.spec, self.job);
            if !w.is_zero() {
                self.issue.pending = Some((dir, offset, len));
                return Step::Wait(w);
            }
            let dir = self.place.ddir(dir);
            let dir = match self.pace.due(self.job, &mut self.time, dir, len) {
                Ok(dir) => dir,
                Err((dir, wait)) => {
                    self.issue.pending = Some((dir, offset, len));
                    return Step::Wait(wait);
                }
            };
            self.issue.issued += 1;
            Pace::think(self.job, self.issue.issued, &mut self.time);
            let offset = self.place.at(offset, len, &mut self.issue.pattern);
            let dir = self.issue.as_trim(self.job, dir, offset, len);
            if self.place.zoned() {
                let z = self
                    .place
                    .zbd_place(self.job, dir, offset, len, &mut self.issue.pattern);
                match self.zoned(z) {
                    Some(s) => return s,
                    None => continue,
                }
            }
            return self.issue(dir, offset, len);
        }
    }

    /// Issues an I/O: recorded by `write_iolog`, then the step.
    fn issue(&mut self, dir: Dir, offset: u64, len: u64) -> Step {
        if self.issue.iolog.is_some() {
            self.log_issue(dir, offset, len);
        }
        Step::Io(dir, offset, len)
    }

    /// The step zonemode=zbd's answer takes: the I/O issued, a wait, the
    /// next draw (`None`), or the clone failed and done.
    fn zoned(&mut self, z: Zoned) -> Option<Step> {
        match z {
            Zoned::Io(dir, offset, len) => Some(self.issue(dir, offset, len)),
            Zoned::Step(s) => Some(s),
            Zoned::PassEnd => None,
            Zoned::Fail(f) => {
                self.fail(f);
                Some(Step::Done)
            }
        }
    }

    /// An I/O placed by zonemode=zbd completed or failed.
    #[inline]
    pub fn zbd_done(&self, dir: Dir, offset: u64, len: u64) {
        self.place.zbd_done(dir, offset, len);
    }

    /// A trim with zonemode=zbd: its zone's reset (`None`: not zbd, or a
    /// conventional zone, trimmed as any block).
    pub fn zbd_trim(&mut self, offset: u64) -> Option<std::io::Result<()>> {
        self.place.zbd_trim(offset)
    }

    /// After [`Step::Drain`], with nothing in flight: verifies the loop's
    /// writes, then drops the cache for the next loop (`invalidate`).
    pub fn drained(&mut self, files: &Files) {
        if self.failure.is_some() {
            return;
        }
        if self.data.has_pending() {
            self.verify_written(files);
        }
        if self.job.invalidate {
            files.all().iter().for_each(drop_cache);
        }
    }

    /// The next step of a replayed log; `None` after a sync it did itself.
    #[cold]
    fn replay_step(&mut self, files: &Files) -> Option<Step> {
        let since = Instant::now().saturating_duration_since(self.time.go);
        let action = match self.issue.replayed(since) {
            None => return Some(Step::Done),
            Some(Err(wait)) => return Some(Step::Wait(wait)),
            Some(Ok(a)) => a,
        };
        let r = match action {
            Action::Io(dir, k, off, len) => {
                // One file takes every file's I/O (replay_redirect).
                let offset = if self.place.names.single() {
                    off
                } else {
                    virt(k, off)
                };
                self.issue.issued += 1;
                return Some(self.issue(dir, offset, len));
            }
            Action::Sync(k) => files.at(virt(k, 0)).0.sync_all(),
            Action::DataSync(k) => files.at(virt(k, 0)).0.sync_data(),
        };
        self.tally.syncs += 1;
        if let Err(e) = r {
            self.fail(Failure {
                errno: e.raw_os_error().unwrap_or(0),
                message: format!(
                    "job {}: replayed fsync of {} failed: {e}",
                    self.job.name,
                    self.path().display()
                ),
            });
        }
        None
    }

    #[cold]
    fn log_issue(&mut self, dir: Dir, offset: u64, len: u64) {
        let now = Instant::now();
        if let Some(f) = self.issue.record(self.job, now, dir, offset, len) {
            self.fail(f);
        }
    }
}

/// The offset pattern's shape: over the clone's region, or over one zone.
fn shape_of(spec: &CloneSpec, zones: Option<&Zones>) -> Shape {
    let job = &*spec.job;
    let (size, io_size) = match zones {
        Some(z) => (z.range(), z.range()),
        None => (spec.size, spec.io_size),
    };
    Shape {
        rw: job.rw.offsets_as(),
        rwmixread: job.rwmixread,
        sizes: job.sizes.clone(),
        size: size.max(job.sizes.min()),
        // Each file's share of the pass (fio's io_size counts them all).
        io_size: (io_size / spec.targets.len().max(1) as u64).max(job.sizes.min()),
        seq_add: job.x.seq_add,
        rand_every: job.x.rand_every,
        identical: job.x.identical,
        // fio's lfsr covers every block once per pass without a map,
        // so norandommap does not make it draw with replacement (fio
        // covered 256 of 256 blocks where iolab, drawing, hit 153).
        norandommap: job.x.norandommap && !job.x.lfsr,
        distribution: job.x.distribution.clone(),
        round_up: job.x.zbd,
    }
}
