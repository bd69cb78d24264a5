//! The background load of a cell, through the workload engine: started in
//! this process's threads (so it stays in the root blkio cgroup the lab's
//! throttle applies to) with the load's I/O priority, stopped at the end of
//! the cell. Files are laid out by `start` and reused by later cells.
//!
//! A start is "under 1r" only if the reader is still reading: a job file
//! without `time_based`, a `runtime=` override, or a full disk ends a job
//! mid-cell, and every start after that would be an idle start stored
//! under the loaded workload's name. So the load is checked before and
//! after every start ([`Background::ended`]), and the load's own rate
//! during the warm-up is kept as the rate it is expected to reach (see
//! `liveness` for what a start in which it completed nothing means).
//!
//! With `--with-fio`, a job-file workload goes to the installed fio instead
//! (a copy of the file with the `--load-option`s closing each job), so a
//! job file iolab does not build still loads the cell. fio inherits this
//! process's cgroup and the load's I/O priority; its bytes come from its
//! own status reports (one a second, and one asked for with SIGUSR1 each
//! time iolab reads them), and a job whose bytes stop moving counts as
//! ended, as an iolab job that ends does.

use std::path::Path;
use std::time::{Duration, Instant};

use iolab_guard::Guard;
use iolab_load::fio_process::{job_file_with, FioChild};
use iolab_load::{jobs_from_spec, start, RunningLoad, StartOptions};
use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;

use crate::ExperimentError;

/// A running background load.
pub struct Background {
    load: Engine,
    workload: String,
    started: Instant,
}

/// Who runs the load.
enum Engine {
    Own(RunningLoad),
    /// fio, and its process group as recorded with the guard (killed by
    /// the next run if iolab itself is killed).
    Fio(std::sync::Mutex<FioChild>, Guard, iolab_guard::Recorded),
}

/// A fio job whose bytes did not change for this long while fio kept
/// reporting has stopped loading the cell.
const FIO_QUIET: Duration = Duration::from_secs(5);

impl Background {
    /// Starts `workload` (a named workload or a job file) with its files in
    /// `dir`; `None` for `idle`. `overrides` are fio options applied to every
    /// job (e.g. `size=128M`). `with_fio`: a job file runs under fio.
    pub fn start(
        workload: &str,
        dir: &Path,
        overrides: &[(String, String)],
        prio: Option<IoPrio>,
        with_fio: bool,
        guard: &Guard,
    ) -> Result<Option<Background>, ExperimentError> {
        if workload == "idle" {
            return Ok(None);
        }
        let mut all = vec![("directory".to_string(), dir.to_string_lossy().into_owned())];
        all.extend(overrides.iter().cloned());
        if with_fio && iolab_load::named::lookup(workload).is_none() {
            let (child, tracked) = start_fio(workload, dir, &all, prio, guard)?;
            return Ok(Some(Background {
                load: Engine::Fio(std::sync::Mutex::new(child), guard.clone(), tracked),
                workload: workload.to_string(),
                started: Instant::now(),
            }));
        }
        let jobs = jobs_from_spec(workload, &all)?;
        let load = start(
            jobs,
            StartOptions {
                guard: Some(guard.clone()),
                ioprio: prio,
                progress: false,
                force: false,
            },
        )?;
        Ok(Some(Background {
            load: Engine::Own(load),
            workload: workload.to_string(),
            started: Instant::now(),
        }))
    }

    /// `None` while every job of the load runs; otherwise one line saying
    /// which jobs ended, after how long, and with which error.
    pub fn ended(&self) -> Option<String> {
        let what: Vec<String> = match &self.load {
            Engine::Own(load) => load
                .ended_clones()
                .iter()
                .map(|c| match &c.error {
                    Some(e) => format!("{} failed: {e}", c.name),
                    None => format!("{} reached its end (runtime, size or loops)", c.name),
                })
                .collect(),
            Engine::Fio(child, ..) => {
                let mut c = lock(child);
                c.poll();
                match c.exited() {
                    Some(st) => {
                        let err = c.stderr();
                        let last = err.trim().lines().last().map(|l| format!(": {l}"));
                        vec![format!("fio ended, {st}{}", last.unwrap_or_default())]
                    }
                    None => c
                        .quiet_jobs(FIO_QUIET)
                        .iter()
                        .map(|(j, d)| {
                            format!("fio job {j} moved no bytes for {:.1} s", d.as_secs_f64())
                        })
                        .collect(),
                }
            }
        };
        if what.is_empty() {
            return None;
        }
        Some(format!(
            "the background load {:?} stopped running {:.1} s after it started ({}); \
             a background job must run until iolab stops it: use time_based=1 with no \
             runtime, or a named workload",
            self.workload,
            self.started.elapsed().as_secs_f64(),
            what.join("; ")
        ))
    }

