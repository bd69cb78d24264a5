//! The loop of the queueing engines (io_uring, libaio, posixaio): keep up
//! to `iodepth` I/Os in flight, submit what is queued (in batches of
//! `iodepth_batch_submit`), wait for at least `iodepth_batch_complete_min`
//! completions (at most `iodepth_batch_complete_max` per reap), handle
//! them, refill. A rate-limited I/O goes out when it is due rather than
//! when the queue is full. As in fio, an I/O's latency (`lat`) runs from
//! its preparation to the reap that saw it complete, its submission
//! latency (`slat`) to the return of the submit that carried it, and its
//! completion latency (`clat`) from there to the reap.

use std::time::{Duration, Instant};

use iolab_sys::cast;

use crate::job::kinds::Dir;
use crate::job::model::Job;
use crate::run::clone::result::Failure;
use crate::run::clone::state::{Run, Step};
use crate::run::files::file_set::{Files, Target};
use crate::run::lat_target::Step as LatStep;

/// What a queueing engine provides.
pub trait Queue {
    /// Slots (the queue depth).
    fn depth(&self) -> usize;
    /// Slot `i`'s buffer (the job's largest block size).
    fn buf(&mut self, slot: usize) -> &mut [u8];
    /// Queues an I/O of `len` bytes (at most the slot's buffer) in `slot`
    /// on file `file`, with an I/O priority of its own unless `prio` is 0
    /// (cmdprio); it goes out with the next submit.
    fn prep(&mut self, slot: usize, file: Target, dir: Dir, offset: u64, len: usize, prio: u16);
    /// Hands what is queued to the kernel. Apart from [`Queue::reap`], as
    /// in fio, so the submission's own time (fio's `slat`) is measured:
    /// the time from an I/O's preparation to this call's return.
    fn submit(&mut self) -> std::io::Result<()>;
    /// Reaps at least `min` completions (waiting at most `timeout`, when
    /// given), at most `max`; appends `(slot, result)` (bytes, or -errno).
    /// With `min` 0 it reaps only what costs no wait.
    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Option<Duration>,
        out: &mut Vec<(usize, i64)>,
    ) -> std::io::Result<()>;
    /// Called when the loop gives up with I/O possibly in flight.
    fn poison(&mut self);
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    dir: Dir,
    offset: u64,
    len: u64,
    /// Prepared (fio's `start_time`).
    start: Instant,
    /// Its submit returned (fio's `issue_time`).
    issued: Instant,
    /// Its own ioprio (cmdprio), 0 for the job's.
    prio: u16,
}

/// A queueing engine and its bookkeeping.
pub struct Queued<Q> {
    q: Q,
    slots: Vec<Slot>,
    free: Vec<usize>,
    fresh: Vec<usize>,
    done: Vec<(usize, i64)>,
    batch_submit: usize,
    complete_min: usize,
    complete_max: usize,
    /// `serialize_overlap`: slots in flight, and an I/O held back because
    /// it overlaps one of them.
    serialize: bool,
    busy: Vec<bool>,
    held: Option<(Dir, u64, u64)>,
}

impl<Q: Queue> Queued<Q> {
    /// Wraps an engine for a job.
    pub fn new(q: Q, job: &Job) -> Queued<Q> {
        let depth = q.depth();
        let now = Instant::now();
        let x = &job.x;
        Queued {
            slots: vec![
                Slot {
                    dir: Dir::Read,
                    offset: 0,
                    len: 0,
                    start: now,
                    issued: now,
                    prio: 0,
                };
                depth
            ],
            free: (0..depth).rev().collect(),
            fresh: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            batch_submit: (x.batch_submit as usize).clamp(1, depth),
            complete_min: (x.batch_complete_min as usize).min(depth),
            // fio's default (fixup_options: max = min when unset) reaps
            // one completion per call and refills it at once, so the
            // queue stays at iodepth. Reaping every ready completion at
            // once let a QD8 job run at 2-7 in flight (fio's
            // iodepth_level: 8=100 %, iolab's then 8=25 %) and read 10 %
            // fewer IOPS than fio from the same disk.
            complete_max: (x.batch_complete_max.max(x.batch_complete_min).max(1) as usize)
                .min(depth),
            serialize: x.serialize_overlap && depth > 1,
            busy: vec![false; depth],
            held: None,
            q,
        }
    }

    /// True when `[offset, offset+len)` overlaps an I/O in flight.
    fn overlaps(&self, offset: u64, len: u64) -> bool {
        self.busy
            .iter()
            .zip(&self.slots)
            .any(|(b, s)| *b && offset < s.offset + s.len && s.offset < offset + len)
    }

