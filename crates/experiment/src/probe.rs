//! `iolab probe`: the thesis's Lprobe (seed 000, §5.2), a latency probe.
//!
//! Lprobe slept 5 s, then ran `dim * 4` iterations (dim = 13200): read a
//! 4096-byte line from a big file and, every 10th iteration, write it to
//! another file; any read or write slower than 300 ms was logged with its
//! duration. This is the same loop with each knob exposed. Like the Java
//! app (FileInputStream/FileOutputStream), reads and writes are plain
//! read(2)/write(2) calls through the page cache: no O_DIRECT, no fsync.
//! A read is real storage I/O only when the cache is cold, so the caller
//! drops caches first (`iolab startup` does; standalone, pass `--evict`).
//! Writes land in the page cache and stall only when the kernel throttles
//! dirtying (balance_dirty_pages) or the journal blocks, which is exactly
//! what the thesis caught.
//!
//! An operation counts as slow when it took at least the threshold (so a
//! `0ms` threshold logs every operation). When the input file ends, the
//! probe wraps to its start and counts the wrap: later reads may then hit
//! the cache.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use iolab_sys::cast::duration_ns;
use iolab_sys::{SysError, UsageError};
use serde::Serialize;

/// The thesis's iteration count: `dim * 4` with `dim = 13200`.
pub const THESIS_COUNT: u64 = 13200 * 4;

/// What the probe does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeConfig {
    /// File read block by block.
    pub file: PathBuf,
    /// File every `write_every`-th block is written to (truncated first).
    pub out_file: PathBuf,
    /// Iterations (reads).
    pub count: u64,
    /// Operations taking at least this long are logged.
    pub threshold: Duration,
    /// Write the block on every iteration divisible by this (0 = never).
    pub write_every: u64,
    /// Sleep before the first read (the thesis slept 5 s so a late
    /// `ionice` could take effect first).
    pub sleep: Duration,
    /// Bytes per read and per write.
    pub block_size: usize,
}

/// One read or write that took at least the threshold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlowOp {
    /// `read` or `write`.
    pub op: Op,
    /// Iteration it belongs to (0-based).
    pub iteration: u64,
    /// When it started, in ns since the probe started (sleep included).
    pub at_ns: u64,
    /// How long it took, in ns.
    pub lat_ns: u64,
}

/// Kind of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// A read(2) of one block.
    Read,
    /// A write(2) of one block.
    Write,
}

/// Latency distribution of one kind of operation, in fio's `lat_ns` shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyNs {
    /// Number of operations.
    #[serde(rename = "N")]
    pub n: u64,
    /// Fastest, ns (0 when n = 0).
    pub min: u64,
    /// Slowest, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Exact nearest-rank percentiles keyed like fio (`"50.000000"`).
    pub percentile: BTreeMap<String, u64>,
}

/// Counts and latencies of one kind of operation, named like fio's JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpStats {
    /// Operations done.
    pub total_ios: u64,
    /// Bytes moved.
    pub io_bytes: u64,
    /// Latency distribution.
    pub lat_ns: LatencyNs,
}

/// What a probe run measured; the `--json` output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeSummary {
    /// Input file.
    pub file: PathBuf,
    /// Output file.
    pub out_file: PathBuf,
    /// Bytes per operation.
    pub block_size: usize,
    /// Iterations run (fewer than asked when interrupted).
    pub iterations: u64,
    /// Times the input ended and reading restarted at offset 0.
    pub wraps: u64,
    /// True when a stop request (Ctrl-C, SIGTERM) ended the run early.
    pub interrupted: bool,
    /// Reads.
    pub read: OpStats,
    /// Writes.
    pub write: OpStats,
    /// Reads and writes together.
    pub lat_ns: LatencyNs,
    /// Slow-operation threshold, ns.
    pub threshold_ns: u64,
    /// Operations at or over the threshold.
    pub slow_count: u64,
    /// Those operations, in order.
    pub slow_ops: Vec<SlowOp>,
    /// Initial sleep, ns.
    pub sleep_ns: u64,
    /// Wall time of the whole probe, sleep included, ns.
    pub elapsed_ns: u64,
}

impl ProbeConfig {
    /// The thesis's settings (without its 5 s sleep) on the given files.
    pub fn thesis(file: PathBuf, out_file: PathBuf) -> ProbeConfig {
        ProbeConfig {
            file,
            out_file,
            count: THESIS_COUNT,
            threshold: Duration::from_millis(300),
            write_every: 10,
            sleep: Duration::ZERO,
            block_size: 4096,
        }
    }

