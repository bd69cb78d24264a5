//! One clone of a job, on its own thread: setup (priority, file, engine,
//! buffers), then the I/O loop of its engine, then the result.
//!
//! [`Run`] is the state every engine's loop shares: the pass and offset
//! sequence, rate limiting, the ramp/runtime timeline, stop checks,
//! accumulators and fsync counting. Engines only move bytes.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use iolab_sys::ioprio::IoPrio;

use crate::cpu::CpuUse;
use crate::engine::{self, Engine};
use crate::job::{Dir, IoEngine, Job};
use crate::live::{Control, Gate, LiveCounters};
use crate::pattern::{Next, Pattern};
use crate::rate::Pacer;
use crate::stats::DirAcc;
use crate::timeline::Timeline;

/// Everything a clone thread needs.
pub struct CloneSpec {
    /// Index of the job in the load.
    pub job_idx: usize,
    /// Clone number within the job.
    pub clone: u32,
    /// The job.
    pub job: Arc<Job>,
    /// Bytes per pass.
    pub size: u64,
    /// The file or device (None for cpuio).
    pub target: Option<PathBuf>,
    /// I/O priority for this thread.
    pub ioprio: Option<IoPrio>,
    /// Load-wide stop.
    pub ctl: Arc<Control>,
    /// Set when any clone of the job fails, to stop its siblings.
    pub job_stop: Arc<AtomicBool>,
    /// Live counters of this clone.
    pub live: Arc<LiveCounters>,
    /// Start gate of the clone's group.
    pub gate: Arc<Gate>,
    /// Setup outcome, with the job index: the thread id, or why setup
    /// failed.
    pub ready: mpsc::Sender<(usize, Result<i32, String>)>,
}

/// Why a clone stopped early.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Failure {
    /// The errno (fio's `error` field), 0 if none applies.
    pub errno: i32,
    /// What happened and what was kept.
    pub message: String,
}

impl Failure {
    /// A failed read or write.
    pub fn io(job: &Job, err: &std::io::Error, dir: Dir, path: &Path, offset: u64) -> Failure {
        let errno = err.raw_os_error().unwrap_or(0);
        let op = match dir {
            Dir::Read => "reading",
            Dir::Write => "writing",
        };
        let message = if errno == libc::ENOSPC {
            format!(
                "job {}: disk full (ENOSPC) {op} {} at offset {offset}: the job stopped; results measured so far are kept",
                job.name,
                path.display()
            )
        } else {
            format!(
                "job {}: {op} {} at offset {offset} failed: {err}; the job stopped",
                job.name,
                path.display()
            )
        };
        Failure { errno, message }
    }
}

/// What a clone measured.
#[derive(Debug)]
pub struct CloneResult {
    /// Index of the job.
    pub job_idx: usize,
    /// Kernel thread id (0 if setup never ran).
    pub tid: i32,
    /// Reads and writes.
    pub dirs: [DirAcc; 2],
    /// CPU used while measuring.
    pub cpu: CpuUse,
    /// fsync/fdatasync calls made.
    pub syncs: u64,
    /// First and last instant of measurement.
    pub measured: Option<(Instant, Instant)>,
    /// Why it stopped early.
    pub failure: Option<Failure>,
}

/// Runs one clone to its end; never panics on I/O errors.
pub fn run_clone(spec: CloneSpec) -> CloneResult {
    let result = run_clone_inner(&spec);
    // Published for health checks of a load running in the background
    // (`iolab startup` checks it before and after every start).
    spec.live
        .end(result.failure.as_ref().map(|f| f.message.clone()));
    result
}

