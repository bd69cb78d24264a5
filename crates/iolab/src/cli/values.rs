//! Value parsers for the flags users type: every number, size, rate,
//! duration and priority is checked here, once, with its range and the
//! reason for the range, and becomes a typed value (`Duration`, bytes,
//! `IoPrio`, `Fs`); nothing below the command line parses the text again.
//! Infinity, NaN and values a `Duration` cannot hold are a usage error
//! (exit 2), never a panic deep inside a run.

use std::time::Duration;

use iolab_experiment::startup::config::{MAX_TIMEOUT_S, MAX_WARMUP_S};
use iolab_sys::units::parse_seconds_in;

/// Longest recording, or run of anything timed by a duration flag.
pub const MAX_RECORD_S: f64 = 7.0 * 86_400.0;

/// A size in bytes: `4GiB`, `512M`, `4096`.
pub fn size(s: &str) -> Result<u64, String> {
    iolab_sys::units::parse_size(s).map_err(|e| e.to_string())
}

/// A rate in bytes per second: `40MiB/s`.
pub fn rate(s: &str) -> Result<u64, String> {
    iolab_sys::units::parse_rate(s).map_err(|e| e.to_string())
}

/// An I/O priority: `rt:N`, `be:N` or `idle`.
pub fn ioprio(s: &str) -> Result<iolab_sys::ioprio::IoPrio, String> {
    s.parse().map_err(|e: iolab_sys::UsageError| e.to_string())
}

/// A filesystem iolab can make: `ext4`, `xfs`, `btrfs`, `erofs`, `none`.
pub fn fs(s: &str) -> Result<iolab_lab::Fs, String> {
    iolab_lab::Fs::parse(s).map_err(|e| e.to_string())
}

/// A positive duration: bare seconds (as mpstat, perf and fio read them:
/// `2`, `0.5`) or a number with a unit (`500ms`, `2s`, `2m`), at most a
/// week.
pub fn duration(s: &str) -> Result<Duration, String> {
    let v = parse_seconds_in(s, 0.0, MAX_RECORD_S, "longer runs are split into several")
        .map_err(|e| e.to_string())?;
    if v <= 0.0 {
        return Err(format!(
            "{s}: expected a positive duration, e.g. 2, 0.5 or 500ms"
        ));
    }
    Ok(Duration::from_secs_f64(v))
}

/// `--timeout S`: above 0, at most a day.
pub fn timeout_secs(s: &str) -> Result<f64, String> {
    let v = parse_seconds_in(
        s,
        0.0,
        MAX_TIMEOUT_S,
        "a start-up longer than a day is not one",
    )
    .map_err(|e| e.to_string())?;
    if v <= 0.0 {
        return Err(format!("{s} s: expected a positive number of seconds"));
    }
    Ok(v)
}

/// `--warmup S`: 0 to an hour.
pub fn warmup_secs(s: &str) -> Result<f64, String> {
    parse_seconds_in(
        s,
        0.0,
        MAX_WARMUP_S,
        "a load settles in seconds; an hour is already generous",
    )
    .map_err(|e| e.to_string())
}

/// A scale factor of the synthetic app, in the app's own range, checked where clap parses the flag so
/// `iolab demo --scale` fails before a lab is made, not at its --prepare.
pub fn scale(s: &str) -> Result<f64, String> {
    let (lo, hi) = iolab_experiment::targets::app::SCALE_RANGE;
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s}: expected a factor from {lo} to {hi}, e.g. 0.5 (lighter) or 2 (heavier)"
        )),
    }
}

/// Milliseconds (`--min-stall`): 0 to an hour.
pub fn millis(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=3_600_000.0).contains(&v) => Ok(v),
        _ => Err(format!("{s}: expected milliseconds from 0 to 3600000")),
    }
}

