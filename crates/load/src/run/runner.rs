//! Starting, watching and stopping a load.
//!
//! [`start`] checks the jobs (see `plan`), lays out files, then hands the
//! stonewall groups to a coordinator thread that runs them one after the
//! other. Each clone is a thread; the clones of a group set themselves up
//! (priority, file, engine) and wait at a gate until all are ready, so a
//! group starts together and a setup failure of the first group is
//! returned by `start` itself. [`RunningLoad::stop`] asks every clone to
//! stop, waits for them (in-flight I/O completes) and returns the report.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use iolab_sys::diskstats::{self, DiskStat};
use iolab_sys::ioprio::IoPrio;

use crate::error::LoadError;
use crate::job::kinds::{Dir, IoEngine};
use crate::job::model::Job;
use crate::run::clone::CloneResult;
use crate::run::coordinator::Coordinator;
use crate::run::live::{Control, LiveCounters};
use crate::run::plan::{self, Plan};
use crate::run::progress::{Extent, LoadProgress};
use crate::run::report::{self, DiskUtil, LoadReport};

/// How to run a load.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Needed when a job sets `ioscheduler`: the switch is made (and later
    /// undone) through this guard, when the guard restores.
    pub guard: Option<Guard>,
    /// I/O priority of every worker thread (`--ioprio`).
    pub ioprio: Option<IoPrio>,
    /// Draw progress bars on stderr (the CLI sets this on a terminal).
    pub progress: bool,
    /// Allow writing to block devices.
    pub force: bool,
}

/// Bytes and I/Os moved so far, ramp included (for progress and for
/// callers that sample throughput while the load runs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveSnapshot {
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Reads completed.
    pub read_ios: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Time since the load started.
    pub elapsed: Duration,
}

impl LiveSnapshot {
    fn add(&mut self, c: &LiveCounters) {
        let (rb, ri) = c.read(Dir::Read);
        let (wb, wi) = c.read(Dir::Write);
        self.read_bytes += rb;
        self.read_ios += ri;
        self.write_bytes += wb;
        self.write_ios += wi;
    }
}

/// A load running in background threads.
pub struct RunningLoad {
    ctl: Arc<Control>,
    coordinator: Option<JoinHandle<Vec<CloneResult>>>,
    plan: Arc<Plan>,
    counters: Vec<Arc<LiveCounters>>,
    tids: Arc<Mutex<Vec<i32>>>,
    late_failures: Arc<Mutex<Vec<String>>>,
    started: Instant,
    started_at: SystemTime,
    disks_before: Vec<(String, DiskStat)>,
    progress: Option<LoadProgress>,
}

/// A clone of a running load that has ended (see
/// [`RunningLoad::ended_clones`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedClone {
    /// `job.N`: the job's name and the clone's number.
    pub name: String,
    /// The error that ended it; `None` when it ended on its own (runtime,
    /// size or loops reached).
    pub error: Option<String>,
}

