//! What a clone issues next: its offset pattern (or a replayed iolog),
//! loops and passes, zones, trims, flow, rate limits and think time, and
//! `write_iolog`'s record of what it issued.

use std::time::{Duration, Instant};

use crate::job::kinds::Dir;
use crate::run::clone::result::Failure;
use crate::run::clone::state::{Run, Step};
use crate::run::clone::verifier::Verifier;
use crate::run::files::file_set::{drop_cache, Files};
use crate::run::files::pattern::Next;

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
            if self.job.x.number_ios.is_some_and(|n| self.issued >= n) {
                return Step::Done;
            }
            // One branch per I/O for jobs without zones.
            if self.zbd.is_some() {
                match self.zbd_pending() {
                    Some(Ok(s)) => return s,
                    Some(Err(())) => continue,
                    None => {}
                }
            }
            if self.replay.is_some() {
                match self.replay_step(file) {
                    Some(s) => return s,
                    None => continue,
                }
            }
            if let Some((offset, len)) = self.then_write.take() {
                if self.iolog.is_some() {
                    self.log_issue(Dir::Write, offset, len);
                }
                return Step::Io(Dir::Write, offset, len);
            }
            if self.zones.is_some()
                && self.pending.is_none()
                && self.zone_bytes >= self.spec.io_size
            {
                self.zone_bytes = 0;
                if !self.job.time_based {
                    self.loops_left -= 1;
                    if self.loops_left == 0 {
                        return Step::Done;
                    }
                }
            }
            let (dir, offset, len) = match self.pending.take() {
                Some(io) => io,
                None => match self.pattern.next() {
                    Next::Io(dir, offset, len) => (dir, offset, len),
                    // A zone's pass: a fresh map over the same zone.
                    Next::PassEnd if self.zones.is_some() => {
                        self.pattern.new_pass();
                        continue;
                    }
                    Next::PassEnd => {
                        if self.zbd.is_some() {
                            // A pass that found nothing to do (no zone
                            // with data to read) would find nothing again.
                            if self.pass_issued == 0 {
                                return Step::Done;
                            }
                            self.pass_issued = 0;
                            // Its zones are reset when the next loop
                            // starts: after this one's verify.
                            self.zbd_new_loop = true;
                        }
                        if !self.job.time_based {
                            self.loops_left -= 1;
                            if self.loops_left == 0 {
                                return Step::Done;
                            }
                            // fio verifies what each loop wrote before the
                            // next (backend.c: do_verify inside the loop of
                            // thread_main), so loops=4 reads back 4 times;
                            // the loop's writes in flight complete first,
                            // else a block rewritten by the next loop
                            // would be checked once for two.
                            if self.verify.as_ref().is_some_and(|v| v.opts.do_verify) {
                                self.pattern.new_pass();
                                return Step::Drain;
                            }
                        }
                        self.pattern.new_pass();
                        if self.job.invalidate {
                            file.all().iter().for_each(drop_cache);
                        }
                        continue;
                    }
                },
            };
            if self.job.x.flow != 0 {
                let w = self
                    .spec
                    .shared
                    .flow_wait(self.spec.job_idx, self.job.x.flow_sleep);
                if !w.is_zero() {
                    self.pending = Some((dir, offset, len));
                    return Step::Wait(w);
                }
            }
            let mut dir = match &self.zbd {
                Some(z) => z.ddir(dir),
                None => dir,
            };
            if self.pacer.is_some() {
                self.time.tick(Instant::now());
                let elapsed = self.time.now.saturating_duration_since(self.time.go);
                let mixed =
                    self.job.reads() && self.job.writes() && (1..100).contains(&self.job.rwmixread);
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
                        self.pending = Some((dir, offset, len));
                        return Step::Wait(wait);
                    }
                    p.issued(dir, len);
                }
            }
            self.issued += 1;
            if !self.job.x.thinktime.is_zero()
                && self.issued % u64::from(self.job.x.thinktime_blocks.max(1)) == 0
            {
                self.think();
            }
            let (dir, offset) = self.place(dir, offset, len);
            if self.zbd.is_some() {
                match self.zbd_place(dir, offset, len) {
                    Ok((offset, len)) => return self.issue(dir, offset, len),
                    Err(Some(s)) => return s,
                    Err(None) => continue,
                }
            }
            if self.iolog.is_some() {
                self.log_issue(dir, offset, len);
            }
            return Step::Io(dir, offset, len);
        }
    }

    fn issue(&mut self, dir: Dir, offset: u64, len: u64) -> Step {
        if self.iolog.is_some() {
            self.log_issue(dir, offset, len);
        }
        Step::Io(dir, offset, len)
    }

    /// zonemode=zbd's placement of the I/O drawn at `offset`: where it
    /// goes, or the step to take instead (`None`: the pass ended).
    #[cold]
    fn zbd_place(&mut self, dir: Dir, offset: u64, len: u64) -> Result<(u64, u64), Option<Step>> {
        use crate::run::files::zbd::Placed;
        let Some(z) = self.zbd.as_mut() else {
            return Ok((offset, len));
        };
        match z.place(dir, offset, len) {
            Placed::Io(o, l) => {
                // fio's next sequential offset follows where the I/O went.
                let next = z.next_seq(dir, o, l);
                self.pattern.moved(dir, next, len, l);
                self.pass_issued += 1;
                Ok((o, l))
            }
            Placed::Wait => {
                self.zbd_hold = Some((dir, offset, len));
                Err(Some(Step::Wait(Duration::from_micros(50))))
            }
            Placed::Eof => {
                self.pattern.end_pass();
                Err(None)
            }
            Placed::Fail(errno, what) => {
                let f = Failure {
                    errno,
                    message: format!("job {}: {}: {what}", self.job.name, self.path().display()),
                };
                self.fail(f);
                Err(Some(Step::Done))
            }
        }
    }

    /// A zbd clone's work before it draws an I/O: a new loop's zone
    /// resets, then the I/O that waited for a zone. `Some(Ok)`: the step
    /// to take; `Some(Err)`: the pass ended; `None`: draw the next I/O.
    #[cold]
    fn zbd_pending(&mut self) -> Option<Result<Step, ()>> {
        if self.zbd_new_loop {
            self.zbd_new_loop = false;
            if let Some(f) = self.zbd_loop_start() {
                self.fail(f);
                return Some(Ok(Step::Done));
            }
        }
        let (dir, offset, len) = self.zbd_hold.take()?;
        Some(match self.zbd_place(dir, offset, len) {
            Ok((offset, len)) => Ok(self.issue(dir, offset, len)),
            Err(Some(s)) => Ok(s),
            Err(None) => Err(()),
        })
    }

    /// A new loop of a zbd clone (fio's zbd_file_reset).
    fn zbd_loop_start(&mut self) -> Option<Failure> {
        let z = self.zbd.as_mut()?;
        let e = z.loop_start().err()?;
        Some(Failure {
            errno: e.raw_os_error().unwrap_or(libc::EIO),
            message: format!(
                "job {}: {}: resetting zones failed: {e}",
                self.job.name,
                self.path().display()
            ),
        })
    }

    /// An I/O placed by zonemode=zbd completed or failed.
    #[inline]
    pub fn zbd_done(&self, dir: Dir, offset: u64, len: u64) {
        if let Some(z) = &self.zbd {
            z.done(dir, offset, len);
        }
    }

    /// A trim with zonemode=zbd: its zone's reset (`None`: not zbd, or a
    /// conventional zone, trimmed as any block).
    pub fn zbd_trim(&mut self, offset: u64) -> Option<std::io::Result<()>> {
        self.zbd.as_mut()?.trim(offset)
    }

    /// Where a drawn I/O goes: its offset in the file (in the current zone
    /// with zonemode=strided, past `offset` otherwise), and a trim
    /// pattern's direction (trimwrite: the trim now, its write next).
    fn place(&mut self, dir: Dir, offset: u64, len: u64) -> (Dir, u64) {
        let offset = match &mut self.zones {
            Some(z) => {
                let at = z.place(offset);
                self.zone_bytes += len;
                if z.done(len) {
                    self.pattern.new_pass();
                }
                at
            }
            None => self.base + offset,
        };
        // Trim patterns walk their blocks as reads (trim) or writes
        // (trimwrite: each block trimmed, then written) would.
        let dir = match (self.job.rw.trims(), dir) {
            (false, d) => d,
            (true, Dir::Read) => Dir::Trim,
            (true, d) => {
                self.then_write = Some((offset, len));
                let _ = d;
                Dir::Trim
            }
        };
        (dir, offset)
    }

    /// After [`Step::Drain`], with nothing in flight: verifies the loop's
    /// writes, then drops the cache for the next loop (`invalidate`).
    pub fn drained(&mut self, files: &Files) {
        if self.failure.is_some() {
            return;
        }
        if self.verify.as_ref().is_some_and(Verifier::has_pending) {
            self.verify_written(files);
        }
        if self.job.invalidate {
            files.all().iter().for_each(drop_cache);
        }
    }

    /// The next step of a replayed log; `None` after a sync it did itself.
    #[cold]
    fn replay_step(&mut self, files: &Files) -> Option<Step> {
        use crate::job::replay::Action;
        let (log, cursor) = self.replay.as_mut()?;
        let since = Instant::now().saturating_duration_since(self.time.go);
        let action = match cursor.next(log, since) {
            None => return Some(Step::Done),
            Some(Err(wait)) => return Some(Step::Wait(wait)),
            Some(Ok(a)) => a,
        };
        let r = match action {
            Action::Io(dir, k, off, len) => {
                // One file takes every file's I/O (replay_redirect).
                let offset = if self.names.single() {
                    off
                } else {
                    crate::run::files::file_set::virt(k, off)
                };
                self.issued += 1;
                if self.iolog.is_some() {
                    self.log_issue(dir, offset, len);
                }
                return Some(Step::Io(dir, offset, len));
            }
            Action::Sync(k) => files
                .at(crate::run::files::file_set::virt(k, 0))
                .0
                .sync_all(),
            Action::DataSync(k) => files
                .at(crate::run::files::file_set::virt(k, 0))
                .0
                .sync_data(),
        };
        self.syncs += 1;
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
        if let Some(w) = &mut self.iolog {
            if let Err(e) = w.io(now, dir, offset, len) {
                let f = Failure {
                    errno: e.raw_os_error().unwrap_or(0),
                    message: format!("job {}: write_iolog: {e}", self.job.name),
                };
                self.iolog = None;
                self.fail(f);
            }
        }
    }

    /// `thinktime`: spin for `thinktime_spin`, sleep the rest.
    fn think(&mut self) {
        let x = &self.job.x;
        let spin = x.thinktime_spin.min(x.thinktime);
        let t0 = Instant::now();
        while t0.elapsed() < spin {
            std::hint::spin_loop();
        }
        let rest = x.thinktime - spin;
        if !rest.is_zero() {
            std::thread::sleep(rest);
        }
        self.time.tick(Instant::now());
    }
}
