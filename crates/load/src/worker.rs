//! One clone of a job, on its own thread: setup (priority, file, engine,
//! buffers), then the I/O loop of its engine, then the result.
//!
//! [`Run`] is the state every engine's loop shares: the pass and offset
//! sequence, rate limiting, the ramp/runtime timeline, stop checks,
//! accumulators and fsync counting. Engines only move bytes.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use iolab_sys::ioprio::IoPrio;
use rand::SeedableRng;

use crate::cpu::CpuUse;
use crate::engine::{self, Engine};
use crate::extra::BufferFill;
use crate::file_set::{FilePatterns, Files};
use crate::fiolog::CloneLogs;
use crate::job::{Dir, IoEngine, Job};
use crate::live::{Control, Gate, LiveCounters};
use crate::pattern::{Next, Shape};
use crate::rate::Pacer;
use crate::shared::{JobShared, Shared};
use crate::stats::DirAcc;
use crate::steady::Steady;
use crate::timeline::Timeline;
use crate::verify::VerifyOpts;

/// Everything a clone thread needs.
pub struct CloneSpec {
    /// Index of the job in the load.
    pub job_idx: usize,
    /// Clone number within the job.
    pub clone: u32,
    /// The job.
    pub job: Arc<Job>,
    /// Bytes of the region the clone works in.
    pub size: u64,
    /// Bytes per pass (`io_size`, default `size`).
    pub io_size: u64,
    /// The clone's number across the load, from 1 (names fio's logs).
    pub number: usize,
    /// The files or devices (`nrfiles` of them; none for cpuio).
    pub targets: Vec<PathBuf>,
    /// I/O priority for this thread.
    pub ioprio: Option<IoPrio>,
    /// Load-wide stop.
    pub ctl: Arc<Control>,
    /// What the load's jobs share (stop flags, flow, steadystate).
    pub shared: Arc<Shared>,
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
            Dir::Trim => "trimming",
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
    /// Reads, writes and trims.
    pub dirs: [DirAcc; 3],
    /// CPU used while measuring.
    pub cpu: CpuUse,
    /// fsync/fdatasync calls made.
    pub syncs: u64,
    /// First and last instant of measurement.
    pub measured: Option<(Instant, Instant)>,
    /// Why it stopped early.
    pub failure: Option<Failure>,
    /// The clone's random seed (see [`clone_seeds`]).
    pub seed: u64,
    /// Samples, queue depths and sync latencies.
    pub fx: crate::fio_stats::FioExtras,
}

/// Runs one clone to its end; never panics on I/O errors.
pub fn run_clone(spec: CloneSpec) -> CloneResult {
    let result = run_clone_inner(&spec);
    // Published for health checks of a load running in the background
    // (`iolab startup` checks it before and after every start).
    spec.live
        .end(result.failure.as_ref().map(|f| f.message.clone()));
    let me = &spec.shared.jobs[spec.job_idx];
    let ended = me.ended.fetch_add(1, Ordering::AcqRel) + 1;
    if spec.job.x.exitall && ended == 1 && spec.shared.exit_all(spec.job_idx, spec.job.x.exit_what)
    {
        spec.ctl.stop.store(true, Ordering::Relaxed);
    }
    if spec.job.x.unlink && ended >= me.numjobs {
        for p in spec.targets.iter().filter(|p| !p.starts_with("/dev")) {
            let _ = std::fs::remove_file(p);
        }
    }
    result
}

