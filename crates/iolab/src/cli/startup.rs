//! `iolab startup` — time a command's start-up under background I/O across
//! I/O schedulers: the thesis's suite and the S suite's comm_startup_lat.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use iolab_experiment::engine::{self, Finished, RunOptions};
use iolab_experiment::place::Place;
use iolab_experiment::startup::{
    Cold, PrefetchConfig, PrefetchMode, PrefetchSource, ReadyWhen, StartMode, Startup,
    StartupConfig,
};
use iolab_experiment::targets::android::AmTarget;
use iolab_experiment::targets::Target;
use iolab_store::ExperimentId;
use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;

/// Arguments of `iolab startup`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
  iolab startup --bw 20MiB/s --prepare 'iolab app --prepare --dir {dir}/app' -- iolab app --dir {dir}/app\n  \
  iolab startup --lab mylab --schedulers bfq,mq-deadline --workloads 1r1w,5r5w-seq --reps 10 -- /path/to/app\n  \
  iolab startup --prepare 'iolab app --prepare --dir {dir}/app' --prefetch record --prefetch-mode before,parallel -- iolab app --dir {dir}/app\n  \
  iolab startup --resume 7")]
pub struct StartupArgs {
    /// Use this existing lab (`iolab lab up --name NAME`); default: a
    /// temporary lab made for this experiment and removed after it.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["device", "in_dir"])]
    pub lab: Option<String>,
    /// Measure in place: in DIR of your own filesystem, where the app under
    /// test lives (e.g. the data partition). iolab makes its scratch
    /// directory in DIR for the load's files (removed after; nothing else
    /// is written, no --force needed) and switches the scheduler on every
    /// disk under DIR's storage stack (partitions, LVM, dm-crypt, md,
    /// btrfs devices), each restored after. Refused where no device under
    /// DIR has a scheduler to switch (tmpfs, overlay, NFS, FUSE).
    #[arg(long = "in", value_name = "DIR", conflicts_with = "device")]
    pub in_dir: Option<PathBuf>,
    /// Use a real device instead of a lab (with --dir and --force).
    #[arg(long, value_name = "DEV", requires = "dir")]
    pub device: Option<String>,
    /// Directory on --device for workload files.
    #[arg(long, value_name = "PATH", requires = "device")]
    pub dir: Option<PathBuf>,
    /// Allow writing workload files to a device that is not an iolab lab.
    #[arg(long)]
    pub force: bool,
    /// Size of the temporary lab.
    #[arg(long, default_value = "4GiB", value_name = "SIZE", conflicts_with_all = ["lab", "device", "in_dir"],
          value_parser = super::values::size)]
    pub lab_size: u64,
    /// Filesystem of the temporary lab.
    #[arg(long, default_value = "ext4", value_name = "FS", conflicts_with_all = ["lab", "device", "in_dir"],
          value_parser = super::values::fs)]
    pub lab_fs: iolab_lab::Fs,
    /// Emulated bandwidth of the temporary lab (phone eMMC/SD class), e.g. 20MiB/s.
    #[arg(long, value_name = "RATE", conflicts_with_all = ["lab", "device", "in_dir"],
          value_parser = super::values::rate)]
    pub bw: Option<u64>,
    #[command(flatten)]
    pub model: super::model_args::ModelArgs,
    /// Emulated IOPS limit of the temporary lab.
    #[arg(long, value_name = "N", conflicts_with_all = ["lab", "device", "in_dir"])]
    pub iops: Option<u64>,
    #[command(flatten)]
    pub schedulers: super::values::SchedulersArg,
    /// Background workloads: names of `iolab load` (1r, 1w, 1r1w, 10r-seq,
    /// 5r5w-seq, 10r-rand, 5r5w-rand) or fio-style job files. `idle` is
    /// always measured as the baseline.
    #[arg(
        long,
        default_value = "1r,1w,1r1w",
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub workloads: Vec<String>,
    /// Repetitions per cell.
    #[arg(long, default_value_t = 5)]
    pub reps: u32,
    /// Split the repetitions into N rounds (1 to --reps): each round runs
    /// its share of every scheduler × point × workload once, in an order
    /// shuffled per round (--order-seed), so no setting is tied to the
    /// time it ran; the load is started and warmed up once per cell per
    /// round [default: --reps with --vary, --point or --recipe; 1
    /// otherwise, in the fixed order].
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,
    /// Seed of the shuffle of each round's cells; the same seed, --rounds
    /// and plan give the same order [default: drawn at random when the
    /// experiment is made, printed, and stored for --resume].
    #[arg(long, value_name = "N")]
    pub order_seed: Option<u64>,
    /// Seconds before a start counts as censored (">T").
    #[arg(long, default_value = "60", value_name = "S", value_parser = super::values::timeout_secs)]
    pub timeout: f64,
    /// Seconds of load before the first start of a cell (default: 8 for
    /// bfq, whose weight raising of new processes must settle; 3 otherwise).
    #[arg(long, value_name = "S", value_parser = super::values::warmup_secs)]
    pub warmup: Option<f64>,
    /// Seconds to rest before each start (S's pause), after the previous
    /// start's tasks are gone and its dirty data is written back (iolab
    /// always waits for those, at most 30 s each, and stores how long).
    #[arg(long, value_name = "S", value_parser = super::values::warmup_secs)]
    pub pause: Option<f64>,
    /// How each start is made cold [default: drop-caches; none with a warm
    /// or hot --start-mode].
    #[arg(long, value_enum)]
    pub cold: Option<Cold>,
    /// What each measured start begins from (Macrobenchmark's modes, as
    /// Android means them; an activity's start must be what am reports).
    /// cold: a new process, its files not cached (the --cold step before
    /// each start; an activity's app force-stopped; am: COLD). warm: no
    /// cold step, one unmeasured priming start per cell; a command is a
    /// new process with its files cached; an activity keeps its process and
    /// has its activity made again (home key, then `am start -W
    /// --activity-clear-task`; am: WARM). hot: --am-start only; the app's
    /// process and activity alive, only brought back (one priming start
    /// per cell, then before each start the home key, a wait until dumpsys
    /// shows the activity STOPPED, and `am start -W` without -S; am: HOT
    /// with a TotalTime above 0).
    #[arg(long, value_enum, default_value = "cold", verbatim_doc_comment)]
    pub start_mode: StartMode,
    /// The target's files or directories: what `--cold evict` evicts,
    /// what each start's cold check measures, and what --memory-pressure
    /// measures (default: the files the first start read, learnt then,
    /// and the command's executable).
    #[arg(long, value_name = "PATH")]
    pub evict: Vec<PathBuf>,
    /// Scheduler tunable for every cell whose scheduler has it, e.g.
    /// slice_idle=0: short for `--vary iosched.NAME=VALUE` (applied with
    /// each cell's point and read back; left out, and said, where the
    /// cell's scheduler lacks it).
    #[arg(long = "iosched-param", value_name = "NAME=VALUE")]
    pub iosched_params: Vec<String>,
    /// Count the start as done when a stdout/stderr line matches REGEX.
    #[arg(long, value_name = "REGEX", conflicts_with = "ready_file")]
    pub ready_line: Option<String>,
    /// Count the start as done when PATH appears.
    #[arg(long, value_name = "PATH", conflicts_with = "ready_rss_stable")]
    pub ready_file: Option<PathBuf>,
    /// Time to full display: a second stdout/stderr line, after the ready
    /// criterion's initial display (Android's reportFullyDrawn). Each start
    /// waits for it (until --timeout) and stores both times (ttid_ns,
    /// ttfd_ns); the start-up time stays the initial display.
    #[arg(long, value_name = "REGEX")]
    pub full_ready_line: Option<String>,
    /// The target is an Android activity: each start is `am start -W -S -n
    /// PKG/ACTIVITY` and its time am's TotalTime (LaunchState and WaitTime
    /// stored too). Run on the phone (iolab remote --adb SERIAL -- ...).
    #[arg(long, value_name = "PKG/ACTIVITY", value_parser = AmTarget::parse_component)]
    pub am_start: Option<String>,
    /// The target is a launch script: run by the interpreter its `#!` line
    /// names (sh without one), with what follows -- as its arguments. Its
    /// text is stored with the experiment; a resumed experiment refuses a
    /// script that changed since.
    #[arg(long, value_name = "FILE", conflicts_with = "am_start")]
    pub script: Option<PathBuf>,
    /// With --am-start: set the app's compilation state once first
    /// (`cmd package compile -m MODE -f PKG`: speed-profile, speed, verify).
    #[arg(long, value_name = "MODE", requires = "am_start")]
    pub compile: Option<String>,
    /// With --am-start: the start is done when a logcat line matches REGEX
    /// (e.g. 'Fully drawn com.android.settings', the app's
    /// reportFullyDrawn()). Its time is the `+1s234ms` the system put in
    /// the line, else the line's log time after the launch; not seen within
    /// --timeout: censored.
    #[arg(long, value_name = "REGEX", requires = "am_start",
          conflicts_with_all = ["ready_line", "ready_file", "ready_rss_stable"])]
    pub ready_logcat: Option<String>,
    /// Before each start (after the cold step), fill SIZE of memory, or
    /// `auto` (MemAvailable less headroom), with a helper that is then
    /// killed: reclaim takes the target's files as on a phone under memory
    /// pressure. Each run stores the share of the target's cached bytes
    /// that went (its files as for --cold evict).
    #[arg(long, value_name = "SIZE|auto")]
    pub memory_pressure: Option<iolab_experiment::pressure::Pressure>,
    /// Count the start as done when the target's processes reach SIZE of
    /// memory (PSS, as dumpsys meminfo) and then grow by at most GROWTH
    /// (default 1M) over INTERVAL (default 1 s): the thesis's heuristic,
    /// e.g. 54M,1M,1s. The start ends when that size was reached.
    #[arg(long, value_name = "SIZE[,GROWTH[,INTERVAL]]", value_parser = super::values::settle,
          conflicts_with = "ready_line")]
    pub ready_rss_stable: Option<(u64, u64, f64)>,
    /// I/O priority of the target: rt:N, be:N or idle (short for `--vary
    /// target.ioprio=PRIO`).
    #[arg(long, value_name = "PRIO", value_parser = super::values::ioprio)]
    pub target_ioprio: Option<IoPrio>,
    /// Nice value of the target (short for `--vary target.nice=N`).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub target_nice: Option<i32>,
    /// With --am-start: set --target-nice/--target-ioprio back whenever
    /// Android changes them during a start (zygote's reset, ART's thread
    /// priorities, the top-app boost), counting each time. Without it, a
    /// start whose app did not run at what was asked is invalid.
    #[arg(long)]
    pub target_hold: bool,
    /// I/O priority of the background load (short for `--vary
    /// load.ioprio=PRIO`; the thesis's -noprio leaves both default).
    #[arg(long, value_name = "PRIO", value_parser = super::values::ioprio)]
    pub load_ioprio: Option<IoPrio>,
    /// Vary a setting across the plan: NAME=V1,V2,... (repeatable).
    #[arg(long, value_name = "NAME=V1,V2",
          long_help = format!(
              "Vary a setting across the plan: NAME=V1,V2,... (repeatable). Axes are crossed with each other, the schedulers and the workloads (one value other than `-` varies nothing: the whole plan runs at it); `-` leaves the setting as the system has it (the point with every axis at `-` is the baseline the verdict compares with). NAME: {}. See docs/CONTROL.md.",
              iolab_experiment::control::setting::names()
          ))]
    pub vary: Vec<String>,
    /// One more plan point, given whole: 'NAME=V;NAME=V' (repeatable);
    /// settings it does not name are `-` there.
    #[arg(long, value_name = "NAME=V;...")]
    pub point: Vec<String>,
    /// A small design for "what do I set so it stops?", made from what
    /// this system has: protect-foreground (the baseline, each protection
    /// alone, all together) or android-profiles (Android's task profiles'
    /// I/O settings against the same groups without them). Workloads
    /// default to 1r1w.
    #[arg(long, value_enum, conflicts_with_all = ["vary", "point"])]
    pub recipe: Option<iolab_experiment::control::Recipe>,
    /// For --recipe device: what `iolab settings --json` printed on the
    /// device (on a phone: iolab remote --adb SERIAL -- settings --json >
    /// phone.json); stored with the experiment.
    #[arg(long, value_name = "FILE")]
    pub device_settings: Option<PathBuf>,
    /// Refuse a plan of more starts than this (the plan's size is printed
    /// before anything runs).
    #[arg(long, value_name = "N", default_value_t = iolab_experiment::startup::config::DEFAULT_MAX_RUNS)]
    pub max_runs: u64,
    /// fio option applied to every background job, e.g. size=128M (repeatable).
    #[arg(long = "load-option", value_name = "NAME=VALUE")]
    pub load_options: Vec<String>,
    /// Run job-file workloads with the installed fio (for options iolab
    /// does not build); iolab still counts their bytes and checks they keep
    /// running. Named workloads stay iolab's own.
    #[arg(long)]
    pub with_fio: bool,
    /// read_ahead_kb of every disk under the files during the experiment
    /// (e.g. 128, Android's): short for `--vary read_ahead_kb=KB`, applied
    /// in every cell and read back.
    #[arg(long, value_name = "KB")]
    pub read_ahead_kb: Option<u32>,
    /// Per-lab dirty page limit (bdi max_bytes), e.g. 64MiB; default for a
    /// throttled lab: 2 s of its bandwidth (at least 16 MiB).
    #[arg(long, value_name = "SIZE", value_parser = super::values::size)]
    pub dirty_limit: Option<u64>,
    /// Command run once before the matrix; `{dir}` is the lab directory.
    #[arg(long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Also start each repetition with this prefetch list read in (from
    /// `iolab record`; `{dir}` in it is the lab directory), or `record`:
    /// record the target once, cold, on the idle lab, and use that list.
    /// Results show start-up without and with prefetch side by side.
    #[arg(long, value_name = "LIST|record")]
    pub prefetch: Option<String>,
    /// When the prefetch runs: `before` the target (read in completely
    /// first) or in `parallel` with its start (a helper thread started just
    /// before it, like a boot-time helper); both: `before,parallel`.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "before",
        requires = "prefetch"
    )]
    pub prefetch_mode: Vec<PrefetchMode>,
    /// Workloads also measured with prefetch (default: all).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        requires = "prefetch"
    )]
    pub prefetch_workloads: Vec<String>,
    #[command(flatten)]
    pub observe: super::observe::ObserveArgs,
    #[command(flatten)]
    pub db: super::db::DbArgs,
    #[command(flatten)]
    pub progress: super::values::ProgressArg,
    /// Continue interrupted experiment ID (its stored configuration is used).
    #[arg(long, value_name = "ID")]
    pub resume: Option<ExperimentId>,
    /// Print the full report (per-cell statistics and raw samples) as JSON.
    #[arg(long)]
    pub json: bool,
    /// The target command; `{dir}` is replaced by the lab directory.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `iolab startup`.
