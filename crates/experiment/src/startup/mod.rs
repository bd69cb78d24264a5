//! The startup matrix behind `iolab startup` and `iolab demo`: schedulers ×
//! workloads × repetitions for one target, every start stored as it ends.
//! A [`Body`] of the engine: what is prepared once ([`Startup::setup`]),
//! the plan of cells ([`plan`]), and what one cell does ([`cell`]) and one
//! start does and stores ([`start`]).

mod background;
mod cell;
mod cold;
pub mod config;
mod files;
mod liveness;
pub mod plan;
pub mod prefetch;
mod settle;
mod setup;
mod start;

use iolab_results::ExperimentKind;
use serde_json::Value;

pub use background::fio_path;
pub use config::{Cold, ReadyWhen, StartMode, StartupConfig};
pub use prefetch::{PrefetchConfig, PrefetchMode, PrefetchSource};

use crate::engine::{Body, Cell, CellContext, CellEnd, Setup, StoredRuns};
use crate::error::to_json;
use crate::launch::{self, LaunchSpec, Ready};
use crate::place::{PlaceRequest, PlaceUse};
use crate::targets::Target;
use crate::{ExperimentError, Schedulers};
use prefetch::Prefetcher;

/// A startup experiment, set up and running.
pub struct Startup {
    /// As run: `{dir}` substituted.
    cfg: StartupConfig,
    /// As stored: `{dir}` unsubstituted, so a resumed experiment on a new
    /// temporary lab (another mount point) substitutes its own.
    stored: StartupConfig,
    schedulers: Vec<String>,
    /// Prepared (an activity's files looked up).
    target: Target,
    /// What its runs are stored under.
    label: String,
    spec: LaunchSpec,
    prefetcher: Option<Prefetcher>,
    /// Launching `true` the same way, ns.
    overhead_ns: Vec<u64>,
    /// The files the target read in the first start of this run of the
    /// experiment (none with `--evict`, `--cold none`, or an activity).
    learnt: std::sync::Mutex<Vec<std::path::PathBuf>>,
    /// True until that first start has been recorded.
    learn: std::sync::atomic::AtomicBool,
    /// Every file range mapped before the target first ran.
    maps_before: files::Maps,
    /// An activity's dexopt state, read once before the matrix.
    dexopt: Option<Value>,
    /// Its state as last read (before each cell): a change since is a
    /// background dexopt's.
    dexopt_seen: std::sync::Mutex<Vec<crate::targets::android::Dexopt>>,
    /// The process group of the last start (0: none yet), waited for
    /// before the next.
    last_group: std::sync::atomic::AtomicI32,
    /// The cgroup hierarchy a plan with `cg.*` settings runs in.
    hier: Option<crate::control::Hierarchy>,
    /// The settings that do nothing in some cell, and why (said before
    /// the plan runs, stored as `inert`).
    inert: Vec<crate::control::points::Inert>,
    /// Where a recipe's values come from (stored as `recipe_sources`).
    recipe_sources: Vec<String>,
    /// The place's filesystem's /sys/fs directory, for `fs.*` settings.
    fs_dir: Option<std::path::PathBuf>,
    /// Valid starts made per cell in this invocation, over its visits
    /// (rounds): a cell none of whose starts counted is said once.
    valid_starts: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

impl Body for Startup {
    type Config = StartupConfig;
    /// The harness overhead samples (ns): launching `true` through the
    /// same path as the target.
    type Summary = Vec<u64>;
    const KIND: ExperimentKind = ExperimentKind::Startup;
    const UNIT: &'static str = "starts";

    fn upgrade(stored: Value) -> Result<Value, serde_json::Error> {
        StartupConfig::upgrade(stored)
    }

    fn validate(cfg: &StartupConfig) -> Result<(), ExperimentError> {
        cfg.validate()?;
        setup::check_workloads(cfg)
    }

    fn place(cfg: &StartupConfig) -> PlaceRequest<'_> {
        PlaceRequest {
            place: &cfg.place,
            use_: PlaceUse::Files,
            dirty_limit_bytes: cfg.dirty_limit_bytes,
            dirty_limit_preferred: cfg.dirty_limit_preferred,
            // iolab's groups would escape a v1 throttle at the root: a
            // plan that sets cgroups gets the model where no backend was
            // asked (setup::check_cgroups refuses the throttle otherwise).
            throttle_unsuitable: (cfg.recipe.is_some()
                || cfg
                    .applied_points()
                    .iter()
                    .any(crate::control::Point::uses_cgroups))
            .then_some(
                "the plan sets cgroups, and cgroup v1's flat throttle would not limit iolab's groups",
            ),
        }
    }