fn run_clone_inner(spec: &CloneSpec) -> CloneResult {
    let tid = iolab_sys::ioprio::current_tid();
    let mut result = CloneResult {
        job_idx: spec.job_idx,
        tid,
        dirs: [DirAcc::new(false), DirAcc::new(false)],
        cpu: CpuUse::default(),
        syncs: 0,
        measured: None,
        failure: None,
    };
    let setup = setup(spec);
    let outcome = setup.as_ref().map(|_| tid).map_err(Clone::clone);
    let _ = spec.ready.send((spec.job_idx, outcome));
    let (file, mut eng) = match setup {
        Ok(s) => s,
        Err(why) => {
            result.failure = Some(Failure {
                errno: 0,
                message: format!("job {}: {why}", spec.job.name),
            });
            return result;
        }
    };
    if !spec.gate.wait() {
        return result;
    }
    let mut run = Run::new(spec, Instant::now());
    match (&mut eng, &file) {
        (Engine::Cpu, _) => engine::cpuio::run(&mut run),
        (Engine::Sync(e), Some(f)) => engine::run_blocking(e, &mut run, f),
        (Engine::Psync(e), Some(f)) => engine::run_blocking(e, &mut run, f),
        (Engine::Uring(u), Some(f)) => u.run(&mut run, f),
        _ => {}
    }
    if let Some(f) = &file {
        if spec.job.end_fsync && run.failure.is_none() && !spec.ctl.stopping() {
            if let Err(e) = f.sync_all() {
                run.failure = Some(Failure {
                    errno: e.raw_os_error().unwrap_or(0),
                    message: format!("job {}: end_fsync failed: {e}", spec.job.name),
                });
            }
            run.syncs += 1;
        }
    }
    run.finish(&mut result);
    result
}

fn setup(spec: &CloneSpec) -> Result<(Option<File>, Engine), String> {
    let job = &spec.job;
    if let Some(p) = spec.ioprio {
        p.set_for(0).map_err(|e| {
            let hint = if matches!(p, IoPrio::RealTime(_)) {
                " (the real-time class needs root)"
            } else {
                ""
            };
            format!("cannot set I/O priority {p}: {e}{hint}")
        })?;
    }
    let Some(path) = &spec.target else {
        return Ok((None, Engine::Cpu));
    };
    let file = open(job, path)?;
    if job.invalidate {
        drop_cache(&file);
    }
    let seed = seed_for(spec);
    let eng = engine::setup(job, &file, seed).map_err(|e| {
        format!(
            "{} engine on {}: {e}",
            job.ioengine.as_str(),
            path.display()
        )
    })?;
    Ok((Some(file), eng))
}

fn open(job: &Job, path: &Path) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if job.writes() {
        o.write(true).create(!path.starts_with("/dev"));
    }
    if job.direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path).map_err(|e| {
        let hint = if job.direct && e.raw_os_error() == Some(libc::EINVAL) {
            " (this filesystem does not support O_DIRECT: use direct=0)"
        } else {
            ""
        };
        format!("cannot open {}: {e}{hint}", path.display())
    })
}

/// Drops the file's cached pages (fio's `invalidate`), so reads reach the
/// device and dirty pages start their writeback.
pub fn drop_cache(file: &File) {
    // Advisory: a failure leaves the cache as it was, nothing worse.
    let _ = rustix::fs::fadvise(file.as_fd(), 0, None, rustix::fs::Advice::DontNeed);
}

/// The clone's random seed: fixed per job name and clone with
/// `randrepeat` (runs repeat their offsets), else from the clock.
fn seed_for(spec: &CloneSpec) -> u64 {
    let base = if spec.job.randrepeat {
        // FNV-1a of the name: stable across runs and builds.
        spec.job
            .name
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            })
    } else {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    };
    base ^ (u64::from(spec.clone) << 32)
}

/// The state an engine's loop drives.
pub struct Run<'a> {
    spec: &'a CloneSpec,
    /// The job.
    pub job: &'a Job,
    pattern: Pattern,
    pacer: Option<Pacer>,
    /// The clock.
    pub time: Timeline,
    dirs: [DirAcc; 2],
    live_totals: [(u64, u64); 2],
    loops_left: u32,
    writes: u64,
    syncs: u64,
    /// Set when the clone failed.
    pub failure: Option<Failure>,
    /// An I/O drawn from the pattern but not yet due (rate limit).
    pending: Option<(Dir, u64)>,
}

/// What an engine should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Issue this I/O.
    Io(Dir, u64),
    /// The rate limit wants this long before the next I/O.
    Wait(Duration),
    /// The clone is done.
    Done,
}

impl<'a> Run<'a> {
    fn new(spec: &'a CloneSpec, go: Instant) -> Run<'a> {
        let job = &*spec.job;
        let io = job.ioengine != IoEngine::CpuIo;
        Run {
            spec,
            job,
            pattern: Pattern::new(
                job.rw,
                job.rwmixread,
                job.bs,
                spec.size.max(job.bs),
                seed_for(spec),
            ),
            pacer: Pacer::for_job(job),
            time: Timeline::new(job, go),
            dirs: [
                DirAcc::new(io && job.reads()),
                DirAcc::new(io && job.writes()),
            ],
            live_totals: [(0, 0); 2],
            loops_left: job.loops.max(1),
            writes: 0,
            syncs: 0,
            failure: None,
            pending: None,
        }
    }

    /// The target path, for messages.
    pub fn path(&self) -> &Path {
        self.spec.target.as_deref().unwrap_or(Path::new("-"))
    }

    /// True when the clone must stop issuing I/O.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.failure.is_some()
            || self.time.past_deadline()
            || self.spec.ctl.stopping()
            || self.spec.job_stop.load(Ordering::Relaxed)
    }