    /// Runs the clone's I/O until it is done, then drains the queue: each
    /// turn fills the queue ([`Self::fill`]), submits and reaps
    /// ([`Self::submit_and_reap`]), and retires what completed
    /// ([`Self::retire`]).
    pub fn run(&mut self, run: &mut Run<'_>, file: &Files) {
        let how = How {
            checks: run.checks_reads(),
            timed: run.timed(),
            split: !run.job.x.no_slat,
            log_slat: !run.job.x.no_slat && run.logs_slat(),
            trimmer: super::trim::Trimmer::for_file(file.first(), false),
        };
        let mut at = Turn::default();
        loop {
            if at.quiesce && at.inflight == 0 {
                // latency_target lowered the depth (or converged): the
                // deeper queue's I/Os are done; go on, fresh if asked.
                at.quiesce = false;
                if std::mem::take(&mut at.restart) {
                    run.restart_measurement();
                }
            }
            let due_in = self.fill(run, file, &how, &mut at);
            if at.draining && at.inflight == 0 {
                // A loop ended: what was in flight completed; verify it.
                at.draining = false;
                run.drained(file);
                continue;
            }
            if at.inflight == 0 {
                match due_in {
                    Some(w) if !at.done => {
                        std::thread::sleep(w);
                        run.time.tick(Instant::now());
                        continue;
                    }
                    _ => return,
                }
            }
            match self.submit_and_reap(run, &how, &at, due_in) {
                Reaped::Failed => return,
                Reaped::Nothing => run.time.tick(Instant::now()),
                Reaped::Some => self.retire(run, file, &how, &mut at),
            }
            match run.lat_turn() {
                LatStep::Go => {}
                LatStep::Quiesce => at.quiesce = true,
                LatStep::FinalWindow => (at.quiesce, at.restart) = (true, true),
                LatStep::Done | LatStep::Fatal => at.done = true,
            }
        }
    }

    /// Prepares I/Os until the queue is full, the rate limit or an
    /// overlap holds the next one, or the clone is done or draining;
    /// returns how long until the next is due when the rate limit said.
    #[inline]
    fn fill(
        &mut self,
        run: &mut Run<'_>,
        file: &Files,
        how: &How,
        at: &mut Turn,
    ) -> Option<Duration> {
        let depth = run.queue_depth(self.slots.len());
        while !at.done && !at.draining && !at.quiesce && at.inflight < depth {
            let step = match self.held.take() {
                Some((d, o, l)) if self.overlaps(o, l) => {
                    self.held = Some((d, o, l));
                    break;
                }
                Some((d, o, l)) => Step::Io(d, o, l),
                None => run.step(file),
            };
            match step {
                // Synchronous, as fio's libaio engine does trims.
                Step::Io(Dir::Trim, offset, len) => {
                    super::do_trim(run, file, how.trimmer, offset, len);
                }
                Step::Io(dir, offset, len) if self.serialize && self.overlaps(offset, len) => {
                    // fio's serialize_overlap: wait for the overlapping
                    // I/O to complete before issuing this one.
                    self.held = Some((dir, offset, len));
                    break;
                }
                Step::Io(dir, offset, len) => {
                    let Some(slot) = self.free.pop() else { break };
                    self.busy[slot] = true;
                    if dir == Dir::Write {
                        run.prepare_write(&mut self.q.buf(slot)[..cast::usize_of(len)], offset);
                    }
                    let now = if how.timed {
                        Instant::now()
                    } else {
                        run.time.now
                    };
                    let prio = run.cmdprio(dir, len);
                    let (target, off) = file.target(offset);
                    self.q
                        .prep(slot, target, dir, off, cast::usize_of(len), prio);
                    self.slots[slot] = Slot {
                        dir,
                        offset,
                        len,
                        start: now,
                        issued: now,
                        prio,
                    };
                    self.fresh.push(slot);
                    at.inflight += 1;
                    if run.paced() {
                        break;
                    }
                    // fio's iodepth_batch_submit: submit every
                    // `batch_submit` I/Os (each one as it is ready by
                    // default) instead of all of a refill at once, so
                    // the device starts on the first while the rest
                    // are prepared (4 KiB QD32 on virtio: 0.82× fio's
                    // IOPS when one submit carried the whole refill).
                    if self.fresh.len() >= self.batch_submit && at.inflight < depth {
                        break;
                    }
                }
                Step::Wait(w) => return Some(w.min(Duration::from_millis(50))),
                Step::Done => at.done = true,
                Step::Drain => at.draining = true,
            }
        }
        None
    }

