//! One cell of the matrix: scheduler and tunables, background load and
//! warm-up, then every repetition launched, timed and committed.

use std::path::Path;
use std::time::{Duration, Instant};

use iolab_guard::Guard;
use iolab_store::{BackgroundIo, ExperimentId, RunOutcome, RunRecord, Store};
use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;
use regex::Regex;
use serde_json::json;

use super::background::Background;
use super::config::{Cold, ReadyWhen, StartupConfig};
use super::observe::{self, Observers};
use super::place::Resolved;
use super::plan::CellPlan;
use super::prefetch::{variant_of, DoneRuns, PrefetchMode, Prefetcher};
use super::progress::Progress;
use super::StartupError;
use crate::launch::{self, LaunchSpec, Ready};

use super::cold::make_cold;
use crate::target::Target;

/// How a cell ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CellEnd {
    /// Every repetition was made.
    Done,
    /// Ctrl-C/SIGTERM: the experiment stops (resumable).
    Interrupted,
    /// The cell could not go on (its background load ended): why. The
    /// runs already made are stored; the experiment goes on with the next
    /// cell.
    Stopped(String),
}

/// A start shorter than this is not judged by its background traffic: a
/// load can legitimately move nothing for a few hundred milliseconds.
const MIN_WINDOW_FOR_TRAFFIC_CHECK_S: f64 = 1.0;

/// Runs one cell.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_cell(
    guard: &Guard,
    store: &Store,
    id: ExperimentId,
    (label, target): (&str, &Target),
    cfg: &StartupConfig,
    place: &Resolved,
    cell: &CellPlan,
    overhead_ns: u64,
    progress: &Progress,
    prefetch: Option<&Prefetcher>,
    done: &DoneRuns,
) -> Result<CellEnd, StartupError> {
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
    // The device's traffic during the warm-up: the rate the load reaches
    // on its own, stored with every start for comparison.
    let before_warmup = iolab_sys::diskstats::read_device(Path::new("/proc"), &place.dev.name)?;
    let warmup = cfg.warmup(&cell.scheduler);
    if bg.is_some() && !sleep_unless_stopped(warmup) {
        if let Some(b) = bg.take() {
            b.stop();
        }
        return Ok(CellEnd::Interrupted);
    }
    let after_warmup = iolab_sys::diskstats::read_device(Path::new("/proc"), &place.dev.name)?;
    let warmup_rate = match (&bg, before_warmup, after_warmup) {
        (Some(_), Some(b), Some(a)) if !warmup.is_zero() => {
            let d = a.since(&b);
            let secs = warmup.as_secs_f64();
            Some((d.read_bytes() as f64 / secs, d.write_bytes() as f64 / secs))
        }
        _ => None,
    };
    let spec = launch_spec(cfg)?;
    let ctx = Start {
        guard,
        store,
        id,
        cfg,
        target,
        place,
        cell,
        overhead_ns,
        spec: &spec,
        tunables: &tunables,
        all_tunables: &all_tunables,
        warmup_rate,
    };
    for &rep in &cell.reps {
        progress.rep(rep);
        let variants = match prefetch {
            Some(p) => p.variants(&cell.workload, rep),
            None => vec![None],
        };
        for mode in variants {
            let key = (
                label.to_string(),
                mode.map(variant_of),
                cell.scheduler.clone(),
                cell.workload.clone(),
                rep,
            );
            if done.contains(&key) {
                continue;
            }
            let pre = prefetch.zip(mode);
            let cell_name = format!("{} {}", cell.scheduler, cell.workload);
            let end = if iolab_guard::stop_requested() {
                CellEnd::Interrupted
            } else if let Some(why) = bg.as_ref().and_then(Background::ended) {
                CellEnd::Stopped(format!("cell {cell_name} stopped before rep {rep}: {why}"))
            } else {
                match ctx.start(&key.0, rep, pre, bg.as_ref(), progress)? {
                    CellEnd::Stopped(why) => CellEnd::Stopped(format!(
                        "cell {cell_name} stopped during rep {rep} (stored as invalid): {why}"
                    )),
                    other => other,
                }
            };
            if end != CellEnd::Done {
                if let Some(b) = bg.take() {
                    b.stop();
                }
                return Ok(end);
            }
        }
    }
    if let Some(b) = bg.take() {
        b.stop();
    }
    Ok(CellEnd::Done)
}

/// What every start of a cell shares.
struct Start<'a> {
    guard: &'a Guard,
    store: &'a Store,
    id: ExperimentId,
    cfg: &'a StartupConfig,
    target: &'a Target,
    place: &'a Resolved,
    cell: &'a CellPlan,
    overhead_ns: u64,
    spec: &'a LaunchSpec,
    tunables: &'a [(String, String)],
    all_tunables: &'a [(String, String)],
    /// Device read and write bytes/s during the warm-up (loaded cells).
    warmup_rate: Option<(f64, f64)>,
}

