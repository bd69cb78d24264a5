//! Running the matrix: for each cell, set the scheduler and its tunables
//! (guarded), start the background load and let it warm up, then for each
//! repetition make the cache cold, launch and time the target, and commit
//! the run to the store before the next one starts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use iolab_guard::Guard;
use iolab_store::{BackgroundIo, ExperimentId, ExperimentReport, RunRecord, Status, Store};
use iolab_sys::block::BlockDev;
use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;
use regex::Regex;
use serde_json::json;

use super::background::Background;
use super::config::{Cold, ReadyWhen, StartupConfig};
use super::place::{self, Resolved};
use super::plan::{plan, total_runs, CellPlan};
use super::progress::Progress;
use super::StartupError;
use crate::launch::{self, LaunchSpec, Ready};

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
}

/// Runs (or resumes) a startup experiment.
pub fn run_startup(
    cfg: Option<StartupConfig>,
    opts: &RunOptions,
) -> Result<Finished, StartupError> {
    let store = Store::open(&opts.db)?;
    let (cfg, id, done) = match (opts.resume, cfg) {
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
            (cfg, Some(id), done)
        }
        (None, Some(cfg)) => (cfg, None, Default::default()),
        (None, None) => {
            return Err(
                UsageError::new("nothing to run: give a command after -- or --resume ID").into(),
            )
        }
    };
    validate(&cfg)?;
    check_workloads(&cfg)?;

    let guard = Guard::new();
    let place = place::resolve(&guard, &cfg.place, opts.force)?;
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
    if let Some(prog) = cfg.command.first() {
        if !which(prog).is_some_and(|p| p.is_file()) {
            return Err(UsageError::new(format!(
                "cannot find the target {prog:?}: expected an executable on PATH or a path to one"
            ))
            .into());
        }
    }
    let cfg = cfg;
    limit_dirty(&guard, &place, &cfg)?;
    if let Some(ra) = cfg.read_ahead_kb {
        guard.set_queue_attr(&place.dev, "read_ahead_kb", &ra.to_string())?;
    }
    let env =
        iolab_sys::environment::Environment::capture(Some(&place.dev), Some(&place.mountpoint));
    let overhead = launch::harness_overhead(&guard, 10)?;
    let overhead_mean = overhead.iter().sum::<u64>() / overhead.len().max(1) as u64;

    let id = match id {
        Some(id) => id,
        None => store.create_experiment(
            "startup",
            &opts.command_line,
            &json!({ "startup": stored, "place": place.what }),
            &serde_json::to_value(&env).unwrap_or_default(),
        )?,
    };
    store.set_status(id, Status::Running)?;

    let cells = plan(&cfg, |s, w, r| {
        done.contains(&iolab_store::RunKey::new(s, w, r))
    });
    // The command as given, `{dir}` unsubstituted: a resumed experiment
    // runs on a new temporary lab with another mount point, and its starts
    // must land in the same cells as those made before the interruption.
    let target = stored.command.join(" ");
    let progress = Progress::new(total_runs(&cells) as u64, opts.progress);
    let mut interrupted = false;
    for cell in &cells {
        if iolab_guard::stop_requested() {
            interrupted = true;
            break;
        }
        if !run_cell(
            &guard,
            &store,
            id,
            &target,
            &cfg,
            &place,
            cell,
            overhead_mean,
            &progress,
        )? {
            interrupted = true;
            break;
        }
    }
    progress.finish();
    store.set_status(
        id,
        if interrupted {
            Status::Interrupted
        } else {
            Status::Done
        },
    )?;
    let report = store.report(id)?;
    Ok(Finished {
        id,
        report,
        db: opts.db.clone(),
        interrupted,
        overhead_ns: overhead,
    })
}

