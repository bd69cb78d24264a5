//! The state an engine's loop drives (`Run`): one clone's job, clock,
//! files and the owned parts that do the work: what to issue next
//! ([`super::issue`]), where completions are counted
//! ([`super::complete`]), and what is written and verified
//! ([`super::data`], with its [`Verifier`]).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use iolab_sys::ioprio::IoPrio;
use rand::SeedableRng;

use crate::job::extra::BufferFill;
use crate::job::kinds::{Dir, IoEngine};
use crate::job::model::Job;
use crate::run::clone::result::{CloneResult, Failure};
use crate::run::clone::spec::{seed_for, CloneSpec};
use crate::run::clone::verifier::Verifier;
use crate::run::files::file_set::{FilePatterns, Names};
use crate::run::files::pattern::Shape;
use crate::run::files::zones::Zones;
use crate::run::rate::Pacer;
use crate::run::shared::JobShared;
use crate::run::sinks::cpu::CpuUse;
use crate::run::sinks::logs::CloneLogs;
use crate::run::sinks::stats::DirAcc;
use crate::run::sinks::steady::Steady;
use crate::run::sinks::timeline::Timeline;

/// The state an engine's loop drives.
pub struct Run<'a> {
    pub(super) spec: &'a CloneSpec,
    /// This job's shared state (stop flag, flow and steadystate totals).
    pub(super) me: &'a JobShared,
    /// The job.
    pub job: &'a Job,
    pub(super) pattern: FilePatterns,
    /// The files' names and the offset codec.
    pub(super) names: Names,
    pub(super) pacer: Option<Pacer>,
    /// The clock.
    pub time: Timeline,
    pub(super) dirs: [DirAcc; 3],
    /// `read_iolog`: the log replayed instead of the pattern, and where
    /// this clone is in it.
    pub(super) replay: Option<(
        std::sync::Arc<crate::job::replay::Replay>,
        crate::run::files::iolog::Cursor,
    )>,
    /// `write_iolog`: the record of what this clone issues.
    pub(super) iolog: Option<crate::run::files::iolog::Writer>,
    /// trimwrite: the write that follows the trim just issued.
    pub(super) then_write: Option<(u64, u64)>,
    /// zonemode=strided: the zone the pattern runs in, and the bytes
    /// issued this pass (a pass ends at io_size).
    pub(super) zones: Option<Zones>,
    pub(super) zone_bytes: u64,
    /// Samples, queue depths and sync latencies (fio's other per-job
    /// statistics).
    pub fx: crate::run::sinks::fio_stats::FioExtras,
    pub(super) sampler: crate::run::sinks::fio_stats::Sampler,
    /// A per-I/O bandwidth or IOPS log: samples per I/O (fio's
    /// `add_bw_sample`).
    pub(super) per_io_samples: bool,
    pub(super) live_totals: [(u64, u64); 3],
    pub(super) loops_left: u32,
    pub(super) writes: u64,
    pub(crate) syncs: u64,
    /// Set when the clone failed.
    pub failure: Option<Failure>,
    /// Errors continued past (`continue_on_error`).
    pub(crate) continued: crate::run::clone::result::Continued,
    /// An I/O drawn from the pattern but not yet due (rate limit).
    pub(super) pending: Option<(Dir, u64, u64)>,
    /// Where the region starts in the file.
    pub(super) base: u64,
    pub(super) issued: u64,
    pub(super) verify: Option<Verifier>,
    /// Write buffers need preparing before each write.
    pub(super) prepare: bool,
    /// `dedupe_percentage`: which seed each write buffer comes from.
    pub(super) dedupe: Option<crate::run::buffer::Dedupe>,
    /// `latency_target`: the depth search, and a step a completion asked.
    pub(super) lat: Option<crate::run::lat_target::LatTarget>,
    pub(super) lat_pending: Option<crate::run::lat_target::Step>,
    /// zonemode=zbd: this clone's zones, and an I/O waiting for one.
    pub(super) zbd: Option<crate::run::files::zbd::ZbdClone>,
    pub(super) zbd_hold: Option<(Dir, u64, u64)>,
    /// A new loop begins at the next step (fio's zbd_file_reset).
    pub(super) zbd_new_loop: bool,
    /// I/Os issued this pass (a zbd pass that issues none ends the clone).
    pub(super) pass_issued: u64,
    pub(super) rng: rand::rngs::SmallRng,
    pub(super) logs: Option<CloneLogs>,
    pub(super) steady: Option<Steady>,
    /// `ratemin`/`rate_iops_min` window: start, bytes and I/Os at start.
    pub(super) min_window: Option<(Instant, [u64; 2], [u64; 2])>,
    /// Extra per-I/O work (flow, steadystate sharing, logs).
    pub(super) slow_path: bool,
    pub(super) timed: bool,
    /// cmdprio: the rules per direction, the ioprio of the job's other
    /// I/Os, and whether the per-priority latency is lat (else clat).
    pub(super) cmdprio: Option<([Vec<crate::job::cmdprio::Rule>; 2], u16, bool)>,
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
        let io = job.ioengine != IoEngine::CpuIo;
        let zones = zones_of(spec);
        let shape = shape_of(spec, zones.as_ref());
        let seed = seed_for(spec);
        let verify = Verifier::for_clone(job, spec.clone)?;
        let dedupe = job
            .x
            .dedupe
            .filter(|d| d.percent > 0 && job.writes())
            .map(|d| {
                let dd = crate::run::buffer::Dedupe::new(d, seed, spec.size, job.sizes.min());
                if d.global {
                    dd.global(spec.shared.seeds.clone(), spec.number - 1)
                } else {
                    dd
                }
            });
        let prepare = job.writes()
            && (verify.is_some()
                || dedupe.is_some()
                || job.x.refill_buffers
                || job.x.buffer != BufferFill::Random);
        // fio's priority column: with log_prio the ioprio value in hex
        // (class << 13 | level), else 1 for the real-time class, 0 otherwise.
        let prio = job.x.prio.or(spec.ioprio);
        let prio_col = if job.x.logs.prio {
            format!("0x{:04x}", prio.map_or(0, IoPrio::raw))
        } else {
            u32::from(matches!(prio, Some(IoPrio::RealTime(_)))).to_string()
        };
        let logs = CloneLogs::open(&job.x.logs.for_job(&job.name), spec.number, go, prio_col)?;
        let steady = job.x.steadystate.clone().map(|s| Steady::new(s, go));
        let min_window = (job.x.ratemin.read.is_some()
            || job.x.ratemin.write.is_some()
            || job.x.rate_iops_min.read.is_some()
            || job.x.rate_iops_min.write.is_some())
        .then_some((go, [0; 2], [0; 2]));
        let every = job.x.logs.sample_every();
        let lat = job.x.latency_target.map(|target| {
            let o = crate::run::lat_target::LatTargetOpts {
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
            crate::run::lat_target::LatTarget::new(o, depth, go, 0)
        });
        let zbd = match (&spec.zbd, replay_free(job)) {
            (Some(f), true) => {
                let mut z = crate::run::files::zbd::ZbdClone::new(
                    f.clone(),
                    u32::try_from(spec.number).map_err(|_| {
                        format!(
                            "clone {}: zonemode=zbd numbers the clones in 32 bits",
                            spec.number
                        )
                    })?,
                    job,
                    spec.base,
                    spec.size,
                );
                z.loop_start()
                    .map_err(|e| format!("{}: resetting zones failed: {e}", f.path.display()))?;
                Some(z)
            }
            _ => None,
        };
        let slow_path = logs.is_some()
            || steady.is_some()
            || job.x.flow != 0
            || min_window.is_some()
            || lat.is_some();
        Ok(Run {
            spec,
            me: &spec.shared.jobs[spec.job_idx],
            job,
            pattern: FilePatterns::new(&shape, spec.targets.len(), seed, job.x.file_service),
            names: Names::new(spec.targets.clone()),
            pacer: Pacer::for_job(job, seed),
            time: Timeline::new(job, go),
            dirs: [
                DirAcc::new(io && job.reads()),
                DirAcc::new(io && job.rw.offsets_as().writes()),
                DirAcc::new(io && job.rw.trims()),
            ],
            fx: Default::default(),
            sampler: crate::run::sinks::fio_stats::Sampler::new(every),
            per_io_samples: every.contains(&None),
            live_totals: [(0, 0); 3],
            then_write: None,
            zones,
            zone_bytes: 0,
            loops_left: job.loops.max(1),
            writes: 0,
            syncs: 0,
            failure: None,
            continued: Default::default(),
            pending: None,
            base: spec.base,
            issued: 0,
            verify,
            prepare,
            dedupe,
            lat,
            lat_pending: None,
            zbd,
            zbd_hold: None,
            zbd_new_loop: false,
            pass_issued: 0,
            rng: rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5eed),
            logs,
            steady,
            min_window,
            slow_path,
            timed: !job.x.no_latency,
            cmdprio: job.x.cmdprio.active().then(|| {
                #[allow(
                    clippy::cast_possible_truncation,
                    reason = "IoPrio::raw is class (0..=3) << 13 | level (a u8): below 0x6100, the kernel's 16-bit ioprio"
                )]
                let default = job.x.prio.or(spec.ioprio).map_or(0, |p| p.raw() as u16);
                (
                    [job.x.cmdprio.rules(0), job.x.cmdprio.rules(1)],
                    default,
                    job.x.percentiles_in.1,
                )
            }),
            replay: job.x.read_iolog.clone().map(|r| {
                (
                    r,
                    crate::run::files::iolog::Cursor::new(
                        job.x.replay_no_stall,
                        job.x.replay_scale,
                    ),
                )
            }),
            iolog: match &job.x.write_iolog {
                Some(p) => Some(crate::run::files::iolog::Writer::create(
                    p,
                    &spec.targets,
                    go,
                )?),
                None => None,
            },
        })
    }

    /// The (first) target path, for messages.
    pub fn path(&self) -> &Path {
        self.names.first()
    }

    /// A failed I/O at offset `v`, naming its file and offset.
    pub fn io_failure(&self, err: &std::io::Error, dir: Dir, v: u64) -> Failure {
        let (path, off) = self.names.locate(v);
        Failure::io(self.job, err, dir, path, off)
    }

    /// True when I/O latencies are measured (not `gtod_reduce`).
    #[inline]
    pub fn timed(&self) -> bool {
        self.timed
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
        self.pacer.is_some()
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
        self.lat
            .as_ref()
            .map_or(slots, |l| (l.depth() as usize).min(slots).max(1))
    }

    /// Between turns: what `latency_target` asks (a step a completion
    /// raised, else the window's verdict). Over the target at depth 1
    /// fails the clone with ETIMEDOUT, as fio's lat_fatal does.
    #[inline]
    pub fn lat_turn(&mut self) -> crate::run::lat_target::Step {
        if self.lat.is_none() {
            return crate::run::lat_target::Step::Go;
        }
        self.lat_step()
    }

    #[cold]
    fn lat_step(&mut self) -> crate::run::lat_target::Step {
        use crate::run::lat_target::Step;
        let Some(l) = &mut self.lat else {
            return Step::Go;
        };
        if !self.time.measuring() {
            return Step::Go;
        }
        let ios = self.dirs[0].ios + self.dirs[1].ios;
        let step = self
            .lat_pending
            .take()
            .unwrap_or_else(|| l.check(self.time.now, ios));
        if step == Step::Fatal {
            let target = l.target();
            self.fail(Failure {
                errno: libc::ETIMEDOUT,
                message: format!(
                    "job {}: latency over latency_target={target:?} at queue depth 1: no depth meets it",
                    self.job.name
                ),
            });
        }
        step
    }

    /// Restarts the statistics (fio's reset_all_stats/reset_io_stats
    /// before latency_target's final window): what was measured while the
    /// depth was searched is not the result.
    pub fn restart_measurement(&mut self) {
        let now = std::time::Instant::now();
        for d in &mut self.dirs {
            *d = DirAcc::new(d.plat.is_some());
        }
        self.fx = Default::default();
        self.sampler = crate::run::sinks::fio_stats::Sampler::new(self.job.x.logs.sample_every());
        self.time.restart(now);
        if let Some(l) = &mut self.lat {
            l.restart(now);
        }
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
        if let Some(v) = self.verify.as_ref().filter(|v| v.opts.state_save) {
            if let Err(e) = v.save_state(self.job, self.spec.clone) {
                self.failure.get_or_insert(Failure {
                    errno: 0,
                    message: format!("job {}: {e}", self.job.name),
                });
            }
        }
        if let Some(w) = self.iolog.take() {
            if let Err(e) = w.finish(end) {
                self.failure.get_or_insert(Failure {
                    errno: e.raw_os_error().unwrap_or(0),
                    message: format!("job {}: write_iolog: {e}", self.job.name),
                });
            }
        }
        if let Some(l) = self.logs.take() {
            if let Err(e) = l.finish(end) {
                self.failure.get_or_insert(Failure {
                    errno: 0,
                    message: format!("job {}: {e}", self.job.name),
                });
            }
        }
        out.dirs = self.dirs;
        out.fx = self.fx;
        out.syncs = self.syncs;
        out.failure = self.failure;
        out.lat_depth = self
            .lat
            .as_ref()
            .map(crate::run::lat_target::LatTarget::depth);
        out.continued = self.continued;
        out.zone_resets = self.zbd.as_ref().map(|z| z.resets);
    }
}

/// fio applies zonemode=zbd to the I/O it draws, not to a replayed log's.
fn replay_free(job: &Job) -> bool {
    job.x.read_iolog.is_none()
}

/// zonemode=strided: the pattern runs over one zone, a pass per zonerange
/// bytes; [`Zones`] places it in the file.
fn zones_of(spec: &CloneSpec) -> Option<Zones> {
    let job = &*spec.job;
    job.x.strided().map(|(range, size, skip)| {
        let (range, size) = match (range, size) {
            (0, 0) => (spec.size, spec.size),
            (0, s) => (s, s),
            (r, 0) => (r, r),
            (r, s) => (r, s),
        };
        let first = job.x.offset;
        Zones::new(range, size, skip, first, spec.size.max(first + range))
    })
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
