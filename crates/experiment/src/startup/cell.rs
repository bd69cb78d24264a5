//! One cell of the matrix: scheduler and tunables, background load and
//! warm-up, then every repetition (and its prefetch variants) started
//! through [`super::start`].

use std::path::Path;

use iolab_sys::UsageError;

use super::background::Background;
use super::start::{Conditions, StartEnd};
use super::Startup;
use crate::engine::{sleep_unless_stopped, Cell, CellContext, CellEnd};
use crate::ExperimentError;
use iolab_store::RunKey;

/// Runs one cell.
pub(super) fn run_cell(
    st: &Startup,
    ctx: &mut CellContext<'_>,
    cell: &Cell,
) -> Result<CellEnd, ExperimentError> {
    let (guard, dev) = (ctx.guard, &ctx.place.dev);
    guard.set_scheduler(dev, &cell.scheduler)?;
    let mut tunables = Vec::new();
    for (k, v) in &st.cfg.iosched_params {
        if dev.queue_path("iosched").join(k).exists() {
            guard.set_iosched_param(dev, k, v)?;
            tunables.push((k.clone(), v.clone()));
        }
    }
    ctx.progress
        .begin(&format!("{} / {}", cell.scheduler, cell.workload));

    let load_dir = ctx.place.files_dir()?.join("iolab-load");
    std::fs::create_dir_all(&load_dir).map_err(|e| iolab_sys::SysError::io(&load_dir, e))?;
    let mut bg = Background::start(
        &cell.workload,
        &load_dir,
        &st.cfg.load_options,
        st.cfg.load_ioprio,
        guard,
    )?;
    // The device's traffic during the warm-up: the rate the load reaches
    // on its own, stored with every start for comparison.
    let proc = Path::new("/proc");
    let before_warmup = iolab_sys::diskstats::read_device(proc, &dev.name)?;
    let warmup = st.cfg.warmup(&cell.scheduler);
    if bg.is_some() && !sleep_unless_stopped(warmup) {
        if let Some(b) = bg.take() {
            b.stop();
        }
        return Ok(CellEnd::Interrupted);
    }
    let after_warmup = iolab_sys::diskstats::read_device(proc, &dev.name)?;
    let warmup_rate = match (&bg, before_warmup, after_warmup) {
        (Some(_), Some(b), Some(a)) if !warmup.is_zero() => {
            let d = a.since(&b);
            let secs = warmup.as_secs_f64();
            Some((d.read_bytes() as f64 / secs, d.write_bytes() as f64 / secs))
        }
        _ => None,
    };
    let conditions = Conditions {
        cell,
        tunables: &tunables,
        all_tunables: &dev.iosched_tunables(),
        warmup_rate,
    };
    let end = reps(st, ctx, &conditions, bg.as_ref());
    if let Some(b) = bg.take() {
        b.stop();
    }
    end
}

/// Every repetition still to make, each variant of it in turn.
fn reps(
    st: &Startup,
    ctx: &mut CellContext<'_>,
    c: &Conditions<'_>,
    bg: Option<&Background>,
) -> Result<CellEnd, ExperimentError> {
    let cell = c.cell;
    let cell_name = format!("{} {}", cell.scheduler, cell.workload);
    for &rep in &cell.reps {
        let variants = match &st.prefetcher {
            Some(p) => p.variants(&cell.workload, rep),
            None => vec![None],
        };
        for mode in variants {
            let variant = mode.map(super::PrefetchMode::variant);
            let key =
                RunKey::new(&cell.scheduler, &cell.workload, rep).with_variant(variant.as_deref());
            if ctx.done.contains(&key) {
                continue;
            }
            if iolab_guard::stop_requested() {
                return Ok(CellEnd::Interrupted);
            }
            if let Some(why) = bg.and_then(Background::ended) {
                return Ok(CellEnd::Stopped(format!(
                    "cell {cell_name} stopped before rep {rep}: {why}"
                )));
            }
            ctx.progress
                .begin(&format!("{} / {} rep {rep}", cell.scheduler, cell.workload));
            let pre = st.prefetcher.as_ref().zip(mode);
            match super::start::start(st, ctx, c, rep, pre, bg)? {
                StartEnd::Stored => {}
                StartEnd::Interrupted => return Ok(CellEnd::Interrupted),
                StartEnd::LoadProblem(why) => {
                    return Ok(CellEnd::Stopped(format!(
                        "cell {cell_name} stopped during rep {rep} (stored as invalid): {why}"
                    )))
                }
                StartEnd::FirstIdleFailed { reason, tail } => {
                    // Stored first (nothing measured is lost), then: a
                    // command that fails on its very first idle start is
                    // almost surely wrong, and the whole matrix would only
                    // repeat the failure.
                    return Err(UsageError::new(format!(
                        "the target failed on its first idle start ({reason}); fix the command first. Its last output:\n{}",
                        iolab_sys::text::last_lines(&tail, 10)
                    ))
                    .into());
                }
            }
        }
    }
    Ok(CellEnd::Done)
}