/// Checks, lays out and starts `jobs`; returns once every clone of the
/// first group is running (or with the error that kept one from starting).
pub fn start(jobs: Vec<Job>, opts: StartOptions) -> Result<RunningLoad, LoadError> {
    let plan = plan::plan(&jobs, opts.force)?;
    if opts.guard.is_none() {
        if let Some(pj) = plan.jobs.iter().find(|j| !j.scheduler_devs.is_empty()) {
            return Err(LoadError::usage(format!(
                "job {} sets ioscheduler, which changes system state: run iolab as root",
                pj.job.name
            )));
        }
    }
    crate::run::layout::lay_out(&plan.layout, opts.progress)?;
    let plan = Arc::new(plan);
    let ctl = Arc::new(Control::default());
    let per_job: Vec<Vec<Arc<LiveCounters>>> = plan
        .jobs
        .iter()
        .map(|pj| (0..pj.job.numjobs).map(|_| Arc::default()).collect())
        .collect();
    let counters: Vec<Arc<LiveCounters>> = per_job.iter().flatten().cloned().collect();
    let tids = Arc::new(Mutex::new(Vec::new()));
    let late_failures = Arc::new(Mutex::new(Vec::new()));
    let disks_before = sample_disks(&plan.devices);
    let (first_tx, first_rx) = mpsc::channel();
    let started = Instant::now();
    let coordinator = {
        let c = Coordinator {
            plan: plan.clone(),
            ctl: ctl.clone(),
            per_job,
            tids: tids.clone(),
            late_failures: late_failures.clone(),
            guard: opts.guard.clone(),
            ioprio: opts.ioprio,
            shared: Arc::new(crate::run::shared::Shared::new(&plan.jobs)),
        };
        std::thread::Builder::new()
            .name("iolab-load".into())
            .spawn(move || c.run(first_tx))
            .map_err(|e| LoadError::io("coordinator thread", e))?
    };
    match first_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = coordinator.join();
            return Err(e);
        }
        Err(_) => {
            let _ = coordinator.join();
            return Err(LoadError::Setup {
                job: "-".into(),
                why: "the load's coordinator thread ended unexpectedly".into(),
            });
        }
    }
    let progress = (opts.progress && !plan.jobs.is_empty())
        .then(|| LoadProgress::spawn(counters.clone(), extent(&plan)));
    Ok(RunningLoad {
        ctl,
        coordinator: Some(coordinator),
        plan,
        counters,
        tids,
        late_failures,
        started,
        started_at: SystemTime::now(),
        disks_before,
        progress,
    })
}

/// Runs the jobs until they end (or Ctrl-C) and returns what they measured.
pub fn run_to_completion(jobs: Vec<Job>, opts: StartOptions) -> Result<LoadReport, LoadError> {
    Ok(start(jobs, opts)?.wait())
}

impl RunningLoad {
    /// Totals so far (ramp included), summed over all clones.
    pub fn snapshot(&self) -> LiveSnapshot {
        let mut s = LiveSnapshot {
            elapsed: self.started.elapsed(),
            ..Default::default()
        };
        for c in &self.counters {
            s.add(c);
        }
        s
    }

    /// Totals so far per job (ramp included), in job order: the job's
    /// name and its clones summed (`--status-interval`).
    pub fn job_snapshots(&self) -> Vec<(String, LiveSnapshot)> {
        let mut out = Vec::with_capacity(self.plan.jobs.len());
        let mut at = 0;
        for pj in &self.plan.jobs {
            let n = pj.job.numjobs as usize;
            let mut s = LiveSnapshot {
                elapsed: self.started.elapsed(),
                ..Default::default()
            };
            for c in self.counters.iter().skip(at).take(n) {
                s.add(c);
            }
            at += n;
            out.push((pj.job.name.clone(), s));
        }
        out
    }

