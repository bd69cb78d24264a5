//! Checks and one-off preparation before the first start: everything a
//! typo could break is tried up front, so no start is measured in vain.

use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

use super::config::StartupConfig;
use crate::place::Resolved;
use crate::ExperimentError;

/// Every workload must parse (a named one or a readable job file, with the
/// `--load-option`s applied) before anything is measured: a typo found at
/// its cell would come after the lab, the preparation and the idle starts.
/// Under `--with-fio`, a job file is checked by fio itself (`--parse-only`).
pub(super) fn check_workloads(cfg: &StartupConfig) -> Result<(), ExperimentError> {
    for w in cfg.workloads.iter().filter(|w| *w != "idle") {
        if under_fio(cfg, w) {
            fio_parses(w, &cfg.load_options)?;
        } else {
            iolab_load::jobs_from_spec(w, &cfg.load_options)?;
        }
    }
    Ok(())
}

/// Whether workload `w` runs under fio.
pub(super) fn under_fio(cfg: &StartupConfig, w: &str) -> bool {
    cfg.with_fio && iolab_load::named::lookup(w).is_none()
}

fn fio_parses(w: &str, overrides: &[(String, String)]) -> Result<(), ExperimentError> {
    let fio = super::background::fio_path()?;
    let dir = std::env::temp_dir().join(format!("iolab-fio-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| iolab_sys::SysError::io(&dir, e))?;
    let checked = super::background::fio_job_file(w, &dir, overrides).and_then(|job| {
        std::process::Command::new(&fio)
            .arg("--parse-only")
            .arg(&job)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| iolab_sys::SysError::io(&fio, e).into())
    });
    let _ = std::fs::remove_dir_all(&dir);
    let out = checked?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let why = err
            .lines()
            .chain(String::from_utf8_lossy(&out.stdout).lines())
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message")
            .to_string();
        return Err(UsageError::new(format!(
            "background workload {w:?}: fio --parse-only refuses it: {why}"
        ))
        .into());
    }
    Ok(())
}

/// In place (`--in DIR`), the load's files go on the user's filesystem:
/// their size is fixed (512 MiB per file, the thesis's `dd bs=1M
/// count=512`, unless `--load-option size=` says otherwise) instead of
/// growing to fill the free space as on a lab, and they must fit, with a
/// tenth of the filesystem's free space to spare, or nothing runs.
pub(super) fn fit_in_place(
    cfg: &mut StartupConfig,
    load_dir: &Path,
) -> Result<(), ExperimentError> {
    if !cfg.load_options.iter().any(|(k, _)| k == "size") {
        cfg.load_options
            .push(("size".into(), iolab_load::NAMED_FILE_SIZE.to_string()));
    }
    let mut files: Vec<(PathBuf, u64)> = Vec::new();
    let mut opts = vec![(
        "directory".to_string(),
        load_dir.to_string_lossy().into_owned(),
    )];
    opts.extend(cfg.load_options.iter().cloned());
    // A job file under fio is fio's to size: its files are not known here.
    for w in cfg
        .workloads
        .iter()
        .filter(|w| *w != "idle" && !under_fio(cfg, w))
    {
        for job in iolab_load::jobs_from_spec(w, &opts)? {
            // fio's size counts all of a clone's files.
            let size = job.size.unwrap_or(0) / job.nrfiles() as u64;
            for clone in 0..job.numjobs {
                for path in iolab_load::clone_paths(&job, clone) {
                    if !files.iter().any(|(p, _)| *p == path) {
                        files.push((path, size));
                    }
                }
            }
        }
    }
    let need: u64 = files.iter().map(|(_, s)| s).sum();
    let parent = load_dir.parent().unwrap_or(load_dir);
    let st = rustix::fs::statvfs(parent).map_err(|e| iolab_sys::SysError::io(parent, e.into()))?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    if need > free / 10 * 9 {
        use iolab_sys::units::format_bytes;
        return Err(UsageError::new(format!(
            "the background load needs {} of files ({} file(s)) in {}, but only {} is free there (a tenth kept spare): free some space, or use smaller files with --load-option size=128M",
            format_bytes(need),
            files.len(),
            parent.display(),
            format_bytes(free)
        ))
        .into());
    }
    Ok(())
}

