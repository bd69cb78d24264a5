//! One start: cold cache, memory pressure, prefetch (before, or a helper
//! in parallel), collectors attached to the held target, launch and time,
//! then the run and its documents committed. Whether the cell's condition
//! held (its background load still running and moving bytes) decides
//! whether the start is a sample.

use std::path::Path;
use std::time::Instant;

use iolab_store::{BackgroundIo, RunOutcome, RunRecord};
use serde_json::json;

use super::background::Background;
use super::cold::make_cold;
use super::config::{Cold, StartMode};
use super::files::{self, ColdCheck};
use super::prefetch::{PrefetchMode, Prefetcher};
use super::Startup;
use crate::collect::{Observe, Observed, Observers, RunEnd, Scope, Tuning};
use crate::engine::{Cell, CellContext};
use crate::error::to_json;
use crate::launch;
use crate::ExperimentError;
use iolab_cache::prefetch::PrefetchReport;

/// Start-ups last seconds: sample CPU and pressure often enough to see
/// their shape; a start's requests fit a large trace buffer.
const TUNING: Tuning = Tuning {
    cpu_interval: std::time::Duration::from_millis(200),
    trace_buffer_kib: 32 * 1024,
};

/// What every start of a cell shares.
pub(super) struct Conditions<'a> {
    pub cell: &'a Cell,
    /// The tunables this cell set.
    pub tunables: &'a [(String, String)],
    /// Every tunable of the cell's scheduler, as it was.
    pub all_tunables: &'a [(String, String)],
    /// The load's read and write bytes/s during the warm-up, by its own
    /// counters (loaded cells).
    pub warmup_rate: Option<(f64, f64)>,
    /// The load's completions/s during the warm-up, where it counts them.
    pub warmup_ios_per_s: Option<f64>,
    /// iolab's groups, when the plan has cgroup settings: each target is
    /// put in its own before it runs.
    pub groups: Option<&'a crate::control::Groups>,
    /// Which of the cell's settings the kernel did not take.
    pub not_applied: Option<String>,
    /// An activity's compiled state when the cell began.
    pub dexopt: Option<String>,
    /// How it had changed since the cell before (a background dexopt).
    pub dexopt_changed: Option<String>,
}

/// How a start ended, once stored.
pub(super) enum StartEnd {
    /// Stored; the cell goes on.
    Stored,
    /// Ctrl-C/SIGTERM during the start: nothing stored.
    Interrupted,
    /// Stored as invalid: the cell's load ended or moved nothing.
    LoadProblem(String),
    /// Stored as invalid: the start was not what the cell asked for (its
    /// files were still cached after the cold step, am reported another
    /// kind of launch, or an option asked for the app's own process did
    /// not reach it); the cell goes on.
    Invalid(String),
    /// Stored as failed, and it was the first idle start.
    FirstIdleFailed {
        /// Why it failed.
        reason: String,
        /// Its output's tail.
        tail: String,
    },
}

/// One start of repetition `rep`, with `prefetch` when a variant has one,
/// in four phases: the conditions made and checked ([`prepare`]), the
/// launch under its observers ([`launch_observed`]), the verdict on what
/// held ([`judge`]), and the stored run ([`store`]).
pub(super) fn start(
    st: &Startup,
    ctx: &mut CellContext<'_>,
    c: &Conditions<'_>,
    rep: u32,
    prefetch: Option<(&Prefetcher, PrefetchMode)>,
    bg: Option<&Background>,
) -> Result<(StartEnd, Option<iolab_store::RunId>), ExperimentError> {
    let prepared = prepare(st, ctx)?;
    let mut launched = launch_observed(st, ctx, c, prefetch, bg, prepared.learning)?;
    if launched.outcome.interrupted {
        return Ok((StartEnd::Interrupted, None));
    }
    let verdict = judge(st, c, bg, &prepared, &launched);
    let run_id = store(
        st,
        ctx,
        c,
        rep,
        prefetch,
        &prepared,
        &mut launched,
        &verdict,
    )?;
    let Verdict {
        load_problem,
        not_the_mode,
        not_applied,
        ..
    } = verdict;
    if let Some(why) = load_problem {
        return Ok((StartEnd::LoadProblem(why), Some(run_id)));
    }
    let outcome = launched.outcome;
    if let (true, Some(reason)) = (c.cell.workload == "idle" && rep == 1, outcome.failure) {
        return Ok((
            StartEnd::FirstIdleFailed {
                reason,
                tail: outcome.output_tail,
            },
            Some(run_id),
        ));
    }
    if let Some(why) = prepared.not_cold.or(not_the_mode).or(not_applied) {
        return Ok((StartEnd::Invalid(why), Some(run_id)));
    }
    Ok((StartEnd::Stored, Some(run_id)))
}