    /// Checks the settings and that the input exists and holds a block.
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.count == 0 {
            return Err(UsageError::new(
                "--count 0 does nothing: expected at least 1 iteration (the thesis ran 52800)",
            ));
        }
        if self.block_size == 0 || self.block_size > 64 << 20 {
            return Err(UsageError::new(format!(
                "--block-size {} is out of range: expected 1 byte to 64MiB (the thesis used 4k)",
                self.block_size
            )));
        }
        if self.file == self.out_file {
            return Err(UsageError::new(format!(
                "--file and --out-file are both {}: expected two different files",
                self.file.display()
            )));
        }
        let len = std::fs::metadata(&self.file).map(|m| m.len()).map_err(|e| {
            UsageError::new(format!(
                "input file {}: {e}: create it with --prepare SIZE (e.g. 256M) or point --file at a big file",
                self.file.display()
            ))
        })?;
        if len < self.block_size as u64 {
            return Err(UsageError::new(format!(
                "input file {} holds {len} bytes, less than one {}-byte block: use a bigger file or --prepare SIZE",
                self.file.display(),
                self.block_size
            )));
        }
        Ok(())
    }
}

/// Creates the input file with `size` bytes of pseudo-random data unless it
/// already exists; returns whether it created it.
pub fn prepare_input(path: &Path, size: u64) -> Result<bool, SysError> {
    if path.exists() {
        return Ok(false);
    }
    crate::targets::content::write_file(path, size, 0x1b_0be, b"")?;
    Ok(true)
}

/// Runs the probe, calling `on_slow` as each slow operation completes (the
/// thesis printed them live). Polls [`iolab_guard::stop_requested`] every
/// iteration and returns what it measured when asked to stop.
pub fn run(cfg: &ProbeConfig, mut on_slow: impl FnMut(&SlowOp)) -> Result<ProbeSummary, SysError> {
    let start = Instant::now();
    let mut input = File::open(&cfg.file).map_err(|e| SysError::io(&cfg.file, e))?;
    let mut output = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&cfg.out_file)
        .map_err(|e| SysError::io(&cfg.out_file, e))?;
    let interrupted = sleep_unless_stopped(cfg.sleep);
    let mut line = vec![0u8; cfg.block_size];
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    let (mut read_bytes, mut wraps, mut slow_ops) = (0u64, 0u64, Vec::new());
    let threshold_ns = duration_ns(cfg.threshold);
    let mut iteration = 0;
    while iteration < cfg.count && !interrupted && !iolab_guard::stop_requested() {
        let t = Instant::now();
        let mut n = input
            .read(&mut line)
            .map_err(|e| SysError::io(&cfg.file, e))?;
        if n == 0 {
            wraps += 1;
            input
                .seek(SeekFrom::Start(0))
                .map_err(|e| SysError::io(&cfg.file, e))?;
            n = input
                .read(&mut line)
                .map_err(|e| SysError::io(&cfg.file, e))?;
        }
        let lat = duration_ns(t.elapsed());
        read_bytes += n as u64;
        reads.push(lat);
        let mut note = |op, at: Instant, lat_ns| {
            if lat_ns >= threshold_ns {
                let s = SlowOp {
                    op,
                    iteration,
                    at_ns: duration_ns(at - start),
                    lat_ns,
                };
                on_slow(&s);
                slow_ops.push(s);
            }
        };
        note(Op::Read, t, lat);
        if cfg.write_every > 0 && iteration % cfg.write_every == 0 {
            let t = Instant::now();
            output
                .write_all(&line[..n])
                .map_err(|e| SysError::io(&cfg.out_file, e))?;
            let lat = duration_ns(t.elapsed());
            writes.push(lat);
            note(Op::Write, t, lat);
        }
        iteration += 1;
    }
    let write_bytes = writes.len() as u64 * cfg.block_size as u64;
    let all: Vec<u64> = reads.iter().chain(&writes).copied().collect();
    Ok(ProbeSummary {
        file: cfg.file.clone(),
        out_file: cfg.out_file.clone(),
        block_size: cfg.block_size,
        iterations: iteration,
        wraps,
        interrupted: interrupted || iteration < cfg.count,
        read: op_stats(reads, read_bytes),
        write: op_stats(writes, write_bytes),
        lat_ns: latency(all),
        threshold_ns,
        slow_count: slow_ops.len() as u64,
        slow_ops,
        sleep_ns: duration_ns(cfg.sleep),
        elapsed_ns: duration_ns(start.elapsed()),
    })
}

