//! `iolab sweep --max`: seed 003's IOSpeed. For every scheduler, the
//! highest IOPS and bandwidth a fast device sustains with N = 1, 2, 4, 8 ...
//! threads of sequential and random I/O, and the CPU the kernel spends per
//! I/O there, so a scheduler's own overhead (BFQ against none,
//! mq-deadline, kyber) is a number instead of an impression.
//!
//! The device is a loop device over a file in a tmpfs mounted for the
//! sweep (fast, and with a request queue a scheduler sits on), or one the
//! user names. Every point is stored as it ends; Ctrl-C keeps them and
//! `--resume ID` runs the rest.

pub mod config;
pub mod point;
pub mod table;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use iolab_guard::Guard;
use iolab_lab::{Fs, LabSpec};
use iolab_store::{BackgroundIo, ExperimentId, RunKey, RunRecord, Status, Store};
use iolab_sys::block::BlockDev;
use iolab_sys::units::format_bytes;
use iolab_sys::UsageError;

pub use config::{default_threads, MaxConfig, MaxPlace};
pub use point::MaxPoint;
pub use table::{MaxBest, MaxCell, MaxTable};

use super::plan::{workload_name, Kind, Pattern};
use super::progress::Progress;
use super::run::SweepOptions;
use super::SweepError;

/// The experiment kind in the store.
pub const KIND: &str = "sweep-max";

/// Room the tmpfs needs beyond the image (the lab keeps 64 MiB spare).
const TMPFS_SPARE: u64 = 128 << 20;

/// What a finished (or interrupted) max sweep left in the store.
#[derive(Debug)]
pub struct MaxFinished {
    /// Experiment id.
    pub id: ExperimentId,
    /// Database path.
    pub db: PathBuf,
    /// True when Ctrl-C/SIGTERM stopped it early (resumable).
    pub interrupted: bool,
    /// The tables, from every point stored for the experiment.
    pub table: MaxTable,
    /// The configuration as run (schedulers resolved).
    pub config: MaxConfig,
    /// Where it ran.
    pub place: String,
    /// Points recorded by this invocation.
    pub recorded: usize,
    /// Wall time of this invocation.
    pub elapsed: Duration,
}

/// One point to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PointPlan {
    scheduler: String,
    kind: Kind,
    threads: u32,
    rep: u32,
}

/// Runs (or resumes) a max sweep.
pub fn run_max(
    cfg: Option<MaxConfig>,
    opts: &SweepOptions,
    announce: &dyn Fn(&str),
) -> Result<MaxFinished, SweepError> {
    let t0 = Instant::now();
    let store = Store::open(&opts.db)?;
    let resumed = match opts.resume {
        Some(id) => Some((id, load_resumable(&store, id)?)),
        None => None,
    };
    let mut cfg = super::run::config_or_resumed(resumed.as_ref().map(|(_, c)| c), cfg)?;
    cfg.validate()?;
    let guard = Guard::new();
    let (dev, what, own) = resolve(&guard, &cfg, opts.force)?;
    if cfg.schedulers.is_empty() {
        cfg.schedulers = dev.schedulers()?.available;
    }
    super::run::check_schedulers(&dev, &cfg.schedulers)?;
    announce(&format!(
        "on {what}: {} × {} thread counts × {} kind(s) × {} rep(s), {:.1} s each",
        cfg.schedulers.len(),
        cfg.threads.len(),
        cfg.kinds.len(),
        cfg.reps,
        cfg.runtime_s
    ));
    let (id, done) = match &resumed {
        Some((id, _)) => (*id, store.completed_cells(*id)?),
        None => {
            let env = iolab_sys::environment::Environment::capture(Some(&dev), None);
            let id = store.create_experiment(
                KIND,
                &opts.command_line,
                &json!({ "max": cfg, "place": what }),
                &serde_json::to_value(&env).unwrap_or_default(),
            )?;
            (id, Default::default())
        }
    };
    store.set_status(id, Status::Running)?;
    let points = plan(&cfg, |s, w, r| done.contains(&RunKey::new(s, w, r)));
    let mut progress = Progress::new(points.len() as u64, opts.progress);
    let mut interrupted = false;
    let mut recorded = 0;
    for p in &points {
        if iolab_guard::stop_requested() {
            interrupted = true;
            break;
        }
        let workload = workload_name(p.kind, pattern(p.threads, cfg.iodepth));
        progress.start(&format!("rep {} {} {workload}", p.rep, p.scheduler));
        guard.set_scheduler(&dev, &p.scheduler)?;
        let started_at = iolab_store::rfc3339_now();
        let measured = match point::measure(&dev, &cfg, p.kind, p.threads, own || opts.force) {
            Ok(Some(m)) => m,
            Ok(None) => {
                interrupted = true;
                break;
            }
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        };
        let (pt, report) = measured;
        let rec = record(p, &workload, &pt, &report, &dev, &cfg, started_at);
        let run_id = store.record_run(id, &rec)?;
        let fio = iolab_load::json::to_fio_json(&report);
        store.add_artifact(
            run_id,
            "load",
            &serde_json::to_value(&fio).unwrap_or_default(),
        )?;
        recorded += 1;
        progress.done(pt.bw_bytes);
    }
    progress.finish();
    store.set_status(id, Status::ended(interrupted))?;
    Ok(MaxFinished {
        id,
        db: opts.db.clone(),
        interrupted,
        table: MaxTable::from_runs(&store.runs(id)?),
        config: cfg,
        place: what,
        recorded,
        elapsed: t0.elapsed(),
    })
}

fn pattern(threads: u32, iodepth: u32) -> Pattern {
    Pattern {
        numjobs: threads,
        iodepth,
    }
}

