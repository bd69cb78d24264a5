//! The full configuration of a startup experiment. It is stored as JSON with
//! the experiment, so `--resume ID` continues with exactly the same matrix.
//! Every value is typed and bounded here; a configuration read back from a
//! database is checked by the same [`StartupConfig::validate`] as one built
//! from flags.

use std::path::PathBuf;
use std::time::Duration;

use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::collect::Observe;
use crate::place::Place;
use crate::targets::Target;
use crate::Schedulers;

/// Longest `--timeout` of one start: a "start-up" of more than a day is
/// not one, and a matrix of such starts would hold the machine for weeks.
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
/// Longest warm-up of a cell: a load settles in seconds; an hour is
/// already generous.
pub const MAX_WARMUP_S: f64 = 3_600.0;

/// How each start is made cold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Cold {
    /// `sync; echo 3 > drop_caches` (the thesis and S suite).
    DropCaches,
    /// Evict only the target's files (less disruptive to the load).
    Evict,
    /// Leave the page cache alone (warm starts).
    None,
}

/// What state each measured start begins from (Macrobenchmark's
/// StartupMode, as the issue tracker's users read it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum StartMode {
    /// The process is new and its files are not cached: the cold step
    /// (`--cold`) before every start; an activity's app is force-stopped.
    #[default]
    Cold,
    /// No cold step, and one unmeasured priming start per cell first. A
    /// command: a new process with its files cached. An activity (as
    /// Android and Macrobenchmark mean it): its process stays alive and
    /// its activity is made again: before each start the app is sent home
    /// and started with `am start -W --activity-clear-task` (am must
    /// report WARM).
    Warm,
    /// The process and its activity are alive and only brought back: one
    /// unmeasured priming start per cell, then before each start the app
    /// is sent home (`input keyevent KEYCODE_HOME`), iolab waits until the
    /// system has stopped the activity (`dumpsys activity activities`),
    /// and starts it again with `am start -W` without `-S` (am must report
    /// HOT, with a TotalTime above 0). An activity only: a command's
    /// process cannot be kept and brought back.
    Hot,
}

impl StartMode {
    /// `cold`, `warm`, `hot`.
    pub fn as_str(self) -> &'static str {
        match self {
            StartMode::Cold => "cold",
            StartMode::Warm => "warm",
            StartMode::Hot => "hot",
        }
    }
}

/// When a start counts as finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ReadyWhen {
    /// The command exits.
    Exit,
    /// A stdout/stderr line matches this regex.
    Line {
        /// Regular expression.
        regex: String,
    },
    /// This file appears.
    File {
        /// Path.
        path: PathBuf,
    },
    /// The target's processes reached `min_bytes` of memory (PSS) and grew
    /// by at most `growth_bytes` over `interval_s` (the thesis's heuristic).
    MemorySettled {
        /// Size to reach.
        min_bytes: u64,
        /// Largest change over the interval.
        growth_bytes: u64,
        /// The interval, seconds.
        interval_s: f64,
    },
}

