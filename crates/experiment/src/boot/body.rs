//! A boot experiment as a body the engine runs: its place a machine iolab
//! restarts (a qemu guest, or a board over ssh), one cell per boot, in the
//! order [`plan`] gives (the recording boot and the relayout boot when
//! their image is not made yet, the warm-up boot, then every round's
//! variants shuffled); then, from the stored runs, the rounds `--boots
//! auto` adds and the explained boots (`--explain`). The engine gives it
//! the guard, resume, progress, Ctrl-C and the store.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_results::{ArtifactDoc, ArtifactKind, ExperimentKind};
use iolab_store::RunRecord;
use serde_json::Value;

use super::{
    board_boot, guest, guest_boot, outcome_text, place, short_of_resolution, short_text, shuffle,
    variant, BootConfig, SshTarget,
};
use crate::engine::{Body, Cell, CellContext, CellEnd, Progress, Setup, StoredRuns};
use crate::place::{PlaceRequest, PlaceUse, Resolved, MACHINE};
use crate::{ExperimentError, Schedulers};

/// What a cell of a boot experiment is stored as (its workload column).
const WORKLOAD: &str = "boot";

/// A boot experiment being run.
pub struct BootBody {
    cfg: BootConfig,
    board: Option<iolab_remote::Transport>,
    /// Known once the engine names the experiment (its first cell).
    images: Option<Images>,
    /// The quickest boot so far, s (a board is left alone for 80 % of it).
    quickest: Option<f64>,
    /// The explained boots were planned.
    explain_planned: bool,
    warnings: Vec<String>,
}

impl Body for BootBody {
    type Config = BootConfig;
    type Summary = ();
    const KIND: ExperimentKind = ExperimentKind::Boot;
    const UNIT: &'static str = "boots";

    fn validate(cfg: &BootConfig) -> Result<(), ExperimentError> {
        cfg.validate()
    }

