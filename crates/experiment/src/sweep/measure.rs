//! One run of the sweep, as seed 002 made each fio run: scheduler set,
//! fresh filesystem, caches dropped, then the job, with the CPU monitor
//! (seed 002's mpstat) and the block tracer (its biosnoop) around it; the
//! filesystem is unmounted before the next run formats the device.

use std::os::fd::AsFd;
use std::time::Duration;

use iolab_bio::{BioHistograms, BioOptions, BioTracer, Disks};
use iolab_guard::Guard;
use iolab_lab::Fs;
use iolab_load::{clone_path, run_to_completion, Job, LoadError, LoadReport, StartOptions};
use iolab_sys::cpustat::{CpuMonitor, CpuSeries};
use iolab_sys::SysError;

use super::config::SweepConfig;
use super::place::Resolved;
use super::plan::{self, RunPlan};
use super::sizing::Sizing;
use super::SweepError;

/// Trace buffer per CPU: a run of 1 MiB requests makes at most a few
/// thousand per second, four events of ~80 bytes each, read every 50 ms.
const TRACE_BUFFER_KIB: u32 = 4096;

/// CPU and pressure sampling interval: ten readings in a one-second run,
/// enough for seed 002's stacked CPU plot over time.
const CPU_INTERVAL: Duration = Duration::from_millis(100);

/// What one run measured.
pub struct Measured {
    /// The load engine's report (throughput, completion latency, CPU of
    /// its threads, the device's diskstats over the measured window).
    pub report: LoadReport,
    /// Wall-clock start, RFC 3339.
    pub started_at: String,
    /// System-wide CPU utilisation and pressure over the run (mpstat and
    /// /proc/pressure), `None` if /proc could not be read.
    pub cpu: Option<CpuSeries>,
    /// Per-request block latency histograms of the device under test
    /// (issue → complete, biolatency's), `None` if tracing failed.
    pub latency_hist: Option<BioHistograms>,
    /// Why tracing failed, if it did (the run is kept: throughput and
    /// completion latency do not depend on it).
    pub trace_error: Option<String>,
    /// The job as run.
    pub job: Job,
}

/// Makes one run; `None` when Ctrl-C/SIGTERM stopped it (nothing to record).
pub fn one_run(
    guard: &Guard,
    place: &Resolved,
    cfg: &SweepConfig,
    sizing: &Sizing,
    run: &RunPlan,
) -> Result<Option<Measured>, SweepError> {
    guard.set_scheduler(&place.dev, &run.scheduler)?;
    // The run's own guard holds only its mount: restoring it unmounts the
    // filesystem (and removes the mount point) before the next mkfs.
    let fs_guard = Guard::new();
    let result = measure(guard, &fs_guard, place, cfg, sizing, run);
    let unmounted: Vec<String> = fs_guard
        .restore()
        .into_iter()
        .filter_map(Result::err)
        .collect();
    let interrupted = iolab_guard::stop_requested();
    match result {
        _ if interrupted => Ok(None),
        Ok(m) => {
            if let Some(e) = unmounted.first() {
                return Err(SweepError::Unmount(e.clone()));
            }
            if let Some(f) = m.report.failures().next() {
                return Err(SweepError::RunFailed {
                    run: format!("{} {} rep {}", run.scheduler, run.workload(), run.rep),
                    why: f.message.clone(),
                });
            }
            Ok(Some(m))
        }
        Err(e) => Err(e),
    }
}

fn measure(
    guard: &Guard,
    fs_guard: &Guard,
    place: &Resolved,
    cfg: &SweepConfig,
    sizing: &Sizing,
    run: &RunPlan,
) -> Result<Measured, SweepError> {
    let fs = Fs::parse(&cfg.fs)?;
    iolab_lab::format_and_mount(fs_guard, &place.dev, fs, &place.mountpoint, place.zeroed)?;
    let job = plan::job(run, sizing, cfg, &place.mountpoint)?;
    if !run.kind.reads() {
        preallocate(&job, sizing.per_job(run.pattern.numjobs))?;
    }
    guard.drop_caches(Some(&place.mountpoint))?;
    let started_at = iolab_store::rfc3339_now();
    // Readers' files are laid out by the engine first, as fio does after
    // seed 002's mkfs + drop_caches; the report counts only the measured
    // part, and its diskstats window starts after the layout's fsync.
    let cpu = CpuMonitor::start(CPU_INTERVAL).ok();
    // The trace instance belongs to the run's guard, like its mount.
    let tracer = Disks::default()
        .resolve(&place.dev.name)
        .map_err(|e| e.to_string())
        .and_then(|disk| {
            BioTracer::start_with(
                fs_guard,
                BioOptions {
                    disks: vec![disk],
                    buffer_kib_per_cpu: TRACE_BUFFER_KIB,
                    ..BioOptions::default()
                },
            )
            .map_err(|e| e.to_string())
        });
    let report = run_to_completion(vec![job.clone()], StartOptions::default());
    let trace = tracer.and_then(|t| t.stop().map_err(|e| e.to_string()));
    let cpu = cpu.map(CpuMonitor::stop);
    let report = report.map_err(|e| match e {
        LoadError::Interrupted { .. } => SweepError::Interrupted,
        e => e.into(),
    })?;
    Ok(Measured {
        report,
        started_at,
        cpu,
        latency_hist: trace.as_ref().ok().map(|t| t.histograms()),
        trace_error: trace.err(),
        job,
    })
}

/// Reserves every writer's file with fallocate, as fio does by default
/// (`fallocate=native`): without it, each O_DIRECT write extends its
/// file, which ext4 completes synchronously, so `iodepth` would measure
/// the filesystem's size updates instead of the scheduler.
fn preallocate(job: &Job, bytes: u64) -> Result<(), SweepError> {
    for clone in 0..job.numjobs {
        let path = clone_path(job, clone);
        let f = std::fs::File::create(&path).map_err(|e| SysError::io(&path, e))?;
        rustix::fs::fallocate(f.as_fd(), rustix::fs::FallocateFlags::empty(), 0, bytes)
            .map_err(|e| SysError::io(&path, e.into()))?;
    }
    Ok(())
}