/// `--ready-rss-stable SIZE[,GROWTH[,INTERVAL]]`: the memory the target
/// must reach, the change over INTERVAL that still counts as settled
/// (default 1M, the thesis's), and INTERVAL (default 1 s; 10 ms to 10 min).
pub fn settle(s: &str) -> Result<(u64, u64, f64), String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() > 3 || parts[0].is_empty() {
        return Err(format!(
            "{s}: expected SIZE[,GROWTH[,INTERVAL]], e.g. 54M or 54M,1M,1s (the thesis's)"
        ));
    }
    let size = |t: &str| iolab_sys::units::parse_size(t).map_err(|e| e.to_string());
    let min = size(parts[0])?;
    let growth = parts.get(1).map_or(Ok(1 << 20), |g| size(g))?;
    let interval = match parts.get(2) {
        Some(i) => parse_seconds_in(i, 0.01, 600.0, "a start-up settles within minutes")
            .map_err(|e| e.to_string())?,
        None => 1.0,
    };
    if min == 0 {
        return Err(format!("{s}: the size must be above 0"));
    }
    Ok((min, growth, interval))
}

/// `--progress`, shared by the commands that run experiments.
#[derive(Debug, Clone, clap::Args)]
pub struct ProgressArg {
    /// How progress is shown on stderr: `auto` (a bar on a terminal, one
    /// line per finished run otherwise, e.g. under nohup, ssh or CI),
    /// `bar`, `plain` or `none` [default: auto, also with --json or --csv:
    /// they go to stdout].
    #[arg(long, value_enum, value_name = "MODE")]
    pub progress: Option<iolab_experiment::engine::ProgressMode>,
}

impl ProgressArg {
    /// The mode: as given, else auto. Progress goes to stderr, so it does
    /// not depend on what stdout carries: `--json > out.json 2> log` once
    /// showed nothing for minutes.
    pub fn mode(&self) -> iolab_experiment::engine::ProgressMode {
        self.progress
            .unwrap_or(iolab_experiment::engine::ProgressMode::Auto)
    }
}

/// `--schedulers`, shared by the commands that compare schedulers.
#[derive(Debug, Clone, clap::Args)]
pub struct SchedulersArg {
    /// Schedulers to compare: `all` (every one the device offers) or a
    /// comma-separated list, each scheduler once.
    #[arg(long, default_value = "all", value_name = "all|LIST", value_parser = schedulers)]
    pub schedulers: iolab_experiment::Schedulers,
}

/// `all`, or scheduler names each given once: `none,bfq`.
pub fn schedulers(s: &str) -> Result<iolab_experiment::Schedulers, String> {
    let names: Vec<String> = s.split(',').map(|n| n.trim().to_string()).collect();
    iolab_experiment::Schedulers::parse(&names).map_err(|e| e.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn settle_reads_the_theses_form_and_refuses_nonsense() {
        assert_eq!(settle("54M").unwrap(), (54 << 20, 1 << 20, 1.0));
        assert_eq!(settle("54M,512K,0.5").unwrap(), (54 << 20, 512 << 10, 0.5));
        for bad in ["", "0", "54M,1M,0", "54M,1M,inf", "a,b", "1M,1M,1,1"] {
            assert!(settle(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hostile_numbers_are_refused() {
        for bad in ["inf", "1e20", "NaN", "-1", "0"] {
            assert!(timeout_secs(bad).is_err(), "timeout {bad}");
            assert!(duration(bad).is_err(), "duration {bad}");
        }
        for bad in ["inf", "1e20", "NaN", "-1"] {
            assert!(warmup_secs(bad).is_err(), "warmup {bad}");
            assert!(scale(bad).is_err(), "scale {bad}");
            assert!(millis(bad).is_err(), "millis {bad}");
        }
        assert_eq!(timeout_secs("60").unwrap(), 60.0);
        assert_eq!(warmup_secs("0").unwrap(), 0.0);
        assert_eq!(warmup_secs("500ms").unwrap(), 0.5);
        assert_eq!(duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
    }
}