fn validate(cfg: &StartupConfig) -> Result<(), UsageError> {
    if cfg.command.is_empty() {
        return Err(UsageError::new(
            "no target command: put it after --, e.g. iolab startup -- iolab app --dir /mnt/app",
        ));
    }
    if cfg.reps == 0 {
        return Err(UsageError::new("--reps must be at least 1"));
    }
    if cfg.timeout_s.is_nan() || cfg.timeout_s <= 0.0 {
        return Err(UsageError::new(
            "--timeout must be a positive number of seconds",
        ));
    }
    if let ReadyWhen::Line { regex } = &cfg.ready {
        Regex::new(regex).map_err(|e| {
            UsageError::new(format!("--ready-line {regex:?} is not a valid regex: {e}"))
        })?;
    }
    for p in [&cfg.target_ioprio, &cfg.load_ioprio].into_iter().flatten() {
        p.parse::<IoPrio>()
            .map_err(|e| UsageError::new(e.to_string()))?;
    }
    Ok(())
}

/// Every workload must parse (a named one or a readable job file, with the
/// `--load-option`s applied) before anything is measured: a typo found at
/// its cell would come after the lab, the preparation and the idle starts.
fn check_workloads(cfg: &StartupConfig) -> Result<(), StartupError> {
    for w in cfg.workloads.iter().filter(|w| *w != "idle") {
        iolab_load::jobs_from_spec(w, &cfg.load_options)?;
    }
    Ok(())
}

