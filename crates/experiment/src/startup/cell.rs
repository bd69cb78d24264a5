//! One cell of the matrix: scheduler and tunables, background load and
//! warm-up, then every repetition (and its prefetch variants) started
//! through [`super::start`].

use iolab_sys::UsageError;

use super::background::Background;
use super::start::{Conditions, StartEnd};
use super::Startup;
use crate::engine::{sleep_unless_stopped, Cell, CellContext, CellEnd};
use crate::ExperimentError;
use iolab_store::RunKey;

/// An activity's compiled state before the cell, read again (a charging
/// phone's background dexopt recompiles apps): its summary, stored with
/// each start, and what changed since it was last read, said and stored.
/// With `--compile`, the mode asked for is applied again.
fn dexopt_for_cell(
    st: &Startup,
    ctx: &mut CellContext<'_>,
) -> Result<(Option<String>, Option<String>), ExperimentError> {
    let mut seen = st.dexopt_seen.lock().unwrap_or_else(|p| p.into_inner());
    if seen.is_empty() {
        // Never read (not Android, or no dexopt state printed): nothing
        // to compare with.
        return Ok((None, None));
    }
    let mut now = match st.target.dexopt_now() {
        Ok(Some(now)) if !now.is_empty() => now,
        Ok(Some(_)) => {
            let line = "dexopt could not be read again before this cell (dumpsys package printed no dexopt state for the package): its starts' compiled code is unverified".to_string();
            ctx.progress.note(&line);
            return Ok((None, Some(line)));
        }
        Ok(None) => return Ok((None, None)),
        Err(e) => {
            let line = format!("dexopt could not be read again before this cell ({e}): its starts' compiled code is unverified");
            ctx.progress.note(&line);
            return Ok((None, Some(line)));
        }
    };
    let mut changed = None;
    if now != *seen {
        let was = crate::targets::device::summary(&seen);
        let found = crate::targets::device::summary(&now);
        let line = match st.target.recompile()? {
            Some(again) => {
                let line = format!(
                    "dexopt changed before this cell: {was} before, {found} now (a background dexopt); --compile applied again: {}",
                    crate::targets::device::summary(&again)
                );
                now = again;
                line
            }
            None => format!(
                "dexopt changed before this cell: {was} before, {found} now (a background dexopt): its starts read other compiled code than the cells before; the report flags comparisons across it"
            ),
        };
        ctx.progress.note(&line);
        changed = Some(line);
        *seen = now.clone();
    }
    Ok((Some(crate::targets::device::summary(&now)), changed))
}