/// Everything that defines a startup experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartupConfig {
    /// Where it runs.
    pub place: Place,
    /// Schedulers to compare, in order.
    pub schedulers: Schedulers,
    /// Workloads (named or job-file paths); `idle` is always measured.
    pub workloads: Vec<String>,
    /// Repetitions per cell.
    pub reps: u32,
    /// Censoring limit per start, seconds.
    pub timeout_s: f64,
    /// Warm-up after starting the load, seconds; `None` = per-scheduler
    /// default ([`default_warmup`]).
    pub warmup_s: Option<f64>,
    /// Cold-start method.
    pub cold: Cold,
    /// Files or directories evicted with `--cold evict`.
    pub evict: Vec<PathBuf>,
    /// Settings the whole plan runs at (`--read-ahead-kb`,
    /// `--iosched-param`, `--target-ioprio`, `--target-nice`,
    /// `--load-ioprio`, and a `--vary` of one value): each is part of
    /// every cell's point, applied with it through the guard and read back
    /// (see [`crate::control::apply`]); where a cell's scheduler would
    /// ignore one it is left out there and said (`inert`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<(String, String)>,
    /// Readiness criterion.
    pub ready: ReadyWhen,
    /// Target I/O priority (`rt:0`, `be:4`, `idle`) and nice value, and
    /// the load's I/O priority, as the current cell runs them: taken from
    /// `settings` and the cell's point when it is applied, never stored
    /// (the settings are).
    #[serde(skip)]
    pub target_ioprio: Option<IoPrio>,
    #[serde(skip)]
    pub target_nice: Option<i32>,
    /// An app someone else forks (an activity's): `target_ioprio` and
    /// `target_nice` set back whenever Android changes them during a
    /// start, each time counted; without it such a start is invalid.
    #[serde(default)]
    pub target_hold: bool,
    #[serde(skip)]
    pub load_ioprio: Option<IoPrio>,
    /// fio options applied to every background job (e.g. `size=128M`).
    #[serde(default)]
    pub load_options: Vec<(String, String)>,
    /// Job-file workloads run under the installed fio, unchanged but for
    /// the `load_options` (named workloads stay iolab's own).
    #[serde(default)]
    pub with_fio: bool,
    /// What each start starts and times; `{dir}` in it is the place's
    /// directory (a temporary lab's mount point exists only once it is up).
    pub target: Target,
    /// A shell command run once before the matrix (e.g. `iolab app
    /// --prepare --dir {dir}/app`), with the same `{dir}` substitution.
    #[serde(default)]
    pub prepare: Option<String>,
    /// Per-lab dirty-page limit in bytes (bdi `max_bytes`), so `sync`
    /// before each start is bounded on a slow lab; `None` keeps the
    /// kernel's global limits.
    pub dirty_limit_bytes: Option<u64>,
    /// `dirty_limit_bytes` is iolab's choice (the demo's), not a
    /// `--dirty-limit` the user gave: a kernel without a per-device limit
    /// in bytes gets the nearest share and a warning, not a refusal.
    #[serde(default)]
    pub dirty_limit_preferred: bool,
    /// Also start each repetition with a prefetch list read in before or
    /// in parallel ([`super::prefetch`]); `None`: no prefetch dimension.
    #[serde(default)]
    pub prefetch: Option<super::prefetch::PrefetchConfig>,
    /// What else each start records (`--trace bio`, `--cpu`, `--explain`).
    #[serde(default)]
    pub observe: Observe,
    /// Fill memory before each start (after the cold step), so reclaim
    /// takes the target's pages as on a phone under memory pressure.
    #[serde(default)]
    pub memory_pressure: Option<crate::pressure::Pressure>,
    /// Rest between starts, seconds (S's pause), after the previous
    /// start's leftovers are gone and its dirty data is written back.
    #[serde(default)]
    pub pause_s: Option<f64>,
    /// Cold, warm or hot starts (cold before this existed).
    #[serde(default)]
    pub start_mode: StartMode,
    /// A second output line marking full display (`--full-ready-line`):
    /// the ready criterion's time is the initial display, this line's
    /// the full one; both are stored with every start.
    #[serde(default)]
    pub full_ready_line: Option<String>,
    /// The plan's points (`--vary`, `--point`, `--recipe`), each crossed
    /// with every scheduler and workload; empty: no axes beyond those.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<crate::control::Point>,
    /// The most starts a plan may have (`--max-runs`); a bigger one is
    /// refused with its size before anything runs.
    #[serde(default = "default_max_runs")]
    pub max_runs: u64,
    /// A recipe (`--recipe`), made into `points` from what the system has
    /// once the place is up; the stored configuration holds its points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<crate::control::Recipe>,
    /// A device's settings for `--recipe device` (`--device-settings`),
    /// stored with the experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_settings: Option<crate::control::device::DeviceSettings>,
    /// Rounds the repetitions are split into (`--rounds`): round k runs
    /// the k-th consecutive share of every cell's repetitions, and every
    /// cell once ([`super::plan`]). `None`: one round (what a stored
    /// configuration from before rounds means).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// The seed of each round's shuffle of its cells (`--order-seed`),
    /// stored so `--resume` replays the same order; `None`: the fixed
    /// order, scheduler → point → workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// blk-iocost is on for the place's disk (read at setup, never
    /// stored: a resumed plan reads it again): io.weight acts only then.
    #[serde(skip)]
    pub iocost: bool,
}

