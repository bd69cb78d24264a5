//! `iolab load` as one session: the rules that refuse a load before it
//! runs (`--readonly`, `--max-jobs`), the guard of what it changes (an
//! `ioscheduler` switch, a collector's tracing), the collectors that
//! observe it (any of the registry's that needs no target: `--trace
//! bio`, `--cpu`, ...), what is written while it runs ([`status`]), and
//! `--with-fio` ([`with_fio`]); [`command`] is the whole command, from
//! what was typed to the report written. It lives here, above the load
//! crate, because it runs the collectors: the load engine needs none.
//! The command line only parses and translates fio's dialect.

pub mod command;
pub mod status;
pub mod with_fio;

use std::io::Write;
use std::time::Duration;

use iolab_collect::{Observe, Observed, Observers, RunEnd, Scope, Tuning};
use iolab_load::{start, Job, LoadError, LoadReport, StartOptions};
use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;

use crate::ExperimentError;
use status::Periodic;

/// What a user asked of one load, parsed.
pub struct Request {
    /// The jobs.
    pub jobs: Vec<Job>,
    /// `--readonly`: refuse a job that writes.
    pub readonly: bool,
    /// `--max-jobs`: refuse more clones than this in all.
    pub max_jobs: Option<u32>,
    /// `--ioprio`: the I/O priority of every clone.
    pub ioprio: Option<IoPrio>,
    /// `--force`: write to block devices.
    pub force: bool,
    /// Show a progress bar (stderr is a terminal).
    pub progress: bool,
    /// The collectors that observe the load.
    pub observe: Observe,
    /// What is written while it runs.
    pub periodic: Periodic,
}

/// What a load gave.
pub struct Outcome {
    /// What it measured.
    pub report: LoadReport,
    /// What its collectors saw.
    pub observed: Observed,
}

/// How often `--cpu` samples a load (mpstat's usual interval).
const CPU_INTERVAL: Duration = Duration::from_secs(1);

/// Runs `req`: statuses go to `status_out` while it runs. The guard
/// undoes every change when this returns (or on a signal).
pub fn run(req: Request, status_out: &mut dyn Write) -> Result<Outcome, ExperimentError> {
    refuse(&req)?;
    req.observe.check(false, "iolab load")?;
    // Only a scheduler switch or a collector's tracing changes system
    // state; the guard restores it when it drops at the end.
    let switches = req.jobs.iter().any(|j| j.ioscheduler.is_some());
    if switches && !iolab_sys::is_root() {
        return Err(UsageError::new(
            "ioscheduler changes kernel state and needs root: run it with sudo",
        )
        .into());
    }
    let guard = (switches || !req.observe.is_empty()).then(iolab_guard::Guard::new);
    let devices = iolab_load::devices_of(&req.jobs);
    let observers = match &guard {
        Some(g) if !req.observe.is_empty() => Some(Observers::start(
            &Scope {
                guard: g,
                devices: &devices,
                target: None,
                tuning: Tuning {
                    cpu_interval: CPU_INTERVAL,
                    trace_buffer_kib: iolab_collect::default_trace_buffer_kib(),
                },
            },
            &req.observe,
            &Observe::default(),
        )?),
        _ => None,
    };
    let opts = StartOptions {
        guard: guard.clone(),
        ioprio: req.ioprio,
        progress: req.progress,
        force: req.force,
    };
    let report = start(req.jobs, opts).and_then(|load| {
        if !req.periodic.idle() {
            // A failure to write a status ends the watch, not the load,
            // whose report is still made.
            if let Err(e) = req.periodic.watch(&load, status_out) {
                let report = load.stop();
                return Err(LoadError::io(
                    format!(
                        "writing statuses ({} bytes measured before it stopped)",
                        report.read_bytes() + report.write_bytes()
                    ),
                    std::io::Error::other(e.to_string()),
                ));
            }
        }
        Ok(load.wait())
    });
    let observed = match observers {
        Some(o) => o.stop(&RunEnd::default())?,
        None => Observed::default(),
    };
    drop(guard);
    Ok(Outcome {
        report: report?,
        observed,
    })
}

/// `--readonly` and `--max-jobs`, before anything runs.
fn refuse(req: &Request) -> Result<(), UsageError> {
    if req.readonly {
        if let Some(j) = req.jobs.iter().find(|j| j.writes()) {
            return Err(UsageError::new(format!(
                "--readonly: job {} writes (rw={}); drop --readonly or make it read",
                j.name,
                j.rw.as_str()
            )));
        }
    }
    if let Some(max) = req.max_jobs {
        let n: u64 = req.jobs.iter().map(|j| u64::from(j.numjobs.max(1))).sum();
        if n > u64::from(max) {
            return Err(UsageError::new(format!(
                "--max-jobs {max}: the jobs make {n} clones in all; raise --max-jobs or lower numjobs"
            )));
        }
    }
    Ok(())
}