/// Runs one cell.
pub(super) fn run_cell(
    st: &mut Startup,
    ctx: &mut CellContext<'_>,
    cell: &Cell,
) -> Result<CellEnd, ExperimentError> {
    let guard = ctx.guard;
    // Every disk under the place: a stack's I/O goes through all of them.
    for dev in &ctx.place.disks {
        guard.set_scheduler(dev, &cell.scheduler)?;
    }
    // The cell's point and the plan's settings, once its scheduler is in
    // place (switching to BFQ turns writeback throttling off, so
    // wbt_lat_usec comes after; a scheduler's tunables exist only then).
    let applied = apply_point(st, ctx, cell)?;
    // The scheduler's tunables as set and read back (stored per start as
    // `iosched_params_set`, as before they were settings).
    let mut tunables: Vec<(String, String)> = Vec::new();
    for r in applied.iter().flat_map(|a| &a.read_back) {
        if let Some(k) = r.name.strip_prefix("iosched.") {
            if r.applied && !tunables.iter().any(|(tk, _)| tk == k) {
                tunables.push((k.to_string(), r.asked.clone()));
            }
        }
    }
    let st: &Startup = st;
    ctx.progress.begin(&format!(
        "{} / {}{}",
        cell.scheduler,
        cell.workload,
        cell.variant
            .as_deref()
            .map_or_else(String::new, |p| format!(" @ {p}"))
    ));

    let (dexopt, dexopt_changed) = dexopt_for_cell(st, ctx)?;
    let load_dir = ctx.place.files_dir()?.join("iolab-load");
    // cgroup writeback ties an inode to the group that dirtied it (and a
    // cached page to the memcg that allocated it): a load file of an
    // earlier cell stays its dead group's, switched to the root when that
    // group goes, and only slowly to this cell's by the kernel's
    // foreign-inode detection; its writeback meanwhile goes out in another
    // group's name. So with memory control (v2) the load's files are made
    // anew in each cell, by this cell's load group (measured in the guest:
    // 41-84 % of a cell's disk writes charged to the load's group with the
    // files only evicted, 75 % with them kept cached).
    if applied
        .as_ref()
        .and_then(|a| a.groups.as_ref())
        .is_some_and(|g| g.memory)
        && load_dir.exists()
    {
        std::fs::remove_dir_all(&load_dir).map_err(|e| iolab_sys::SysError::io(&load_dir, e))?;
    }
    std::fs::create_dir_all(&load_dir).map_err(|e| iolab_sys::SysError::io(&load_dir, e))?;
    let mut bg = Background::start(
        &cell.workload,
        &load_dir,
        &st.cfg.load_options,
        st.cfg.load_ioprio,
        st.cfg.with_fio,
        guard,
    )?;
    // From here (the load's files laid out and synced) the device's
    // counters and the load's own are compared over the whole cell.
    let groups = applied.as_ref().and_then(|a| a.groups.as_ref());
    let cell_start = CellIo::start(ctx, bg.as_ref(), groups)?;
    // The load's rate during the warm-up, by its own counters: what it
    // reaches on its own, stored with every start for comparison.
    let warmup = st.cfg.warmup(&cell.scheduler);
    let ios_before = bg.as_ref().and_then(Background::ios);
    if bg.is_some() && !sleep_unless_stopped(warmup) {
        if let Some(b) = bg.take() {
            b.stop();
        }
        return Ok(CellEnd::Interrupted);
    }
    let warmup_rate = match &bg {
        Some(b) if !warmup.is_zero() => {
            let (r, w) = b.io();
            let secs = warmup.as_secs_f64();
            Some((
                r.saturating_sub(cell_start.load.0) as f64 / secs,
                w.saturating_sub(cell_start.load.1) as f64 / secs,
            ))
        }
        _ => None,
    };
    let warmup_ios_per_s = match (bg.as_ref().and_then(Background::ios), ios_before) {
        (Some(a), Some(b)) if !warmup.is_zero() => {
            Some(a.saturating_sub(b) as f64 / warmup.as_secs_f64())
        }
        _ => None,
    };
    let conditions = Conditions {
        cell,
        tunables: &tunables,
        all_tunables: &ctx.place.dev()?.iosched_tunables(),
        warmup_rate,
        warmup_ios_per_s,
        groups,
        not_applied: applied
            .as_ref()
            .and_then(crate::control::Applied::not_applied),
        dexopt,
        dexopt_changed,
    };
    let mut last_run = None;
    let end = reps(st, ctx, &conditions, bg.as_ref(), &mut last_run);
    if let Some(b) = bg.take() {
        let moved = b.stop();
        // Stored with the cell's last run once its writeback is flushed.
        if let (Some(run), Ok(_)) = (last_run, &end) {
            let doc = cell_start.finish(ctx, &moved, applied.as_ref())?;
            ctx.add_artifact(run, &doc)?;
        }
    }
    end
}

/// The cell's traffic by the load's own counters and by the device's,
/// from the load's start (its files laid out) to its stop and the
/// filesystem's writeback: the cross-check of every start's background
/// numbers (stored as the `cell_io` artifact of the cell's last run).
struct CellIo {
    at: std::time::Instant,
    disks: Option<iolab_sys::diskstats::DiskStat>,
    load: (u64, u64),
    /// iolab's groups' bytes (target, load) on the place's disks.
    groups: Option<[(u64, u64); 2]>,
}

impl CellIo {
    fn start(
        ctx: &CellContext<'_>,
        bg: Option<&Background>,
        groups: Option<&crate::control::Groups>,
    ) -> Result<CellIo, ExperimentError> {
        Ok(CellIo {
            at: std::time::Instant::now(),
            disks: ctx.place.diskstats()?,
            load: bg.map_or((0, 0), Background::io),
            groups: groups.map(|g| group_bytes(ctx, g)).transpose()?,
        })
    }