    fn schedulers(cfg: &mut StartupConfig) -> Option<&mut Schedulers> {
        Some(&mut cfg.schedulers)
    }

    fn setup(cfg: StartupConfig, s: &Setup<'_>) -> Result<Startup, ExperimentError> {
        let (guard, place) = (s.guard, s.place);
        let schedulers = s.schedulers.to_vec();
        let mut cfg = cfg;
        let mut recipe_sources = Vec::new();
        if let Some(r) = cfg.recipe.take() {
            let mut facts = crate::control::recipe::Facts::probe(guard)?;
            facts.device = cfg.device_settings.clone();
            let design = r.design(&facts)?;
            for n in &design.sources {
                (s.announce)(&format!("recipe: source: {n}"));
            }
            for n in &design.notes {
                (s.announce)(&format!("recipe: {n}"));
            }
            recipe_sources = design.sources;
            cfg.points = design.points;
            cfg.validate()?;
        }
        cfg.iocost = setup::iocost_on(place)?;
        // A tunable no scheduler has is a typo, refused before anything
        // is said of the cells it would be left out of.
        for dev in &place.disks {
            setup::check_iosched_params(guard, dev, &schedulers, &cfg)?;
        }
        let mut inert = Vec::new();
        for sched in &schedulers {
            inert.extend(cfg.settings_for(sched).1);
            inert.extend(cfg.points_for(sched).1);
        }
        // Said once per scheduler and setting; stored per point.
        let mut said: Vec<(&str, &str)> = Vec::new();
        for i in &inert {
            if said.contains(&(i.scheduler.as_str(), i.setting.as_str())) {
                continue;
            }
            said.push((&i.scheduler, &i.setting));
            let points = inert
                .iter()
                .filter(|j| j.scheduler == i.scheduler && j.setting == i.setting)
                .count();
            let then = match i.point.as_str() {
                config::WHOLE_PLAN_LEFT_OUT => "left out of its cells".to_string(),
                config::WHOLE_PLAN_APPLIED => "set all the same, as asked".to_string(),
                _ if points == 1 => "its point runs as the point without it".to_string(),
                _ => format!("its {points} points run as the point without it"),
            };
            (s.announce)(&format!(
                "inert under {}: {} does nothing there ({}); {then}",
                i.scheduler, i.setting, i.reason,
            ));
        }
        setup::check_plan_size(&cfg, &schedulers, s.announce)?;
        if let Some(line) = plan::order_line(&cfg) {
            (s.announce)(&line);
        }
        let hier = setup::check_cgroups(guard, &cfg)?;
        let fs_dir = match (place.mountpoint.as_deref(), place.fs_dev.as_ref()) {
            (Some(m), Some(d)) => crate::control::apply::fs_dir(m, d),
            _ => None,
        };
        let applied_points = cfg.applied_points();
        crate::control::apply::check_fs(&applied_points, fs_dir.as_deref())?;
        // Every point names the same settings: the first's are all.
        let mount_names: Vec<&str> = applied_points
            .first()
            .into_iter()
            .flat_map(|p| p.0.iter().map(|(n, _)| n.as_str()))
            .filter(|n| n.starts_with("mount."))
            .collect();
        crate::control::mount::check_place(&mount_names, place.mountpoint.as_deref())?;
        let dir = place.files_dir()?;
        if place.stack.is_some() && !place.made {
            setup::fit_in_place(&mut cfg, &dir.join("iolab-load"))?;
        }
        if let Some(prep) = &cfg.prepare {
            setup::prepare(&prep.replace("{dir}", &dir.to_string_lossy()))?;
        }
        let stored = cfg.clone();
        cfg.target = cfg.target.at(dir);
        cfg.evict = cfg
            .evict
            .iter()
            .map(|p| {
                p.to_string_lossy()
                    .replace("{dir}", &dir.to_string_lossy())
                    .into()
            })
            .collect();
        // Checked once the preparation ran (it may create the target), but
        // before an experiment is stored that could never have a run.
        let mut target = cfg.target.clone();
        target.check()?;
        let mut dexopt = target.prepare()?;
        // Every check passed: say where the experiment runs (and, for a
        // slow lab, which backend and why).
        (s.announce)(&place.what);
        if let Target::Activity { .. } = target {
            // A long matrix must not time the screen out to a keyguard.
            (s.announce)(&crate::targets::device::stay_awake(guard)?);
            if let (Some(now), Some(before)) = (
                dexopt.as_mut(),
                s.resumed
                    .and_then(|c| c.get("dexopt"))
                    .filter(|d| !d.is_null()),
            ) {
                // Between sessions a charging phone may have recompiled it.
                let (b, n) = (
                    crate::targets::device::stored_entries(before),
                    crate::targets::device::stored_entries(now),
                );
                let (b, n) = match (b, n) {
                    (Ok(b), Ok(n)) => (b, n),
                    (Err(why), _) | (_, Err(why)) => {
                        (s.announce)(&why);
                        (Vec::new(), Vec::new())
                    }
                };
                if b != n {
                    let line = format!(
                        "dexopt changed since the experiment's last session: {} then, {} now (--compile applies only what it names); the report flags comparisons across it",
                        crate::targets::device::summary(&b),
                        crate::targets::device::summary(&n)
                    );
                    (s.announce)(&line);
                    now["changed_since_last_session"] = Value::String(line);
                }
            }
        }
        let dexopt_seen = match dexopt.as_ref().map(crate::targets::device::stored_entries) {
            Some(Ok(v)) => v,
            Some(Err(why)) => {
                (s.announce)(&why);
                Vec::new()
            }
            None => Vec::new(),
        };
        setup::limit_dirty(guard, place, &cfg)?;
        // What the starts run at before any cell applies its point (the
        // first start that learns the target's files, the overhead's).
        let fixed = crate::control::Point(cfg.settings.clone());
        let prio = |name: &str| fixed.get(name).and_then(|v| v.parse().ok());
        cfg.target_ioprio = prio("target.ioprio");
        cfg.load_ioprio = prio("load.ioprio");
        cfg.target_nice = fixed.get("target.nice").and_then(|v| v.parse().ok());
        let spec = launch_spec(&cfg, &target)?;
        if cfg.observe.has("explain") {
            // Before any target is forked: the kernel accounts a task's
            // delays only if it was on when the task was forked.
            crate::collect::delay_accounting(guard);
        }
        let stored_list = s
            .resumed
            .and_then(|c| c.get("prefetch_list"))
            .and_then(Value::as_str);
        setup::early_settings(guard, place, &cfg)?;
        let prefetcher = Prefetcher::prepare(guard, &cfg, &target, place, &spec, stored_list)?;
        // Before the target ever runs: what the machine already maps.
        let maps_before = files::Maps::scan(std::path::Path::new("/proc"))?;
        // An activity's app is forked by zygote, not by iolab: its
        // package's files stand for what it reads.
        let learn = cfg.cold != Cold::None
            && cfg.evict.is_empty()
            && !matches!(target, Target::Activity { .. });
        let overhead_ns = launch::harness_overhead(guard, 10)?;
        Ok(Startup {
            label: stored.target.label(),
            cfg,
            stored,
            schedulers,
            target,
            spec,
            prefetcher,
            overhead_ns,
            learnt: std::sync::Mutex::new(Vec::new()),
            learn: std::sync::atomic::AtomicBool::new(learn),
            maps_before,
            dexopt,
            dexopt_seen: std::sync::Mutex::new(dexopt_seen),
            last_group: std::sync::atomic::AtomicI32::new(0),
            hier,
            inert,
            recipe_sources,
            fs_dir,
            valid_starts: std::sync::Mutex::new(std::collections::HashMap::new()),
        })
    }

