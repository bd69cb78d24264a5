//! The one experiment engine. An experiment is a plan of cells; a cell is
//! a sequence of runs on one place, with one scheduler and workload. The
//! engine does, once for every kind: read the configuration (or the
//! stored one, for `--resume ID`), bring the place up and resolve its
//! schedulers, create (or reopen) the experiment in the store, plan what
//! is left, show progress, stop cleanly on Ctrl-C/SIGTERM, record every
//! run as it ends and read the final report back. Everything it changes
//! goes through one guard, undone when it returns.
//!
//! What differs between `startup`, `sweep` and `sweep --max` is a
//! [`Body`]: its configuration, what it prepares once, its plan, and what
//! one cell does and stores. Nothing else.

mod progress;
mod resume;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use iolab_guard::Guard;
use iolab_results::{ArtifactDoc, ExperimentKind};
use iolab_store::{ExperimentId, ExperimentReport, RunId, RunKey, RunRecord, Status, Store};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

pub(crate) use progress::clock;
pub use progress::{Progress, ProgressMode};

use crate::place::{self, PlaceRequest, PlaceUse, Resolved};
use crate::{ExperimentError, Schedulers};

/// How to run (not part of the stored configuration).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results database.
    pub db: PathBuf,
    /// Continue this interrupted experiment instead of starting a new one.
    pub resume: Option<ExperimentId>,
    /// Allow writing to a device that is not an iolab lab.
    pub force: bool,
    /// How progress is shown.
    pub progress: ProgressMode,
    /// The command line, stored with the experiment.
    pub command_line: String,
}

/// What a finished (or interrupted) experiment left in the store.
#[derive(Debug)]
pub struct Finished<S> {
    /// Experiment id.
    pub id: ExperimentId,
    /// Database path.
    pub db: PathBuf,
    /// Everything stored, read back, with per-cell statistics.
    pub report: ExperimentReport,
    /// True when Ctrl-C/SIGTERM stopped it early (resumable).
    pub interrupted: bool,
    /// Where it ran.
    pub place: String,
    /// Runs recorded by this invocation.
    pub recorded: usize,
    /// Wall time of this invocation.
    pub elapsed: Duration,
    /// Cells that stopped before their last repetition, and why; the other
    /// cells ran.
    pub stopped_cells: Vec<String>,
    /// What the user should know that did not stop the experiment (a
    /// block trace that failed or lost events), each once.
    pub warnings: Vec<String>,
    /// What the body returns besides.
    pub body: S,
}

/// One cell of a plan: the repetitions still to run of one scheduler and
/// workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Scheduler.
    pub scheduler: String,
    /// Workload, as stored with its runs.
    pub workload: String,
    /// Repetition numbers (from 1) still to run.
    pub reps: Vec<u32>,
    /// The plan point its runs are made at (stored as their variant);
    /// `None` without axes beyond scheduler and workload.
    pub variant: Option<String>,
}

/// How a cell ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellEnd {
    /// Every repetition was made.
    Done,
    /// Ctrl-C/SIGTERM: the experiment stops (resumable).
    Interrupted,
    /// The cell could not go on (its background load ended): why. Its runs
    /// are stored; the experiment goes on with the next cell.
    Stopped(String),
}

/// The runs an experiment already has (empty for a new one).
pub type StoredRuns = std::collections::BTreeSet<RunKey>;

/// What a body is told once the place is up.
pub struct Setup<'a> {
    /// The experiment's guard.
    pub guard: &'a Guard,
    /// Where it runs.
    pub place: &'a Resolved,
    /// The schedulers compared, resolved on the place's device.
    pub schedulers: &'a [String],
    /// `--force` was given.
    pub force: bool,
    /// Lines the user should read before the runs start.
    pub announce: &'a dyn Fn(&str),
    /// The stored configuration of a resumed experiment.
    pub resumed: Option<&'a Value>,
}

/// The kind-specific part of an experiment.
pub trait Body: Sized {
    /// What defines the experiment, stored under the kind's
    /// [`ExperimentKind::config_key`] so `--resume` runs the same one.
    type Config: Clone + Serialize + DeserializeOwned;
    /// What the body returns besides the common [`Finished`].
    type Summary;
    /// The experiment kind.
    const KIND: ExperimentKind;
    /// What one run is called in progress (`starts`, `runs`, `points`).
    const UNIT: &'static str;