impl Start<'_> {
    /// One start: cold cache, prefetch (before, or a helper in parallel),
    /// launch and time, commit. `Done` when the cell may go on.
    fn start(
        &self,
        label: &str,
        rep: u32,
        prefetch: Option<(&Prefetcher, PrefetchMode)>,
        bg: Option<&Background>,
        progress: &Progress,
    ) -> Result<CellEnd, StartupError> {
        let (cfg, cell, place) = (self.cfg, self.cell, self.place);
        // Listed again for every start: the target may have created or
        // deleted files (a database journal) since the last one.
        // The target's files: what `--cold evict` evicts and what
        // `--memory-pressure` measures.
        let files = match (cfg.cold, cfg.memory_pressure) {
            (Cold::Evict, _) | (_, Some(_)) => self.target.files(&cfg.evict),
            _ => Vec::new(),
        };
        make_cold(self.guard, cfg.cold, &files, &place.mountpoint)?;
        let pressure = match cfg.memory_pressure {
            Some(p) => Some(
                crate::pressure::apply(self.guard, p, &files)
                    .map_err(|e| iolab_sys::SysError::io(Path::new("memory pressure helper"), e))?,
            ),
            None => None,
        };
        let started_at = iolab_store::rfc3339_now();
        let running = prefetch.map(|(p, m)| p.begin(m)).transpose()?;
        let observers = Observers::start(self.guard, cfg.observe, &place.dev.name)?;
        let before = iolab_sys::diskstats::read_device(Path::new("/proc"), &place.dev.name)?;
        let watch = self.target.watch(self.guard)?;
        let t0 = Instant::now();
        let guard = self.guard;
        let (outcome, explainer) = launch::launch_observed(
            guard,
            self.spec,
            cfg.observe
                .explain
                .then_some(move |pid| observe::explain_from(guard, pid)),
        )?;
        let window = t0.elapsed().as_secs_f64();
        let after = iolab_sys::diskstats::read_device(Path::new("/proc"), &place.dev.name)?;
        let mut docs = observers.stop()?;
        if let Some(ex) = explainer {
            let tree_cpu = outcome.usage.map(|u| u.user_ns + u.sys_ns);
            let attribution = ex?.finish_with_cpu(tree_cpu)?;
            docs.push((
                "explain",
                serde_json::to_value(&attribution).unwrap_or_default(),
            ));
        }
        let prefetched = running.map(|r| r.finish()).transpose()?;
        // The target's own figure, where it has one (an activity: the
        // system's TotalTime or its --ready-logcat line; am's own wall
        // time, its JVM start included, stays in the run's extra). Asked
        // before an interruption returns: it also ends the target's watch.
        let mut outcome = outcome;
        let am = self
            .target
            .measure(guard, &mut outcome, watch, t0, self.spec.timeout)?;
        if outcome.interrupted {
            return Ok(CellEnd::Interrupted);
        }
        // The device's traffic during the start, less what the target
        // itself read and dirtied (its wait4 rusage): what the load achieved.
        let device = match (&before, &after) {
            (Some(b), Some(a)) => Some(a.since(b)),
            _ => None,
        };
        let own = outcome.usage.unwrap_or_default();
        let background = device.as_ref().map(|d| BackgroundIo {
            read_bytes: d.read_bytes().saturating_sub(own.read_bytes),
            write_bytes: d.write_bytes().saturating_sub(own.write_bytes),
            seconds: window,
        });
        // Was the cell's condition true during this start? The load must
        // still be running, and must have moved some bytes on the device.
        let load_problem = bg.and_then(|b| {
            if let Some(why) = b.ended() {
                return Some(why);
            }
            let moved = background.map(|b| b.read_bytes + b.write_bytes);
            match (moved, self.warmup_rate) {
                (Some(0), Some((r, w))) if window >= MIN_WINDOW_FOR_TRAFFIC_CHECK_S && r + w > 0.0 => {
                    Some(format!(
                        "the background load moved no bytes on the device during this {window:.1} s start \
                         (during the warm-up: {} read, {} written per second)",
                        iolab_sys::units::format_bytes(r as u64),
                        iolab_sys::units::format_bytes(w as u64)
                    ))
                }
                _ => None,
            }
        });
        let (run_outcome, reason) = match (&outcome.failure, &load_problem) {
            (_, Some(why)) => (RunOutcome::Invalid, Some(why.clone())),
            (Some(why), None) => (RunOutcome::Failed, Some(why.clone())),
            (None, None) if outcome.censored => (RunOutcome::Censored, None),
            (None, None) => (RunOutcome::Ok, None),
        };
        let mut record = RunRecord {
            scheduler: cell.scheduler.clone(),
            workload: cell.workload.clone(),
            rep,
            target: label.to_string(),
            started_at,
            duration_ns: outcome.duration_ns,
            censored: outcome.censored,
            timeout_ns: (cfg.timeout_s * 1e9) as u64,
            exit_code: outcome.exit_code,
            signal: outcome.signal,
            overhead_ns: Some(self.overhead_ns),
            background,
            config: json!({
                "scheduler": cell.scheduler,
                "iosched_params_set": self.tunables,
                "iosched_tunables": self.all_tunables,
                "warmup_s": cfg.warmup(&cell.scheduler).as_secs_f64(),
                "cold": cfg.cold,
                "target_ioprio": cfg.target_ioprio,
                "target_nice": cfg.target_nice,
                "load_ioprio": cfg.load_ioprio,
                "bg_warmup_read_bw_bytes": self.warmup_rate.map(|r| r.0),
                "bg_warmup_write_bw_bytes": self.warmup_rate.map(|r| r.1),
            }),
            extra: json!({
                "device_read_bytes": device.as_ref().map(|d| d.read_bytes()),
                "device_write_bytes": device.as_ref().map(|d| d.write_bytes()),
                "target": outcome.usage,
                "exit_ns": outcome.exit_ns,
                "ready_ns": outcome.ready_ns,
                "failed": outcome.failed(),
                "output_tail": if outcome.failed() { outcome.output_tail.clone() } else { String::new() },
                "memory_pressure": pressure,
                "am_start": am,
            }),
            outcome: run_outcome,
            reason: reason.clone(),
            variant: prefetch.map(|(_, m)| variant_of(m)),
        };
        if let Some((_, m)) = prefetch {
            record.config["prefetch"] = json!(m);
        }
        let run_id = self.store.record_run(self.id, &record)?;
        for (kind, doc) in &docs {
            self.store.add_artifact(run_id, kind, doc)?;
        }
        if let (Some((p, m)), Some(report)) = (prefetch, &prefetched) {
            self.store
                .add_artifact(run_id, "prefetch", &p.artifact(m, report))?;
        }
        progress.done_run(outcome.duration_ns, outcome.censored);
        if let Some(why) = load_problem {
            return Ok(CellEnd::Stopped(why));
        }
        // Stored first (nothing measured is lost), then: a command that
        // fails on its very first idle start is almost surely wrong, and
        // the whole matrix would only repeat the failure.
        if cell.workload == "idle" && rep == 1 && outcome.failed() {
            return Err(UsageError::new(format!(
                "the target failed on its first idle start ({}); fix the command first. Its last output:\n{}",
                reason.unwrap_or_default(),
                last_lines(&outcome.output_tail, 10)
            ))
            .into());
        }
        Ok(CellEnd::Done)
    }
}