    /// Bytes the load has read and written so far, by its own counters
    /// (every clone, updated at each completed I/O).
    pub fn io(&self) -> (u64, u64) {
        match &self.load {
            Engine::Own(load) => {
                let s = load.snapshot();
                (s.read_bytes, s.write_bytes)
            }
            Engine::Fio(child, ..) => {
                let mut c = lock(child);
                c.refresh(Duration::from_millis(500));
                c.totals()
            }
        }
    }

    /// I/Os the load has completed so far, by its own counters; `None`
    /// under fio (its status reports count bytes here).
    pub fn ios(&self) -> Option<u64> {
        match &self.load {
            Engine::Own(load) => {
                let s = load.snapshot();
                Some(s.read_ios + s.write_ios)
            }
            Engine::Fio(..) => None,
        }
    }

    /// The load's threads waiting to go on right now, as `tid (wchan)` in
    /// the kernel (state D: a writer held at the dirty-page limit, a reader
    /// whose request the scheduler holds) or `tid (runnable)` (state R:
    /// waiting for a CPU, as a one-vCPU guest's writer does for seconds
    /// while the flusher's kworkers write its pages out): still loading.
    pub fn blocked(&self) -> Result<Vec<String>, iolab_sys::SysError> {
        match &self.load {
            Engine::Own(load) => Ok(load
                .thread_ids()
                .iter()
                .filter_map(|t| {
                    iolab_sys::process::task_waiting(Path::new(&format!("/proc/self/task/{t}")))
                })
                .collect()),
            Engine::Fio(child, ..) => {
                let pgid = lock(child).pid();
                let proc = |e| iolab_sys::SysError::io("/proc", e);
                let members = iolab_sys::process::live_group_members(pgid).map_err(proc)?;
                iolab_sys::process::threads_waiting(&members).map_err(proc)
            }
        }
    }

    /// Stops the load; every byte it read and wrote once its last I/O
    /// ended, and what made those counts short (fio's reports that lacked
    /// them, each naming fio's output file).
    pub fn stop(self) -> ((u64, u64), Vec<String>) {
        match self.load {
            Engine::Own(load) => {
                let (_, s) = load.stop_counted();
                ((s.read_bytes, s.write_bytes), Vec::new())
            }
            Engine::Fio(child, guard, tracked) => {
                let mut c = child.into_inner().unwrap_or_else(|e| e.into_inner());
                c.finish(Duration::from_secs(10));
                // Reaped: nothing is left for a later run to kill.
                let _ = guard.forget(tracked);
                (c.totals(), c.warnings().to_vec())
            }
        }
    }
}

fn lock(m: &std::sync::Mutex<FioChild>) -> std::sync::MutexGuard<'_, FioChild> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The installed fio, for `--with-fio` (`iolab load`'s and startup's).
pub fn fio_path() -> Result<std::path::PathBuf, ExperimentError> {
    Ok(iolab_load::fio_process::fio_path()?)
}

/// The job file with the overrides closing every job, written next to the
/// load's files (so the run's own directory holds what fio ran).
pub(super) fn fio_job_file(
    workload: &str,
    dir: &Path,
    overrides: &[(String, String)],
) -> Result<std::path::PathBuf, ExperimentError> {
    let text = std::fs::read_to_string(workload).map_err(|e| {
        UsageError::new(format!(
            "background workload {workload:?}: cannot read the job file ({e}); give a named workload or a job file path"
        ))
    })?;
    let path = dir.join("iolab-with-fio.fio");
    std::fs::write(&path, job_file_with(&text, overrides))
        .map_err(|e| iolab_sys::SysError::io(&path, e))?;
    Ok(path)
}

fn start_fio(
    workload: &str,
    dir: &Path,
    overrides: &[(String, String)],
    prio: Option<IoPrio>,
    guard: &Guard,
) -> Result<(FioChild, iolab_guard::Recorded), ExperimentError> {
    let fio = fio_path()?;
    let job = fio_job_file(workload, dir, overrides)?;
    let mut child = FioChild::spawn(&fio, &[job.to_string_lossy().into_owned()], false, prio)
        .map_err(|e| iolab_sys::SysError::io(&fio, e))?;
    let tracked = match guard.track_process_group(child.pid()) {
        Ok(t) => t,
        Err(e) => {
            child.finish(Duration::from_secs(5));
            return Err(e.into());
        }
    };
    // Started means reporting: fio lays out its files first, and a job
    // file it refuses ends it here, with its own message.
    let until = Instant::now() + Duration::from_secs(600);
    while child.poll() == 0 {
        if let Some(st) = child.exited() {
            let _ = guard.forget(tracked);
            return Err(UsageError::new(format!(
                "background workload {workload:?} under fio: fio exited with {st} before its first report: {}",
                child.stderr().trim().lines().last().unwrap_or("no message")
            ))
            .into());
        }
        if Instant::now() > until || iolab_guard::stop_requested() {
            child.finish(Duration::from_secs(5));
            let _ = guard.forget(tracked);
            return Err(UsageError::new(format!(
                "background workload {workload:?} under fio: no report from fio within 600 s"
            ))
            .into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok((child, tracked))
}