/// Sleeps in short slices so a stop request is honoured; true if stopped.
fn sleep_unless_stopped(total: Duration) -> bool {
    let end = Instant::now() + total;
    loop {
        if iolab_guard::stop_requested() {
            return true;
        }
        let now = Instant::now();
        if now >= end {
            return false;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

fn op_stats(samples: Vec<u64>, io_bytes: u64) -> OpStats {
    OpStats {
        total_ios: samples.len() as u64,
        io_bytes,
        lat_ns: latency(samples),
    }
}

/// Exact statistics over every sample (they are few enough to keep: the
/// thesis's 58080 operations take 465 KB).
fn latency(mut samples: Vec<u64>) -> LatencyNs {
    samples.sort_unstable();
    let n = samples.len();
    let pct = |p: f64| {
        // Nearest rank: the smallest sample with at least p % at or below it.
        #[allow(
            clippy::cast_possible_truncation,
            reason = "p is 50 or 99, so the rank is in 0..=n, a usize (and float `as` saturates)"
        )]
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        samples
            .get(rank.clamp(1, n.max(1)) - 1)
            .copied()
            .unwrap_or(0)
    };
    let percentile = [50.0, 99.0]
        .iter()
        .map(|&p| (format!("{p:.6}"), pct(p)))
        .collect();
    LatencyNs {
        n: n as u64,
        min: samples.first().copied().unwrap_or(0),
        max: samples.last().copied().unwrap_or(0),
        mean: if n == 0 {
            0.0
        } else {
            samples.iter().map(|&s| s as f64).sum::<f64>() / n as f64
        },
        percentile,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> ProbeConfig {
        let mut c = ProbeConfig::thesis(dir.join("in"), dir.join("out"));
        c.count = 25;
        c
    }

    #[test]
    fn nearest_rank_percentiles() {
        let l = latency((1..=100).collect());
        assert_eq!((l.n, l.min, l.max, l.mean), (100, 1, 100, 50.5));
        assert_eq!(l.percentile["50.000000"], 50);
        assert_eq!(l.percentile["99.000000"], 99);
        let one = latency(vec![7]);
        assert_eq!(one.percentile["99.000000"], 7);
        let none = latency(vec![]);
        assert_eq!((none.n, none.max, none.percentile["50.000000"]), (0, 0, 0));
    }

    #[test]
    fn validation_says_what_would_be_right() {
        let d = tempfile::tempdir().unwrap();
        let mut c = config(d.path());
        assert!(c.validate().unwrap_err().0.contains("--prepare"));
        prepare_input(&c.file, 100).unwrap();
        assert!(c.validate().unwrap_err().0.contains("less than one"));
        std::fs::remove_file(&c.file).unwrap();
        assert!(prepare_input(&c.file, 8192).unwrap());
        assert!(!prepare_input(&c.file, 1 << 20).unwrap());
        c.validate().unwrap();
        c.count = 0;
        assert!(c.validate().unwrap_err().0.contains("--count"));
        c.count = 1;
        c.out_file = c.file.clone();
        assert!(c.validate().unwrap_err().0.contains("two different"));
    }

    #[test]
    fn counts_reads_writes_wraps_and_slow_ops() {
        let d = tempfile::tempdir().unwrap();
        let mut c = config(d.path());
        prepare_input(&c.file, 10 * 4096).unwrap();
        c.threshold = Duration::ZERO;
        let mut live = 0;
        let s = run(&c, |_| live += 1).unwrap();
        assert_eq!(
            (s.iterations, s.read.total_ios, s.write.total_ios),
            (25, 25, 3)
        );
        assert_eq!(s.wraps, 2);
        assert_eq!(s.read.io_bytes, 25 * 4096);
        assert_eq!(std::fs::metadata(&c.out_file).unwrap().len(), 3 * 4096);
        assert_eq!((s.slow_count, live), (28, 28));
        assert!(!s.interrupted);
        c.threshold = Duration::from_secs(3600);
        c.write_every = 0;
        let s = run(&c, |_| ()).unwrap();
        assert_eq!((s.slow_count, s.write.total_ios), (0, 0));
    }
}
