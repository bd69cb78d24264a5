//! `iolab sweep` — seed 002's I/O scheduler comparison as one command:
//! schedulers × numjobs/iodepth patterns × sequential/random × read/write,
//! a fresh filesystem and cold caches before every run, one table per kind.

use std::io::Write;

use std::time::Duration;

use clap::Args;
use iolab_experiment::engine::{self, Finished, RunOptions};
use iolab_experiment::place::Place;
use iolab_experiment::sweep::max::{self, Max, MaxConfig};
use iolab_experiment::sweep::{Kind, Pattern, Sizing, Sweep, SweepConfig};
use iolab_report::view::max::MaxTable;
use iolab_report::view::sweep::{Metric, SweepTable};
use iolab_store::ExperimentId;
use iolab_sys::units::parse_rate;

/// Arguments of `iolab sweep`.
#[derive(Debug, Args)]
#[command(after_help = "\
Every run: scheduler set, mkfs, caches dropped, then one fio-style job with
io_uring and O_DIRECT (iolab's equivalent of seed 002's libaio + direct=1),
bs 1M, each of numjobs threads on its own file. Seed 002 moved 32 GiB per
run; here the bytes per run are scaled to the device (see the first line of
the output), so the default sweep on the default lab takes a few minutes.

Examples:
  iolab sweep
  iolab sweep --schedulers mq-deadline,bfq --rw read,randread --reps 5
  iolab sweep --device /dev/sdb --runtime 5s --csv > sweep.csv
  iolab sweep --resume 12")]
pub struct SweepArgs {
    #[command(flatten)]
    pub schedulers: super::values::SchedulersArg,
    /// Access kinds, one table each: read, randread, write, randwrite
    /// [default: all four; read,randread with --max].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub rw: Vec<String>,
    /// numjobs/iodepth patterns, the rows of every table (seed 002's four).
    #[arg(
        long,
        default_value = "1/1,4/1,1/4,4/4",
        value_name = "J/QD,...",
        value_delimiter = ',',
        conflicts_with = "max"
    )]
    pub patterns: Vec<String>,
    /// Seed 003's IOSpeed instead of seed 002's matrix: per scheduler, the
    /// highest IOPS and bandwidth the device sustains with N = 1, 2, 4 ...
    /// threads on the raw device, and the kernel CPU per I/O there. Runs on
    /// a loop device over tmpfs (fast, with a scheduler) unless --device.
    #[arg(long)]
    pub max: bool,
    /// --max: thread counts [default: 1, 2, 4 ... up to 2 × CPUs, at least 8].
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "max")]
    pub threads: Vec<u32>,
    /// --max: I/Os in flight per thread (1: blocking psync, as IOSpeed;
    /// more: io_uring).
    #[arg(long, default_value_t = 1, value_name = "N", requires = "max")]
    pub iodepth: u32,
    /// Repetitions of every cell.
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// Bytes every run moves, all jobs together [default: what the device
    /// does in --runtime, at most half of it].
    #[arg(long, value_name = "SIZE", conflicts_with = "max", value_parser = super::values::size)]
    pub size: Option<u64>,
    /// How long a run should take at the device's bandwidth: scales the
    /// bytes per run (seconds, or 500ms, 2s ...); with --max, how long
    /// every point runs [default: 1s; 2s with --max].
    #[arg(long, value_name = "TIME", value_parser = super::values::duration)]
    pub runtime: Option<Duration>,
    /// Block size [default: 1M; 4k with --max].
    #[arg(long, value_name = "SIZE", value_parser = super::values::size)]
    pub bs: Option<u64>,
    /// Run on this whole device instead of a temporary lab. It is
    /// formatted before every run: everything on it is destroyed.
    #[arg(long, value_name = "DEV")]
    pub device: Option<String>,
    /// Format --device even while it is mounted, in use or holds data.
    #[arg(long)]
    pub force: bool,
    /// Emulated bandwidth of the temporary lab (phone eMMC/SD class), or
    /// `none` for the host disk's speed.
    #[arg(
        long,
        default_value = "40MiB/s",
        value_name = "RATE|none",
        conflicts_with_all = ["device", "max"]
    )]
    pub bw: String,
    /// Size of the temporary lab.
    #[arg(
        long,
        default_value = "1GiB",
        value_name = "SIZE",
        conflicts_with = "device",
        value_parser = super::values::size
    )]
    pub lab_size: u64,
    #[command(flatten)]
    pub model: super::model_args::ModelArgs,
    /// Filesystem made before every run: ext4, xfs or btrfs.
    #[arg(
        long,
        default_value = "ext4",
        value_name = "FS",
        conflicts_with = "max",
        value_parser = super::values::fs
    )]
    pub fs: iolab_lab::Fs,
    /// What the table cells show.
    #[arg(long, value_enum, default_value = "bw", conflicts_with = "max")]
    pub metric: Metric,
    #[command(flatten)]
    pub observe: super::observe::ObserveArgs,
    #[command(flatten)]
    pub db: super::db::DbArgs,
    #[command(flatten)]
    pub progress: super::values::ProgressArg,
    /// Continue interrupted sweep ID (its stored configuration is used).
    #[arg(long, value_name = "ID")]
    pub resume: Option<ExperimentId>,
    /// Print the tables' cells (every repetition's values and statistics) as JSON.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print one CSV row per cell.
    #[arg(long)]
    pub csv: bool,
}