    /// A stored configuration as an older iolab wrote it, made readable
    /// (the identity unless the kind's configuration changed shape).
    fn upgrade(stored: Value) -> Result<Value, serde_json::Error> {
        Ok(stored)
    }
    /// Checks what needs no system access (a stored configuration too).
    fn validate(cfg: &Self::Config) -> Result<(), ExperimentError>;
    /// Where the experiment runs and what it does there.
    fn place(cfg: &Self::Config) -> PlaceRequest<'_>;
    /// The place brought up (a machine iolab boots describes itself;
    /// every other place is resolved from [`Body::place`]).
    fn resolve_place(
        cfg: &Self::Config,
        guard: &Guard,
        force: bool,
    ) -> Result<Resolved, ExperimentError> {
        place::resolve(guard, Self::place(cfg), force)
    }
    /// The schedulers asked for of the place's devices; the engine
    /// replaces them with the resolved list before [`Body::setup`]. `None`
    /// when the place has no device of this host (a boot's schedulers are
    /// the guest's, part of its variants).
    fn schedulers(cfg: &mut Self::Config) -> Option<&mut Schedulers>;
    /// Everything before the first run, once the place is up.
    fn setup(cfg: Self::Config, s: &Setup<'_>) -> Result<Self, ExperimentError>;
    /// The experiment's id, once it is created or reopened (before
    /// [`Body::plan`]): what a body names its own files after.
    fn named(&mut self, _id: ExperimentId) {}
    /// The stored configuration: the kind's own, then other keys (the
    /// engine adds `place`).
    fn stored(&self) -> Result<Vec<(&'static str, Value)>, ExperimentError>;
    /// The cells still to run, given the runs already stored.
    fn plan(&self, done: &StoredRuns) -> Vec<Cell>;
    /// How many runs `cells` will record (for progress).
    fn runs_in(&self, cells: &[Cell]) -> usize {
        cells.iter().map(|c| c.reps.len()).sum()
    }
    /// Runs one cell, recording each run through `ctx`.
    fn run_cell(
        &mut self,
        ctx: &mut CellContext<'_>,
        cell: &Cell,
    ) -> Result<CellEnd, ExperimentError>;
    /// Cells to run once the plan is done, given every stored run (a boot
    /// experiment's `--boots auto` rounds and its explained boots); none
    /// ends the experiment.
    fn more(
        &mut self,
        _runs: &[RunRecord],
        _progress: &mut Progress,
    ) -> Result<Vec<Cell>, ExperimentError> {
        Ok(Vec::new())
    }
    /// Called once after the last cell, interrupted or not (what the body
    /// made for the experiment and keeps only for a resume).
    fn finish(&mut self, _interrupted: bool) {}
    /// What the user should know at the end, beside the warnings its
    /// cells gave as they ran.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// What the body returns.
    fn summary(self) -> Self::Summary;
}

/// What a cell runs with: the place, the guard, and where runs go.
pub struct CellContext<'a> {
    /// The experiment's guard.
    pub guard: &'a Guard,
    /// Where it runs.
    pub place: &'a Resolved,
    /// The progress bar.
    pub progress: &'a mut Progress,
    /// The runs stored before this invocation.
    pub done: &'a StoredRuns,
    store: &'a Store,
    id: ExperimentId,
    recorded: &'a mut usize,
    warnings: &'a mut Vec<String>,
}

impl CellContext<'_> {
    /// The experiment's id (what a body names its own files after).
    pub fn experiment(&self) -> ExperimentId {
        self.id
    }

    /// Commits one run and its documents before the next one starts:
    /// nothing measured is lost to a later failure.
    pub fn store_run(
        &mut self,
        run: &RunRecord,
        docs: &[ArtifactDoc],
    ) -> Result<RunId, ExperimentError> {
        let run_id = self.store.record_run(self.id, run)?;
        for d in docs {
            self.store.add_artifact(run_id, d)?;
        }
        *self.recorded += 1;
        Ok(run_id)
    }

    /// Attaches one more document to a run stored before (what a cell
    /// knows only once it ended).
    pub fn add_artifact(&mut self, run: RunId, doc: &ArtifactDoc) -> Result<(), ExperimentError> {
        Ok(self.store.add_artifact(run, doc)?)
    }