/// The conditions of one start, made and checked before it.
struct Prepared {
    settled: super::settle::Settled,
    /// The start mode asked for could not be set up (a hot start's
    /// activity never stopped).
    not_the_mode: Option<String>,
    cold: Option<ColdCheck>,
    /// Why the start is not verified cold, when it is not.
    not_cold: Option<String>,
    /// The learning start measured none of the target's own files.
    cold_unverified: bool,
    pressure: Option<crate::pressure::FillReport>,
    /// This start learns the target's files.
    learning: bool,
    /// An activity's device found asleep and woken before the start.
    screen: Option<crate::targets::device::Woke>,
}

/// Settles the machine, puts the target in the state its start mode
/// starts from, makes the cache cold (and checks it) and applies memory
/// pressure.
fn prepare(st: &Startup, ctx: &mut CellContext<'_>) -> Result<Prepared, ExperimentError> {
    let (cfg, guard) = (&st.cfg, ctx.guard);
    // Listed again for every start: the target may have created or
    // deleted files (a database journal) since the last one. The target's
    // files: what `--cold evict` evicts and what `--memory-pressure`
    // measures.
    let prev = st.last_group.swap(0, std::sync::atomic::Ordering::Relaxed);
    let pause = std::time::Duration::from_secs_f64(cfg.pause_s.unwrap_or(0.0).clamp(0.0, 3600.0));
    let settled = super::settle::settle((prev > 0).then_some(prev), ctx.place.mount()?, pause)?;
    if let Some(why) = settled.problem() {
        ctx.progress.note(&why);
    }
    // A screen that timed out is woken and its keyguard dismissed (an
    // activity behind it is not drawn): after the pause, before the cold
    // step, so what waking does is over before the start.
    let screen = match st.target {
        crate::targets::Target::Activity { .. } => crate::targets::device::wake()?,
        _ => None,
    };
    if let Some(w) = &screen {
        ctx.progress.note(&w.note());
    }
    let screen_problem = screen
        .as_ref()
        .and_then(crate::targets::device::Woke::problem);

    // A cold or warm start is a new process: an activity's app, which
    // outlives `am start`, is stopped first. A hot start brings it back
    // from the background instead.
    // A warm start keeps the process and makes the activity again (am
    // --activity-clear-task); a hot one brings back an activity the
    // system has stopped, waited for here, outside the start's window.
    let mut not_the_mode: Option<String> = None;
    match cfg.start_mode {
        StartMode::Hot => {
            st.target.to_background()?;
            not_the_mode = st.target.wait_stopped(HOT_STOP_TIMEOUT)?;
        }
        StartMode::Warm => st.target.to_background()?,
        StartMode::Cold if cfg.cold != Cold::None => st.target.stop()?,
        StartMode::Cold => {}
    }
    let files = match (cfg.cold, cfg.memory_pressure) {
        (Cold::None, None) => Vec::new(),
        _ => st.files(),
    };
    let step = make_cold(guard, cfg.cold, &files, ctx.place.mount()?)?;
    // Cold is measured, not assumed: a page mapped by a live process (a
    // daemon of the target's, the same app open elsewhere) survives both
    // drop_caches and fadvise.
    let cold = (cfg.cold != Cold::None)
        .then(|| ColdCheck::measure(&files, &st.maps_before))
        .transpose()?
        .map(|c| ColdCheck { step, ..c });
    // The experiment's first start learns the target's files (what later
    // cold checks measure); before it only the target's own executable is
    // known, which may be nothing measurable (a shell in an initramfs).
    let learning = st.learn.load(std::sync::atomic::Ordering::Relaxed);
    let not_cold = cold.as_ref().and_then(|c| {
        // A cold start nothing could be measured of is not verified cold,
        // unless it is the one that learns what to measure (stored as a
        // warning in its cold check).
        (c.files == 0 && !learning)
            .then(|| {
                "cold start not verified: none of the target's files could be measured (mincore) after the cold step; name them with --evict".to_string()
            })
            .or_else(|| c.problem())
    });
    let cold_unverified = cold.as_ref().is_some_and(|c| c.files == 0 && learning);
    if let Some(why) = &not_cold {
        ctx.progress.note(why);
    }
    let pressure = cfg
        .memory_pressure
        .map(|p| crate::pressure::apply(guard, p, &files));
    let pressure = pressure
        .transpose()
        .map_err(|e| iolab_sys::SysError::io(Path::new("memory pressure helper"), e))?;
    Ok(Prepared {
        settled,
        not_the_mode: not_the_mode.or(screen_problem),
        cold,
        not_cold,
        cold_unverified,
        pressure,
        learning,
        screen,
    })
}