/// Runs `iolab sweep`.
pub fn run(a: SweepArgs) -> anyhow::Result<()> {
    super::require_root("iolab sweep")?;
    if a.max {
        return run_max(&a);
    }
    let cfg = if a.resume.is_some() {
        None
    } else {
        Some(config(&a)?)
    };
    let announce = |line: &str| iolab_sys::say!("iolab sweep: {line}");
    let fin = engine::run::<Sweep>(cfg, &options(&a)?, &announce)?;
    print_finished(&fin, &a)
}

fn print_finished(fin: &Finished<Sizing>, a: &SweepArgs) -> anyhow::Result<()> {
    let table = SweepTable::from_runs(&fin.report.runs);
    print(
        fin,
        a,
        Printed {
            mode: "sweep",
            config_key: "sweep",
            unit: "run(s)",
            json: vec![
                ("engine", serde_json::json!(ENGINE)),
                ("sizing", serde_json::to_value(&fin.body)?),
                ("tables", serde_json::to_value(&table)?),
            ],
            csv: iolab_report::text::sweep::csv(&table),
            text: format!(
                "scheduler sweep on {}; {ENGINE}\n{}\n\n{}",
                fin.place,
                fin.body.note,
                iolab_report::text::sweep::render(&table, a.metric)
            ),
        },
    )
}