    /// Something the user should know, shown once at the end.
    pub fn warn(&mut self, w: String) {
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }
}

/// Runs (or resumes, with `opts.resume` and no `cfg`) an experiment.
pub fn run<B: Body>(
    cfg: Option<B::Config>,
    opts: &RunOptions,
    announce: &dyn Fn(&str),
) -> Result<Finished<B::Summary>, ExperimentError> {
    let t0 = Instant::now();
    let store = Store::open(&opts.db)?;
    let resumed = opts
        .resume
        .map(|id| resume::load::<B::Config>(&store, id, &B::KIND, B::upgrade))
        .transpose()?;
    let mut cfg = match (&resumed, cfg) {
        (Some(r), _) => r.config.clone(),
        (None, Some(c)) => c,
        (None, None) => {
            return Err(iolab_sys::UsageError::new(
                "nothing to run: no configuration and no --resume ID",
            )
            .into())
        }
    };
    B::validate(&cfg)?;

    let guard = Guard::new();
    let place = B::resolve_place(&cfg, &guard, opts.force)?;
    let schedulers = match B::schedulers(&mut cfg) {
        Some(asked) => {
            let resolved = asked.resolve(&place.disks)?;
            *asked = Schedulers::of(resolved.clone())?;
            resolved
        }
        None => Vec::new(),
    };
    let files = B::place(&cfg).use_ == PlaceUse::Files;
    let mut body = B::setup(
        cfg,
        &Setup {
            guard: &guard,
            place: &place,
            schedulers: &schedulers,
            force: opts.force,
            announce,
            resumed: resumed.as_ref().map(|r| &r.stored),
        },
    )?;

    let id = match &resumed {
        Some(r) => r.id,
        None => {
            let mut stored = serde_json::Map::new();
            for (k, v) in body.stored()? {
                stored.insert(k.to_string(), v);
            }
            stored.insert("place".into(), Value::String(place.what.clone()));
            if !place.warnings.is_empty() {
                stored.insert("place_warnings".into(), serde_json::json!(place.warnings));
            }
            let env = iolab_sys::environment::Environment::capture_place(
                &place.disks,
                place.mountpoint.as_deref().filter(|_| files),
                place.stack.as_ref(),
            );
            store.create_experiment(
                &B::KIND,
                &opts.command_line,
                &Value::Object(stored),
                &crate::error::to_json("the environment snapshot", &env)?,
            )?
        }
    };
    store.set_status(id, Status::Running)?;
    body.named(id);
    let done = store.completed_cells(id)?;
    let mut cells: std::collections::VecDeque<Cell> = body.plan(&done).into();
    let mut progress = Progress::new(
        body.runs_in(cells.make_contiguous()) as u64,
        B::UNIT,
        opts.progress,
    );
    let (mut interrupted, mut recorded) = (false, 0);
    let (mut stopped_cells, mut warnings) = (Vec::new(), place.warnings.clone());
    loop {
        if iolab_guard::stop_requested() {
            interrupted = true;
            break;
        }
        let cell = match cells.pop_front() {
            Some(c) => c,
            None => {
                let more = body.more(&store.runs(id)?, &mut progress)?;
                if more.is_empty() {
                    break;
                }
                cells.extend(more);
                continue;
            }
        };
        let cell = &cell;
        let mut ctx = CellContext {
            guard: &guard,
            place: &place,
            progress: &mut progress,
            done: &done,
            store: &store,
            id,
            recorded: &mut recorded,
            warnings: &mut warnings,
        };
        match body.run_cell(&mut ctx, cell)? {
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
    drop(progress);
    body.finish(interrupted);
    warnings.extend(body.warnings());
    store.set_status(id, Status::ended(interrupted))?;
    Ok(Finished {
        id,
        db: opts.db.clone(),
        report: store.report(id)?,
        interrupted,
        place: place.what.clone(),
        recorded,
        elapsed: t0.elapsed(),
        stopped_cells,
        warnings,
        body: body.summary(),
    })
}

/// Sleeps, waking early (false) when a stop is requested.
pub fn sleep_unless_stopped(d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if iolab_guard::stop_requested() {
            return false;
        }
        std::thread::sleep(
            Duration::from_millis(50).min(end.saturating_duration_since(Instant::now())),
        );
    }
    true
}
