//! `iolab probe`: the thesis's Lprobe as a separate, timeable process.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use iolab_experiment::target::probe::{self, Op, ProbeConfig, ProbeSummary, SlowOp};
use iolab_sys::units::{format_bytes, parse_duration, parse_size};
use iolab_sys::UsageError;

/// Shown by `iolab probe --help` after the options.
const HELP: &str = "\
Reads `--block-size` blocks from `--file` with plain read(2), writes
every `--write-every`-th block to `--out-file` with write(2), and logs
each read or write that takes at least `--threshold`. Reads go through
the page cache, as the thesis's Android app did, so they reach storage
only when the cache is cold: `iolab startup` drops caches before each
start; on its own, pass `--evict`. The thesis ran 52800 iterations of
4 KiB after a 5 s sleep with a 300 ms threshold.";

/// Arguments of `iolab probe`; see [`HELP`].
#[derive(Debug, Args)]
#[command(after_long_help = HELP)]
pub struct ProbeArgs {
    /// File to read, block by block (wraps to the start at its end).
    #[arg(long, default_value = "probe.in", value_name = "PATH")]
    pub file: PathBuf,
    /// File to write to (truncated first) [default: <FILE>.out].
    #[arg(long, value_name = "PATH")]
    pub out_file: Option<PathBuf>,
    /// Iterations: one read each (the thesis's dim*4, dim = 13200).
    #[arg(long, default_value_t = probe::THESIS_COUNT)]
    pub count: u64,
    /// Log operations taking at least this long (300ms, 0.3s; 0ms logs all).
    #[arg(long, default_value = "300ms", value_name = "DURATION")]
    pub threshold: String,
    /// Write the block on every Nth iteration (0: never write).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub write_every: u64,
    /// Sleep before the first read (the thesis slept 5s).
    #[arg(long, default_value = "0s", value_name = "DURATION")]
    pub sleep: String,
    /// Bytes per read and write.
    #[arg(long, default_value = "4k", value_name = "SIZE")]
    pub block_size: String,
    /// Create the input file with SIZE bytes (e.g. 256M) if it is missing.
    #[arg(long, value_name = "SIZE")]
    pub prepare: Option<String>,
    /// Evict the input file from the page cache first, so reads are cold.
    #[arg(long)]
    pub evict: bool,
    /// Output JSON (fio-style `lat_ns` fields) instead of text.
    #[arg(long)]
    pub json: bool,
}

impl ProbeArgs {
    /// Validates what the user typed into a probe configuration.
    fn config(&self) -> Result<ProbeConfig, UsageError> {
        let block_size = parse_size(&self.block_size)?;
        let out_file = self.out_file.clone().unwrap_or_else(|| {
            let mut s = self.file.clone().into_os_string();
            s.push(".out");
            PathBuf::from(s)
        });
        Ok(ProbeConfig {
            file: self.file.clone(),
            out_file,
            count: self.count,
            threshold: parse_duration(&self.threshold)?,
            write_every: self.write_every,
            sleep: parse_duration(&self.sleep)?,
            block_size: usize::try_from(block_size).unwrap_or(usize::MAX),
        })
    }
}

/// Runs `iolab probe`.
pub fn run(a: ProbeArgs) -> anyhow::Result<()> {
    let cfg = a.config()?;
    if let Some(size) = &a.prepare {
        probe::prepare_input(&cfg.file, parse_size(size)?).context("preparing the input file")?;
    }
    cfg.validate()?;
    if a.evict {
        iolab_sys::pagecache::evict_file(&cfg.file).context("evicting the input file")?;
    }
    let json = a.json;
    let summary = probe::run(&cfg, |s| {
        if !json {
            println!("{}", slow_line(s));
        }
    })?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &summary)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", render(&summary))?;
    }
    Ok(())
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// One slow operation, printed as it happens (the thesis's log line).
fn slow_line(s: &SlowOp) -> String {
    format!(
        "slow {:<5} #{:<6} at {:9.3} s: {:9.3} ms",
        op_name(s.op),
        s.iteration,
        s.at_ns as f64 / 1e9,
        ms(s.lat_ns)
    )
}

fn render(s: &ProbeSummary) -> String {
    let mut t = format!(
        "probe: {} iterations, {} reads and {} writes of {} in {:.3} s (sleep {:.3} s){}\n",
        s.iterations,
        s.read.total_ios,
        s.write.total_ios,
        format_bytes(s.block_size as u64),
        s.elapsed_ns as f64 / 1e9,
        s.sleep_ns as f64 / 1e9,
        if s.interrupted { ", interrupted" } else { "" },
    );
    t += &format!(
        "{:<6} {:>8} {:>10} {:>10} {:>10} {:>10}\n",
        "op", "count", "min ms", "p50 ms", "p99 ms", "max ms"
    );
    for (name, l) in [
        ("read", &s.read.lat_ns),
        ("write", &s.write.lat_ns),
        ("all", &s.lat_ns),
    ] {
        let p = |k: &str| ms(l.percentile.get(k).copied().unwrap_or(0));
        t += &format!(
            "{name:<6} {:>8} {:>10.3} {:>10.3} {:>10.3} {:>10.3}\n",
            l.n,
            ms(l.min),
            p("50.000000"),
            p("99.000000"),
            ms(l.max)
        );
    }
    t += &format!("slow (>= {} ms): {}", ms(s.threshold_ns), s.slow_count);
    if s.wraps > 0 {
        t += &format!(
            "; input wrapped {} times (later reads may be cached)",
            s.wraps
        );
    }
    t + "\n"
}
