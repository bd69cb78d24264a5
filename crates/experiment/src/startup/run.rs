//! Running the matrix: for each cell, set the scheduler and its tunables
//! (guarded), start the background load and let it warm up, then for each
//! repetition make the cache cold, launch and time the target, and commit
//! the run to the store before the next one starts.

use std::path::PathBuf;

use iolab_guard::Guard;
use iolab_store::{ExperimentId, ExperimentReport, Status, Store};
use iolab_sys::UsageError;
use serde_json::json;

use super::cell::{launch_spec, run_cell, CellEnd};
use super::config::StartupConfig;
use super::place::{self};
use super::plan::plan;
use super::prefetch::{self, Prefetcher};
use super::progress::Progress;
use super::setup::{
    check_iosched_params, check_schedulers, check_workloads, limit_dirty, prepare, validate,
};
use super::StartupError;
use crate::launch::{self};
use crate::target::Target;

/// How to run (not part of the stored configuration).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results database.
    pub db: PathBuf,
    /// Continue this interrupted experiment instead of starting a new one.
    pub resume: Option<ExperimentId>,
    /// Allow writing to a device that is not an iolab lab.
    pub force: bool,
    /// Show a progress bar (TTY only).
    pub progress: bool,
    /// The command line, stored with the experiment.
    pub command_line: String,
}

/// What a finished (or interrupted) experiment left in the store.
#[derive(Debug)]
pub struct Finished {
    /// Experiment id.
    pub id: ExperimentId,
    /// Everything stored, with per-cell statistics.
    pub report: ExperimentReport,
    /// Database path.
    pub db: PathBuf,
    /// True when Ctrl-C/SIGTERM stopped it early (resumable).
    pub interrupted: bool,
    /// Harness overhead samples (ns): launching `true` through the same path.
    pub overhead_ns: Vec<u64>,
    /// Cells that stopped before their last repetition, and why (their
    /// background load ended); the other cells ran.
    pub stopped_cells: Vec<String>,
}

