//! `iolab sweep --max`: seed 003's IOSpeed. For every scheduler, the
//! highest IOPS and bandwidth a fast device sustains with N = 1, 2, 4, 8 ...
//! threads of sequential and random I/O, and the CPU the kernel spends per
//! I/O there, so a scheduler's own overhead (BFQ against none,
//! mq-deadline, kyber) is a number instead of an impression.
//!
//! The device is a loop device over a file in a tmpfs mounted for the
//! sweep (fast, and with a request queue a scheduler sits on), or one the
//! user names. A [`Body`] of the engine: every point is stored as it
//! ends; Ctrl-C keeps them and `--resume ID` runs the rest.

pub mod config;
pub mod point;

use serde_json::{json, Value};

use iolab_results::{ArtifactDoc, ArtifactKind, ExperimentKind};
use iolab_store::{RunKey, RunRecord};
use iolab_sys::block::BlockDev;
use iolab_sys::cast;

pub use config::{default_threads, MaxConfig};
pub use iolab_results::max::MaxPoint;

use super::plan::{workload_name, Pattern, RunPlan};
use crate::engine::{Body, Cell, CellContext, CellEnd, Setup, StoredRuns};
use crate::error::to_json;
use crate::place::{PlaceRequest, PlaceUse};
use crate::{ExperimentError, Schedulers};

/// A max sweep, set up and running.
pub struct Max {
    cfg: MaxConfig,
    /// True when iolab made the device (writing it needs no `--force`).
    own: bool,
}

impl Body for Max {
    type Config = MaxConfig;
    type Summary = ();
    const KIND: ExperimentKind = ExperimentKind::SweepMax;
    const UNIT: &'static str = "points";

    fn validate(cfg: &MaxConfig) -> Result<(), ExperimentError> {
        Ok(cfg.validate()?)
    }

    fn place(cfg: &MaxConfig) -> PlaceRequest<'_> {
        PlaceRequest {
            place: &cfg.place,
            use_: PlaceUse::Raw {
                writes: cfg.writes(),
            },
            dirty_limit_bytes: None,
            dirty_limit_preferred: false,
            throttle_unsuitable: None,
        }
    }

    fn schedulers(cfg: &mut MaxConfig) -> Option<&mut Schedulers> {
        Some(&mut cfg.schedulers)
    }

    fn setup(cfg: MaxConfig, s: &Setup<'_>) -> Result<Max, ExperimentError> {
        (s.announce)(&format!(
            "on {}: {} × {} thread counts × {} kind(s) × {} rep(s), {:.1} s each",
            s.place.what,
            s.schedulers.len(),
            cfg.threads.len(),
            cfg.kinds.len(),
            cfg.reps,
            cfg.runtime_s
        ));
        Ok(Max {
            own: s.place.made || s.force,
            cfg,
        })
    }

    fn stored(&self) -> Result<Vec<(&'static str, Value)>, ExperimentError> {
        Ok(vec![(
            "max",
            to_json("the max sweep configuration", &self.cfg)?,
        )])
    }

    /// Repetition outermost, then scheduler, kind, threads: a drift of the
    /// machine over the sweep spreads over every column.
    fn plan(&self, done: &StoredRuns) -> Vec<Cell> {
        let cfg = &self.cfg;
        let mut v = Vec::new();
        for rep in 1..=cfg.reps {
            for s in cfg.schedulers.names() {
                for &kind in &cfg.kinds {
                    for &threads in &cfg.threads {
                        let run = RunPlan {
                            scheduler: s.clone(),
                            kind,
                            pattern: pattern(threads, cfg.iodepth),
                            rep,
                        };
                        if !done.contains(&RunKey::new(s, &run.workload(), rep)) {
                            v.push(run.cell());
                        }
                    }
                }
            }
        }
        v
    }

    fn run_cell(
        &mut self,
        ctx: &mut CellContext<'_>,
        cell: &Cell,
    ) -> Result<CellEnd, ExperimentError> {
        let p = RunPlan::of(cell)?;
        let workload = workload_name(p.kind, p.pattern);
        ctx.progress
            .begin(&format!("rep {} {} {workload}", p.rep, p.scheduler));
        let dev = ctx.place.dev()?;
        ctx.guard.set_scheduler(dev, &p.scheduler)?;
        let started_at = iolab_store::rfc3339_now();
        let threads = p.pattern.numjobs;
        let Some((pt, report)) = point::measure(dev, &self.cfg, p.kind, threads, self.own)? else {
            return Ok(CellEnd::Interrupted);
        };
        let rec = record(&p, &workload, &pt, &report, dev, &self.cfg, started_at)?;
        let fio = iolab_load::json::to_fio_json(&report);
        let doc = ArtifactDoc::of(ArtifactKind::Load, &fio)
            .map_err(ExperimentError::serialise("the load report"))?;
        ctx.store_run(&rec, &[doc])?;
        ctx.progress
            .done(&iolab_sys::units::format_rate(pt.bw_bytes));
        Ok(CellEnd::Done)
    }

    fn summary(self) {}
}

fn pattern(threads: u32, iodepth: u32) -> Pattern {
    Pattern {
        numjobs: threads,
        iodepth,
    }
}

fn record(
    p: &RunPlan,
    workload: &str,
    pt: &MaxPoint,
    report: &iolab_load::LoadReport,
    dev: &BlockDev,
    cfg: &MaxConfig,
    started_at: String,
) -> Result<RunRecord, ExperimentError> {
    Ok(RunRecord {
        scheduler: p.scheduler.clone(),
        workload: workload.to_string(),
        rep: p.rep,
        target: dev.name.clone(),
        started_at,
        duration_ns: cast::floor_u64(pt.runtime_s * 1e9),
        censored: false,
        timeout_ns: cast::floor_u64(cfg.runtime_s * 1e9),
        exit_code: None,
        signal: None,
        overhead_ns: None,
        background: super::record::device_io(report),
        config: json!({
            "scheduler": p.scheduler,
            "iosched_tunables": dev.iosched_tunables(),
            "rw": p.kind.fio_rw(),
            "numjobs": p.pattern.numjobs,
            "iodepth": cfg.iodepth,
            "ioengine": cfg.engine(),
            "bs": cfg.bs_bytes,
        }),
        extra: to_json("the point", pt)?,
        outcome: iolab_store::RunOutcome::Ok,
        reason: None,
        variant: None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sweep::plan::Kind;

    #[test]
    fn plan_puts_repetitions_outermost_and_skips_done_points() {
        let max = Max {
            cfg: MaxConfig {
                schedulers: Schedulers::of(vec!["none".into(), "bfq".into()]).unwrap(),
                kinds: vec![Kind::Read, Kind::RandRead],
                threads: vec![1, 2, 4],
                reps: 2,
                ..config::tests::cfg()
            },
            own: true,
        };
        let all = max.plan(&StoredRuns::new());
        assert_eq!(all.len(), 2 * 2 * 3 * 2);
        assert!(all[..12].iter().all(|c| c.reps == [1]));
        assert_eq!(
            (all[5].scheduler.as_str(), all[6].scheduler.as_str()),
            ("none", "bfq")
        );
        let mut done = StoredRuns::new();
        for c in &all[..12] {
            done.insert(RunKey::new(&c.scheduler, &c.workload, 1));
        }
        done.insert(RunKey::new("bfq", "seq-read-4j-1qd", 2));
        assert_eq!(max.plan(&done).len(), 11);
    }
}