fn run_clone_inner(spec: &CloneSpec) -> CloneResult {
    let tid = iolab_sys::ioprio::current_tid();
    let mut result = CloneResult {
        job_idx: spec.job_idx,
        tid,
        dirs: [DirAcc::new(false), DirAcc::new(false), DirAcc::new(false)],
        cpu: CpuUse::default(),
        syncs: 0,
        measured: None,
        failure: None,
        seed: seed_for(spec),
        fx: Default::default(),
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
    if !wait_to_start(spec) {
        return result;
    }
    let mut run = match Run::new(spec, Instant::now()) {
        Ok(r) => r,
        Err(why) => {
            result.failure = Some(Failure {
                errno: 0,
                message: format!("job {}: {why}", spec.job.name),
            });
            return result;
        }
    };
    match (&mut eng, &file) {
        (Engine::Cpu, _) => engine::cpuio::run(&mut run),
        (e, Some(f)) => engine::run(e, &mut run, f),
        _ => {}
    }
    if let Some(files) = &file {
        if run.failure.is_none() {
            run.verify_all(files);
        }
        if spec.job.end_fsync && run.failure.is_none() && !spec.ctl.stopping() {
            for f in files.all() {
                if let Err(e) = f.sync_all() {
                    run.failure.get_or_insert(Failure {
                        errno: e.raw_os_error().unwrap_or(0),
                        message: format!("job {}: end_fsync failed: {e}", spec.job.name),
                    });
                }
                run.syncs += 1;
            }
        }
    }
    run.finish(&mut result);
    result
}

/// `startdelay` and `wait_for`: false when the load stopped meanwhile.
fn wait_to_start(spec: &CloneSpec) -> bool {
    let (lo, hi) = spec.job.x.startdelay;
    let delay = if hi > lo {
        use rand::Rng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed_for(spec));
        lo + (hi - lo).mul_f64(rng.random::<f64>())
    } else {
        lo
    };
    let until = Instant::now() + delay;
    let waited_job = spec
        .job
        .x
        .wait_for
        .as_ref()
        .and_then(|n| spec.shared.jobs.iter().position(|j| &j.name == n));
    loop {
        if spec.ctl.stopping() || spec.shared.jobs[spec.job_idx].stop.load(Ordering::Relaxed) {
            return false;
        }
        let waiting =
            Instant::now() < until || waited_job.is_some_and(|w| !spec.shared.job_done(w));
        if !waiting {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn setup(spec: &CloneSpec) -> Result<(Option<Files>, Engine), String> {
    let job = &spec.job;
    if let Some(p) = job.x.prio.or(spec.ioprio) {
        p.set_for(0).map_err(|e| {
            let hint = if matches!(p, IoPrio::RealTime(_)) {
                " (the real-time class needs root)"
            } else {
                ""
            };
            format!("cannot set I/O priority {p}: {e}{hint}")
        })?;
    }
    let Some(path) = spec.targets.first() else {
        if job.ioengine == IoEngine::Null {
            // The null engine moves nothing; /dev/null stands in for the
            // file the loop's bookkeeping expects.
            let f = File::open("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?;
            let files = Files::new(vec![f], vec![PathBuf::from("/dev/null")]);
            let eng = engine::setup(job, &files, 0, spec.size, seed_for(spec))?;
            return Ok((Some(files), eng));
        }
        return Ok((None, Engine::Cpu));
    };
    let mut opened = Vec::with_capacity(spec.targets.len());
    for p in &spec.targets {
        let file = open(job, p)?;
        if job.invalidate {
            drop_cache(&file);
        }
        opened.push(file);
    }
    let files = Files::new(opened, spec.targets.clone());
    let seed = seed_for(spec);
    let base = job.x.offset + job.x.offset_increment * u64::from(spec.clone);
    let eng = engine::setup(job, &files, base, spec.size, seed).map_err(|e| {
        format!(
            "{} engine on {}: {e}",
            job.ioengine.as_str(),
            path.display()
        )
    })?;
    Ok((Some(files), eng))
}

fn open(job: &Job, path: &Path) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if job.writes() {
        o.write(true)
            .create(!path.starts_with("/dev") && !job.x.no_create);
    } else if job.x.create_on_open && !path.starts_with("/dev") {
        o.write(true).create(true);
    }
    if job.direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path).map_err(|e| {
        let hint = if job.direct && e.raw_os_error() == Some(libc::EINVAL) {
            " (this filesystem does not support O_DIRECT: use direct=0)"
        } else if job.x.no_create && e.kind() == std::io::ErrorKind::NotFound {
            " (allow_file_create=0 forbids creating it)"
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

/// The clone's random seed: `randseed` if given, else fixed per job name
/// and clone with `randrepeat` (runs repeat their offsets), else from the
/// clock.
fn seed_for(spec: &CloneSpec) -> u64 {
    let base = if let Some(s) = spec.job.x.randseed {
        s
    } else if spec.job.randrepeat {
        // FNV-1a of the name: stable across runs and builds.
        spec.job
            .name
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            })
    } else {
        // randrepeat=0: new every run, but one value for the whole run, so
        // each of the clone's streams and the reported seed agree.
        static RUN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let run = *RUN.get_or_init(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
                ^ u64::from(std::process::id()) << 40
        });
        run ^ spec.job_idx as u64
    };
    base ^ (u64::from(spec.clone) << 32)
}

/// The seeds of a clone's random streams (`--debug=random` prints them as
/// fio's `rand_seeds[]`): offsets, pacing and start delay use the first;
/// the read/write mix and buffer contents the second.
pub fn clone_seeds(seed: u64) -> [u64; 2] {
    [seed, seed ^ 0x5eed]
}

/// Verify bookkeeping of a writing clone.
struct VerifyState {
    opts: VerifyOpts,
    /// Written and not yet checked: offset -> length (later writes replace
    /// the blocks they overlap).
    written: std::collections::BTreeMap<u64, u64>,
    since_check: u64,
    bad: u64,
    checked: u64,
    first_bad: Option<String>,
    /// `verify_state_save`: every block written, for the state file.
    saved: std::collections::BTreeMap<u64, u64>,
    /// `verify_state_load`: the blocks a saved state lists (only those
    /// are checked).
    loaded: Option<std::collections::BTreeMap<u64, u64>>,
}

/// The state an engine's loop drives.
pub struct Run<'a> {
    spec: &'a CloneSpec,
    /// This job's shared state (stop flag, flow and steadystate totals).
    me: &'a JobShared,
    /// The job.
    pub job: &'a Job,
    pattern: FilePatterns,
    /// Files per clone (offsets name the file when more than one).
    nf: usize,
    pacer: Option<Pacer>,
    /// The clock.
    pub time: Timeline,
    dirs: [DirAcc; 3],
    /// `read_iolog`: the log replayed instead of the pattern, and where
    /// this clone is in it.
    replay: Option<(std::sync::Arc<crate::iolog::Replay>, crate::iolog::Cursor)>,
    /// `write_iolog`: the record of what this clone issues.
    iolog: Option<crate::iolog::Writer>,
    /// trimwrite: the write that follows the trim just issued.
    then_write: Option<(u64, u64)>,
    /// zonemode=strided: the zone the pattern runs in, and the bytes
    /// issued this pass (a pass ends at io_size).
    zones: Option<crate::zones::Zones>,
    zone_bytes: u64,
    /// Samples, queue depths and sync latencies (fio's other per-job
    /// statistics).
    pub fx: crate::fio_stats::FioExtras,
    sampler: crate::fio_stats::Sampler,
    live_totals: [(u64, u64); 3],
    loops_left: u32,
    writes: u64,
    syncs: u64,
    /// Set when the clone failed.
    pub failure: Option<Failure>,
    /// An I/O drawn from the pattern but not yet due (rate limit).
    pending: Option<(Dir, u64, u64)>,
    /// Where the region starts in the file.
    base: u64,
    issued: u64,
    verify: Option<VerifyState>,
    /// Write buffers need preparing before each write.
    prepare: bool,
    rng: rand::rngs::SmallRng,
    logs: Option<CloneLogs>,
    steady: Option<Steady>,
    /// `ratemin`/`rate_iops_min` window: start, bytes and I/Os at start.
    min_window: Option<(Instant, [u64; 2], [u64; 2])>,
    /// Extra per-I/O work (flow, steadystate sharing, logs).
    slow_path: bool,
    timed: bool,
    /// cmdprio: the rules per direction, the ioprio of the job's other
    /// I/Os, and whether the per-priority latency is lat (else clat).
    cmdprio: Option<([Vec<crate::cmdprio::Rule>; 2], u16, bool)>,
}

/// What a queueing engine knows of a completed I/O beyond its latency.
#[derive(Debug, Clone, Copy, Default)]
pub struct Issue {
    /// Its submission latency (fio's slat), when measured.
    pub slat_ns: Option<u64>,
    /// Its own ioprio (cmdprio); 0 for the job's.
    pub prio: u16,
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
    fn new(spec: &'a CloneSpec, go: Instant) -> Result<Run<'a>, String> {
        let job = &*spec.job;
        let io = job.ioengine != IoEngine::CpuIo;
        // zonemode=strided: the pattern runs over one zone, a pass per
        // zonerange bytes; Zones places it in the file.
        let zones = job.x.strided.map(|(range, size, skip)| {
            let (range, size) = match (range, size) {
                (0, 0) => (spec.size, spec.size),
                (0, s) => (s, s),
                (r, 0) => (r, r),
                (r, s) => (r, s),
            };
            let first = job.x.offset;
            crate::zones::Zones::new(range, size, skip, first, spec.size.max(first + range))
        });
        let (size, io_size) = match &zones {
            Some(z) => (z.range(), z.range()),
            None => (spec.size, spec.io_size),
        };
        let shape = Shape {
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
        };
        let seed = seed_for(spec);
        let loaded = match &job.x.verify {
            Some(o) if o.state_load => Some(crate::verify_state::load(
                &crate::verify_state::path(job, spec.clone),
            )?),
            _ => None,
        };
        let verify = job.x.verify.clone().map(|opts| VerifyState {
            opts,
            written: Default::default(),
            since_check: 0,
            bad: 0,
            checked: 0,
            first_bad: None,
            saved: Default::default(),
            loaded,
        });
        let prepare = job.writes()
            && (verify.is_some() || job.x.refill_buffers || job.x.buffer != BufferFill::Random);
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
        let slow_path =
            logs.is_some() || steady.is_some() || job.x.flow != 0 || min_window.is_some();
        Ok(Run {
            spec,
            me: &spec.shared.jobs[spec.job_idx],
            job,
            pattern: FilePatterns::new(&shape, spec.targets.len(), seed, job.x.file_service),
            nf: spec.targets.len().max(1),
            pacer: Pacer::for_job(job, seed),
            time: Timeline::new(job, go),
            dirs: [
                DirAcc::new(io && job.reads()),
                DirAcc::new(io && job.rw.offsets_as().writes()),
                DirAcc::new(io && job.rw.trims()),
            ],
            fx: Default::default(),
            sampler: Default::default(),
            live_totals: [(0, 0); 3],
            then_write: None,
            zones,
            zone_bytes: 0,
            loops_left: job.loops.max(1),
            writes: 0,
            syncs: 0,
            failure: None,
            pending: None,
            base: job.x.offset + job.x.offset_increment * u64::from(spec.clone),
            issued: 0,
            verify,
            prepare,
            rng: rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5eed),
            logs,
            steady,
            min_window,
            slow_path,
            timed: !job.x.no_latency,
            cmdprio: job.x.cmdprio.active().then(|| {
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
                    crate::iolog::Cursor::new(job.x.replay_no_stall, job.x.replay_scale),
                )
            }),
            iolog: match &job.x.write_iolog {
                Some(p) => Some(crate::iolog::Writer::create(p, &spec.targets, go)?),
                None => None,
            },
        })
    }

    /// The (first) target path, for messages.
    pub fn path(&self) -> &Path {
        self.spec
            .targets
            .first()
            .map_or(Path::new("-"), PathBuf::as_path)
    }

    /// The offset in its file of an I/O's offset (the same with one file).
    #[inline]
    pub fn real(&self, v: u64) -> u64 {
        if self.nf == 1 {
            v
        } else {
            crate::file_set::split(v).1
        }
    }

    /// The file an I/O's offset names and the offset in it.
    pub fn locate(&self, v: u64) -> (&Path, u64) {
        if self.nf == 1 {
            return (self.path(), v);
        }
        let (k, off) = crate::file_set::split(v);
        let p = self
            .spec
            .targets
            .get(k)
            .map_or(Path::new("-"), PathBuf::as_path);
        (p, off)
    }

    /// A failed I/O at offset `v`, naming its file and offset.
    pub fn io_failure(&self, err: &std::io::Error, dir: Dir, v: u64) -> Failure {
        let (path, off) = self.locate(v);
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
            if self.pacer.is_some() {
                self.time.tick(Instant::now());
                let elapsed = self.time.now.saturating_duration_since(self.time.go);
                if let Some(p) = self.pacer.as_mut() {
                    let wait = p.delay(dir, elapsed);
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
            if self.iolog.is_some() {
                self.log_issue(dir, offset, len);
            }
            return Step::Io(dir, offset, len);
        }
    }

    /// After [`Step::Drain`], with nothing in flight: verifies the loop's
    /// writes, then drops the cache for the next loop (`invalidate`).
    pub fn drained(&mut self, files: &Files) {
        if self.failure.is_some() {
            return;
        }
        if self.verify.as_ref().is_some_and(|v| !v.written.is_empty()) {
            self.verify_written(files);
        }
        if self.job.invalidate {
            files.all().iter().for_each(drop_cache);
        }
    }

    /// The next step of a replayed log; `None` after a sync it did itself.
    #[cold]
    fn replay_step(&mut self, files: &Files) -> Option<Step> {
        use crate::iolog::Action;
        let (log, cursor) = self.replay.as_mut()?;
        let since = Instant::now().saturating_duration_since(self.time.go);
        let action = match cursor.next(log, since) {
            None => return Some(Step::Done),
            Some(Err(wait)) => return Some(Step::Wait(wait)),
            Some(Ok(a)) => a,
        };
        let r = match action {
            Action::Io(dir, offset, len) => {
                // One file takes every file's I/O (replay_redirect).
                let offset = if self.nf == 1 {
                    crate::file_set::split(offset).1
                } else {
                    offset
                };
                self.issued += 1;
                if self.iolog.is_some() {
                    self.log_issue(dir, offset, len);
                }
                return Some(Step::Io(dir, offset, len));
            }
            Action::Sync(k) => files.at(crate::file_set::virt(k, 0)).0.sync_all(),
            Action::DataSync(k) => files.at(crate::file_set::virt(k, 0)).0.sync_data(),
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

    /// True when a rate limit applies.
    pub fn paced(&self) -> bool {
        self.pacer.is_some()
    }

    /// Fills a write buffer for `offset` (verify headers, patterns, fresh
    /// contents) when the job asks for any of that.
    #[inline]
    pub fn prepare_write(&mut self, buf: &mut [u8], offset: u64) {
        if !self.prepare {
            return;
        }
        if self.job.x.refill_buffers || self.job.x.buffer != BufferFill::Random {
            crate::buffer::fill(buf, &self.job.x.buffer, &mut self.rng);
        }
        let real = self.real(offset);
        if let Some(v) = &self.verify {
            v.opts.stamp(buf, real);
        }
    }

    /// True when reads must be checked ([`Run::check_read`]): a job that
    /// only reads (a file an earlier job wrote). In a job that also
    /// writes, the workload's reads may land on blocks not written yet;
    /// only the read-back of what it wrote is checked, as fio does
    /// (backend.c: verify_io_u for a read "if !td_rw(td)" or from the
    /// verify list). fio's t0008 (readwrite, verify_backlog=1) failed on
    /// iolab with "no header" until this.
    #[inline]
    pub fn checks_reads(&self) -> bool {
        self.verify.as_ref().is_some_and(|v| v.opts.do_verify)
            && self.job.reads()
            && !self.job.writes()
    }

    /// Checks a block read at `offset` (read jobs with `verify`).
    pub fn check_read(&mut self, buf: &[u8], offset: u64) {
        let (path, real) = self.locate(offset);
        let path = path.to_path_buf();
        let Some(v) = &mut self.verify else { return };
        if let Some(l) = &v.loaded {
            // Only what the saved state says was written is checked.
            if l.range(..=offset)
                .next_back()
                .is_none_or(|(o, n)| offset >= o + n)
            {
                return;
            }
        }
        v.checked += 1;
        if let Err(why) = v.opts.check(buf, real) {
            record_bad(v, &path, buf, real, why);
            if v.opts.fatal {
                let f = verify_failure(self.job, v);
                self.fail(f);
            }
        }
    }

    /// Records a completed I/O at `offset` (for logs).
    #[inline]
    pub fn complete_at(&mut self, dir: Dir, bytes: u64, lat: Duration, now: Instant, offset: u64) {
        self.complete(dir, bytes, lat, Issue::default(), now, offset);
    }

    /// The ioprio of a queueing engine's next I/O (cmdprio), 0 for the
    /// job's own: drawn per I/O as fio draws it.
    #[inline]
    pub fn cmdprio(&mut self, dir: Dir, len: u64) -> u16 {
        use rand::Rng;
        let Some((rules, _, _)) = &self.cmdprio else {
            return 0;
        };
        let rules = &rules[(dir as usize).min(1)];
        if rules.is_empty() {
            return 0;
        }
        let r = self.rng.random_range(0..100u32);
        crate::cmdprio::pick(rules, len, r).unwrap_or(0)
    }

    /// Records a completed I/O of a queueing engine: `lat` from its
    /// preparation, `slat` of that to its submission (fio's slat; the rest
    /// is its clat; `None` with `disable_slat`), `prio` its own ioprio (0:
    /// the job's).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn complete_queued(
        &mut self,
        dir: Dir,
        bytes: u64,
        lat: Duration,
        slat: Option<Duration>,
        prio: u16,
        now: Instant,
        offset: u64,
    ) {
        let lat_ns = lat.as_nanos() as u64;
        let slat_ns = slat.map(|s| (s.as_nanos() as u64).min(lat_ns));
        self.complete(dir, bytes, lat, Issue { slat_ns, prio }, now, offset);
    }

    #[inline(always)]
    fn complete(
        &mut self,
        dir: Dir,
        bytes: u64,
        lat: Duration,
        issue: Issue,
        now: Instant,
        offset: u64,
    ) {
        self.time.tick(now);
        let d = dir as usize;
        let t = &mut self.live_totals[d];
        t.0 += bytes;
        t.1 += 1;
        self.spec.live.publish(dir, t.0, t.1);
        let measuring = self.time.measuring();
        let asked = bytes.max(1);
        if measuring {
            if self.timed {
                let lat_ns = lat.as_nanos() as u64;
                self.dirs[d].record(bytes, asked, lat_ns);
                if let Some(s) = issue.slat_ns {
                    self.dirs[d].record_split(s, lat_ns - s);
                }
                if let Some((_, default, use_lat)) = self.cmdprio {
                    // fio's `prios`: lat with lat_percentiles, else clat.
                    let v = if use_lat {
                        lat_ns
                    } else {
                        lat_ns - issue.slat_ns.unwrap_or(0)
                    };
                    let key = if issue.prio == 0 { default } else { issue.prio };
                    self.dirs[d].record_prio(key, v);
                }
            } else {
                self.dirs[d].record_untimed(bytes, asked);
            }
            if self.sampler.next.is_none_or(|n| now >= n) {
                self.sample(now);
            }
        }
        if self.slow_path {
            self.slow_complete(d, bytes, lat, issue, now, offset, measuring);
        }
    }

    /// Closes a bandwidth/IOPS sample window when one is full.
    #[cold]
    fn sample(&mut self, now: Instant) {
        let totals = [0, 1].map(|d| (self.dirs[d].bytes, self.dirs[d].ios));
        let used = [self.job.reads(), self.job.writes()];
        self.sampler.tick(now, totals, used, &mut self.fx.samples);
    }

    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn slow_complete(
        &mut self,
        d: usize,
        bytes: u64,
        lat: Duration,
        issue: Issue,
        now: Instant,
        offset: u64,
        measuring: bool,
    ) {
        let shared = self.me;
        if self.job.x.flow != 0 {
            shared.flow_ios.fetch_add(1, Ordering::Relaxed);
        }
        if !measuring {
            return;
        }
        let lat_ns = lat.as_nanos() as u64;
        let real = self.real(offset);
        if let Some(l) = &mut self.logs {
            l.record(d, lat_ns, issue, bytes, real, now);
        }
        if self.steady.is_some() {
            shared.ss[0].fetch_add(1, Ordering::Relaxed);
            shared.ss[1].fetch_add(bytes, Ordering::Relaxed);
            shared.ss[2].fetch_add(lat_ns, Ordering::Relaxed);
            // Clone 0 judges for the whole job.
            if self.spec.clone == 0 {
                let totals = [0, 1, 2].map(|i| shared.ss[i].load(Ordering::Relaxed));
                if let Some(s) = &mut self.steady {
                    if s.sample(now, totals) {
                        shared.stop.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
        if let Some((start, bytes0, ios0)) = self.min_window {
            let cycle = self.job.x.ratecycle;
            let el = now.saturating_duration_since(start);
            if el >= cycle {
                let totals = [self.live_totals[0], self.live_totals[1]];
                for (i, dir) in [(0, Dir::Read), (1, Dir::Write)] {
                    let secs = el.as_secs_f64();
                    let bw = (totals[i].0 - bytes0[i]) as f64 / secs;
                    let iops = (totals[i].1 - ios0[i]) as f64 / secs;
                    let uses = if i == 0 {
                        self.job.reads()
                    } else {
                        self.job.writes()
                    };
                    if !uses {
                        continue;
                    }
                    let low_bw = self.job.x.ratemin.get(dir).filter(|m| bw < *m as f64);
                    let low_iops = self
                        .job
                        .x
                        .rate_iops_min
                        .get(dir)
                        .filter(|m| iops < *m as f64);
                    if low_bw.is_some() || low_iops.is_some() {
                        let what = match (low_bw, low_iops) {
                            (Some(m), _) => format!("{:.0} B/s, below ratemin={m}", bw),
                            (_, Some(m)) => format!("{iops:.0} IOPS, below rate_iops_min={m}"),
                            _ => String::new(),
                        };
                        let f = Failure {
                            errno: 0,
                            message: format!(
                                "job {}: {} ran at {what} over the last {} ms (ratecycle); the job stopped, results so far are kept",
                                self.job.name,
                                if i == 0 { "reading" } else { "writing" },
                                el.as_millis()
                            ),
                        };
                        self.fail(f);
                        return;
                    }
                }
                self.min_window =
                    Some((now, [totals[0].0, totals[1].0], [totals[0].1, totals[1].1]));
            }
        }
    }

    /// Counts a completed write, remembers it for verify, and syncs when
    /// `fsync`/`fdatasync`/`sync_file_range` ask.
    pub fn after_write_at(&mut self, files: &Files, offset: u64, len: u64) {
        self.writes += 1;
        if offset != u64::MAX {
            if let Some(v) = &mut self.verify {
                if v.opts.state_save {
                    remember(&mut v.saved, offset, len);
                }
                if v.opts.do_verify {
                    remember(&mut v.written, offset, len);
                    v.since_check += 1;
                    if v.opts.backlog > 0 && v.since_check >= v.opts.backlog {
                        self.verify_written(files);
                    }
                }
            }
        }
        let every = |n: u32| n > 0 && self.writes % u64::from(n) == 0;
        let sync: fn(&File, u32) -> std::io::Result<()> = if every(self.job.fsync) {
            |f, _| f.sync_all()
        } else if every(self.job.fdatasync) {
            |f, _| f.sync_data()
        } else if self.job.x.sync_file_range.is_some_and(|(_, n)| every(n)) {
            |f, flags| {
                // SAFETY: plain syscall on an open fd; 0/0 means the whole file.
                let r = unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, flags) };
                if r == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            }
        } else {
            return;
        };
        self.syncs += 1;
        let flags = self.job.x.sync_file_range.map_or(0, |(f, _)| f);
        // fio syncs the file the write went to.
        let file = files.at(if offset == u64::MAX { 0 } else { offset }).0;
        let t0 = Instant::now();
        // The null engine completes a sync at once, as fio's does: there
        // is no file to sync, but the sync is counted and timed.
        let r = if self.job.ioengine == crate::job::IoEngine::Null {
            Ok(())
        } else {
            sync(file, flags)
        };
        if self.time.measuring() {
            let ns = t0.elapsed().as_nanos() as u64;
            self.fx.sync_lat.record(0, 0, ns);
        }
        if let Err(e) = r {
            self.fail(Failure {
                errno: e.raw_os_error().unwrap_or(0),
                message: format!(
                    "job {}: fsync of {} failed: {e}",
                    self.job.name,
                    self.locate(if offset == u64::MAX { 0 } else { offset })
                        .0
                        .display()
                ),
            });
        }
    }

    /// Reads back and checks every block written since the last check.
    fn verify_written(&mut self, files: &Files) {
        let nf = self.nf;
        let Some(v) = &mut self.verify else { return };
        v.since_check = 0;
        let blocks = std::mem::take(&mut v.written);
        let mut buf = crate::buffer::AlignedBuf::zeroed(self.job.bs as usize);
        // The read-backs are reads of the job, counted as fio counts them
        // (t0005: a 100 MiB write job with verify reads 100 MiB).
        let mut done = Vec::with_capacity(blocks.len());
        for (voff, len) in blocks {
            let b = &mut buf.as_mut_slice()[..len as usize];
            let (file, off) = files.at(voff);
            let (path, off) = if nf == 1 {
                (files.path_at(0).0, off)
            } else {
                files.path_at(voff)
            };
            let t0 = Instant::now();
            let read = rustix::io::pread(file.as_fd(), &mut *b, off);
            let now = Instant::now();
            if let Ok(n) = &read {
                done.push((*n as u64, now - t0, now, voff));
            }
            match read {
                Ok(n) if n as u64 == len => {}
                Ok(n) => {
                    record_bad(
                        v,
                        path,
                        &b[..n],
                        off,
                        format!("verify: short read of {n} of {len} bytes at offset {off}"),
                    );
                    continue;
                }
                Err(e) => {
                    record_bad(
                        v,
                        path,
                        &[],
                        off,
                        format!("verify: reading back offset {off} failed: {e}"),
                    );
                    continue;
                }
            }
            v.checked += 1;
            if let Err(why) = v.opts.check(b, off) {
                record_bad(v, path, b, off, why);
                if v.opts.fatal {
                    break;
                }
            }
        }
        let failed = (v.bad > 0 && (v.opts.fatal || v.opts.backlog > 0))
            .then(|| verify_failure(self.job, v));
        for (n, lat, at, off) in done {
            self.complete_at(Dir::Read, n, lat, at, off);
        }
        if let Some(f) = failed {
            self.fail(f);
        }
    }

    /// The verify pass at the end of the job (`do_verify`).
    fn verify_all(&mut self, file: &Files) {
        if self.verify.is_none() || self.spec.ctl.stopping() {
            return;
        }
        if self.verify.as_ref().is_some_and(|v| !v.written.is_empty()) {
            self.verify_written(file);
        }
        if let Some(v) = &self.verify {
            if v.bad > 0 && self.failure.is_none() {
                let f = verify_failure(self.job, v);
                self.fail(f);
            }
        }
    }

    /// Stops the clone (and its siblings) with a failure; the first one
    /// is kept.
    pub fn fail(&mut self, f: Failure) {
        if self.failure.is_none() {
            self.failure = Some(f);
        }
        self.me.stop.store(true, Ordering::Relaxed);
    }

    /// A full disk while `fill_device` fills it: the pass is over, not an
    /// error.
    pub fn fill_done(&self, err: &std::io::Error) -> bool {
        self.job.x.fill_device && err.raw_os_error() == Some(libc::ENOSPC)
    }

    fn finish(mut self, out: &mut CloneResult) {
        let end = Instant::now();
        if let Some(start) = self.time.measure_start {
            out.measured = Some((start, end));
            out.cpu = CpuUse::this_thread().since(&self.time.cpu_start);
        }
        if let Some(v) = self.verify.as_ref().filter(|v| v.opts.state_save) {
            let p = crate::verify_state::path(self.job, self.spec.clone);
            if let Err(e) = crate::verify_state::save(&p, &v.saved) {
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
    }
}

/// Remembers a written block, dropping older blocks it overlaps.
fn remember(map: &mut std::collections::BTreeMap<u64, u64>, off: u64, len: u64) {
    let end = off + len;
    while let Some((&o, _)) = map
        .range(..end)
        .next_back()
        .filter(|(o, l)| **o + **l > off)
    {
        map.remove(&o);
    }
    map.insert(off, len);
}

fn record_bad(v: &mut VerifyState, path: &Path, buf: &[u8], off: u64, why: String) {
    v.bad += 1;
    if v.first_bad.is_none() {
        // Which file: a clone may have several.
        let mut msg = format!("{}: {why}", path.display());
        if v.opts.dump && !buf.is_empty() {
            let name = format!(
                "{}.{off}.received",
                path.file_name()
                    .map_or("block".into(), |n| n.to_string_lossy())
            );
            msg.push_str(&match std::fs::write(&name, buf) {
                Ok(()) => format!(" (block saved to {name})"),
                Err(e) => format!(" (could not save the block to {name}: {e})"),
            });
        }
        v.first_bad = Some(msg);
    }
}

fn verify_failure(job: &Job, v: &VerifyState) -> Failure {
    Failure {
        errno: libc::EILSEQ,
        message: format!(
            "job {}: {} of {} checked blocks failed verification; first: {}",
            job.name,
            v.bad,
            v.checked.max(v.bad),
            v.first_bad.as_deref().unwrap_or("?")
        ),
    }
}
