//! One run of the sweep, as seed 002 made each fio run: scheduler set,
//! fresh filesystem, caches dropped, then the job, with the collectors
//! (seed 002's mpstat and biosnoop: the CPU series and block trace every
//! sweep run keeps, and any asked for) around it; the filesystem is
//! unmounted before the next run formats the device.

use std::os::fd::AsFd;
use std::time::Duration;

use iolab_guard::Guard;
use iolab_load::{clone_paths, run_to_completion, Job, LoadError, LoadReport, StartOptions};
use iolab_sys::SysError;

use super::config::SweepConfig;
use super::plan::{self, RunPlan};
use super::sizing::Sizing;
use crate::collect::{Observe, Observed, Observers, RunEnd, Scope, Tuning};
use crate::place::Resolved;
use crate::ExperimentError;

/// CPU sampling: ten readings in a one-second run, enough for seed 002's
/// stacked CPU plot over time. Trace buffer: a run of 1 MiB requests makes
/// at most a few thousand per second, four events of ~80 bytes each, read
/// every 50 ms.
const TUNING: Tuning = Tuning {
    cpu_interval: Duration::from_millis(100),
    trace_buffer_kib: 4096,
};

/// What one run measured.
pub struct Measured {
    /// The load engine's report (throughput, completion latency, CPU of
    /// its threads, the device's diskstats over the measured window).
    pub report: LoadReport,
    /// Wall-clock start, RFC 3339.
    pub started_at: String,
    /// What the collectors saw (a best-effort one that failed is named
    /// there: the run is kept, its throughput does not depend on it).
    pub observed: Observed,
    /// The job as run.
    pub job: Job,
}

/// Why a run ended without a measurement.
pub enum NoRun {
    /// Ctrl-C/SIGTERM: nothing to record.
    Interrupted,
}

/// Makes one run; `Err(NoRun)` when Ctrl-C/SIGTERM stopped it.
pub fn one_run(
    guard: &Guard,
    place: &Resolved,
    cfg: &SweepConfig,
    sizing: &Sizing,
    run: &RunPlan,
) -> Result<Result<Measured, NoRun>, ExperimentError> {
    guard.set_scheduler(place.dev()?, &run.scheduler)?;
    // The run's own guard holds only its mount and trace instance:
    // restoring it unmounts the filesystem (and removes the mount point)
    // before the next mkfs.
    let fs_guard = Guard::new();
    let result = measure(&fs_guard, guard, place, cfg, sizing, run);
    let unmounted: Vec<String> = fs_guard
        .restore()
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if iolab_guard::stop_requested() {
        return Ok(Err(NoRun::Interrupted));
    }
    let m = match result {
        Ok(m) => m,
        Err(ExperimentError::Load(LoadError::Interrupted { .. })) => {
            return Ok(Err(NoRun::Interrupted))
        }
        Err(e) => return Err(e),
    };
    if let Some(e) = unmounted.first() {
        return Err(ExperimentError::Unmount(e.clone()));
    }
    if let Some(f) = m.report.failures().next() {
        return Err(ExperimentError::RunFailed {
            run: format!("{} {} rep {}", run.scheduler, run.workload(), run.rep),
            why: f.message.clone(),
        });
    }
    Ok(Ok(m))
}

fn measure(
    fs_guard: &Guard,
    guard: &Guard,
    place: &Resolved,
    cfg: &SweepConfig,
    sizing: &Sizing,
    run: &RunPlan,
) -> Result<Measured, ExperimentError> {
    let mnt = place.mount()?;
    iolab_lab::format_and_mount(fs_guard, place.dev()?, cfg.fs, mnt, place.made)?;
    let job = plan::job(run, sizing, cfg, mnt)?;
    if !run.kind.reads() {
        preallocate(&job, sizing.per_job(run.pattern.numjobs))?;
    }
    guard.drop_caches(Some(mnt))?;
    let started_at = iolab_store::rfc3339_now();
    // Readers' files are laid out by the engine first, as fio does after
    // seed 002's mkfs + drop_caches; the report counts only the measured
    // part, and its diskstats window starts after the layout's fsync.
    let scope = Scope {
        guard: fs_guard,
        devices: &place.disks,
        target: None,
        tuning: TUNING,
    };
    let always = Observe::of(["bio", "cpu"])?;
    let observers = Observers::start(&scope, &cfg.observe, &always)?;
    let report = run_to_completion(vec![job.clone()], StartOptions::default());
    let observed = observers.stop(&RunEnd::default())?;
    Ok(Measured {
        report: report?,
        started_at,
        observed,
        job,
    })
}

/// Reserves every writer's file with fallocate, as fio does by default
/// (`fallocate=native`): without it, each O_DIRECT write extends its
/// file, which ext4 completes synchronously, so `iodepth` would measure
/// the filesystem's size updates instead of the scheduler.
fn preallocate(job: &Job, bytes: u64) -> Result<(), ExperimentError> {
    for clone in 0..job.numjobs {
        for path in clone_paths(job, clone) {
            let f = std::fs::File::create(&path).map_err(|e| SysError::io(&path, e))?;
            rustix::fs::fallocate(f.as_fd(), rustix::fs::FallocateFlags::empty(), 0, bytes)
                .map_err(|e| SysError::io(&path, e.into()))?;
        }
    }
    Ok(())
}