/// What one launch gave, with the counters around it.
struct Launched {
    /// Why the target is not in its cgroup, when it is not.
    group_problem: Option<String>,
    started_at: String,
    outcome: launch::Outcome,
    observed: Observed,
    prefetched: Option<PrefetchReport>,
    /// The target's files, when this start learnt them.
    learnt: Option<Vec<std::path::PathBuf>>,
    /// Seconds from launch to the end of the start's wait.
    window: f64,
    before: Option<iolab_sys::diskstats::DiskStat>,
    after: Option<iolab_sys::diskstats::DiskStat>,
    /// The load's own (read, write) bytes before and after.
    load_before: Option<(u64, u64)>,
    load_after: Option<(u64, u64)>,
    /// The load's threads that were in D state at the end.
    load_blocked: Vec<String>,
    /// The system's own record of the start (an activity's `am start`).
    am: Option<serde_json::Value>,
    /// The start was not of the mode asked for (by the system's word).
    mode_problem: Option<String>,
}

/// Launches the target held before exec, the collectors attached to it
/// (and to an app zygote forks), a prefetch running beside it when the
/// variant has one; then the target's own measure of its start.
fn launch_observed(
    st: &Startup,
    ctx: &mut CellContext<'_>,
    c: &Conditions<'_>,
    prefetch: Option<(&Prefetcher, PrefetchMode)>,
    bg: Option<&Background>,
    learning: bool,
) -> Result<Launched, ExperimentError> {
    let (cfg, guard) = (&st.cfg, ctx.guard);
    let started_at = iolab_store::rfc3339_now();
    let running = prefetch.map(|(p, m)| p.begin(m)).transpose()?;
    let before = ctx.place.diskstats()?;
    let load_before = bg.map(Background::io);
    let watch = st.target.watch(guard)?;
    let t0 = Instant::now();
    let devices = &ctx.place.disks;
    // Into the target's group while held before exec: none of its I/O is
    // charged elsewhere. A failure makes the start invalid, with the reason.
    let group_problem = std::sync::Mutex::new(None::<String>);
    // Every collector attaches to the held target before it runs its
    // first instruction; the time to attach is not the start's.
    // The experiment's first start also learns the target's files.
    let (outcome, hooked) = launch::launch_with_app(
        guard,
        &st.spec,
        Some(|pid| {
            st.last_group
                .store(pid, std::sync::atomic::Ordering::Relaxed);
            if let Some(g) = c.groups {
                if let Err(e) = g.put_target(pid) {
                    *group_problem.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!(
                        "the target could not be put in its cgroup {}: {e}",
                        g.target_dir().display()
                    ));
                }
            }
            let scope = Scope {
                guard,
                devices,
                target: Some(pid),
                tuning: TUNING,
            };
            let recorder = learning.then(|| files::begin(guard, pid, &st.spec.argv));
            (
                Observers::start(&scope, &cfg.observe, &Observe::default()),
                recorder,
            )
        }),
        // An activity's app, forked by zygote: the observers take it on.
        |(observers, _), pid| {
            if let Ok(o) = observers {
                if let Err(e) = o.follow(pid) {
                    *observers = Err(e);
                }
            }
        },
    )?;
    let (observers, recorder) = match hooked {
        Some((o, r)) => (Some(o), r),
        None => (None, None),
    };
    let window = t0.elapsed().as_secs_f64();
    let after = ctx.place.diskstats()?;
    let load_after = bg.map(Background::io);
    // No load, no threads of it blocked.
    let load_blocked = match bg {
        Some(b) => b.blocked()?,
        None => Vec::new(),
    };
    let end = RunEnd {
        target_cpu_ns: outcome.usage.map(|u| u.user_ns + u.sys_ns),
        window_ns: Some((
            outcome.started_mono_ns,
            outcome.started_mono_ns + outcome.duration_ns,
        )),
    };
    let observed = match observers {
        Some(o) => o?.stop(&end)?,
        None => Default::default(),
    };
    let prefetched = running.map(|r| r.finish()).transpose()?;
    let learnt = match recorder.map(|r| r.and_then(|r| files::finish(r, &st.spec.argv))) {
        Some(Ok(files)) if !outcome.interrupted => {
            st.learn.store(false, std::sync::atomic::Ordering::Relaxed);
            *st.learnt.lock().unwrap_or_else(|p| p.into_inner()) = files.clone();
            Some(files)
        }
        Some(Err(e)) => {
            st.learn.store(false, std::sync::atomic::Ordering::Relaxed);
            ctx.progress.note(&format!(
                "the target's files could not be learnt ({e}): each start's cold check covers its own files only"
            ));
            None
        }
        _ => None,
    };
    // The target's own figure, where it has one (an activity: the
    // system's TotalTime or its --ready-logcat line; am's own wall time,
    // its JVM start included, stays in the run's extra). Asked before an
    // interruption returns: it also ends the target's watch.
    let mut outcome = outcome;
    let (am, mode_problem) = st.target.measure(
        guard,
        &mut outcome,
        watch,
        t0,
        st.spec.timeout,
        cfg.start_mode,
    )?;
    Ok(Launched {
        group_problem: group_problem
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
        started_at,
        outcome,
        observed,
        prefetched,
        learnt,
        window,
        before,
        after,
        load_before,
        load_after,
        load_blocked,
        am,
        mode_problem,
    })
}

