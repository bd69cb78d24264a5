//! `iolab probe`: the thesis's Lprobe as a separate, timeable process.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use iolab_experiment::probe::{self, Op, ProbeConfig, ProbeSummary, SlowOp};
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
    /// Trace the probe's stalls (as `iolab explain` does) and print, for
    /// each slow read or write, the kernel causes it waited for (needs root).
    #[arg(long)]
    pub explain: bool,
    /// Allow --out-file to be a block device (it is truncated and overwritten).
    #[arg(long)]
    pub force: bool,
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
    refuse_device_output(&cfg.out_file, a.force)?;
    if a.evict {
        iolab_sys::pagecache::evict_file(&cfg.file).context("evicting the input file")?;
    }
    let json = a.json;
    let explain = if a.explain {
        super::require_root("iolab probe --explain")?;
        Some(explain::start()?)
    } else {
        None
    };
    let summary = probe::run(&cfg, |s| {
        if !json {
            iolab_sys::show!("{}", slow_line(s));
        }
    })?;
    let causes = explain.map(|e| e.finish(&summary)).transpose()?;
    let mut out = std::io::stdout().lock();
    if json {
        match &causes {
            Some(c) => {
                let mut v = serde_json::to_value(&summary)?;
                v["slow_causes"] = serde_json::to_value(c)?;
                serde_json::to_writer_pretty(&mut out, &v)?;
            }
            None => serde_json::to_writer_pretty(&mut out, &summary)?,
        }
        writeln!(out)?;
    } else {
        write!(out, "{}", render(&summary))?;
        if let Some(c) = &causes {
            write!(out, "{}", explain::render(&summary, c))?;
        }
    }
    Ok(())
}

/// `--explain`: the stalls behind each slow operation.
mod explain {
    use super::{ms, op_name};
    use iolab_experiment::probe::ProbeSummary;
    use iolab_explain::{Explainer, ExplainerConfig};

    /// The kernel causes one slow operation waited for.
    #[derive(Debug, serde::Serialize)]
    pub struct SlowCause {
        /// Index in `slow_ops`.
        pub slow_op: usize,
        /// Blocked ns by cause within the operation, largest first.
        pub causes: Vec<(String, u64)>,
    }

    /// Tracing of this thread; `base_ns` is the monotonic time the probe's
    /// clock starts from.
    pub struct Tracing {
        _guard: iolab_guard::Guard,
        explainer: Explainer,
        tid: i32,
        base_ns: u64,
    }

    pub fn start() -> anyhow::Result<Tracing> {
        let guard = iolab_guard::Guard::new();
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        let config = ExplainerConfig {
            tree: false,
            max_stalls: 100_000,
            ..ExplainerConfig::default()
        };
        let explainer = Explainer::start_with(&guard, tid, config)?;
        // probe::run starts its clock right after this.
        let base_ns = iolab_trace::monotonic_ns();
        Ok(Tracing {
            _guard: guard,
            explainer,
            tid,
            base_ns,
        })
    }

    impl Tracing {
        pub fn finish(self, s: &ProbeSummary) -> anyhow::Result<Vec<SlowCause>> {
            let a = self.explainer.finish()?;
            Ok(s.slow_ops
                .iter()
                .enumerate()
                .map(|(i, op)| {
                    let from = self.base_ns + op.at_ns;
                    SlowCause {
                        slow_op: i,
                        causes: a.causes_between(self.tid, from, from + op.lat_ns),
                    }
                })
                .collect())
        }
    }

    pub fn render(s: &ProbeSummary, causes: &[SlowCause]) -> String {
        let mut t = String::from("causes of slow operations (blocked ms by kernel cause):\n");
        for c in causes {
            let Some(op) = s.slow_ops.get(c.slow_op) else {
                continue;
            };
            let parts: Vec<String> = c
                .causes
                .iter()
                .take(3)
                .map(|(cause, ns)| format!("{cause} {:.1}", ms(*ns)))
                .collect();
            t += &format!(
                "  {:<5} #{:<6} {:9.3} ms: {}\n",
                op_name(op.op),
                op.iteration,
                ms(op.lat_ns),
                if parts.is_empty() {
                    "on CPU or runnable (no sleep >= 1 ms)".to_string()
                } else {
                    parts.join(", ")
                }
            );
        }
        t
    }
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

/// The probe writes (truncates, then overwrites) its output: a block device
/// there would lose what it holds. As `iolab load`, only with --force.
fn refuse_device_output(path: &std::path::Path, force: bool) -> Result<(), UsageError> {
    use std::os::unix::fs::FileTypeExt;
    let is_dev = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device());
    if is_dev && !force {
        return Err(UsageError::new(format!(
            "refusing to write to block device {}: --out-file is overwritten by the probe; give a file path, or pass --force if that is what you want",
            path.display()
        )));
    }
    Ok(())
}