/// Runs (or resumes) a startup experiment.
pub fn run_startup(
    cfg: Option<StartupConfig>,
    opts: &RunOptions,
) -> Result<Finished, StartupError> {
    let store = Store::open(&opts.db)?;
    let (cfg, id, done, stored_list) = match (opts.resume, cfg) {
        (Some(id), _) => {
            let exp = store.experiment(id)?;
            if exp.status == Status::Done {
                return Err(UsageError::new(format!(
                    "experiment {id} is already complete: nothing to resume"
                ))
                .into());
            }
            let cfg: StartupConfig =
                serde_json::from_value(exp.config.get("startup").cloned().unwrap_or_default())
                    .map_err(|e| {
                        UsageError::new(format!(
                            "experiment {id} is not a startup experiment iolab can resume: {e}"
                        ))
                    })?;
            let done = store.completed_cells(id)?;
            let list = exp.config["prefetch_list"].as_str().map(str::to_string);
            (cfg, Some(id), done, list)
        }
        (None, Some(cfg)) => (cfg, None, Default::default(), None),
        (None, None) => {
            return Err(
                UsageError::new("nothing to run: give a command after -- or --resume ID").into(),
            )
        }
    };
    validate(&cfg)?;
    check_workloads(&cfg)?;

    let guard = Guard::new();
    let place = place::resolve(&guard, &cfg.place, opts.force, cfg.dirty_limit_bytes)?;
    // Stored as given, `{dir}` unsubstituted, so a resumed run on a new
    // temporary lab substitutes its own directory.
    let stored = cfg.clone();
    let mut cfg = cfg;
    if cfg.schedulers.is_empty() {
        cfg.schedulers = place.dev.schedulers()?.available;
    }
    check_schedulers(&place.dev, &cfg)?;
    check_iosched_params(&guard, &place.dev, &cfg)?;
    if let Some(prep) = &cfg.prepare {
        prepare(&prep.replace("{dir}", &place.dir.to_string_lossy()))?;
    }
    cfg.command = StartupConfig::substitute(&cfg.command, &place.dir);
    cfg.evict = cfg
        .evict
        .iter()
        .map(|p| {
            PathBuf::from(
                p.to_string_lossy()
                    .replace("{dir}", &place.dir.to_string_lossy()),
            )
        })
        .collect();
    if cfg.command.first().is_some_and(|c| c == "iolab") {
        // "iolab" means this very binary, wherever it was built.
        if let Ok(exe) = std::env::current_exe() {
            cfg.command[0] = exe.to_string_lossy().into_owned();
        }
    }
    // Checked once the preparation ran (it may create the target), but
    // before an experiment is stored that could never have a run.
    let mut target = Target::of(&cfg.command, cfg.am_start.as_ref());
    target.check()?;
    target.prepare()?;
    let (cfg, target) = (cfg, target);
    if opts.progress {
        // Every check passed: say where the experiment runs (and, for a
        // slow lab, which backend and why).
        eprintln!("iolab: {}", place.what);
    }
    limit_dirty(&guard, &place, &cfg)?;
    if let Some(ra) = cfg.read_ahead_kb {
        guard.set_queue_attr(&place.dev, "read_ahead_kb", &ra.to_string())?;
    }
    let env =
        iolab_sys::environment::Environment::capture(Some(&place.dev), Some(&place.mountpoint));
    let prefetcher = Prefetcher::prepare(
        &guard,
        &cfg,
        &target,
        &place,
        &launch_spec(&cfg)?,
        stored_list.as_deref(),
    )?;
    let overhead = launch::harness_overhead(&guard, 10)?;
    let overhead_mean = overhead.iter().sum::<u64>() / overhead.len().max(1) as u64;

    let id = match id {
        Some(id) => id,
        None => store.create_experiment(
            "startup",
            &opts.command_line,
            &json!({
                "startup": stored,
                "place": place.what,
                "prefetch_list": prefetcher.as_ref().map(|p| &p.stored_text),
            }),
            &serde_json::to_value(&env).unwrap_or_default(),
        )?,
    };
    store.set_status(id, Status::Running)?;

    // The command as given, `{dir}` unsubstituted: a resumed experiment
    // runs on a new temporary lab with another mount point, and its starts
    // must land in the same cells as those made before the interruption.
    let label = stored.command.join(" ");
    // With prefetch, a repetition is complete when each variant is stored.
    let done_runs = match &prefetcher {
        Some(_) => prefetch::done_runs(&store, id)?,
        None => Default::default(),
    };
    let pcfg = cfg.prefetch.as_ref().filter(|_| prefetcher.is_some());
    let cells = plan(&cfg, |s, w, r| match pcfg {
        Some(p) => prefetch::rep_done(Some(p), &done_runs, &label, s, w, r),
        None => done.contains(&iolab_store::RunKey::new(s, w, r)),
    });
    let starts: usize = cells
        .iter()
        .map(|c| c.reps.len() * prefetch::variants(pcfg, &c.workload, 1).len())
        .sum();
    let progress = Progress::new(starts as u64, opts.progress);
    let mut interrupted = false;
    let mut stopped_cells = Vec::new();
    for cell in &cells {
        if iolab_guard::stop_requested() {
            interrupted = true;
            break;
        }
        match run_cell(
            &guard,
            &store,
            id,
            (&label, &target),
            &cfg,
            &place,
            cell,
            overhead_mean,
            &progress,
            prefetcher.as_ref(),
            &done_runs,
        )? {
            CellEnd::Done => {}
            CellEnd::Interrupted => {
                interrupted = true;
                break;
            }
            CellEnd::Stopped(why) => {
                progress.note(&why);
                stopped_cells.push(why);
            }
        }
    }
    progress.finish();
    store.set_status(id, Status::ended(interrupted))?;
    let report = store.report(id)?;
    Ok(Finished {
        id,
        report,
        db: opts.db.clone(),
        interrupted,
        overhead_ns: overhead,
        stopped_cells,
    })
}