/// What held during one start, and what the run is therefore.
struct Verdict {
    ttid_ns: Option<u64>,
    ttfd_ns: Option<u64>,
    timed: bool,
    device: Option<iolab_sys::diskstats::DiskStat>,
    background: Option<BackgroundIo>,
    /// The load was dead or idle during the start: the cell ends.
    load_problem: Option<String>,
    /// The load moved no bytes but was live (stored as a note).
    load_note: Option<String>,
    not_the_mode: Option<String>,
    not_applied: Option<String>,
    run_outcome: RunOutcome,
    reason: Option<String>,
}

/// Never a silent "ok": whether the start was of the mode asked for, the
/// app's options reached it, it began cold, and the cell's load was live
/// while it ran; the start's times where it has them.
fn judge(
    st: &Startup,
    c: &Conditions<'_>,
    bg: Option<&Background>,
    prepared: &Prepared,
    l: &Launched,
) -> Verdict {
    let outcome = &l.outcome;
    // Never a silent "ok": the kind of start asked for, and every option
    // asked for the app's own process, must have held.
    let not_the_mode = prepared.not_the_mode.clone().or(l.mode_problem.clone());
    let not_applied = c
        .not_applied
        .clone()
        .or(l.group_problem.clone())
        .or_else(|| not_applied(&st.cfg, &st.spec, outcome));
    // Initial and full display, where the target has them: an activity's
    // TotalTime (am's) and its --ready-logcat line (reportFullyDrawn); a
    // command's ready criterion and its --full-ready-line.
    let timed = outcome.failure.is_none() && !outcome.censored;
    let (ttid_ns, ttfd_ns) = match &l.am {
        Some(a) => (
            a.pointer("/result/total_ms")
                .and_then(serde_json::Value::as_u64)
                .map(|ms| ms * 1_000_000),
            a.get("logcat")
                .filter(|l| !l.is_null())
                .map(|_| outcome.duration_ns),
        ),
        None => (timed.then_some(outcome.duration_ns), outcome.full_ready_ns),
    };
    // What the load itself read and wrote during the start, by its own
    // counters (so a target doing I/O on any disk, this one included,
    // neither adds to it nor cancels it); none in an idle cell. The
    // device's counters over the same window are kept beside it.
    let device = match (&l.before, &l.after) {
        (Some(b), Some(a)) => Some(a.since(b)),
        _ => None,
    };
    let window = l.window;
    let background = Some(match (l.load_before, l.load_after) {
        (Some(b), Some(a)) => BackgroundIo {
            read_bytes: a.0.saturating_sub(b.0),
            write_bytes: a.1.saturating_sub(b.1),
            seconds: window,
        },
        _ => BackgroundIo {
            read_bytes: 0,
            write_bytes: 0,
            seconds: window,
        },
    });
    // Was the cell's condition true during this start? The load must
    // still be running, and must have loaded the disk: completed I/O, or
    // waited in the kernel on a busy device, or been due none at its rate.
    let mut load_note = None;
    let load_problem = bg.and_then(|b| {
        if let Some(why) = b.ended() {
            return Some(why);
        }
        let w = super::liveness::Window {
            seconds: window,
            moved_bytes: background.map_or(0, |b| b.read_bytes + b.write_bytes),
            blocked: l.load_blocked.clone(),
            device_bytes: device.as_ref().map(|d| d.read_bytes() + d.write_bytes()),
            device_in_flight: l.after.as_ref().map(|a| a.in_flight),
            warmup_rate: c.warmup_rate,
            warmup_ios_per_s: c.warmup_ios_per_s,
        };
        match w.judge() {
            super::liveness::Liveness::Live => None,
            super::liveness::Liveness::LiveWithout(why) => {
                load_note = Some(why);
                None
            }
            super::liveness::Liveness::Stalled(why) => Some(why),
        }
    });
    // A start that did not begin cold is not a sample of a cold cell
    // (the cell goes on: the next may be cold); a dead load ends the cell.
    let invalid = prepared
        .not_cold
        .as_ref()
        .or(not_the_mode.as_ref())
        .or(not_applied.as_ref());
    let (run_outcome, reason) = match (&outcome.failure, load_problem.as_ref().or(invalid)) {
        (_, Some(why)) => (RunOutcome::Invalid, Some(why.clone())),
        (Some(why), None) => (RunOutcome::Failed, Some(why.clone())),
        (None, None) if outcome.censored => (RunOutcome::Censored, None),
        (None, None) => (RunOutcome::Ok, None),
    };
    Verdict {
        ttid_ns,
        ttfd_ns,
        timed,
        device,
        background,
        load_problem,
        load_note,
        not_the_mode,
        not_applied,
        run_outcome,
        reason,
    }
}

