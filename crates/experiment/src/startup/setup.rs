//! Checks and one-off preparation before the first start: everything a
//! typo could break is tried up front, so no start is measured in vain.

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;
use regex::Regex;

use super::config::{ReadyWhen, StartupConfig};
use super::place::Resolved;
use super::StartupError;

pub(super) fn validate(cfg: &StartupConfig) -> Result<(), UsageError> {
    if cfg.command.is_empty() {
        return Err(UsageError::new(
            "no target command: put it after --, e.g. iolab startup -- iolab app --dir /mnt/app",
        ));
    }
    if cfg.reps == 0 {
        return Err(UsageError::new("--reps must be at least 1"));
    }
    // Also guards a configuration read back from a database for --resume.
    if !(cfg.timeout_s > 0.0 && cfg.timeout_s <= 86_400.0) {
        return Err(UsageError::new(format!(
            "--timeout {}: expected a positive number of seconds, at most a day",
            cfg.timeout_s
        )));
    }
    if let Some(w) = cfg.warmup_s {
        if !(0.0..=3_600.0).contains(&w) {
            return Err(UsageError::new(format!(
                "--warmup {w}: expected 0 to 3600 seconds"
            )));
        }
    }
    if let ReadyWhen::Line { regex } = &cfg.ready {
        Regex::new(regex).map_err(|e| {
            UsageError::new(format!("--ready-line {regex:?} is not a valid regex: {e}"))
        })?;
    }
    if let Some(regex) = cfg.am_start.as_ref().and_then(|a| a.ready_logcat.as_ref()) {
        Regex::new(regex).map_err(|e| {
            UsageError::new(format!(
                "--ready-logcat {regex:?} is not a valid regex: {e}"
            ))
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
pub(super) fn check_workloads(cfg: &StartupConfig) -> Result<(), StartupError> {
    for w in cfg.workloads.iter().filter(|w| *w != "idle") {
        iolab_load::jobs_from_spec(w, &cfg.load_options)?;
    }
    Ok(())
}

/// Runs the one-off preparation command; it must succeed.
pub(super) fn prepare(script: &str) -> Result<(), StartupError> {
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

pub(super) fn check_schedulers(dev: &BlockDev, cfg: &StartupConfig) -> Result<(), StartupError> {
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
pub(super) fn check_iosched_params(
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

/// Applies an explicit `--dirty-limit` to a named lab or a device (a
/// temporary lab gets it, or its default, when it is made: see
/// `LabSpec::effective_dirty_limit`).
pub(super) fn limit_dirty(
    guard: &Guard,
    place: &Resolved,
    cfg: &StartupConfig,
) -> Result<(), StartupError> {
    if matches!(cfg.place, super::config::Place::NewLab { .. }) {
        return Ok(());
    }
    if let Some(limit) = cfg.dirty_limit_bytes {
        guard.set_bdi_dirty_limit(&place.dev, limit)?;
    }
    Ok(())
}
