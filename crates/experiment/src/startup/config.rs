//! The full configuration of a startup experiment. It is stored as JSON with
//! the experiment, so `--resume ID` continues with exactly the same matrix.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where the experiment runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Place {
    /// A temporary lab created for this experiment and removed after it.
    NewLab {
        /// Size in bytes.
        size_bytes: u64,
        /// Filesystem.
        fs: String,
        /// Bandwidth limit in bytes/s (phone-class storage), if any.
        bw_bytes: Option<u64>,
        /// IOPS limit, if any.
        iops: Option<u64>,
        /// How the lab is slowed (`None`: chosen when it is made).
        #[serde(default)]
        backend: Option<iolab_lab::Backend>,
        /// The device model, for a model lab.
        #[serde(default)]
        model: Option<iolab_model::ModelParams>,
    },
    /// An existing lab made with `iolab lab up`.
    Lab {
        /// Its name.
        name: String,
    },
    /// A real device: the user's own; needs `--dir` on a filesystem of it
    /// and `--force` before iolab writes there.
    Device {
        /// Device path or kernel name.
        device: String,
        /// Directory on it for workload files.
        dir: PathBuf,
    },
}

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
    pub schedulers: Vec<String>,
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
    /// Scheduler tunables set for every cell where the tunable exists.
    pub iosched_params: Vec<(String, String)>,
    /// Readiness criterion.
    pub ready: ReadyWhen,
    /// Target I/O priority (`rt:0`, `be:4`, `idle`).
    pub target_ioprio: Option<String>,
    /// Target nice value.
    pub target_nice: Option<i32>,
    /// I/O priority of the background load.
    pub load_ioprio: Option<String>,
    /// fio options applied to every background job (e.g. `size=128M`).
    #[serde(default)]
    pub load_options: Vec<(String, String)>,
    /// The target command; `{dir}` is replaced by the lab's directory
    /// (its mount point), which a temporary lab only has once it is up.
    pub command: Vec<String>,
    /// A shell command run once before the matrix (e.g. `iolab app
    /// --prepare --dir {dir}/app`), with the same `{dir}` substitution.
    #[serde(default)]
    pub prepare: Option<String>,
    /// `read_ahead_kb` of the device under test (guarded), e.g. 128 as on
    /// Android after boot; `None` keeps the device's value. It decides how
    /// many bytes a cold start and a sequential reader pull per request.
    #[serde(default)]
    pub read_ahead_kb: Option<u32>,
    /// Per-lab dirty-page limit in bytes (bdi `max_bytes`), so `sync`
    /// before each start is bounded on a slow lab; `None` keeps the
    /// kernel's global limits.
    pub dirty_limit_bytes: Option<u64>,
    /// Also start each repetition with a prefetch list read in before or
    /// in parallel ([`super::prefetch`]); `None`: no prefetch dimension.
    #[serde(default)]
    pub prefetch: Option<super::prefetch::PrefetchConfig>,
    /// What else each start records (`--trace bio`, `--cpu`, `--explain`).
    #[serde(default)]
    pub observe: super::observe::Observe,
    /// Fill memory before each start (after the cold step), so reclaim
    /// takes the target's pages as on a phone under memory pressure.
    #[serde(default)]
    pub memory_pressure: Option<crate::pressure::Pressure>,
    /// The target is an Android activity (`--am-start`): `command` is its
    /// `am start -W -S` and each start's time is am's TotalTime.
    #[serde(default)]
    pub am_start: Option<crate::target::android::AmTarget>,
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
    /// The warm-up used for `scheduler`.
    pub fn warmup(&self, scheduler: &str) -> Duration {
        match self.warmup_s {
            Some(s) => Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::ZERO),
            None => default_warmup(scheduler),
        }
    }

    /// `argv` with `{dir}` replaced by `dir`.
    pub fn substitute(argv: &[String], dir: &std::path::Path) -> Vec<String> {
        let d = dir.to_string_lossy();
        argv.iter().map(|a| a.replace("{dir}", &d)).collect()
    }

    /// The workloads in the order measured: `idle` first, once.
    pub fn workloads_with_idle(&self) -> Vec<String> {
        let mut v = vec!["idle".to_string()];
        v.extend(self.workloads.iter().filter(|w| *w != "idle").cloned());
        v
    }
}
