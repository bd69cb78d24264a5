//! `iolab demo` — the README's first command: on a fresh machine, show the
//! phenomenon the thesis is about. A throttled lab (phone-class storage),
//! the synthetic app prepared on it, every scheduler the lab offers ×
//! idle, 1r, 1w, 1r1w × 3 starts, the table, then the lab is removed.
//! One more line: the app's idle cold start with a prefetch list recorded
//! from the app itself (`iolab record`'s method) read in first.

use clap::Args;
use iolab_experiment::collect::Observe;
use iolab_experiment::engine::RunOptions;
use iolab_experiment::startup::{
    Cold, PrefetchConfig, PrefetchMode, PrefetchSource, ReadyWhen, StartupConfig,
};
use iolab_experiment::targets::Target;
use iolab_experiment::Schedulers;

/// Arguments of `iolab demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Emulated storage bandwidth (phone eMMC class).
    #[arg(long, default_value = "40MiB/s", value_name = "RATE", value_parser = super::values::rate)]
    pub bw: u64,
    /// Starts per cell.
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// Seconds before a start counts as censored.
    #[arg(long, default_value = "5", value_name = "S", value_parser = super::values::timeout_secs)]
    pub timeout: f64,
    /// Seconds of background load before the first start of each cell.
    #[arg(long, default_value = "2", value_name = "S", value_parser = super::values::warmup_secs)]
    pub warmup: f64,
    /// Size of the synthetic app relative to its documented profile.
    #[arg(long, default_value = "1", value_name = "FACTOR", value_parser = super::values::scale)]
    pub scale: f64,
    #[command(flatten)]
    pub db: super::db::DbArgs,
    #[command(flatten)]
    pub progress: super::values::ProgressArg,
    #[command(flatten)]
    pub model: super::model_args::ModelArgs,
    /// Print the full report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the demo.
pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    super::require_root("iolab demo")?;
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    // A device model replaces the --bw rate; without one, --bw slows the
    // lab (throttle where cgroup v1 works, else the model of that rate).
    let bw = if a.model.device_model.is_some() {
        None
    } else {
        Some(a.bw)
    };
    let cfg = StartupConfig {
        place: a.model.new_lab(2 << 30, iolab_lab::Fs::Ext4, bw, None)?,
        schedulers: Schedulers::all(),
        workloads: vec!["1r".into(), "1w".into(), "1r1w".into()],
        reps: a.reps,
        timeout_s: a.timeout,
        warmup_s: Some(a.warmup),
        // Evicting only the app's files (not `drop_caches`) spares the
        // `sync` of the writers' dirty data before every start: seconds
        // per start on a slow lab, and the load keeps its own cache.
        cold: Cold::Evict,
        evict: Vec::new(),
        // Android's read-ahead after boot: how many bytes a cold start
        // pulls per request (applied and read back in every cell).
        settings: vec![("read_ahead_kb".into(), "128".into())],
        ready: ReadyWhen::Exit,
        target_ioprio: None,
        target_nice: None,
        target_hold: false,
        load_ioprio: None,
        with_fio: false,
        // 128 MiB files (not the thesis's 512 MiB) so laying them out on
        // the slow lab takes seconds, not a minute; readers still wrap
        // and re-read from the device every few seconds.
        load_options: vec![("size".into(), "128M".into())],
        target: Target::App {
            argv: vec![
                exe.clone(),
                "app".into(),
                "--dir".into(),
                "{dir}/app".into(),
            ],
            dir: "{dir}/app".into(),
            replay: None,
        },
        prepare: Some(format!(
            "{exe} app --prepare --scale {} --dir {{dir}}/app",
            a.scale
        )),
        // A small dirty cache (16 MiB, about 0.4 s of the lab's bandwidth):
        // a start censored inside fsync cannot be killed until ext4's
        // ordered-mode commit has written the writers' dirty data, and with
        // 2 s of it a timed-out start took ~25 s to die under mq-deadline.
        dirty_limit_bytes: Some(16 << 20),
        dirty_limit_preferred: true,
        // Seed 001's point, measured: the app recorded once (cold, idle),
        // then each idle start also made with that list read in first.
        // Idle only, one mode: about 12 more starts, under 30 s.
        prefetch: Some(PrefetchConfig {
            list: PrefetchSource::Record,
            modes: vec![PrefetchMode::Before],
            workloads: vec!["idle".into()],
        }),
        // Seed 000's other half: where each start's extra time went; and
        // for the report's charts, every block request's latency (seed
        // 002's histograms) and CPU/pressure over each start.
        observe: Observe::of(["explain", "bio", "cpu"])?,
        memory_pressure: None,
        pause_s: None,
        start_mode: Default::default(),
        full_ready_line: None,
        points: Vec::new(),
        recipe: None,
        max_runs: iolab_experiment::startup::config::DEFAULT_MAX_RUNS,
        // No points: one round, in the fixed order.
        rounds: None,
        order_seed: None,
        iocost: false,
        device_settings: None,
    };
    if !a.json {
        let lab = match (&a.model.device_model, a.model.backend.as_deref()) {
            (Some(p), _) => format!("{p} device-model"),
            (None, Some(b)) => format!(
                "{} ({b} backend)",
                iolab_sys::units::format_rate(a.bw as f64)
            ),
            (None, None) => iolab_sys::units::format_rate(a.bw as f64),
        };
        iolab_sys::say!(
            "iolab demo: a {lab} lab, the synthetic app, every scheduler x idle/1r/1w/1r1w x {} starts (a few minutes)",
            a.reps
        );
    }
    let opts = RunOptions {
        db: a.db.path()?,
        resume: None,
        force: false,
        progress: a.progress.mode(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    super::startup::run_and_print(Some(cfg), &opts, a.json)
}