/// `--max-runs`'s default: a plan of more starts runs for hours.
pub const DEFAULT_MAX_RUNS: u64 = 400;

fn default_max_runs() -> u64 {
    DEFAULT_MAX_RUNS
}

/// Default warm-up for a scheduler. BFQ weight-raises newly started
/// processes as "interactive" for a period the kernel derives from the
/// device's peak rate (bfq_wr_duration(): at least 3 s); until it ends, the
/// background load competes with the target on equal raised terms and BFQ
/// would look better or worse than it is. Other schedulers keep no such
/// per-process history; a short warm-up lets the load reach steady state
/// (page cache filled, writeback started).
pub fn default_warmup(scheduler: &str) -> Duration {
    match scheduler {
        "bfq" => Duration::from_secs(8),
        _ => Duration::from_secs(3),
    }
}

impl StartupConfig {
    /// The warm-up used for `scheduler` (bounded by [`Self::validate`]).
    pub fn warmup(&self, scheduler: &str) -> Duration {
        match self
            .warmup_s
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
        {
            Some(d) => d,
            None => default_warmup(scheduler),
        }
    }

    /// The censoring limit (bounded by [`Self::validate`]).
    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_s.clamp(0.0, MAX_TIMEOUT_S))
    }

    /// What decides whether a setting acts in a cell under `scheduler`
    /// (see [`crate::control::points::inert`]).
    pub fn acts(&self, scheduler: &str) -> crate::control::points::Acts {
        let prio = |name: &str| {
            self.settings
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v.parse().ok())
        };
        crate::control::points::Acts {
            scheduler: scheduler.to_string(),
            iocost: self.iocost,
            target_ioprio: prio("target.ioprio"),
            load_ioprio: prio("load.ioprio"),
        }
    }

    /// Every point as a cell applies it: the whole plan's settings first,
    /// then the point's own (one point of the settings alone when the
    /// plan has no axes; none without either).
    pub fn applied_points(&self) -> Vec<crate::control::Point> {
        if self.points.is_empty() {
            return if self.settings.is_empty() {
                Vec::new()
            } else {
                vec![crate::control::Point(self.settings.clone())]
            };
        }
        self.points
            .iter()
            .map(|p| with_settings(&self.settings, p))
            .collect()
    }

    /// The whole plan's settings as a cell under `scheduler` runs them,
    /// and those that do nothing there with the kernel's reason. A
    /// scheduler tunable the scheduler lacks is left out (its file does
    /// not exist there); any other is applied all the same, as asked (a
    /// target's I/O priority under `none` still travels with its requests
    /// to every other disk), and said.
    pub fn settings_for(
        &self,
        scheduler: &str,
    ) -> (Vec<(String, String)>, Vec<crate::control::points::Inert>) {
        let point = crate::control::Point(self.settings.clone());
        let acts = self.acts(scheduler);
        let mut kept = Vec::new();
        let mut inert = Vec::new();
        for (n, v) in &self.settings {
            let Some(reason) = crate::control::points::inert(n, v, &point, &acts) else {
                kept.push((n.clone(), v.clone()));
                continue;
            };
            let left_out = n.starts_with("iosched.");
            inert.push(crate::control::points::Inert {
                scheduler: scheduler.to_string(),
                point: if left_out {
                    WHOLE_PLAN_LEFT_OUT
                } else {
                    WHOLE_PLAN_APPLIED
                }
                .into(),
                setting: iolab_results::variant::setting(n, v),
                reason,
            });
            if !left_out {
                kept.push((n.clone(), v.clone()));
            }
        }
        (kept, inert)
    }

    /// The points as a cell under `scheduler` runs them, and the settings
    /// that would do nothing there (see [`crate::control::points::for_cell`]).
    pub fn points_for(
        &self,
        scheduler: &str,
    ) -> (
        Vec<crate::control::Point>,
        Vec<crate::control::points::Inert>,
    ) {
        crate::control::points::for_cell(&self.points, &self.acts(scheduler))
    }

    /// The rounds the repetitions are split into (bounded by
    /// [`Self::validate`]): 1 unless `--rounds` or a plan's points set more.
    pub fn rounds(&self) -> u32 {
        self.rounds.unwrap_or(1).clamp(1, self.reps.max(1))
    }

    /// The workloads in the order measured: `idle` first, once.
    pub fn workloads_with_idle(&self) -> Vec<String> {
        let mut v = vec!["idle".to_string()];
        v.extend(self.workloads.iter().filter(|w| *w != "idle").cloned());
        v
    }

    /// Checks every value, for flags and for a configuration read back
    /// for `--resume` alike.
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.reps == 0 {
            return Err(UsageError::new("--reps must be at least 1"));
        }
        if let Some(r) = self.rounds {
            if r == 0 || r > self.reps {
                return Err(UsageError::new(format!(
                    "--rounds {r}: expected 1 to --reps ({}), as each round runs at least one repetition of every cell",
                    self.reps
                )));
            }
        }
        if !(self.timeout_s > 0.0 && self.timeout_s <= MAX_TIMEOUT_S) {
            return Err(UsageError::new(format!(
                "--timeout {}: expected a positive number of seconds, at most a day",
                self.timeout_s
            )));
        }
        if let Some(w) = self.warmup_s {
            if !(0.0..=MAX_WARMUP_S).contains(&w) {
                return Err(UsageError::new(format!(
                    "--warmup {w}: expected 0 to {MAX_WARMUP_S} seconds"
                )));
            }
        }
        if let Some(p) = self.pause_s {
            if !(0.0..=MAX_WARMUP_S).contains(&p) {
                return Err(UsageError::new(format!(
                    "--pause {p}: expected 0 to {MAX_WARMUP_S} seconds"
                )));
            }
        }
        if let ReadyWhen::Line { regex } = &self.ready {
            Regex::new(regex).map_err(|e| {
                UsageError::new(format!("--ready-line {regex:?} is not a valid regex: {e}"))
            })?;
        }
        if let ReadyWhen::MemorySettled { interval_s, .. } = &self.ready {
            if !(*interval_s > 0.0 && *interval_s <= 600.0) {
                return Err(UsageError::new(format!(
                    "--ready-rss-stable interval {interval_s}: expected 10 ms to 10 min"
                )));
            }
        }
        let sets = |name: &str| {
            self.settings.iter().any(|(n, _)| n == name)
                || self.points.iter().any(|p| p.get(name).is_some())
        };
        if self.target_hold
            && (!matches!(self.target, Target::Activity { .. })
                || !(sets("target.nice") || sets("target.ioprio")))
        {
            return Err(UsageError::new(
                "--target-hold sets back --target-nice/--target-ioprio on an app Android forks and changes itself: it needs --am-start and one of them",
            ));
        }
        if let Target::Activity { am, .. } = &self.target {
            if let (Some(_), StartMode::Hot) = (&am.ready_logcat, self.start_mode) {
                return Err(UsageError::new(
                    "--ready-logcat with --start-mode hot would wait out --timeout on every start: Android logs Displayed and Fully drawn only for cold and warm launches (ActivityMetricsLogger); a hot start's time is am's TotalTime: drop --ready-logcat",
                ));
            }
            if let Some(regex) = &am.ready_logcat {
                Regex::new(regex).map_err(|e| {
                    UsageError::new(format!(
                        "--ready-logcat {regex:?} is not a valid regex: {e}"
                    ))
                })?;
            }
        }
        self.check_start_mode()?;
        if let Some(regex) = &self.full_ready_line {
            if let Target::Activity { .. } = &self.target {
                return Err(UsageError::new(
                    "--full-ready-line reads the target's output; an activity's full display is its `Fully drawn` logcat line: use --ready-logcat 'Fully drawn PKG' (am's TotalTime is kept as the initial display)",
                ));
            }
            Regex::new(regex).map_err(|e| {
                UsageError::new(format!(
                    "--full-ready-line {regex:?} is not a valid regex: {e}"
                ))
            })?;
        }
        self.observe.check(true, "startup")?;
        self.check_points()?;
        self.target.check_shape()
    }

    /// Every point names the same settings with values each setting
    /// takes; cgroup points and a prefetch do not mix (the prefetch reads
    /// in iolab's own threads, which are in the load's group).
    fn check_points(&self) -> Result<(), UsageError> {
        if self.recipe.is_some() && !self.points.is_empty() {
            return Err(UsageError::new(
                "--recipe makes the plan's points: drop --vary and --point, or the recipe",
            ));
        }
        for (i, (n, v)) in self.settings.iter().enumerate() {
            crate::control::setting::Knob::parse(n)?.check(n, v)?;
            if v == crate::control::setting::UNSET {
                return Err(UsageError::new(format!(
                    "{n}=-: a setting of the whole plan needs a value (- leaves it alone: drop it)"
                )));
            }
            if self.settings[..i].iter().any(|(m, _)| m == n) {
                return Err(UsageError::new(format!(
                    "{n} is set twice for the whole plan (by its flag and by --vary {n}=V): give it once"
                )));
            }
        }
        let applied = self.applied_points();
        let Some(first) = applied.first() else {
            return Ok(());
        };
        for p in &applied {
            let names = |q: &crate::control::Point| -> Vec<String> {
                q.0.iter().map(|(n, _)| n.clone()).collect()
            };
            if names(p) != names(first) {
                return Err(UsageError::new(format!(
                    "plan point {:?} names other settings than {:?}",
                    p.text(),
                    first.text()
                )));
            }
            for (n, v) in &p.0 {
                crate::control::setting::Knob::parse(n)?.check(n, v)?;
            }
        }
        if first.uses_cgroups() && matches!(self.target, Target::Activity { .. }) {
            return Err(UsageError::new(
                "cgroup settings with --am-start: zygote forks the app, not iolab, so iolab cannot put it in a group of its own (Android's ActivityManager moves it between its own); vary the load's group only, on a command target, or use --recipe android-profiles with a command",
            ));
        }
        if first.uses_cgroups() && self.prefetch.is_some() {
            return Err(UsageError::new(
                "--prefetch with cgroup settings: the prefetch reads in iolab's threads, which run in the load's group; drop one of them",
            ));
        }
        Ok(())
    }

    /// A warm or hot start keeps the caches (no cold step, no prefetch);
    /// only an activity can be brought back hot.
    fn check_start_mode(&self) -> Result<(), UsageError> {
        let mode = self.start_mode;
        if mode == StartMode::Cold {
            return Ok(());
        }
        if self.cold != Cold::None {
            return Err(UsageError::new(format!(
                "--start-mode {} keeps the target's files cached, but --cold {} empties the cache before each start: drop --cold (or use --start-mode cold)",
                mode.as_str(),
                match self.cold {
                    Cold::DropCaches => "drop-caches",
                    Cold::Evict => "evict",
                    Cold::None => "none",
                }
            )));
        }
        if self.prefetch.is_some() {
            return Err(UsageError::new(format!(
                "--prefetch reads a cold start's files in ahead; a {} start has them cached already: drop --prefetch or use --start-mode cold",
                mode.as_str()
            )));
        }
        if mode == StartMode::Hot && !matches!(self.target, Target::Activity { .. }) {
            return Err(UsageError::new(
                "--start-mode hot brings a live activity back to the front, and a command's process cannot be kept and brought back: use --start-mode warm (a new process, files cached) or an --am-start target",
            ));
        }
        Ok(())
    }

    /// A configuration as v5 stored it (`command` and `am_start` instead
    /// of `target`) made readable by this version.
    pub fn upgrade(mut stored: Value) -> Result<Value, serde_json::Error> {
        if let Some(obj) = stored.as_object_mut() {
            if !obj.contains_key("target") {
                let command: Vec<String> = match obj.remove("command") {
                    Some(c) => serde_json::from_value(c)?,
                    None => Vec::new(),
                };
                let am = match obj.remove("am_start") {
                    Some(a) => serde_json::from_value(a)?,
                    None => None,
                };
                obj.insert(
                    "target".into(),
                    serde_json::to_value(Target::from_v5(&command, am))?,
                );
            }
            if !obj.contains_key("settings") {
                let settings = legacy_settings(obj);
                obj.insert("settings".into(), serde_json::to_value(settings)?);
            }
        }
        Ok(stored)
    }
}