    /// Submits what `fill` prepared and reaps completions: none awaited
    /// when a paced I/O or a batch with room for more goes out, else at
    /// least `iodepth_batch_complete_min`.
    #[inline]
    fn submit_and_reap(
        &mut self,
        run: &mut Run<'_>,
        how: &How,
        at: &Turn,
        due_in: Option<Duration>,
    ) -> Reaped {
        let depth = run.queue_depth(self.slots.len());
        let room = !at.done
            && !at.draining
            && !at.quiesce
            && at.inflight < depth
            && due_in.is_none()
            && self.held.is_none();
        let min = if room {
            0
        } else {
            self.complete_min.clamp(1, at.inflight)
        };
        run.depth().submitted(self.fresh.len());
        let mut r = Ok(());
        if !self.fresh.is_empty() {
            run.depth().queued(at.inflight, self.fresh.len());
            r = self.q.submit();
            let t = if how.timed {
                Instant::now()
            } else {
                run.time.now
            };
            for &s in &self.fresh {
                self.slots[s].issued = t;
            }
            if how.log_slat {
                for &s in &self.fresh {
                    let sl = self.slots[s];
                    run.log_slat(sl.dir, t - sl.start, sl.len, sl.offset, sl.prio, t);
                }
            }
            self.fresh.clear();
        }
        let r = r.and_then(|()| self.q.reap(min, self.complete_max, due_in, &mut self.done));
        if let Err(e) = r {
            self.q.poison();
            run.fail(Failure {
                errno: e.raw_os_error().unwrap_or(0),
                message: format!(
                    "job {}: {} submit failed: {e}",
                    run.job.name,
                    run.job.ioengine.as_str()
                ),
            });
            return Reaped::Failed;
        }
        // fio reaps only when it waits; a look that found nothing
        // while the queue had room is not one of its reaps.
        if min > 0 || !self.done.is_empty() {
            run.depth().completed(self.done.len());
        }
        if self.done.is_empty() {
            Reaped::Nothing
        } else {
            Reaped::Some
        }
    }

    /// Frees the slots of the reaped I/Os and hands each to the run:
    /// checked (verify), counted, and followed by the syncs it asks for.
    #[inline]
    fn retire(&mut self, run: &mut Run<'_>, file: &Files, how: &How, at: &mut Turn) {
        let t_done = Instant::now();
        run.time.tick(t_done);
        let mut reaped = std::mem::take(&mut self.done);
        for &(slot, res) in &reaped {
            let s = self.slots[slot];
            self.free.push(slot);
            self.busy[slot] = false;
            at.inflight -= 1;
            run.zbd_done(s.dir, s.offset, s.len);
            if res < 0 {
                // -errno (Queue::reap); libaio's is the kernel's 64-bit res.
                let err = i32::try_from(-res).map_or_else(
                    |_| std::io::Error::other(format!("I/O failed with result {res}")),
                    std::io::Error::from_raw_os_error,
                );
                if run.fill_done(&err) {
                    at.done = true;
                    continue;
                }
                let f = run.io_failure(&err, s.dir, s.offset);
                if !run.error(f, s.dir, 1) {
                    at.done = true;
                }
            } else if res == 0 {
                let f = super::eof(run, s.dir, s.offset);
                run.fail(f);
                at.done = true;
            } else {
                let n = (res as u64).min(s.len);
                if how.checks && s.dir == Dir::Read {
                    let b = &self.q.buf(slot)[..cast::usize_of(n)];
                    run.check_read(b, s.offset);
                }
                let slat = how.split.then(|| s.issued - s.start);
                run.complete_queued(s.dir, n, t_done - s.start, slat, s.prio, t_done, s.offset);
                if s.dir == Dir::Write {
                    run.after_write_at(file, s.offset, n);
                }
            }
        }
        reaped.clear();
        self.done = reaped;
    }
}

/// What a clone's loop decided once, at its start.
struct How {
    /// Reads are checked (verify of a read-only job).
    checks: bool,
    /// Latencies are measured (not `gtod_reduce`).
    timed: bool,
    /// slat is measured apart from clat (not `disable_slat`).
    split: bool,
    /// A slat log takes each submission's slat.
    log_slat: bool,
    trimmer: super::trim::Trimmer,
}

/// Where the loop stands between turns.
#[derive(Default)]
struct Turn {
    inflight: usize,
    /// The clone issues nothing more.
    done: bool,
    /// A loop ended: complete what is in flight, then `run.drained`.
    draining: bool,
    /// latency_target: no new I/O until those in flight complete.
    quiesce: bool,
    /// ... and then restart the statistics (its final window).
    restart: bool,
}

/// What a submit-and-reap found.
enum Reaped {
    Failed,
    Nothing,
    Some,
}