    /// After the load stopped having moved `moved` bytes in all (with
    /// what made its own count short): the filesystem is synced (its
    /// dirty pages written), then both counted.
    fn finish(
        self,
        ctx: &CellContext<'_>,
        (moved, short): &((u64, u64), Vec<String>),
        applied: Option<&crate::control::Applied>,
    ) -> Result<iolab_results::ArtifactDoc, ExperimentError> {
        let mount = ctx.place.mount()?;
        let flush = std::time::Instant::now();
        let f = std::fs::File::open(mount).map_err(|e| iolab_sys::SysError::io(mount, e))?;
        rustix::fs::syncfs(&f).map_err(|e| iolab_sys::SysError::io(mount, e.into()))?;
        let flushed_s = flush.elapsed().as_secs_f64();
        let after = ctx.place.diskstats()?;
        let device = match (&self.disks, &after) {
            (Some(b), Some(a)) => Some(a.since(b)),
            _ => None,
        };
        // Each group's bytes over the cell, as its io.stat (v2) or blkio
        // service counters (v1) count them: what the kernel charged to it.
        let groups = match (applied.and_then(|a| a.groups.as_ref()), self.groups) {
            (Some(g), Some(before)) => {
                let after = group_bytes(ctx, g)?;
                let one = |i: usize| {
                    serde_json::json!({
                        "read_bytes": after[i].0.saturating_sub(before[i].0),
                        "write_bytes": after[i].1.saturating_sub(before[i].1),
                    })
                };
                serde_json::json!({
                    "hierarchy": g.hier.describe(),
                    "memory": g.memory,
                    "writeback": g.writeback(),
                    "target": one(0),
                    "load": one(1),
                })
            }
            _ => serde_json::Value::Null,
        };
        let mut doc = serde_json::json!({
            "settings": applied.map(|a| &a.read_back),
            "groups": groups,
            "seconds": self.at.elapsed().as_secs_f64(),
            "flush_s": flushed_s,
            "load_read_bytes": moved.0.saturating_sub(self.load.0),
            "load_write_bytes": moved.1.saturating_sub(self.load.1),
            "device": ctx.place.disk_names().join("+"),
            "device_read_bytes": device.as_ref().map(|d| d.read_bytes()),
            "device_write_bytes": device.as_ref().map(|d| d.write_bytes()),
        });
        if !short.is_empty() {
            doc["load_warnings"] = serde_json::json!(short);
        }
        Ok(iolab_results::ArtifactDoc {
            kind: iolab_results::ArtifactKind::CellIo,
            json: doc,
        })
    }
}

/// The plan's settings and the cell's point applied (`None` without
/// either), and the starts' and the load's priorities and nice values set
/// from them.
fn apply_point(
    st: &mut Startup,
    ctx: &mut CellContext<'_>,
    cell: &Cell,
) -> Result<Option<crate::control::Applied>, ExperimentError> {
    // The settings that act under this scheduler, then the cell's variant
    // (the point as this scheduler runs it).
    // A scheduler iolab has no table of (cfq, a vendor's) is asked
    // whether it has a tunable by its files, now that it is set: one it
    // lacks is left out, as for a known one.
    let has_tunable = |t: &str| {
        ctx.place
            .disks
            .iter()
            .any(|d| d.queue_path("iosched").join(t).exists())
    };
    let kept: Vec<(String, String)> = st
        .cfg
        .settings_for(&cell.scheduler)
        .0
        .into_iter()
        .filter(|(n, _)| n.strip_prefix("iosched.").is_none_or(has_tunable))
        .collect();
    let point = cell
        .variant
        .as_deref()
        .map(crate::control::Point::from_text)
        .unwrap_or_else(|| crate::control::Point(Vec::new()));
    let all = super::config::with_settings(&kept, &point).0;
    if all.is_empty() {
        (st.cfg.target_ioprio, st.cfg.target_nice, st.cfg.load_ioprio) = (None, None, None);
        st.spec.ioprio = None;
        st.spec.nice = None;
        return Ok(None);
    }
    let point = crate::control::Point(all);
    let applied = crate::control::apply::apply(
        ctx.guard,
        &ctx.place.disks,
        ctx.place.fs_dev.as_ref(),
        st.hier.as_ref(),
        st.fs_dir.as_deref(),
        ctx.place.mountpoint.as_deref(),
        &point,
    )?;
    let o = applied.overrides;
    st.cfg.target_ioprio = o.target_ioprio;
    st.cfg.target_nice = o.target_nice;
    st.cfg.load_ioprio = o.load_ioprio;
    st.spec.ioprio = st.cfg.target_ioprio;
    st.spec.nice = st.cfg.target_nice;
    Ok(Some(applied))
}