/// Stores the start as a run (its configuration, what was measured and
/// every document its observers and prefetch gave) and reports progress.
#[allow(clippy::too_many_arguments)]
fn store(
    st: &Startup,
    ctx: &mut CellContext<'_>,
    c: &Conditions<'_>,
    rep: u32,
    prefetch: Option<(&Prefetcher, PrefetchMode)>,
    prepared: &Prepared,
    l: &mut Launched,
    v: &Verdict,
) -> Result<iolab_store::RunId, ExperimentError> {
    let (cfg, cell, outcome) = (&st.cfg, c.cell, &l.outcome);
    let mut config = json!({
        "scheduler": cell.scheduler,
        "iosched_params_set": c.tunables,
        "iosched_tunables": c.all_tunables,
        "warmup_s": cfg.warmup(&cell.scheduler).as_secs_f64(),
        "cold": cfg.cold,
        "start_mode": cfg.start_mode,
        "target_ioprio": cfg.target_ioprio,
        "target_nice": cfg.target_nice,
        "load_ioprio": cfg.load_ioprio,
        "load_engine": if super::setup::under_fio(cfg, &cell.workload) { "fio" } else { "iolab" },
        "target_hold": cfg.target_hold,
        "dexopt": c.dexopt,
        "bg_warmup_read_bw_bytes": c.warmup_rate.map(|r| r.0),
        "bg_warmup_write_bw_bytes": c.warmup_rate.map(|r| r.1),
    });
    if let Some(p) = &cell.variant {
        // The plan point as settings, for readers that do not split the
        // variant; what the kernel read back is in the cell's cell_io.
        config["point"] = json!(iolab_results::variant::settings_of(p)
            .into_iter()
            .map(|(n, v)| (n.to_string(), json!(v)))
            .collect::<serde_json::Map<String, serde_json::Value>>());
    }
    if let Some((_, m)) = prefetch {
        config["prefetch"] = json!(m);
    }
    let mut extra = json!({
        "device_read_bytes": v.device.as_ref().map(|d| d.read_bytes()),
        "device_write_bytes": v.device.as_ref().map(|d| d.write_bytes()),
        "target": to_json("the target's resource use", &outcome.usage)?,
        "exit_ns": outcome.exit_ns,
        "ready_ns": outcome.ready_ns,
        "ttid_ns": v.ttid_ns.filter(|_| v.timed),
        "ttfd_ns": v.ttfd_ns.filter(|_| v.timed),
        "failed": outcome.failed(),
        "output_tail": if outcome.failed() { outcome.output_tail.clone() } else { String::new() },
        "memory_pressure": to_json("the memory pressure report", &prepared.pressure)?,
        "am_start": l.am,
        "settle": to_json("the settle waits", &prepared.settled)?,
        "cold": to_json("the cold check", &prepared.cold)?,
        "cold_unverified": prepared.cold_unverified.then_some(
            "none of the target's own files could be measured before this first start, which learns the files later starts are checked on",
        ),
        "left_over": outcome.left_over.clone(),
        "load_live_without_io": v.load_note,
        "app_process": outcome.app.clone(),
        "app_watch": outcome.app_watch.clone(),
        "dexopt_changed": c.dexopt_changed,
        "screen": to_json("the screen's state", &prepared.screen)?,
    });
    if let Some(files) = &l.learnt {
        // What later starts' cold steps are checked on.
        extra["learnt_files"] = json!(files);
    }
    if let Some(o) = l.observed.extra() {
        extra["observed"] = o;
    }
    let record = RunRecord {
        scheduler: cell.scheduler.clone(),
        workload: cell.workload.clone(),
        rep,
        target: st.label.clone(),
        started_at: l.started_at.clone(),
        duration_ns: outcome.duration_ns,
        censored: outcome.censored,
        timeout_ns: iolab_sys::cast::duration_ns(st.spec.timeout),
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        overhead_ns: Some(st.overhead_mean_ns()),
        background: v.background,
        config,
        extra,
        outcome: v.run_outcome,
        reason: v.reason.clone(),
        variant: iolab_results::variant::join(
            cell.variant.as_deref(),
            prefetch.map(|(_, m)| m.variant()).as_deref(),
        ),
    };
    // Stored once, not copied: a trace's documents can be large.
    let mut docs = std::mem::take(&mut l.observed.docs);
    if let (Some((p, m)), Some(report)) = (prefetch, &l.prefetched) {
        docs.push(p.artifact(m, report)?);
    }
    let run_id = ctx.store_run(&record, &docs)?;
    ctx.progress.done(&if outcome.censored {
        ">timeout".to_string()
    } else {
        format!("{:.2}s", outcome.duration_ns as f64 / 1e9)
    });
    Ok(run_id)
}

