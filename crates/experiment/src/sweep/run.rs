//! Running a sweep: resolve the place, check the schedulers, scale the
//! per-run size, create (or resume) the experiment, then make every run of
//! the plan, committing each to the store as it ends. Ctrl-C ends the
//! current run without recording it, keeps every recorded one, marks the
//! experiment interrupted (`--resume ID` continues it) and lets the guard
//! undo everything.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use iolab_guard::Guard;
use iolab_store::{ExperimentId, RunKey, Status, Store};
use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

use super::config::SweepConfig;
use super::measure::one_run;
use super::place::{self, measure_bandwidth, Resolved};
use super::plan::plan;
use super::progress::Progress;
use super::record::record;
use super::sizing::{scale, Sizing};
use super::table::SweepTable;
use super::SweepError;

/// How to run (not part of the stored configuration).
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Results database.
    pub db: PathBuf,
    /// Continue this interrupted sweep instead of starting a new one.
    pub resume: Option<ExperimentId>,
    /// Format a device even while it is in use or holds data.
    pub force: bool,
    /// Show a progress bar (TTY only).
    pub progress: bool,
    /// The command line, stored with the experiment.
    pub command_line: String,
}

/// What a finished (or interrupted) sweep left in the store.
#[derive(Debug)]
pub struct SweepFinished {
    /// Experiment id.
    pub id: ExperimentId,
    /// Database path.
    pub db: PathBuf,
    /// True when Ctrl-C/SIGTERM stopped it early (resumable).
    pub interrupted: bool,
    /// The tables, from every run stored for the experiment.
    pub table: SweepTable,
    /// The per-run size and why.
    pub sizing: Sizing,
    /// The configuration as run (schedulers resolved).
    pub config: SweepConfig,
    /// Where it ran.
    pub place: String,
    /// Runs recorded by this invocation.
    pub recorded: usize,
    /// Wall time of this invocation.
    pub elapsed: Duration,
    /// Things the user should know (block tracing failed or lost events).
    pub warnings: Vec<String>,
}

/// Runs (or resumes) a sweep. `announce` receives the lines the user
/// should read before the runs start (place, scaling).
pub fn run_sweep(
    cfg: Option<SweepConfig>,
    opts: &SweepOptions,
    announce: &dyn Fn(&str),
) -> Result<SweepFinished, SweepError> {
    let t0 = Instant::now();
    let store = Store::open(&opts.db)?;
    let resumed = match opts.resume {
        Some(id) => Some(load_resumable(&store, id)?),
        None => None,
    };
    let cfg = config_or_resumed(resumed.as_ref().map(|r| &r.cfg), cfg)?;
    cfg.validate()?;

    let guard = Guard::new();
    let place = place::resolve(&guard, &cfg.place, opts.force)?;
    let mut cfg = cfg;
    if cfg.schedulers.is_empty() {
        cfg.schedulers = place.dev.schedulers()?.available;
    }
    check_schedulers(&place.dev, &cfg.schedulers)?;
    let capacity = place.dev.size_bytes()?;
    let sizing = match &resumed {
        Some(r) => r.sizing.clone(),
        None => size_for(&cfg, &place, capacity, announce)?,
    };
    announce(&format!("on {}: {}", place.what, sizing.note));

    let (id, done) = match &resumed {
        Some(r) => (r.id, store.completed_cells(r.id)?),
        None => {
            let env = iolab_sys::environment::Environment::capture(Some(&place.dev), None);
            let id = store.create_experiment(
                "sweep",
                &opts.command_line,
                &json!({ "sweep": cfg, "sizing": sizing, "place": place.what }),
                &serde_json::to_value(&env).unwrap_or_default(),
            )?;
            (id, Default::default())
        }
    };
    store.set_status(id, Status::Running)?;

    let runs = plan(&cfg, &cfg.schedulers, |s, w, r| {
        done.contains(&RunKey::new(s, w, r))
    });
    let mut progress = Progress::new(runs.len() as u64, opts.progress);
    let mut interrupted = false;
    let mut recorded = 0;
    let mut warnings: Vec<String> = Vec::new();
    let mut lost = (0u64, 0usize);
    let target = place.dev.name.clone();
    for run in &runs {
        if iolab_guard::stop_requested() {
            interrupted = true;
            break;
        }
        progress.start(&format!(
            "rep {} {} {}",
            run.rep,
            run.scheduler,
            run.workload()
        ));
        let measured = match one_run(&guard, &place, &cfg, &sizing, run) {
            Ok(Some(m)) => m,
            Ok(None) | Err(SweepError::Interrupted) => {
                interrupted = true;
                break;
            }
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        };
        if let Some(e) = &measured.trace_error {
            let w = format!("block tracing failed, runs have no latency_hist: {e}");
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        if let Some(h) = measured
            .latency_hist
            .as_ref()
            .filter(|h| h.counts.lost_events > 0)
        {
            lost.0 += h.counts.lost_events;
            lost.1 += 1;
        }
        let tunables = place.dev.iosched_tunables();
        let (rec, docs) = record(run, &measured, &target, &cfg, &sizing, &tunables);
        let run_id = store.record_run(id, &rec)?;
        for (kind, doc) in &docs {
            store.add_artifact(run_id, kind, doc)?;
        }
        recorded += 1;
        progress.done(
            rec.extra
                .get("bw_bytes")
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0),
        );
    }
    progress.finish();
    store.set_status(id, Status::ended(interrupted))?;
    if lost.0 > 0 {
        warnings.push(format!(
            "the block trace lost {} events in {} run(s): their latency_hist is incomplete",
            lost.0, lost.1
        ));
    }
    let table = SweepTable::from_runs(&store.runs(id)?);
    Ok(SweepFinished {
        id,
        db: opts.db.clone(),
        interrupted,
        table,
        sizing,
        config: cfg,
        place: place.what,
        recorded,
        elapsed: t0.elapsed(),
        warnings,
    })
}