pub(super) fn launch_spec(cfg: &StartupConfig) -> Result<LaunchSpec, StartupError> {
    let ready = match &cfg.ready {
        ReadyWhen::Exit => Ready::Exit,
        ReadyWhen::Line { regex } => {
            Ready::Line(Regex::new(regex).map_err(|e| UsageError::new(e.to_string()))?)
        }
        ReadyWhen::File { path } => Ready::File(path.clone()),
        ReadyWhen::MemorySettled {
            min_bytes,
            growth_bytes,
            interval_s,
        } => Ready::Settled(crate::launch::Settle {
            min_bytes: *min_bytes,
            growth_bytes: *growth_bytes,
            interval: Duration::try_from_secs_f64(*interval_s).map_err(|_| {
                UsageError::new(format!(
                    "--ready-rss-stable interval {interval_s}: expected positive seconds"
                ))
            })?,
        }),
    };
    Ok(LaunchSpec {
        argv: cfg.command.clone(),
        ready,
        timeout: Duration::try_from_secs_f64(cfg.timeout_s).map_err(|_| {
            UsageError::new(format!(
                "--timeout {}: expected a positive number of seconds",
                cfg.timeout_s
            ))
        })?,
        ioprio: cfg
            .target_ioprio
            .as_deref()
            .map(str::parse::<IoPrio>)
            .transpose()
            .map_err(|e| UsageError::new(e.to_string()))?,
        nice: cfg.target_nice,
    })
}

/// Sleeps, waking early (false) when a stop is requested.
pub(super) fn sleep_unless_stopped(d: Duration) -> bool {
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

/// The last `n` lines of `text`.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