    /// Kernel thread ids of the clones started so far (for tracing
    /// filters, cgroups or priorities).
    pub fn thread_ids(&self) -> Vec<i32> {
        self.tids.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The clones that have ended so far — by their own runtime, size or
    /// loops, or by an error — named `job.N`, each with the error that
    /// ended it, if any. Empty while the whole load is running. A load in
    /// the background of an experiment must run until it is stopped: an
    /// entry here means the starts that follow are no longer under it.
    pub fn ended_clones(&self) -> Vec<EndedClone> {
        let names = self
            .plan
            .jobs
            .iter()
            .flat_map(|pj| (0..pj.job.numjobs).map(move |c| format!("{}.{c}", pj.job.name)));
        names
            .zip(&self.counters)
            .filter_map(|(name, c)| c.ended().map(|error| EndedClone { name, error }))
            .collect()
    }

    /// True once every job has ended on its own.
    pub fn is_finished(&self) -> bool {
        self.coordinator.as_ref().is_none_or(|c| c.is_finished())
    }

    /// Stops every clone, waits for in-flight I/O and returns the report.
    pub fn stop(self) -> LoadReport {
        self.stop_counted().0
    }

    /// As [`RunningLoad::stop`], with the live totals once every clone
    /// has ended (ramp included): every byte the load moved, to compare
    /// with the device's counters.
    pub fn stop_counted(mut self) -> (LoadReport, LiveSnapshot) {
        self.ctl.stop.store(true, Ordering::Relaxed);
        let report = self.finish();
        (report, self.snapshot())
    }

    /// Waits until the jobs end on their own (runtime, size, loops) or a
    /// stop is requested (Ctrl-C), and returns the report. A load of
    /// jobs that run until stopped ends only on Ctrl-C.
    pub fn wait(mut self) -> LoadReport {
        self.finish()
    }

    fn finish(&mut self) -> LoadReport {
        let mut warnings = self.plan.warnings.clone();
        // A coordinator that panicked (a bug) loses every job's numbers:
        // said, never a report of zero I/O that reads as measured.
        let results = match self.coordinator.take().map(|c| c.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => {
                warnings.push(
                    "the load's coordinator thread panicked: its jobs' numbers are lost".into(),
                );
                Vec::new()
            }
            None => Vec::new(),
        };
        let elapsed = self.started.elapsed();
        if let Some(p) = self.progress.take() {
            p.finish();
        }
        let stopped = self.ctl.stopping();
        let (jobs, total) = report::assemble(&self.plan.jobs, &results);
        // What a job continued past is said, not only counted.
        for j in &jobs {
            if let Some(first) = &j.continued.first {
                warnings.push(format!(
                    "job {}: continued past {} error(s) (continue_on_error); the first: {}",
                    j.name, j.continued.count, first.message
                ));
            }
        }
        warnings.extend(
            self.late_failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .drain(..),
        );
        LoadReport {
            jobs,
            total,
            disks: disk_deltas(&self.disks_before, elapsed),
            elapsed,
            stopped,
            warnings,
            started_at: self.started_at,
        }
    }
}

impl Drop for RunningLoad {
    fn drop(&mut self) {
        if let Some(c) = self.coordinator.take() {
            self.ctl.stop.store(true, Ordering::Relaxed);
            let _ = c.join();
        }
    }
}

fn extent(plan: &Plan) -> Extent {
    let jobs: Vec<&Job> = plan.jobs.iter().map(|j| &*j.job).collect();
    if jobs.iter().any(|j| j.until_stopped()) {
        return Extent::UntilStopped;
    }
    let timed = |j: &Job| j.runtime.is_some() && (j.time_based || j.ioengine == IoEngine::CpuIo);
    if jobs.iter().all(|j| timed(j)) {
        let groups = plan.jobs.iter().map(|j| j.group).max().unwrap_or(0);
        let total = (0..=groups)
            .map(|g| {
                plan.jobs
                    .iter()
                    .filter(|j| j.group == g)
                    .filter_map(|j| Some(j.job.ramp_time + j.job.runtime?))
                    .fold(Duration::ZERO, Duration::max)
            })
            .sum();
        return Extent::Time(total);
    }
    if jobs.iter().any(|j| j.time_based) {
        return Extent::UntilStopped;
    }
    Extent::Bytes(
        plan.jobs
            .iter()
            .map(|j| j.io_size * u64::from(j.job.loops) * u64::from(j.job.numjobs))
            .sum(),
    )
}

fn sample_disks(devices: &[BlockDev]) -> Vec<(String, DiskStat)> {
    devices
        .iter()
        .filter_map(|d| {
            diskstats::read_device(Path::new("/proc"), &d.name)
                .ok()
                .flatten()
                .map(|s| (d.name.clone(), s))
        })
        .collect()
}

fn disk_deltas(before: &[(String, DiskStat)], elapsed: Duration) -> Vec<DiskUtil> {
    before
        .iter()
        .filter_map(|(name, b)| {
            let now = diskstats::read_device(Path::new("/proc"), name)
                .ok()
                .flatten()?;
            Some(DiskUtil {
                name: name.clone(),
                delta: now.since(b),
                elapsed,
            })
        })
        .collect()
}