pub fn run(a: StartupArgs) -> anyhow::Result<()> {
    super::require_root("iolab startup")?;
    let cfg = if a.resume.is_some() {
        None
    } else {
        Some(config(&a)?)
    };
    let opts = RunOptions {
        db: a.db.path()?,
        resume: a.resume,
        force: a.force,
        progress: a.progress.mode(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    run_and_print(cfg, &opts, a.json)
}

/// Runs (or resumes) a startup experiment and prints it (`startup` and
/// `demo`): where it runs on stderr first, unless the output is JSON.
pub fn run_and_print(
    cfg: Option<StartupConfig>,
    opts: &RunOptions,
    json: bool,
) -> anyhow::Result<()> {
    let announce = move |line: &str| {
        if !json {
            iolab_sys::say!("iolab: {line}");
        }
    };
    let fin = engine::run::<Startup>(cfg, opts, &announce).context("startup experiment")?;
    print_finished(&fin, json)
}

/// Prints the matrix table (or JSON) and where the results are.
pub fn print_finished(fin: &Finished<Vec<u64>>, json: bool) -> anyhow::Result<()> {
    use iolab_report::export::{Exporter, JsonExporter};
    if json {
        let bytes = JsonExporter.serialize(&iolab_report::ExperimentView::of(&fin.report))?;
        iolab_sys::show!("{}", String::from_utf8_lossy(&bytes));
        super::report::write_and_say(&fin.db, &fin.report, true);
        return stopped_cells(fin);
    }
    iolab_sys::show_part!("{}", iolab_report::text::startup::render(&fin.report));
    let ov = &fin.body;
    if !ov.is_empty() {
        let s = iolab_stats::summarize(&iolab_stats::Sample::all_exact(
            &ov.iter().map(|&n| n as f64 / 1e6).collect::<Vec<_>>(),
        ));
        if let (Some(med), Some(min), Some(max)) = (s.median, s.min, s.max) {
            iolab_sys::show!(
                "harness overhead (launching `true` the same way): {med:.2} ms median, {min:.2}–{max:.2} ms (n={})",
                s.n
            );
        }
    }
    iolab_sys::show!("stored as experiment {} in {}", fin.id, fin.db.display());
    super::report::write_and_say(&fin.db, &fin.report, false);
    if fin.interrupted {
        iolab_sys::show!(
            "interrupted: continue with `iolab startup --resume {} --db {}`",
            fin.id,
            fin.db.display()
        );
    }
    stopped_cells(fin)
}

/// Everything measured is stored and printed, with what the place could
/// not model; the exit status says the matrix is incomplete.
fn stopped_cells(fin: &Finished<Vec<u64>>) -> anyhow::Result<()> {
    for w in &fin.warnings {
        iolab_sys::say!("iolab startup: note: {w}");
    }
    if !fin.stopped_cells.is_empty() {
        anyhow::bail!(
            "{} cell(s) stopped early: {}",
            fin.stopped_cells.len(),
            fin.stopped_cells.join("; ")
        );
    }
    Ok(())
}

fn config(a: &StartupArgs) -> anyhow::Result<StartupConfig> {
    if a.am_start.is_some() && !a.command.is_empty() {
        return Err(UsageError::new(
            "--am-start is the target: drop the command after --, or drop --am-start",
        )
        .into());
    }
    if a.command.is_empty() && a.am_start.is_none() && a.script.is_none() {
        return Err(UsageError::new(
            "no target command: put it after --, e.g. `iolab startup -- iolab app --dir {dir}/app`",
        )
        .into());
    }
    let cold = a.cold.unwrap_or(match a.start_mode {
        StartMode::Cold => Cold::DropCaches,
        StartMode::Warm | StartMode::Hot => Cold::None,
    });
    if !a.evict.is_empty() && cold == Cold::None && a.memory_pressure.is_none() {
        return Err(UsageError::new(
            "--evict names the target's files, for a cold step (what `--cold evict` evicts and every cold start is checked on) or --memory-pressure: with --cold none there is neither; drop --evict or --cold none",
        )
        .into());
    }
    if a.lab.is_some() {
        a.model.refuse_with("--lab")?;
    }
    if a.device.is_some() {
        a.model.refuse_with("--device")?;
    }
    if a.in_dir.is_some() {
        a.model.refuse_with("--in")?;
    }
    let place = match (&a.in_dir, &a.lab, &a.device) {
        (Some(dir), _, _) => Place::InPlace { dir: dir.clone() },
        (None, Some(name), _) => Place::Lab { name: name.clone() },
        (None, None, Some(dev)) => Place::Device {
            device: dev.clone(),
            dir: a.dir.clone(),
        },
        (None, None, None) => a.model.new_lab(a.lab_size, a.lab_fs, a.bw, a.iops)?,
    };
    let ready = match (&a.ready_line, &a.ready_file, a.ready_rss_stable) {
        (Some(r), _, _) => ReadyWhen::Line { regex: r.clone() },
        (None, Some(p), _) => ReadyWhen::File { path: p.clone() },
        (None, None, Some((min_bytes, growth_bytes, interval_s))) => ReadyWhen::MemorySettled {
            min_bytes,
            growth_bytes,
            interval_s,
        },
        _ => ReadyWhen::Exit,
    };
    let target = match (&a.am_start, &a.script) {
        (Some(component), _) => Target::activity(AmTarget {
            component: component.clone(),
            compile: a.compile.clone(),
            ready_logcat: a.ready_logcat.clone(),
        }),
        (None, Some(path)) => Target::script(path.clone(), a.command.clone())?,
        (None, None) => target_of(&a.command),
    };
    let (settings, axes) = plan_settings(a)?;
    let extra = a
        .point
        .iter()
        .map(|p| iolab_experiment::control::points::parse_point(p))
        .collect::<Result<Vec<_>, _>>()?;
    let workloads = if a.recipe.is_some() && a.workloads == ["1r", "1w", "1r1w"] {
        vec!["1r1w".to_string()]
    } else {
        a.workloads.clone()
    };
    let points = iolab_experiment::control::points::plan_points(&axes, &extra);
    // A plan with points runs in rounds, shuffled; a plain matrix keeps
    // the fixed order unless asked.
    let has_points = !points.is_empty() || a.recipe.is_some();
    let rounds = a.rounds.or(has_points.then_some(a.reps));
    let order_seed =
        a.order_seed.or((has_points || a.rounds.is_some())
            .then(iolab_experiment::startup::plan::new_order_seed));
    let cfg = StartupConfig {
        place,
        schedulers: a.schedulers.schedulers.clone(),
        workloads,
        reps: a.reps,
        timeout_s: a.timeout,
        warmup_s: a.warmup,
        cold,
        evict: a.evict.clone(),
        settings,
        ready,
        target_ioprio: None,
        target_nice: None,
        target_hold: a.target_hold,
        load_ioprio: None,
        load_options: name_values("--load-option", &a.load_options, "size=128M")?,
        with_fio: a.with_fio,
        target,
        prepare: a.prepare.clone(),
        prefetch: a.prefetch.as_deref().map(|p| PrefetchConfig {
            list: PrefetchSource::parse(p),
            modes: dedup(&a.prefetch_mode),
            workloads: a.prefetch_workloads.clone(),
        }),
        observe: a.observe.observe()?,
        memory_pressure: a.memory_pressure,
        pause_s: a.pause,
        start_mode: a.start_mode,
        full_ready_line: a.full_ready_line.clone(),
        dirty_limit_bytes: a.dirty_limit,
        dirty_limit_preferred: false,
        points,
        recipe: a.recipe,
        max_runs: a.max_runs,
        rounds,
        order_seed,
        iocost: false,
        device_settings: match (&a.device_settings, a.recipe) {
            (Some(f), Some(iolab_experiment::control::Recipe::Device)) => {
                Some(iolab_experiment::control::device::DeviceSettings::load(f)?)
            }
            (Some(_), _) => {
                return Err(iolab_sys::UsageError::new(
                    "--device-settings is for --recipe device; add it, or leave the file out",
                )
                .into())
            }
            (None, _) => None,
        },
    };
    cfg.validate()?;
    Ok(cfg)
}

/// The settings the whole plan runs at, and the axes it varies. A setting
/// flag is a short form of a one-value `--vary`: `--read-ahead-kb 128` is
/// `--vary read_ahead_kb=128`, and both are applied with every cell's
/// point and read back (an axis of one value other than `-` varies
/// nothing, so it adds no baseline point).
fn plan_settings(a: &StartupArgs) -> Result<PlanSettings, UsageError> {
    let mut settings: Vec<(String, String)> = Vec::new();
    for (k, v) in name_values("--iosched-param", &a.iosched_params, "slice_idle=0")? {
        settings.push((format!("iosched.{k}"), v));
    }
    let flags = [
        ("target.ioprio", a.target_ioprio.map(|p| p.to_string())),
        ("target.nice", a.target_nice.map(|n| n.to_string())),
        ("load.ioprio", a.load_ioprio.map(|p| p.to_string())),
        ("read_ahead_kb", a.read_ahead_kb.map(|k| k.to_string())),
    ];
    for (name, value) in flags {
        if let Some(v) = value {
            settings.push((name.to_string(), v));
        }
    }
    let mut axes = Vec::new();
    for v in &a.vary {
        let (name, values) = iolab_experiment::control::points::parse_vary(v)?;
        match values.as_slice() {
            [one] if one != iolab_experiment::control::setting::UNSET => {
                settings.push((name, one.clone()));
            }
            _ => axes.push((name, values)),
        }
    }
    Ok((settings, axes))
}

/// The plan's whole settings and its axes.
type PlanSettings = (Vec<(String, String)>, Vec<(String, Vec<String>)>);

/// The target a command line names: the built-in app (`iolab app --dir
/// D`, or its `--replay`), read with the app's own argument parser, or any
/// other command.
pub fn target_of(command: &[String]) -> Target {
    #[derive(clap::Parser)]
    struct App {
        #[command(flatten)]
        app: super::app::AppArgs,
    }
    let is_iolab = command
        .first()
        .and_then(|p| std::path::Path::new(p).file_name())
        .is_some_and(|n| n.to_string_lossy().starts_with("iolab"));
    if is_iolab && command.get(1).is_some_and(|c| c == "app") {
        if let Ok(App { app }) = <App as clap::Parser>::try_parse_from(&command[1..]) {
            return Target::App {
                argv: command.to_vec(),
                dir: app.dir,
                replay: app.replay,
            };
        }
    }
    Target::Command {
        argv: command.to_vec(),
    }
}

fn dedup(modes: &[PrefetchMode]) -> Vec<PrefetchMode> {
    let mut v: Vec<PrefetchMode> = Vec::new();
    for m in modes {
        if !v.contains(m) {
            v.push(*m);
        }
    }
    v
}

/// Splits repeated `NAME=VALUE` flags; `example` shows a valid one.
fn name_values(
    flag: &str,
    items: &[String],
    example: &str,
) -> Result<Vec<(String, String)>, UsageError> {
    items
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| {
                    UsageError::new(format!("{flag} {p:?}: expected NAME=VALUE, e.g. {example}"))
                })
        })
        .collect()
}