    /// The next I/O to issue, or `None` when the clone is done. Sleeps for
    /// rate limits; starts new passes (dropping the cache if asked).
    pub fn next(&mut self, file: &File) -> Option<(Dir, u64)> {
        loop {
            match self.step(file) {
                Step::Io(dir, offset) => return Some((dir, offset)),
                Step::Done => return None,
                Step::Wait(w) => {
                    // Short naps keep stop() responsive.
                    std::thread::sleep(w.min(Duration::from_millis(50)));
                    self.time.tick(Instant::now());
                }
            }
        }
    }

    /// Like [`Run::next`] but returns [`Step::Wait`] instead of sleeping
    /// when the rate limit says the next I/O is not due yet, so a queueing
    /// engine can reap completions meanwhile; the I/O is kept for the next
    /// call.
    pub fn step(&mut self, file: &File) -> Step {
        loop {
            if self.stopped() {
                return Step::Done;
            }
            let (dir, offset) = match self.pending.take() {
                Some(io) => io,
                None => match self.pattern.next() {
                    Next::Io(dir, offset) => (dir, offset),
                    Next::PassEnd => {
                        if !self.job.time_based {
                            self.loops_left -= 1;
                            if self.loops_left == 0 {
                                return Step::Done;
                            }
                        }
                        self.pattern.new_pass();
                        if self.job.invalidate {
                            drop_cache(file);
                        }
                        continue;
                    }
                },
            };
            if self.pacer.is_some() {
                self.time.tick(Instant::now());
                let elapsed = self.time.now.saturating_duration_since(self.time.go);
                if let Some(p) = self.pacer.as_mut() {
                    let wait = p.delay(dir, elapsed);
                    if !wait.is_zero() {
                        self.pending = Some((dir, offset));
                        return Step::Wait(wait);
                    }
                    p.issued(dir, self.job.bs);
                }
            }
            return Step::Io(dir, offset);
        }
    }

    /// True when a rate limit applies.
    pub fn paced(&self) -> bool {
        self.pacer.is_some()
    }

    /// Records a completed I/O.
    #[inline]
    pub fn complete(&mut self, dir: Dir, bytes: u64, lat: Duration, now: Instant) {
        self.time.tick(now);
        let d = dir as usize;
        let t = &mut self.live_totals[d];
        t.0 += bytes;
        t.1 += 1;
        self.spec.live.publish(dir, t.0, t.1);
        if self.time.measuring() {
            self.dirs[d].record(bytes, self.job.bs, lat.as_nanos() as u64);
        }
    }

    /// Counts a completed write and syncs when `fsync`/`fdatasync` ask.
    pub fn after_write(&mut self, file: &File) {
        self.writes += 1;
        let every = |n: u32| n > 0 && self.writes % u64::from(n) == 0;
        let r = if every(self.job.fsync) {
            self.syncs += 1;
            file.sync_all()
        } else if every(self.job.fdatasync) {
            self.syncs += 1;
            file.sync_data()
        } else {
            return;
        };
        if let Err(e) = r {
            self.fail(Failure {
                errno: e.raw_os_error().unwrap_or(0),
                message: format!(
                    "job {}: fsync of {} failed: {e}",
                    self.job.name,
                    self.path().display()
                ),
            });
        }
    }

    /// Stops the clone (and its siblings) with a failure; the first one
    /// is kept.
    pub fn fail(&mut self, f: Failure) {
        if self.failure.is_none() {
            self.failure = Some(f);
        }
        self.spec.job_stop.store(true, Ordering::Relaxed);
    }

    fn finish(self, out: &mut CloneResult) {
        let end = Instant::now();
        if let Some(start) = self.time.measure_start {
            out.measured = Some((start, end));
            out.cpu = CpuUse::this_thread().since(&self.time.cpu_start);
        }
        out.dirs = self.dirs;
        out.syncs = self.syncs;
        out.failure = self.failure;
    }
}