    fn place(_: &BootConfig) -> PlaceRequest<'_> {
        PlaceRequest {
            place: &MACHINE,
            use_: PlaceUse::Raw { writes: false },
            dirty_limit_bytes: None,
            dirty_limit_preferred: false,
            throttle_unsuitable: None,
        }
    }

    fn resolve_place(cfg: &BootConfig, _: &Guard, _: bool) -> Result<Resolved, ExperimentError> {
        if cfg.ssh.is_none() {
            guest::qemu()?;
        }
        Ok(Resolved::machine(place(cfg)))
    }

    fn schedulers(_: &mut BootConfig) -> Option<&mut Schedulers> {
        None
    }

    fn setup(cfg: BootConfig, s: &Setup<'_>) -> Result<BootBody, ExperimentError> {
        (s.announce)(&super::announcement(&cfg));
        Ok(BootBody {
            board: cfg.ssh.as_ref().map(SshTarget::transport),
            cfg,
            images: None,
            quickest: None,
            explain_planned: false,
            warnings: Vec::new(),
        })
    }

    fn named(&mut self, id: iolab_store::ExperimentId) {
        if self.board.is_none() {
            self.images = Some(Images::of(&self.cfg, id));
        }
    }

    fn stored(&self) -> Result<Vec<(&'static str, Value)>, ExperimentError> {
        Ok(vec![(
            "boot",
            crate::error::to_json("the boot configuration", &self.cfg)?,
        )])
    }

    fn plan(&self, done: &StoredRuns) -> Vec<Cell> {
        let done: BTreeSet<(String, u32)> = done
            .iter()
            .map(|k| (k.variant.clone().unwrap_or_else(|| "none".into()), k.rep))
            .collect();
        plan(&self.cfg, &done, self.images.as_ref())
            .into_iter()
            .map(|(v, rep)| cell(v, rep))
            .collect()
    }

    fn more(
        &mut self,
        runs: &[RunRecord],
        progress: &mut Progress,
    ) -> Result<Vec<Cell>, ExperimentError> {
        let rounds = runs
            .iter()
            .filter(|r| {
                self.cfg
                    .variants
                    .iter()
                    .any(|v| Some(v) == r.variant.as_ref())
            })
            .map(|r| r.rep)
            .max()
            .unwrap_or(0)
            .max(self.cfg.boots);
        // --boots auto: another round while a comparison cannot yet tell
        // --resolve at 80 % power.
        let short = short_of_resolution(&self.cfg, runs);
        let said = |short: &[(String, usize, usize)]| {
            short
                .iter()
                .map(|(v, n, need)| short_text(v, *n, *need, self.cfg.max_boots))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let resolve_pct = self.cfg.resolve.unwrap_or(0.0) * 100.0;
        if !short.is_empty() && self.cfg.max_boots.is_some_and(|cap| rounds < cap) {
            let round = rounds + 1;
            let mut order = self.cfg.variants.clone();
            shuffle(&mut order, self.cfg.seed ^ u64::from(round));
            progress.note(&format!(
                "round {round}: {} cannot tell {resolve_pct:.1}% yet",
                said(&short)
            ));
            progress.grow(order.len() as u64);
            return Ok(order.into_iter().map(|v| cell(v, round)).collect());
        }
        if !short.is_empty() {
            let w = format!(
                "--resolve {resolve_pct:.1}% not reached within {rounds} boots per variant: {}",
                said(&short)
            );
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        // Then each variant once more under explain (not timed, not
        // compared): those not stored yet.
        if !self.cfg.explain || self.explain_planned {
            return Ok(Vec::new());
        }
        self.explain_planned = true;
        let stored: BTreeSet<&str> = runs.iter().filter_map(|r| r.variant.as_deref()).collect();
        let cells: Vec<Cell> = self
            .cfg
            .variants
            .iter()
            .filter(|v| !variant::is_safety(v))
            .map(|v| format!("{}{v}", variant::EXPLAIN_PREFIX))
            .filter(|v| !stored.contains(v.as_str()))
            .map(|v| cell(v, 1))
            .collect();
        if !cells.is_empty() {
            progress.note(&format!(
                "{} boot(s) under iolab explain in the guest (stored apart, not compared)",
                cells.len()
            ));
            progress.grow(cells.len() as u64);
        }
        Ok(cells)
    }

    fn run_cell(
        &mut self,
        ctx: &mut CellContext<'_>,
        cell: &Cell,
    ) -> Result<CellEnd, ExperimentError> {
        let id = ctx.experiment();
        let v = cell.variant.as_deref().unwrap_or("none");
        let rep = cell.reps.first().copied().unwrap_or(1);
        if let Some(images) = &self.images {
            images.prepare(&self.cfg, v)?;
        }
        ctx.progress.begin(&format!("{v} boot {rep}"));
        // A board has no guest directory: its boot's files go to the
        // temporary directory.
        let work_in = match &self.board {
            Some(_) => std::env::temp_dir(),
            None => self.cfg.guest.clone(),
        };
        let work = tempfile::Builder::new()
            .prefix("iolab-boot-")
            .tempdir_in(&work_in)
            .map_err(|e| iolab_sys::SysError::io(&work_in, e))?;
        let booted = match &self.board {
            Some(t) => board_boot(t, v, rep, &self.cfg, work.path(), self.quickest)?,
            None => match &self.images {
                Some(images) => guest_boot(ctx.guard, v, rep, &self.cfg, images, work.path())?,
                None => {
                    return Err(ExperimentError::RunFailed {
                        run: format!("{v} boot {rep}"),
                        why: "the engine did not name the experiment before its first boot".into(),
                    })
                }
            },
        };
        let Some(mut run) = booted else {
            return Ok(CellEnd::Interrupted);
        };
        let mut docs = Vec::new();
        if variant::explained(v).is_some() {
            explained(&work.path().join("results"), &mut run, &mut docs)?;
        }
        if run.outcome.is_sample() && variant::explained(v).is_none() {
            let s = run.duration_ns as f64 / 1e9;
            self.quickest = Some(self.quickest.map_or(s, |q: f64| q.min(s)));
        }
        let last = outcome_text(&run);
        if !run.outcome.is_sample() {
            ctx.warn(match &self.board {
                Some(_) => format!("{v} boot {rep}: {last}"),
                None => {
                    let keep = self
                        .cfg
                        .guest
                        .join(format!("boot-{id}-{v}-{rep}-console.log"));
                    let _ = std::fs::copy(work.path().join("console.log"), &keep);
                    format!("{v} boot {rep}: {last}; its console: {}", keep.display())
                }
            });
        }
        ctx.store_run(&run, &docs)?;
        ctx.progress.done(&last);
        let failed_record = self.board.is_none()
            && (v == variant::RECORD || v == variant::RELAYOUT_WRITE)
            && !run.outcome.is_sample();
        if failed_record {
            if let Some(images) = &self.images {
                images.remove();
            }
            return Err(ExperimentError::RunFailed {
                run: format!("the {v} boot of experiment {id}"),
                why: format!(
                    "{}: the variants that need it cannot run",
                    run.reason.as_deref().unwrap_or("it failed")
                ),
            });
        }
        Ok(CellEnd::Done)
    }

    fn finish(&mut self, interrupted: bool) {
        // Kept for --resume; copies of the user's image otherwise.
        if let (false, Some(images)) = (interrupted, &self.images) {
            images.remove();
        }
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn summary(self) {}
}

/// One boot as a cell: its variant and round.
fn cell(v: String, rep: u32) -> Cell {
    Cell {
        scheduler: variant::split(variant::booted(&v))
            .1
            .unwrap_or("-")
            .to_string(),
        workload: WORKLOAD.into(),
        reps: vec![rep],
        variant: Some(v),
    }
}

/// An explained boot's report: summed up in the run, whole as its
/// `explain` document; without one the boot is invalid, with the reason.
fn explained(
    results: &Path,
    run: &mut RunRecord,
    docs: &mut Vec<ArtifactDoc>,
) -> Result<(), ExperimentError> {
    match super::explain::read(results) {
        Ok(a) => {
            run.extra["explain"] = super::explain::summary(&a);
            docs.push(
                crate::error::to_json("explain's report", &a).map(|json| ArtifactDoc {
                    kind: ArtifactKind::Explain,
                    json,
                })?,
            );
        }
        Err(why) if run.outcome.is_sample() => {
            run.outcome = iolab_store::RunOutcome::Invalid;
            run.reason = Some(why);
        }
        Err(why) => run.extra["explain_error"] = Value::String(why),
    }
    Ok(())
}

/// The root images a guest's boots use beyond the user's: the one with
/// the recorded list in it and the relaid-out one, kept beside the
/// user's for --resume.
pub(super) struct Images {
    recorded: PathBuf,
    relaid: PathBuf,
    /// A variant prefetches: every boot but the plain ones uses
    /// `recorded`.
    prefetching: bool,
}

impl Images {
    fn of(cfg: &BootConfig, id: iolab_store::ExperimentId) -> Images {
        Images {
            recorded: cfg.guest.join(format!("root-recorded-{id}.img")),
            relaid: cfg.guest.join(format!("root-relayout-{id}.img")),
            prefetching: prefetching(cfg),
        }
    }

    /// Makes the image variant `v` boots, when it is made for it.
    fn prepare(&self, cfg: &BootConfig, v: &str) -> Result<(), ExperimentError> {
        if v == variant::RECORD {
            copy_image(&cfg.image(), &self.recorded)?;
        } else if v == variant::RELAYOUT_WRITE {
            copy_image(&self.recorded, &self.relaid)?;
        } else if self.prefetching && !self.recorded.is_file() {
            return Err(iolab_sys::UsageError::new(format!(
                "{} is gone: the prefetch variants boot the image with the recorded list; start a new experiment",
                self.recorded.display()
            ))
            .into());
        }
        Ok(())
    }

    /// The root image variant `v` boots.
    pub(super) fn root_of(&self, cfg: &BootConfig, v: &str) -> PathBuf {
        if variant::uses_relayout(v) || v == variant::RELAYOUT_WRITE {
            self.relaid.clone()
        } else if self.prefetching {
            self.recorded.clone()
        } else {
            cfg.image()
        }
    }

    /// Removes the images made for the experiment (best effort: they are
    /// copies).
    fn remove(&self) {
        let _ = std::fs::remove_file(&self.recorded);
        let _ = std::fs::remove_file(&self.relaid);
    }
}

/// Some variant boots the image with the recorded list.
fn prefetching(cfg: &BootConfig) -> bool {
    cfg.variants.iter().any(|v| !variant::is_plain(v))
}

fn copy_image(from: &Path, to: &Path) -> Result<(), ExperimentError> {
    std::fs::copy(from, to).map_err(|e| iolab_sys::SysError::io(to, e))?;
    Ok(())
}

/// The boots still to run, in order: the recording boot and the relayout
/// boot unless stored (a failed one removed its image and stopped the
/// experiment, so its resume records again), the warm-up boot, then every
/// round's variants shuffled; those stored already are left out.
pub(super) fn plan(
    cfg: &BootConfig,
    done: &BTreeSet<(String, u32)>,
    images: Option<&Images>,
) -> Vec<(String, u32)> {
    // A board keeps its list itself; a guest's is in iolab's image.
    let made = |v: &str, image: Option<&PathBuf>| {
        done.contains(&(v.to_string(), 1)) && image.is_none_or(|i| i.is_file())
    };
    let relayout = cfg.variants.iter().any(|v| variant::uses_relayout(v));
    let mut plan: Vec<(String, u32)> = Vec::new();
    if prefetching(cfg) && !made(variant::RECORD, images.map(|i| &i.recorded)) {
        plan.push((variant::RECORD.into(), 1));
    }
    if relayout && !made(variant::RELAYOUT_WRITE, images.map(|i| &i.relaid)) {
        plan.push((variant::RELAYOUT_WRITE.into(), 1));
    }
    // One plain boot before the measured ones, stored apart: the first
    // boots of a run were 5-20 % slower here (the host's caches of qemu,
    // the kernel and the initramfs).
    if cfg.warmup_boots > 0 && !done.contains(&(variant::WARMUP.to_string(), 1)) {
        plan.push((variant::WARMUP.into(), 1));
    }
    for round in 1..=cfg.boots {
        let mut order = cfg.variants.clone();
        shuffle(&mut order, cfg.seed ^ u64::from(round));
        plan.extend(
            order
                .into_iter()
                .map(|v| (v, round))
                .filter(|k| !done.contains(k)),
        );
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ProgressMode;

    fn cfg(variants: &[&str]) -> BootConfig {
        BootConfig {
            guest: PathBuf::from("/nonexistent-guest"),
            variants: variants.iter().map(|v| v.to_string()).collect(),
            boots: 2,
            bw_bytes: None,
            iops: None,
            memory_mib: 512,
            timeout_s: 60.0,
            seed: 1,
            warmup_boots: 1,
            ssh: None,
            disk: None,
            workload: super::super::Workload::Faults,
            cpu_us: None,
            resolve: None,
            max_boots: None,
            explain: true,
        }
    }

    fn body_of(cfg: BootConfig) -> (BootBody, Progress) {
        let body = BootBody {
            board: None,
            cfg,
            images: None,
            quickest: None,
            explain_planned: false,
            warnings: Vec::new(),
        };
        (body, Progress::new(0, "boots", ProgressMode::None))
    }

    fn boot(v: &str, rep: u32, secs: f64) -> RunRecord {
        let mut r = iolab_store::testutil::run("bfq", WORKLOAD, rep, secs);
        r.variant = (v != "none").then(|| v.to_string());
        r
    }

    #[test]
    fn a_guest_records_again_when_its_image_is_gone_and_a_board_only_when_never_recorded() {
        let c = cfg(&["none", "idle"]);
        let d = tempfile::tempdir().unwrap();
        let images = Images {
            recorded: d.path().join("root-recorded-1.img"),
            relaid: d.path().join("root-relayout-1.img"),
            prefetching: true,
        };
        let done: BTreeSet<(String, u32)> = [(variant::RECORD.to_string(), 1)].into();
        // The record is stored but its image is gone: again, first.
        let p = plan(&c, &done, Some(&images));
        assert_eq!(p[0], (variant::RECORD.to_string(), 1));
        assert_eq!(p[1], (variant::WARMUP.to_string(), 1));
        assert_eq!(p.len(), 2 + 2 * 2, "{p:?}");
        std::fs::write(&images.recorded, b"").unwrap();
        assert!(!plan(&c, &done, Some(&images))
            .iter()
            .any(|b| b.0 == variant::RECORD));
        // A board keeps its list itself: recorded once.
        assert!(!plan(&c, &done, None).iter().any(|b| b.0 == variant::RECORD));
        assert_eq!(plan(&c, &BTreeSet::new(), None)[0].0, variant::RECORD);
    }

    #[test]
    fn after_the_rounds_come_the_explained_boots_once_and_never_the_safety_ones() {
        let c = cfg(&["none", "idle", "safety-kill"]);
        let (mut body, mut progress) = body_of(c);
        let mut runs = vec![boot("none", 1, 5.0), boot("idle", 1, 5.1)];
        runs.push(boot("explain:none", 1, 7.0));
        let more = body.more(&runs, &mut progress).unwrap();
        let names: Vec<&str> = more.iter().filter_map(|c| c.variant.as_deref()).collect();
        // explain:none is stored already (a resume).
        assert_eq!(names, ["explain:idle"]);
        assert_eq!(more[0].reps, [1]);
        assert!(body.more(&runs, &mut progress).unwrap().is_empty());
    }

    #[test]
    fn auto_rounds_continue_after_the_highest_stored_round() {
        let mut c = cfg(&["none", "idle"]);
        c.explain = false;
        c.resolve = Some(0.001);
        c.max_boots = Some(6);
        let (mut body, mut progress) = body_of(c);
        // Four rounds stored (a resumed --boots auto): the next is the
        // fifth, whatever --boots said.
        let mut runs = Vec::new();
        for rep in 1..=4 {
            runs.push(boot("none", rep, 5.0 + 0.3 * f64::from(rep % 2)));
            runs.push(boot("idle", rep, 5.1 + 0.3 * f64::from(rep % 2)));
        }
        let more = body.more(&runs, &mut progress).unwrap();
        assert_eq!(more.len(), 2);
        assert!(more.iter().all(|c| c.reps == [5]), "{more:?}");
        // At the cap: no more rounds, and a warning says what was short.
        for rep in 5..=6 {
            runs.push(boot("none", rep, 5.0));
            runs.push(boot("idle", rep, 5.4));
        }
        assert!(body.more(&runs, &mut progress).unwrap().is_empty());
        assert!(
            body.warnings()[0].contains("not reached within 6"),
            "{:?}",
            body.warnings()
        );
    }
}