    fn stored(&self) -> Result<Vec<(&'static str, Value)>, ExperimentError> {
        Ok(vec![
            (
                "startup",
                to_json("the startup configuration", &self.stored)?,
            ),
            // An activity's compiled state after --compile (or as found):
            // how much code its starts read from storage.
            ("dexopt", self.dexopt.clone().unwrap_or(Value::Null)),
            ("inert", to_json("the inert settings", &self.inert)?),
            ("recipe_sources", serde_json::json!(self.recipe_sources)),
            (
                "prefetch_list",
                self.prefetcher
                    .as_ref()
                    .map_or(Value::Null, |p| Value::String(p.stored_text.clone())),
            ),
        ])
    }

    fn plan(&self, done: &StoredRuns) -> Vec<Cell> {
        plan::plan(&self.schedulers, &self.cfg, |s, w, r, point| {
            prefetch::rep_done(self.prefetch_config(), done, s, w, r, point)
        })
    }

    fn runs_in(&self, cells: &[Cell]) -> usize {
        cells
            .iter()
            .map(|c| {
                c.reps.len() * prefetch::variants(self.prefetch_config(), &c.workload, 1).len()
            })
            .sum()
    }

    fn run_cell(
        &mut self,
        ctx: &mut CellContext<'_>,
        cell: &Cell,
    ) -> Result<CellEnd, ExperimentError> {
        // A point's settings (and iolab's groups) last for its cell only:
        // the next point starts from the system's own state.
        let mark = match cell.variant {
            Some(_) => Some(ctx.guard.mark()?),
            None => None,
        };
        let end = cell::run_cell(self, ctx, cell);
        if let Some(m) = mark {
            for line in ctx.guard.undo_since(m) {
                if let Err(e) = line {
                    ctx.progress.note(&format!("after cell: {e}"));
                }
            }
        }
        end
    }