/// `point` as a cell applies it with the whole plan's `settings`: each
/// setting first, where the point leaves it alone (`-`) at the setting's
/// value and where it sets it at the point's (so `--target-ioprio be:4
/// --vary target.ioprio=-,rt:0` runs be:4 and rt:0, as the flags always
/// did), then the point's other settings.
pub fn with_settings(
    settings: &[(String, String)],
    point: &crate::control::Point,
) -> crate::control::Point {
    let mut all: Vec<(String, String)> = settings
        .iter()
        .map(|(n, v)| (n.clone(), point.get(n).unwrap_or(v).to_string()))
        .collect();
    all.extend(
        point
            .0
            .iter()
            .filter(|(n, _)| !settings.iter().any(|(m, _)| m == n))
            .cloned(),
    );
    crate::control::Point(all)
}

/// The `point` of an [`Inert`](crate::control::points::Inert) setting of
/// the whole plan: left out of the scheduler's cells, or applied there
/// all the same.
pub const WHOLE_PLAN_LEFT_OUT: &str = "(the whole plan; left out there)";
pub const WHOLE_PLAN_APPLIED: &str = "(the whole plan; applied all the same)";

/// The setting flags of a configuration stored before they became the
/// plan's settings (`iosched_params`, `target_ioprio`, `target_nice`,
/// `load_ioprio`, `read_ahead_kb`), as settings, taken out of `obj`.
fn legacy_settings(obj: &mut serde_json::Map<String, Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(Value::Array(params)) = obj.remove("iosched_params") {
        for p in params {
            if let (Some(k), Some(v)) = (p[0].as_str(), p[1].as_str()) {
                out.push((format!("iosched.{k}"), v.to_string()));
            }
        }
    }
    for (field, name) in [
        ("target_ioprio", "target.ioprio"),
        ("target_nice", "target.nice"),
        ("load_ioprio", "load.ioprio"),
        ("read_ahead_kb", "read_ahead_kb"),
    ] {
        match obj.remove(field) {
            Some(Value::String(v)) => out.push((name.to_string(), v)),
            Some(Value::Number(n)) => out.push((name.to_string(), n.to_string())),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn cfg() -> StartupConfig {
        StartupConfig {
            place: Place::Lab { name: "x".into() },
            schedulers: Schedulers::of(vec!["none".into(), "bfq".into()]).unwrap(),
            workloads: vec!["1r".into(), "idle".into(), "1w".into()],
            reps: 3,
            timeout_s: 60.0,
            warmup_s: None,
            cold: Cold::DropCaches,
            evict: vec![],
            settings: vec![],
            ready: ReadyWhen::Exit,
            target_ioprio: None,
            target_nice: None,
            target_hold: false,
            load_ioprio: None,
            with_fio: false,
            load_options: vec![],
            target: Target::Command {
                argv: vec!["true".into()],
            },
            prepare: None,
            dirty_limit_bytes: None,
            dirty_limit_preferred: false,
            prefetch: None,
            observe: Default::default(),
            memory_pressure: None,
            pause_s: None,
            start_mode: StartMode::Cold,
            full_ready_line: None,
            points: Vec::new(),
            max_runs: DEFAULT_MAX_RUNS,
            recipe: None,
            rounds: None,
            order_seed: None,
            iocost: false,
            device_settings: None,
        }
    }

    #[test]
    fn warmup_defaults_per_scheduler_and_override() {
        let mut c = cfg();
        assert!(c.warmup("bfq") > c.warmup("none"));
        c.warmup_s = Some(0.5);
        assert_eq!(c.warmup("bfq").as_millis(), 500);
    }

    #[test]
    fn stored_values_are_checked_like_flags() {
        let mut c = cfg();
        c.timeout_s = 1e300;
        assert!(c.validate().unwrap_err().0.contains("--timeout"));
        let mut c = cfg();
        c.reps = 0;
        assert!(c.validate().unwrap_err().0.contains("--reps"));
        for r in [0, 4] {
            let mut c = cfg();
            c.rounds = Some(r);
            let e = c.validate().unwrap_err().0;
            assert!(
                e.contains(&format!("--rounds {r}")) && e.contains("(3)"),
                "{e}"
            );
        }
        let mut c = cfg();
        c.rounds = Some(3);
        assert!(c.validate().is_ok());
        assert!(cfg().validate().is_ok());
    }

    /// A setting given as a flag and also varied: the flag's value where
    /// the point leaves it alone, the point's where it sets it (as the
    /// flags always behaved), so an experiment stored so resumes.
    #[test]
    fn a_flag_is_the_value_of_the_points_that_leave_it_alone() {
        let settings = vec![
            ("target.ioprio".to_string(), "be:4".to_string()),
            ("read_ahead_kb".to_string(), "128".to_string()),
        ];
        let p = |text: &str| crate::control::Point::from_text(text);
        let base = with_settings(&settings, &p("target.ioprio=-; wbt_lat_usec=-"));
        assert_eq!(base.get("target.ioprio"), Some("be:4"));
        assert_eq!(base.get("read_ahead_kb"), Some("128"));
        assert_eq!(base.get("wbt_lat_usec"), None);
        let rt = with_settings(&settings, &p("target.ioprio=rt:0; wbt_lat_usec=0"));
        assert_eq!(rt.get("target.ioprio"), Some("rt:0"));
        assert_eq!(rt.get("wbt_lat_usec"), Some("0"));
        // Each name once: nothing is written twice.
        assert_eq!(rt.0.len(), 3);
        let mut c = cfg();
        c.settings = settings;
        c.points = crate::control::points::plan_points(
            &[crate::control::points::parse_vary("target.ioprio=-,rt:0").unwrap()],
            &[],
        );
        c.validate().unwrap();
    }

    #[test]
    fn a_v5_configuration_reads_back() {
        let v5 = serde_json::json!({
            "place": {"kind": "new_lab", "size_bytes": 536870912, "fs": "ext4",
                      "bw_bytes": 41943040, "iops": null, "backend": null, "model": null},
            "schedulers": ["none", "bfq"], "workloads": ["1r"], "reps": 3,
            "timeout_s": 3.0, "warmup_s": 0.5, "cold": "evict", "evict": [],
            "iosched_params": [["slice_idle", "0"]], "ready": {"kind": "exit"},
            "target_ioprio": "rt:0", "target_nice": null, "load_ioprio": null,
            "load_options": [["size", "64M"]],
            "command": ["iolab", "app", "--dir", "{dir}/app"],
            "prepare": "iolab app --prepare --dir {dir}/app",
            "read_ahead_kb": 128, "dirty_limit_bytes": null,
            "prefetch": {"list": {"kind": "record"}, "modes": ["before"], "workloads": ["idle"]},
            "observe": {"trace_bio": true, "cpu": true, "explain": true},
            "memory_pressure": null, "am_start": null
        });
        let c: StartupConfig = serde_json::from_value(StartupConfig::upgrade(v5).unwrap()).unwrap();
        assert_eq!(c.target.kind(), "app");
        assert_eq!(c.target.label(), "iolab app --dir {dir}/app");
        // Its setting flags are the plan's settings now.
        let want = [
            ("iosched.slice_idle", "0"),
            ("target.ioprio", "rt:0"),
            ("read_ahead_kb", "128"),
        ];
        assert_eq!(
            c.settings,
            want.map(|(n, v)| (n.to_string(), v.to_string()))
        );
        // Stored before rounds: one round in the fixed order.
        assert_eq!((c.rounds(), c.order_seed), (1, None));
        assert!(c.observe.has("bio") && c.observe.has("explain"));
        c.validate().unwrap();
    }
}