/// Runs the one-off preparation command; it must succeed.
pub(super) fn prepare(script: &str) -> Result<(), ExperimentError> {
    // "iolab" in the script means this very binary, wherever it was built.
    let exe = std::env::current_exe().map_err(|e| {
        UsageError::new(format!(
            "cannot find this iolab binary for the --prepare command ({e})"
        ))
    })?;
    let mut path = exe
        .parent()
        .map(|d| d.as_os_str().to_owned())
        .unwrap_or_else(|| "/".into());
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

/// Every scheduler tunable the whole plan sets (`--iosched-param`, a
/// one-value `--vary iosched.X=V`) must name a tunable of at least one
/// scheduler of the matrix, with a value it accepts: cells leave a tunable
/// out where their scheduler lacks it (said as inert), so a typo would
/// otherwise silently measure defaults. Checked by switching to each
/// scheduler and setting the values (guarded, as the cells do; each cell
/// sets its scheduler and values again).
pub(super) fn check_iosched_params(
    guard: &Guard,
    dev: &BlockDev,
    schedulers: &[String],
    cfg: &StartupConfig,
) -> Result<(), ExperimentError> {
    let params: Vec<(&str, &str)> = cfg
        .settings
        .iter()
        .filter_map(|(n, v)| Some((n.strip_prefix("iosched.")?, v.as_str())))
        .collect();
    if params.is_empty() {
        return Ok(());
    }
    let mut used = vec![false; params.len()];
    let mut offered = Vec::new();
    for s in schedulers {
        guard.set_scheduler(dev, s)?;
        let have: Vec<String> = dev.iosched_tunables().into_iter().map(|(k, _)| k).collect();
        for ((k, v), used) in params.iter().zip(used.iter_mut()) {
            if have.iter().any(|h| h == k) {
                *used = true;
                let path = dev.queue_path("iosched").join(k);
                let current =
                    std::fs::read_to_string(&path).unwrap_or_else(|e| format!("(unreadable: {e})"));
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
    if let Some(((k, _), _)) = params.iter().zip(&used).find(|(_, u)| !**u) {
        return Err(UsageError::new(format!(
            "--iosched-param {k}: no scheduler of the matrix has a tunable {k:?}; they have {}",
            offered.join("; ")
        ))
        .into());
    }
    Ok(())
}

/// Applies an explicit `--dirty-limit` to a named lab or a device (a
/// temporary lab gets it, or its default, when it is made: see
/// `LabSpec::effective_dirty_limit`).
pub(super) fn limit_dirty(
    guard: &Guard,
    place: &Resolved,
    cfg: &StartupConfig,
) -> Result<(), ExperimentError> {
    if matches!(cfg.place, crate::place::Place::NewLab { .. }) {
        return Ok(());
    }
    if let Some(limit) = cfg.dirty_limit_bytes {
        guard.set_bdi_dirty_limit(place.fs_dev()?, limit)?;
    }
    Ok(())
}

/// True when blk-iocost is enabled on every disk of the place (the v2
/// root's io.cost.qos says `enable=1` for it): io.weight acts only then.
/// No v2 hierarchy or no io.cost file: off.
pub(super) fn iocost_on(place: &Resolved) -> Result<bool, ExperimentError> {
    let Ok(h) = crate::control::Hierarchy::find() else {
        return Ok(false);
    };
    let path = h.root.join("io.cost.qos");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(iolab_sys::SysError::io(&path, e).into()),
    };
    for d in &place.disks {
        let devno = d.devno()?;
        let on = text.lines().any(|l| {
            let mut f = l.split_whitespace();
            f.next() == Some(devno.as_str()) && f.any(|kv| kv == "enable=1")
        });
        if !on {
            return Ok(false);
        }
    }
    Ok(!place.disks.is_empty())
}

/// Says the plan's size — points × schedulers × workloads × repetitions,
/// and how long it may take — before anything runs, and refuses one of
/// more than `--max-runs` starts with that size.
pub(super) fn check_plan_size(
    cfg: &StartupConfig,
    schedulers: &[String],
    announce: &dyn Fn(&str),
) -> Result<(), ExperimentError> {
    let workloads = cfg.workloads_with_idle().len() as u64;
    let rounds = cfg.rounds();
    let mut cells = 0u64;
    let mut warmup_s = 0.0;
    for s in schedulers {
        let points = if cfg.points.is_empty() {
            1
        } else {
            cfg.points_for(s).0.len() as u64
        };
        cells += points * workloads;
        // The idle cell has no load to warm up; every other cell's load
        // is started and warmed up again in each round.
        warmup_s +=
            (points * (workloads - 1)) as f64 * f64::from(rounds) * cfg.warmup(s).as_secs_f64();
    }
    let per_start = if cfg.prefetch.is_some() { 3 } else { 1 };
    let starts = cells * u64::from(cfg.reps) * per_start;
    // Every start at its timeout, plus the pause: an upper bound.
    let most_s = warmup_s + starts as f64 * (cfg.timeout_s + cfg.pause_s.unwrap_or(0.0));
    let points = if cfg.points.is_empty() {
        String::new()
    } else {
        format!("{} point(s) × ", cfg.points.len())
    };
    let in_rounds = if rounds > 1 {
        format!(" in {rounds} rounds")
    } else {
        String::new()
    };
    let size = format!(
        "plan: {points}{} scheduler(s) × {workloads} workload(s) (idle included) × {} rep(s) = {cells} cells{in_rounds}, {starts} starts; at most {} (every start at its --timeout), warm-ups {}",
        schedulers.len(),
        cfg.reps,
        crate::engine::clock(most_s),
        crate::engine::clock(warmup_s)
    );
    if starts > cfg.max_runs {
        return Err(UsageError::new(format!(
            "{size}: more than --max-runs {} starts; raise --max-runs or vary fewer settings",
            cfg.max_runs
        ))
        .into());
    }
    if !cfg.points.is_empty() {
        announce(&size);
    }
    Ok(())
}

/// For a plan with `cg.*` settings: the hierarchy, checked once with a
/// probe of iolab's groups (made and removed here) to have every file the
/// plan sets; refused in one line naming what it has instead. Also
/// refused: a cgroup v1 root with a blkio throttle rule, which iolab's
/// groups would escape (v1's throttle is flat: a rule at the root limits
/// the root group's own I/O only).
pub(super) fn check_cgroups(
    guard: &Guard,
    cfg: &StartupConfig,
) -> Result<Option<crate::control::Hierarchy>, ExperimentError> {
    use crate::control::cgroup::Version;
    let applied = cfg.applied_points();
    if !applied
        .first()
        .is_some_and(crate::control::Point::uses_cgroups)
    {
        return Ok(None);
    }
    let hier = crate::control::Hierarchy::find()?;
    if hier.version == Version::V1 {
        for f in [
            "blkio.throttle.read_bps_device",
            "blkio.throttle.write_bps_device",
            "blkio.throttle.read_iops_device",
            "blkio.throttle.write_iops_device",
        ] {
            // No file: no throttling in this kernel, so no rule to escape.
            let path = hier.root.join(f);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(iolab_sys::SysError::io(&path, e).into()),
            };
            if let Some(rule) = text.lines().find(|l| !l.trim().is_empty()) {
                return Err(UsageError::new(format!(
                    "cgroup settings on cgroup v1: the root's {f} has the rule {rule:?} (a throttled lab's?), and v1's throttling is flat, so iolab's groups would escape it; use a lab with --backend model, or a place without a root throttle"
                ))
                .into());
            }
        }
    }
    crate::control::apply::check_files(&applied, &hier, &hier.group_files(guard)?)?;
    Ok(Some(hier))
}

/// The plan's settings of the queue and of the VM, in force from here on
/// (through the guard, read back): what runs before the first cell (the
/// prefetch list's recording, the first start, which learns the target's
/// files) runs at them too, as the cells will. Each cell applies them
/// again with its point and undoes only its own changes.
pub(super) fn early_settings(
    guard: &Guard,
    place: &Resolved,
    cfg: &StartupConfig,
) -> Result<(), ExperimentError> {
    use crate::control::setting::Knob;
    let early: Vec<(String, String)> = cfg
        .settings
        .iter()
        .filter(|(n, _)| matches!(Knob::parse(n), Ok(Knob::Queue(_) | Knob::Sysctl(_))))
        .cloned()
        .collect();
    if early.is_empty() {
        return Ok(());
    }
    let applied = crate::control::apply::apply(
        guard,
        &place.disks,
        place.fs_dev.as_ref(),
        None,
        None,
        None,
        &crate::control::Point(early),
    )?;
    match applied.not_applied() {
        Some(why) => Err(UsageError::new(format!("the plan's settings: {why}")).into()),
        None => Ok(()),
    }
}