/// Repetition outermost, then scheduler, kind, threads: a drift of the
/// machine over the sweep spreads over every column.
fn plan(cfg: &MaxConfig, done: impl Fn(&str, &str, u32) -> bool) -> Vec<PointPlan> {
    let mut v = Vec::new();
    for rep in 1..=cfg.reps {
        for s in &cfg.schedulers {
            for &kind in &cfg.kinds {
                for &threads in &cfg.threads {
                    let w = workload_name(kind, pattern(threads, cfg.iodepth));
                    if !done(s, &w, rep) {
                        v.push(PointPlan {
                            scheduler: s.clone(),
                            kind,
                            threads,
                            rep,
                        });
                    }
                }
            }
        }
    }
    v
}

/// The device, a description, and whether iolab made it (then writing to
/// it needs no `--force`).
fn resolve(
    guard: &Guard,
    cfg: &MaxConfig,
    force: bool,
) -> Result<(BlockDev, String, bool), SweepError> {
    match &cfg.place {
        MaxPlace::TmpfsLab { size_bytes } => {
            check_memory(*size_bytes)?;
            let name = format!("max-{}", std::process::id());
            let dir = iolab_guard::run_dir().join(&name);
            guard.mkdir_all(&dir)?;
            guard.mount(
                "tmpfs",
                &dir,
                "tmpfs",
                &format!("size={},mode=0700", size_bytes + TMPFS_SPARE),
            )?;
            let lab = iolab_lab::up(
                guard,
                &LabSpec {
                    name: name.clone(),
                    size_bytes: *size_bytes,
                    fs: Fs::None,
                    dir,
                    ..LabSpec::default()
                },
            )?;
            let dev = lab.device().clone();
            let what = format!(
                "{} (loop over a {} file in tmpfs, temporary)",
                dev.name,
                format_bytes(*size_bytes)
            );
            Ok((dev, what, true))
        }
        MaxPlace::Device { device } => {
            let dev = if cfg.writes() {
                super::place::check_device(
                    device,
                    force,
                    "iolab sweep --max with write kinds overwrites the whole device",
                )?
            } else {
                super::place::whole_disk(device)?
            };
            let what = format!("device {}", dev.dev_path().display());
            Ok((dev, what, false))
        }
    }
}

/// The tmpfs lab lives in RAM: refuse one that would leave the machine
/// short (more than half of what is available).
fn check_memory(size_bytes: u64) -> Result<(), SweepError> {
    if let Some(avail) = iolab_lab::mem_available(std::path::Path::new("/proc/meminfo")) {
        if size_bytes + TMPFS_SPARE > avail / 2 {
            return Err(UsageError::new(format!(
                "--lab-size {}: the lab lives in RAM and only {} is available; use at most {} (half), or --device",
                format_bytes(size_bytes),
                format_bytes(avail),
                format_bytes((avail / 2).saturating_sub(TMPFS_SPARE))
            ))
            .into());
        }
    }
    Ok(())
}

fn record(
    p: &PointPlan,
    workload: &str,
    pt: &MaxPoint,
    report: &iolab_load::LoadReport,
    dev: &BlockDev,
    cfg: &MaxConfig,
    started_at: String,
) -> RunRecord {
    let disk = report.disks.first();
    RunRecord {
        scheduler: p.scheduler.clone(),
        workload: workload.to_string(),
        rep: p.rep,
        target: dev.name.clone(),
        started_at,
        duration_ns: (pt.runtime_s * 1e9) as u64,
        censored: false,
        timeout_ns: (cfg.runtime_s * 1e9) as u64,
        exit_code: None,
        signal: None,
        overhead_ns: None,
        background: disk.map(|d| BackgroundIo {
            read_bytes: d.delta.read_bytes(),
            write_bytes: d.delta.write_bytes(),
            seconds: d.elapsed.as_secs_f64(),
        }),
        config: json!({
            "scheduler": p.scheduler,
            "iosched_tunables": dev.iosched_tunables(),
            "rw": p.kind.rw().as_str(),
            "numjobs": p.threads,
            "iodepth": cfg.iodepth,
            "ioengine": cfg.engine(),
            "bs": cfg.bs_bytes,
        }),
        extra: serde_json::to_value(pt).unwrap_or_default(),
        outcome: iolab_store::RunOutcome::Ok,
        reason: None,
        variant: None,
    }
}

fn load_resumable(store: &Store, id: ExperimentId) -> Result<MaxConfig, SweepError> {
    let exp = super::run::resumable(store, id, KIND)?;
    serde_json::from_value(exp.config.get("max").cloned().unwrap_or_default()).map_err(|e| {
        UsageError::new(format!(
            "experiment {id} was stored by another iolab version and cannot be resumed: {e}"
        ))
        .into()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn plan_puts_repetitions_outermost_and_skips_done_points() {
        let cfg = MaxConfig {
            place: MaxPlace::TmpfsLab {
                size_bytes: 1 << 30,
            },
            schedulers: vec!["none".into(), "bfq".into()],
            kinds: vec![Kind::Read, Kind::RandRead],
            threads: vec![1, 2, 4],
            iodepth: 1,
            reps: 2,
            bs_bytes: 4096,
            runtime_s: 1.0,
        };
        let all = plan(&cfg, |_, _, _| false);
        assert_eq!(all.len(), 2 * 2 * 3 * 2);
        assert!(all[..12].iter().all(|p| p.rep == 1));
        assert_eq!(
            (all[5].scheduler.as_str(), all[6].scheduler.as_str()),
            ("none", "bfq")
        );
        let rest = plan(&cfg, |s, w, r| {
            r == 1 || (s == "bfq" && w == "seq-read-4j-1qd")
        });
        assert_eq!(rest.len(), 11);
    }
}