/// What a finished sweep or max sweep prints, besides what both print.
struct Printed {
    /// `sweep` or `sweep --max`: the command that resumes it.
    mode: &'static str,
    /// Where its configuration is stored.
    config_key: &'static str,
    /// What its runs are called.
    unit: &'static str,
    /// Its own JSON fields.
    json: Vec<(&'static str, serde_json::Value)>,
    /// Its CSV.
    csv: String,
    /// Its text, before the line that says where it is stored.
    text: String,
}

/// Prints a finished sweep (JSON, CSV or text), writes its report and
/// says what the user should know.
fn print<S>(fin: &Finished<S>, a: &SweepArgs, p: Printed) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if a.json {
        let mut doc = serde_json::json!({
            "experiment": fin.id,
            "db": fin.db,
            "status": iolab_store::Status::ended(fin.interrupted).as_str(),
            "place": fin.place,
            "config": fin.report.experiment.config.get(p.config_key),
            "elapsed_s": fin.elapsed.as_secs_f64(),
            "runs_recorded": fin.recorded,
        });
        for (k, v) in p.json {
            doc[k] = v;
        }
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else if a.csv {
        out.write_all(p.csv.as_bytes())?;
    } else {
        out.write_all(p.text.as_bytes())?;
        writeln!(
            out,
            "{} {} in {:.0} s; stored as experiment {} in {}",
            fin.recorded,
            p.unit,
            fin.elapsed.as_secs_f64(),
            fin.id,
            fin.db.display()
        )?;
    }
    super::report::write_and_say(&fin.db, &fin.report, a.json || a.csv);
    for w in &fin.warnings {
        iolab_sys::say!("iolab {}: note: {w}", p.mode);
    }
    if fin.interrupted {
        iolab_sys::say!(
            "iolab {0}: interrupted: continue with `iolab {0} --resume {1} --db {2}`",
            p.mode,
            fin.id,
            fin.db.display()
        );
    }
    Ok(())
}

/// How every run does its I/O, for the output's first line.
const ENGINE: &str = "fresh filesystem and dropped caches before every run; io_uring + O_DIRECT (seed 002: libaio + direct=1)";

fn config(a: &SweepArgs) -> anyhow::Result<SweepConfig> {
    let place = match &a.device {
        Some(d) => {
            a.model.refuse_with("--device")?;
            Place::Device {
                device: d.clone(),
                dir: None,
            }
        }
        None => {
            let bw_bytes = match a.bw.as_str() {
                _ if a.model.device_model.is_some() => None,
                "none" => None,
                bw => Some(parse_rate(bw)?),
            };
            a.model
                .new_lab(a.lab_size, iolab_lab::Fs::None, bw_bytes, None)?
        }
    };
    let cfg = SweepConfig {
        place,
        schedulers: a.schedulers.schedulers.clone(),
        kinds: kinds(&a.rw, &["read", "randread", "write", "randwrite"])?,
        patterns: a
            .patterns
            .iter()
            .map(|p| Pattern::parse(p))
            .collect::<Result<_, _>>()?,
        reps: a.reps,
        bs_bytes: a.bs.unwrap_or(1 << 20),
        size_bytes: a.size,
        runtime_s: a.runtime.unwrap_or(Duration::from_secs(1)).as_secs_f64(),
        fs: a.fs,
        observe: a.observe.observe()?,
    };
    cfg.validate()?;
    Ok(cfg)
}

/// How to run, from the flags both modes share.
fn options(a: &SweepArgs) -> anyhow::Result<RunOptions> {
    Ok(RunOptions {
        db: a.db.path()?,
        resume: a.resume,
        force: a.force,
        progress: a.progress.mode(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    })
}

/// `--rw` as given, or `default`.
fn kinds(given: &[String], default: &[&str]) -> anyhow::Result<Vec<Kind>> {
    let list: Vec<&str> = if given.is_empty() {
        default.to_vec()
    } else {
        given.iter().map(|k| k.trim()).collect()
    };
    Ok(list
        .into_iter()
        .map(Kind::parse)
        .collect::<Result<_, _>>()?)
}

/// Runs `iolab sweep --max`.
fn run_max(a: &SweepArgs) -> anyhow::Result<()> {
    let cfg = if a.resume.is_some() {
        None
    } else {
        Some(max_config(a)?)
    };
    let announce = |line: &str| iolab_sys::say!("iolab sweep --max: {line}");
    let fin = engine::run::<Max>(cfg, &options(a)?, &announce)?;
    let table = MaxTable::from_runs(&fin.report.runs);
    let runtime = fin
        .report
        .experiment
        .config
        .pointer("/max/runtime_s")
        .and_then(serde_json::Value::as_f64);
    print(
        &fin,
        a,
        Printed {
            mode: "sweep --max",
            config_key: "max",
            unit: "point(s)",
            json: vec![("tables", serde_json::to_value(&table)?)],
            csv: iolab_report::text::max::csv(&table),
            text: format!(
                "maximum sustainable throughput on {}; O_DIRECT on the raw device, {} s per point\n\
                 kernel µs/IO: system + irq + softirq time of all CPUs (/proc/stat) per I/O completed\n\n{}",
                fin.place,
                runtime.map_or_else(|| "?".to_string(), |r| r.to_string()),
                iolab_report::text::max::render(&table)
            ),
        },
    )
}

fn max_config(a: &SweepArgs) -> anyhow::Result<MaxConfig> {
    if a.model.any() {
        anyhow::bail!(iolab_sys::UsageError::new(
            "--backend, --device-model and --model-* slow a lab down; --max measures how fast a fast device can go: drop one of them"
        ));
    }
    if !a.observe.observe()?.is_empty() {
        anyhow::bail!(iolab_sys::UsageError::new(
            "--max measures each point's CPU itself and traces nothing (a trace would cost the CPU it measures): drop --trace, --cpu and the other collectors"
        ));
    }
    let place = match &a.device {
        Some(d) => Place::Device {
            device: d.clone(),
            dir: None,
        },
        None => Place::TmpfsLab {
            size_bytes: a.lab_size,
        },
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cfg = MaxConfig {
        place,
        schedulers: a.schedulers.schedulers.clone(),
        kinds: kinds(&a.rw, &["read", "randread"])?,
        threads: if a.threads.is_empty() {
            max::default_threads(cpus)
        } else {
            a.threads.clone()
        },
        iodepth: a.iodepth,
        reps: a.reps,
        bs_bytes: a.bs.unwrap_or(4096),
        runtime_s: a.runtime.unwrap_or(Duration::from_secs(2)).as_secs_f64(),
    };
    cfg.validate()?;
    Ok(cfg)
}
