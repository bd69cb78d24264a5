//! `iolab sweep`: seed 002's I/O scheduler comparison as one command.
//!
//! For each scheduler × sequential/random × read/write × numjobs/iodepth
//! pattern (1/1, 4/1, 1/4, 4/4; bs 1M) × repetition: a fresh filesystem,
//! dropped caches, one fio-style job through the load engine (io_uring +
//! O_DIRECT, iolab's equivalent of the seed's libaio + direct=1), the CPU
//! and pressure series around it; every run stored as it ends. A [`Body`]
//! of the engine; the tables are the report's (`iolab_report::view::sweep`).
//!
//! Sizes are scaled to the device instead of the seed's fixed 32 GiB (see
//! [`sizing::scale`]), so the default sweep on the default lab takes minutes.

pub mod config;
pub mod max;
mod measure;
pub mod plan;
mod record;
pub mod sizing;

use iolab_results::ExperimentKind;
use serde_json::Value;

pub use config::SweepConfig;
pub use plan::{Kind, Pattern, SEED_PATTERNS};
pub use sizing::Sizing;

use crate::engine::{Body, Cell, CellContext, CellEnd, Setup, StoredRuns};
use crate::error::to_json;
use crate::place::{PlaceRequest, PlaceUse};
use crate::{ExperimentError, Schedulers};
use measure::NoRun;
use plan::RunPlan;

/// A sweep, set up and running.
pub struct Sweep {
    cfg: SweepConfig,
    sizing: Sizing,
    lost: (u64, usize),
}

impl Body for Sweep {
    type Config = SweepConfig;
    /// The per-run size and why.
    type Summary = Sizing;
    const KIND: ExperimentKind = ExperimentKind::Sweep;
    const UNIT: &'static str = "runs";

    fn validate(cfg: &SweepConfig) -> Result<(), ExperimentError> {
        Ok(cfg.validate()?)
    }

    fn place(cfg: &SweepConfig) -> PlaceRequest<'_> {
        PlaceRequest {
            place: &cfg.place,
            use_: PlaceUse::Format,
            dirty_limit_bytes: None,
            dirty_limit_preferred: false,
            throttle_unsuitable: None,
        }
    }

    fn schedulers(cfg: &mut SweepConfig) -> Option<&mut Schedulers> {
        Some(&mut cfg.schedulers)
    }

    fn setup(cfg: SweepConfig, s: &Setup<'_>) -> Result<Sweep, ExperimentError> {
        let sizing = match s.resumed.and_then(|c| c.get("sizing")) {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                iolab_sys::UsageError::new(format!(
                    "the stored sizing cannot be read by this iolab: {e}"
                ))
            })?,
            None => size_for(&cfg, s)?,
        };
        (s.announce)(&format!("on {}: {}", s.place.what, sizing.note));
        Ok(Sweep {
            cfg,
            sizing,
            lost: (0, 0),
        })
    }

    fn stored(&self) -> Result<Vec<(&'static str, Value)>, ExperimentError> {
        Ok(vec![
            ("sweep", to_json("the sweep configuration", &self.cfg)?),
            ("sizing", to_json("the sizing", &self.sizing)?),
        ])
    }

    fn plan(&self, done: &StoredRuns) -> Vec<Cell> {
        let names = self.cfg.schedulers.names();
        plan::plan(&self.cfg, names, |s, w, r| {
            done.contains(&iolab_store::RunKey::new(s, w, r))
        })
        .iter()
        .map(RunPlan::cell)
        .collect()
    }

    fn run_cell(
        &mut self,
        ctx: &mut CellContext<'_>,
        cell: &Cell,
    ) -> Result<CellEnd, ExperimentError> {
        let run = RunPlan::of(cell)?;
        ctx.progress.begin(&format!(
            "rep {} {} {}",
            run.rep,
            run.scheduler,
            run.workload()
        ));
        let m = match measure::one_run(ctx.guard, ctx.place, &self.cfg, &self.sizing, &run)? {
            Ok(m) => m,
            Err(NoRun::Interrupted) => return Ok(CellEnd::Interrupted),
        };
        for (name, why) in &m.observed.failed {
            ctx.warn(format!(
                "{name} failed, runs have no {name} documents: {why}"
            ));
        }
        if let Some(lost) = m
            .observed
            .summaries
            .get("bio")
            .and_then(|b| b.get("lost_events"))
            .and_then(Value::as_u64)
            .filter(|l| *l > 0)
        {
            self.lost.0 += lost;
            self.lost.1 += 1;
        }
        let tunables = ctx.place.dev()?.iosched_tunables();
        let target = ctx.place.dev()?.name.clone();
        let (rec, docs) = record::record(&run, m, &target, &self.cfg, &self.sizing, &tunables)?;
        ctx.store_run(&rec, &docs)?;
        let bw = rec.extra.get("bw_bytes").and_then(Value::as_f64);
        ctx.progress
            .done(&bw.map_or_else(|| "-".into(), iolab_sys::units::format_rate));
        Ok(CellEnd::Done)
    }

    fn warnings(&self) -> Vec<String> {
        let (events, runs) = self.lost;
        (events > 0)
            .then(|| {
                format!(
                    "the block trace lost {events} events in {runs} run(s): their latency_hist is incomplete"
                )
            })
            .into_iter()
            .collect()
    }

    fn summary(self) -> Sizing {
        self.sizing
    }
}

/// The per-run size: `--size`, or the lab's bandwidth, or one second of
/// reads measured on the device × `--runtime`.
fn size_for(cfg: &SweepConfig, s: &Setup<'_>) -> Result<Sizing, ExperimentError> {
    let capacity = s.place.dev()?.size_bytes()?;
    if cfg.size_bytes.is_some() {
        return Ok(sizing::scale(cfg, capacity, None)?);
    }
    if let Some(bw) = s.place.bw_bytes {
        return Ok(sizing::scale(
            cfg,
            capacity,
            Some((bw as f64, "the lab's throttle")),
        )?);
    }
    (s.announce)(&format!(
        "measuring {}'s read bandwidth for 1 s to scale the runs (--size skips this)",
        s.place.dev()?.name
    ));
    let bw = sizing::measure_bandwidth(s.place.dev()?)?;
    Ok(sizing::scale(
        cfg,
        capacity,
        Some((bw, "1 s of sequential direct reads")),
    )?)
}