/// Runs the one-off preparation command; it must succeed.
fn prepare(script: &str) -> Result<(), StartupError> {
    // "iolab" in the script means this very binary, wherever it was built.
    let mut path = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.as_os_str().to_owned()))
        .unwrap_or_default();
    if let Some(p) = std::env::var_os("PATH") {
        path.push(":");
        path.push(p);
    }
    let out = std::process::Command::new("sh")
        .args(["-c", script])
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| UsageError::new(format!("cannot run the --prepare command with sh: {e}")))?;
    if !out.status.success() {
        return Err(UsageError::new(format!(
            "the --prepare command `{}` failed ({}): {}",
            script,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
        .into());
    }
    Ok(())
}

fn check_schedulers(dev: &BlockDev, cfg: &StartupConfig) -> Result<(), StartupError> {
    let avail = dev.schedulers()?.available;
    for s in &cfg.schedulers {
        if !avail.contains(s) {
            return Err(UsageError::new(format!(
                "scheduler {s:?} is not offered by {}: available are {} (or use --schedulers all)",
                dev.name,
                avail.join(", ")
            ))
            .into());
        }
    }
    Ok(())
}

/// Every `--iosched-param` must name a tunable of at least one scheduler of
/// the matrix, with a value it accepts: cells skip a tunable their
/// scheduler lacks, so a typo would otherwise silently measure defaults.
/// Checked by switching to each scheduler and setting the values (guarded,
/// as the cells do; each cell sets its scheduler and values again).
fn check_iosched_params(
    guard: &Guard,
    dev: &BlockDev,
    cfg: &StartupConfig,
) -> Result<(), StartupError> {
    if cfg.iosched_params.is_empty() {
        return Ok(());
    }
    let mut used = vec![false; cfg.iosched_params.len()];
    let mut offered = Vec::new();
    for s in &cfg.schedulers {
        guard.set_scheduler(dev, s)?;
        let have: Vec<String> = dev.iosched_tunables().into_iter().map(|(k, _)| k).collect();
        for ((k, v), used) in cfg.iosched_params.iter().zip(used.iter_mut()) {
            if have.contains(k) {
                *used = true;
                let path = dev.queue_path("iosched").join(k);
                let current = std::fs::read_to_string(&path).unwrap_or_default();
                guard.set_iosched_param(dev, k, v).map_err(|e| {
                    UsageError::new(format!(
                        "--iosched-param {k}={v}: {s} on {} refused the value ({e}); expected a value like its current one, {}",
                        dev.name,
                        current.trim()
                    ))
                })?;
            }
        }
        offered.push(format!(
            "{s}: {}",
            if have.is_empty() {
                "none".to_string()
            } else {
                have.join(", ")
            }
        ));
    }
    if let Some(((k, _), _)) = cfg.iosched_params.iter().zip(&used).find(|(_, u)| !**u) {
        return Err(UsageError::new(format!(
            "--iosched-param {k}: no scheduler of the matrix has a tunable {k:?}; they have {}",
            offered.join("; ")
        ))
        .into());
    }
    Ok(())
}

/// Caps the lab's dirty page cache (bdi `max_bytes` + `strict_limit`) so
/// that the `sync` before each cold start is bounded on slow storage: with
/// 24 GiB of RAM the global limits allow gigabytes of dirty data, minutes of
/// writeback at phone speed, which no phone has.
fn limit_dirty(guard: &Guard, place: &Resolved, cfg: &StartupConfig) -> Result<(), StartupError> {
    let limit = cfg
        .dirty_limit_bytes
        .or_else(|| place.bw_bytes.map(|bw| (2 * bw).max(16 << 20)));
    let Some(limit) = limit else { return Ok(()) };
    if !Path::new("/sys/class/bdi")
        .join(place.dev.devno()?)
        .join("max_bytes")
        .exists()
    {
        eprintln!("iolab: note: this kernel has no per-device dirty limit (bdi max_bytes); sync before each start may be slow");
        return Ok(());
    }
    guard.set_bdi_dirty_limit(&place.dev, limit)?;
    Ok(())
}

/// Runs one cell; returns false when a stop was requested mid-cell.
#[allow(clippy::too_many_arguments)]
fn run_cell(
    guard: &Guard,
    store: &Store,
    id: ExperimentId,
    target: &str,
    cfg: &StartupConfig,
    place: &Resolved,
    cell: &CellPlan,
    overhead_ns: u64,
    progress: &Progress,
) -> Result<bool, StartupError> {
    guard.set_scheduler(&place.dev, &cell.scheduler)?;
    let mut tunables = Vec::new();
    for (k, v) in &cfg.iosched_params {
        if place.dev.queue_path("iosched").join(k).exists() {
            guard.set_iosched_param(&place.dev, k, v)?;
            tunables.push((k.clone(), v.clone()));
        }
    }
    let all_tunables = place.dev.iosched_tunables();
    progress.cell(&cell.scheduler, &cell.workload);

    let load_prio = cfg
        .load_ioprio
        .as_deref()
        .map(str::parse::<IoPrio>)
        .transpose()
        .map_err(|e| UsageError::new(e.to_string()))?;
    let load_dir = place.dir.join("iolab-load");
    std::fs::create_dir_all(&load_dir).map_err(|e| iolab_sys::SysError::io(&load_dir, e))?;
    let mut bg = Background::start(
        &cell.workload,
        &load_dir,
        &cfg.load_options,
        load_prio,
        guard,
    )?;
    if bg.is_some() && !sleep_unless_stopped(cfg.warmup(&cell.scheduler)) {
        if let Some(b) = bg.take() {
            b.stop();
        }
        return Ok(false);
    }
    let spec = launch_spec(cfg)?;
    let evict = evict_list(cfg);
    for &rep in &cell.reps {
        if iolab_guard::stop_requested() {
            if let Some(b) = bg.take() {
                b.stop();
            }
            return Ok(false);
        }
        progress.rep(rep);
        make_cold(guard, cfg.cold, &evict)?;
        let started_at = iolab_store::rfc3339_now();
        let before = iolab_sys::diskstats::read_device(Path::new("/proc"), &place.dev.name)?;
        let t0 = Instant::now();
        let outcome = launch::launch(guard, &spec)?;
        let window = t0.elapsed().as_secs_f64();
        let after = iolab_sys::diskstats::read_device(Path::new("/proc"), &place.dev.name)?;
        if outcome.interrupted {
            if let Some(b) = bg.take() {
                b.stop();
            }
            return Ok(false);
        }
        if cell.workload == "idle" && rep == 1 && outcome.failed() {
            return Err(UsageError::new(format!(
                "the target failed on the idle baseline (exit {:?}); fix the command first. Its last output:\n{}",
                outcome.exit_code, outcome.output_tail
            ))
            .into());
        }
        let background = match (&before, &after) {
            (Some(b), Some(a)) => {
                let d = a.since(b);
                Some(BackgroundIo {
                    read_bytes: d.read_bytes(),
                    write_bytes: d.write_bytes(),
                    seconds: window,
                })
            }
            _ => None,
        };
        let record = RunRecord {
            scheduler: cell.scheduler.clone(),
            workload: cell.workload.clone(),
            rep,
            target: target.to_string(),
            started_at,
            duration_ns: outcome.duration_ns,
            censored: outcome.censored,
            timeout_ns: (cfg.timeout_s * 1e9) as u64,
            exit_code: outcome.exit_code,
            signal: outcome.signal,
            overhead_ns: Some(overhead_ns),
            background,
            config: json!({
                "scheduler": cell.scheduler,
                "iosched_params_set": tunables,
                "iosched_tunables": all_tunables,
                "warmup_s": cfg.warmup(&cell.scheduler).as_secs_f64(),
                "cold": cfg.cold,
                "target_ioprio": cfg.target_ioprio,
                "target_nice": cfg.target_nice,
                "load_ioprio": cfg.load_ioprio,
            }),
            extra: json!({
                "exit_ns": outcome.exit_ns,
                "ready_ns": outcome.ready_ns,
                "failed": outcome.failed(),
                "output_tail": if outcome.failed() { outcome.output_tail.clone() } else { String::new() },
            }),
        };
        store.record_run(id, &record)?;
        progress.done_run(outcome.duration_ns, outcome.censored);
    }
    if let Some(b) = bg.take() {
        b.stop();
    }
    Ok(true)
}

fn launch_spec(cfg: &StartupConfig) -> Result<LaunchSpec, StartupError> {
    let ready = match &cfg.ready {
        ReadyWhen::Exit => Ready::Exit,
        ReadyWhen::Line { regex } => {
            Ready::Line(Regex::new(regex).map_err(|e| UsageError::new(e.to_string()))?)
        }
        ReadyWhen::File { path } => Ready::File(path.clone()),
    };
    Ok(LaunchSpec {
        argv: cfg.command.clone(),
        ready,
        timeout: Duration::from_secs_f64(cfg.timeout_s),
        ioprio: cfg
            .target_ioprio
            .as_deref()
            .map(str::parse::<IoPrio>)
            .transpose()
            .map_err(|e| UsageError::new(e.to_string()))?,
        nice: cfg.target_nice,
    })
}

/// Files to evict for `--cold evict`: the listed paths (directories
/// recursively), else the target's executable.
fn evict_list(cfg: &StartupConfig) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let app_dir = || {
        // The built-in app: its --dir holds every file it reads.
        (cfg.command.get(1).map(String::as_str) == Some("app"))
            .then(|| {
                cfg.command
                    .windows(2)
                    .find(|w| w[0] == "--dir")
                    .map(|w| PathBuf::from(&w[1]))
            })
            .flatten()
    };
    let roots: Vec<PathBuf> = if !cfg.evict.is_empty() {
        cfg.evict.clone()
    } else if let Some(dir) = app_dir() {
        vec![dir]
    } else {
        cfg.command
            .first()
            .and_then(|p| which(p))
            .into_iter()
            .collect()
    };
    for r in roots {
        collect_files(&r, &mut out);
    }
    out
}

fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        return Some(PathBuf::from(prog));
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file())
}

fn collect_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                collect_files(&e.path(), out);
            }
        }
    } else if p.is_file() {
        out.push(p.to_path_buf());
    }
}

fn make_cold(guard: &Guard, cold: Cold, evict: &[PathBuf]) -> Result<(), StartupError> {
    match cold {
        Cold::DropCaches => guard.drop_caches()?,
        Cold::Evict => iolab_sys::pagecache::evict(evict)?,
        Cold::None => {}
    }
    Ok(())
}

/// Sleeps, waking early (false) when a stop is requested.
fn sleep_unless_stopped(d: Duration) -> bool {
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