/// How long a hot start waits for the activity to stop after the home key
/// (Android stops it once the launcher is idle, usually within a second).
const HOT_STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Why an option asked for the app's own process (an activity's, which
/// zygote forks) did not reach it, when it did not: its priorities, the
/// collectors that follow it, readiness by its memory.
fn not_applied(
    cfg: &super::StartupConfig,
    spec: &launch::LaunchSpec,
    o: &launch::Outcome,
) -> Option<String> {
    let name = spec.app.as_deref()?;
    let mut asked: Vec<String> = Vec::new();
    if let Some(p) = cfg.target_ioprio {
        asked.push(format!("--target-ioprio {p}"));
    }
    if let Some(n) = cfg.target_nice {
        asked.push(format!("--target-nice {n}"));
    }
    for e in cfg
        .observe
        .entries()
        .filter(|e| e.needs == crate::collect::Needs::Target)
    {
        asked.push(crate::collect::flag_words(e.flag));
    }
    if matches!(cfg.ready, super::ReadyWhen::MemorySettled { .. }) {
        asked.push("--ready-rss-stable".into());
    }
    if asked.is_empty() {
        return None;
    }
    let asked = asked.join(", ");
    let Some(app) = &o.app else {
        let how = match &o.app_watch {
            Some(w) if w.source == "tracefs" => format!(
                "no process renamed itself to one of {:?} (task_rename) or exec'd as {name} (sched_process_exec) in iolab's tracefs instance{}",
                crate::app_process::comm_forms(name),
                if w.lost_events > 0 {
                    format!(", which lost {} events", w.lost_events)
                } else {
                    String::new()
                }
            ),
            Some(w) => format!(
                "a scan of /proc every {} ms found no process named {name} (tracefs could not be used: {})",
                crate::app_process::SCAN_INTERVAL.as_millis(),
                w.fallback.as_deref().unwrap_or("unknown")
            ),
            None => "it was not looked for".to_string(),
        };
        return Some(format!(
            "{asked} not applied: the app's process ({name}) was never found: {how}"
        ));
    };
    if !app.errors.is_empty() {
        return Some(format!(
            "{asked}: could not be set on the app's process {}: {}",
            app.pid,
            app.errors.join("; ")
        ));
    }
    // The values read back right after setting them count only where the
    // app's end could not be read (it died): otherwise Android may have
    // changed them in between, which the drifts and the end say.
    let read_back_only = app.threads_end.is_empty();
    if let (Some(p), true) = (cfg.target_ioprio, read_back_only) {
        if app.ioprio.as_deref() != Some(p.to_string().as_str()) {
            return Some(format!(
                "--target-ioprio {p} not applied: the app's process {} reads back {}",
                app.pid,
                app.ioprio
                    .as_deref()
                    .unwrap_or("nothing (ioprio_get failed)")
            ));
        }
    }
    if let (Some(n), true) = (cfg.target_nice, read_back_only) {
        if app.nice != Some(n) {
            return Some(format!(
                "--target-nice {n} not applied: the app's process {} reads back {}",
                app.pid,
                app.nice
                    .map_or("nothing (/proc/PID/stat unreadable)".to_string(), |v| v
                        .to_string())
            ));
        }
    }
    // What the app ran at, not what was set once: Android sets some of
    // its threads' values again itself while it starts.
    let settings: Vec<String> = [
        cfg.target_nice.map(|n| format!("--target-nice {n}")),
        cfg.target_ioprio.map(|p| format!("--target-ioprio {p}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if settings.is_empty() {
        return None;
    }
    let settings = settings.join(" and ");
    if !app.held && !app.drifts.is_empty() {
        return Some(format!(
            "{settings} not held: Android changed the app's threads after iolab set them: {}{}; --target-hold sets them back as Android changes them",
            crate::app_process::hold::describe(&app.drifts),
            if app.drifts_not_stored > 0 {
                format!(" (and {} more)", app.drifts_not_stored)
            } else {
                String::new()
            }
        ));
    }
    let off: Vec<&crate::app_process::hold::ThreadState> = app
        .threads_end
        .iter()
        .filter(|t| {
            cfg.target_nice.is_some_and(|n| t.nice != Some(n))
                || cfg
                    .target_ioprio
                    .is_some_and(|p| t.ioprio.as_deref() != Some(p.to_string().as_str()))
        })
        .collect();
    if !off.is_empty() {
        return Some(format!(
            "{settings} not held at the end of the start: {}",
            off.iter()
                .take(6)
                .map(|t| format!(
                    "{} {} at nice {}, ioprio {}",
                    t.comm,
                    t.tid,
                    t.nice.map_or("?".into(), |n| n.to_string()),
                    t.ioprio.as_deref().unwrap_or("?")
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    None
}

/// A warm or hot cell's first start, unmeasured: it leaves the target's
/// files cached (warm) or its activity alive in the background (hot), as
/// Macrobenchmark's priming iteration does. Not stored: it is no sample of
/// the cell, and it ran with the cell's load already going.
pub(super) fn prime(st: &Startup, ctx: &mut CellContext<'_>) -> Result<(), ExperimentError> {
    st.target.stop()?;
    let spec = crate::launch::LaunchSpec {
        argv: st.target.argv(),
        app_live: false,
        ..st.spec.clone()
    };
    let outcome = launch::launch(ctx.guard, &spec)?;
    ctx.progress
        .note(&match (&outcome.failure, outcome.censored) {
            (Some(why), _) => format!(
                "the priming start of this {} cell failed ({why}): its starts may not be {}",
                st.cfg.start_mode.as_str(),
                st.cfg.start_mode.as_str()
            ),
            (None, true) => "the priming start timed out".to_string(),
            (None, false) => format!(
                "priming start (not a sample): {:.2}s",
                outcome.duration_ns as f64 / 1e9
            ),
        });
    Ok(())
}