struct Resumable {
    id: ExperimentId,
    cfg: SweepConfig,
    sizing: Sizing,
}

fn load_resumable(store: &Store, id: ExperimentId) -> Result<Resumable, SweepError> {
    let exp = resumable(store, id, "sweep")?;
    let field = |k: &str| exp.config.get(k).cloned().unwrap_or_default();
    let bad = |e: serde_json::Error| {
        UsageError::new(format!(
            "experiment {id} was stored by another iolab version and cannot be resumed: {e}"
        ))
    };
    Ok(Resumable {
        id,
        cfg: serde_json::from_value(field("sweep")).map_err(bad)?,
        sizing: serde_json::from_value(field("sizing")).map_err(bad)?,
    })
}

/// Refuses a scheduler `dev` does not offer, naming those it does.
pub(crate) fn check_schedulers(dev: &BlockDev, wanted: &[String]) -> Result<(), SweepError> {
    let avail = dev.schedulers()?.available;
    if let Some(s) = wanted.iter().find(|s| !avail.contains(s)) {
        return Err(UsageError::new(format!(
            "scheduler {s:?} is not offered by {}: available are {}",
            dev.name,
            avail.join(", ")
        ))
        .into());
    }
    Ok(())
}

/// Experiment `id` if it is a `kind` experiment that can be resumed; the
/// refusal of another kind names the command that resumes it.
/// The configuration to run: the resumed experiment's, else the one given.
pub(crate) fn config_or_resumed<C: Clone>(
    resumed: Option<&C>,
    given: Option<C>,
) -> Result<C, UsageError> {
    match (resumed, given) {
        (Some(c), _) => Ok(c.clone()),
        (None, Some(c)) => Ok(c),
        (None, None) => Err(UsageError::new(
            "nothing to run: no configuration and no --resume ID",
        )),
    }
}

pub(crate) fn resumable(
    store: &Store,
    id: ExperimentId,
    kind: &str,
) -> Result<iolab_store::Experiment, SweepError> {
    let exp = store.experiment(id)?;
    if exp.kind != kind {
        let how = match exp.kind.as_str() {
            "sweep" => "sweep --resume ID",
            super::max::KIND => "sweep --max --resume ID",
            k => k,
        };
        return Err(UsageError::new(format!(
            "experiment {id} is a {} experiment, not a {kind}: resume it with `iolab {how}`",
            exp.kind
        ))
        .into());
    }
    if exp.status == Status::Done {
        return Err(UsageError::new(format!(
            "experiment {id} is already complete: nothing to resume"
        ))
        .into());
    }
    Ok(exp)
}

fn size_for(
    cfg: &SweepConfig,
    place: &Resolved,
    capacity: u64,
    announce: &dyn Fn(&str),
) -> Result<Sizing, SweepError> {
    if cfg.size_bytes.is_some() {
        return Ok(scale(cfg, capacity, None)?);
    }
    if let Some(bw) = place.bw_bytes {
        return Ok(scale(
            cfg,
            capacity,
            Some((bw as f64, "the lab's throttle")),
        )?);
    }
    announce(&format!(
        "measuring {}'s read bandwidth for 1 s to scale the runs (--size skips this)",
        place.dev.name
    ));
    let bw = measure_bandwidth(&place.dev)?;
    Ok(scale(
        cfg,
        capacity,
        Some((bw, "1 s of sequential direct reads")),
    )?)
}