    fn summary(self) -> Vec<u64> {
        self.overhead_ns
    }
}

impl Startup {
    /// The prefetch dimension, when a list is loaded.
    fn prefetch_config(&self) -> Option<&PrefetchConfig> {
        self.cfg
            .prefetch
            .as_ref()
            .filter(|_| self.prefetcher.is_some())
    }

    /// The target's files as they are now: what the cold step evicts
    /// (`--cold evict`), what memory pressure measures, and whose residency
    /// says whether a start began cold. The `--evict` list when given, else
    /// the learnt files and the target's own (its executable or directory,
    /// listed again each time: it may have created or deleted some).
    fn files(&self) -> Vec<std::path::PathBuf> {
        if !self.cfg.evict.is_empty() {
            return self.target.files(&self.cfg.evict);
        }
        let mut out = self
            .learnt
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for f in self.target.files(&[]) {
            if !out.contains(&f) {
                out.push(f);
            }
        }
        out
    }

    /// The mean harness overhead, stored with every run.
    fn overhead_mean_ns(&self) -> u64 {
        self.overhead_ns.iter().sum::<u64>() / self.overhead_ns.len().max(1) as u64
    }
}

/// How each start is launched: the readiness and limits of `cfg` (checked
/// by [`StartupConfig::validate`]) for `target`.
fn launch_spec(cfg: &StartupConfig, target: &Target) -> Result<LaunchSpec, ExperimentError> {
    let ready = match &cfg.ready {
        ReadyWhen::Exit => Ready::Exit,
        ReadyWhen::Line { regex } => Ready::Line(regex::Regex::new(regex).map_err(|e| {
            iolab_sys::UsageError::new(format!("--ready-line {regex:?} is not a valid regex: {e}"))
        })?),
        ReadyWhen::File { path } => Ready::File(path.clone()),
        ReadyWhen::MemorySettled {
            min_bytes,
            growth_bytes,
            interval_s,
        } => Ready::Settled(crate::launch::Settle {
            min_bytes: *min_bytes,
            growth_bytes: *growth_bytes,
            interval: std::time::Duration::from_secs_f64(interval_s.clamp(0.01, 600.0)),
        }),
    };
    Ok(LaunchSpec {
        argv: target.argv_for(cfg.start_mode),
        ready,
        timeout: cfg.timeout(),
        ioprio: cfg.target_ioprio,
        nice: cfg.target_nice,
        // An activity's app is zygote's child: found by its package name.
        app: match target {
            Target::Activity { am, .. } => Some(am.package().to_string()),
            _ => None,
        },
        // Warm and hot starts keep the app's process: it is the app.
        app_live: cfg.start_mode != config::StartMode::Cold,
        app_uid: match target {
            Target::Activity { uid, .. } => *uid,
            _ => None,
        },
        app_hold: cfg.target_hold,
        full_line: match &cfg.full_ready_line {
            Some(re) => Some(regex::Regex::new(re).map_err(|e| {
                iolab_sys::UsageError::new(format!(
                    "--full-ready-line {re:?} is not a valid regex: {e}"
                ))
            })?),
            None => None,
        },
    })
}