/// The bytes of iolab's (target, load) groups on the place's disks.
fn group_bytes(
    ctx: &CellContext<'_>,
    g: &crate::control::Groups,
) -> Result<[(u64, u64); 2], ExperimentError> {
    let devnos = ctx
        .place
        .disks
        .iter()
        .map(iolab_sys::block::BlockDev::devno)
        .collect::<Result<Vec<_>, _>>()?;
    use crate::control::setting::Who;
    Ok([
        g.io_bytes(Who::Target, &devnos)?,
        g.io_bytes(Who::Load, &devnos)?,
    ])
}

/// Every repetition still to make, each variant of it in turn.
fn reps(
    st: &Startup,
    ctx: &mut CellContext<'_>,
    c: &Conditions<'_>,
    bg: Option<&Background>,
    last_run: &mut Option<iolab_store::RunId>,
) -> Result<CellEnd, ExperimentError> {
    let cell = c.cell;
    let cell_name = format!("{} {}", cell.scheduler, cell.workload);
    // Starts made here, and why each invalid one did not count.
    let (mut made, mut invalid) = (0usize, Vec::<String>::new());
    let to_do = cell.reps.iter().any(|&rep| {
        !ctx.done.contains(
            &RunKey::new(&cell.scheduler, &cell.workload, rep)
                .with_variant(cell.variant.as_deref()),
        )
    });
    if st.cfg.start_mode != super::StartMode::Cold && to_do {
        if iolab_guard::stop_requested() {
            return Ok(CellEnd::Interrupted);
        }
        super::start::prime(st, ctx)?;
    }
    for &rep in &cell.reps {
        let variants = match &st.prefetcher {
            Some(p) => p.variants(&cell.workload, rep),
            None => vec![None],
        };
        for mode in variants {
            let prefetch = mode.map(super::PrefetchMode::variant);
            let variant =
                iolab_results::variant::join(cell.variant.as_deref(), prefetch.as_deref());
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
            ctx.progress.begin(&format!(
                "{} / {} rep {rep}{}",
                cell.scheduler,
                cell.workload,
                variant
                    .as_deref()
                    .map_or_else(String::new, |v| format!(" @ {v}"))
            ));
            let pre = st.prefetcher.as_ref().zip(mode);
            let (end, run) = super::start::start(st, ctx, c, rep, pre, bg)?;
            if run.is_some() {
                *last_run = run;
                made += 1;
            }
            match end {
                StartEnd::Stored => {}
                // A point the kernel did not take: one start is stored
                // invalid with the reason; more would repeat it.
                StartEnd::Invalid(why) if c.not_applied.is_some() => {
                    return Ok(CellEnd::Stopped(format!(
                        "cell {cell_name} stopped after rep {rep} (stored as invalid): {why}"
                    )))
                }
                StartEnd::Invalid(why) => invalid.push(why),
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
    // A cell none of whose starts counts (none began cold, none was the
    // kind of start asked for, or none got an option asked for the app)
    // has no sample: as incomplete as one whose load stopped, and said so
    // the same way.
    // With rounds, a visit holds a share of the cell's repetitions: the
    // cell has no sample when none of its visits made a valid start (a
    // resumed cell's earlier starts are taken as having one).
    let valid = {
        let mut v = st.valid_starts.lock().unwrap_or_else(|p| p.into_inner());
        let n = v
            .entry(format!("{cell_name} {:?}", cell.variant))
            .or_insert(0);
        *n += made.saturating_sub(invalid.len());
        *n
    };
    let resumed = (1..=st.cfg.reps).any(|rep| {
        ctx.done.contains(
            &RunKey::new(&cell.scheduler, &cell.workload, rep)
                .with_variant(cell.variant.as_deref()),
        )
    });
    let last_visit = cell.reps.last() == Some(&st.cfg.reps);
    if made > 0 && valid == 0 && last_visit && !resumed {
        return Ok(CellEnd::Stopped(format!(
            "cell {cell_name}: none of its {made} start(s) counts (stored as invalid); the last: {}",
            invalid.last().map_or("", String::as_str)
        )));
    }
    Ok(CellEnd::Done)
}
