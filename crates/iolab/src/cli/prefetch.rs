//! `iolab prefetch` — seed 001's treadahead, complete: read a list of file
//! ranges (or whole files) into the page cache, at a chosen priority, and
//! report what it cost and achieved.
//!
//! `--background` (treadahead -e): the parent validates everything, then
//! starts a copy of itself (`/proc/self/exe`, same arguments, stdin handed
//! over through a pipe, stdout closed, its own session) and returns at once.
//! A re-exec rather than a bare fork because iolab is multi-threaded (the
//! signal thread): after fork(2) only the forking thread exists, so the
//! child would have signal handlers with nobody to act on them and a guard
//! journal shared with a parent about to exit and restore it. The re-exec'd
//! child makes its own guarded changes (`--scheduler`) in its own journal,
//! with its own signal handling: they are undone when it finishes, on
//! SIGTERM/SIGINT, and — if it is SIGKILLed — by the next iolab run
//! (`recover_stale`) or `iolab restore`, like any other run. The parent
//! makes no change at all.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Context;
use clap::Args;
use iolab_cache::notes::Notes;
use iolab_cache::prefetch::{self, Method, PrefetchList, PrefetchOptions, Stamp};
use iolab_sys::ioprio::IoPrio;
use iolab_sys::units::parse_duration;
use iolab_sys::UsageError;

use super::cache::cache_error;

/// Set in the environment of the background copy.
const DETACHED_ENV: &str = "IOLAB_PREFETCH_DETACHED";

/// Bytes of a file read to decide whether it is a list.
const SNIFF_BYTES: usize = 64 * 1024;

/// `iolab prefetch` arguments.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct PrefetchArgs {
    /// Prefetch lists (`FILE off:len,...` lines, or file names one per
    /// line), files to read whole, or directories (every file below); `-`
    /// reads a list from stdin. Lists and files are told apart by content;
    /// --list / --files force one reading.
    #[arg(required = true, value_name = "LIST|FILE")]
    pub inputs: Vec<String>,

    /// Read every input as a list (treadahead -f).
    #[arg(short = 'f', long, conflicts_with = "files")]
    pub list: bool,

    /// Read every input as a file to prefetch whole.
    #[arg(long)]
    pub files: bool,

    /// Follow symbolic links inside directory inputs.
    #[arg(short = 'L', long)]
    pub follow: bool,

    /// Per-file lines: bytes requested, residency before and after.
    #[arg(short, long)]
    pub verbose: bool,

    /// I/O priority of the reader threads: idle, be:N or rt:N (N 0-7, 0
    /// highest; treadahead -i is idle, -j be:7).
    #[arg(long, value_name = "CLASS[:LEVEL]")]
    pub ioprio: Option<String>,

    /// Nice value of the reader threads, -20..19 (treadahead -p is 19).
    #[arg(long, value_name = "N", allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Option<i32>,

    /// Switch the files' block devices to this I/O scheduler first
    /// (treadahead -n; restored at exit; root).
    #[arg(long, value_name = "SCHED")]
    pub scheduler: Option<String>,

    /// Print start and end lines with CLOCK_MONOTONIC and wall timestamps
    /// on stderr (treadahead -l).
    #[arg(long)]
    pub log: bool,

    /// Return at once and prefetch in the background (treadahead -e); the
    /// report goes to --output, if given (stdout is closed).
    #[arg(long)]
    pub background: bool,

    /// Print the /proc/diskstats difference of the files' devices between
    /// start and end (treadahead -s).
    #[arg(long)]
    pub diskstats: bool,

    /// Wait until the reads have finished (every requested page cached, or
    /// the devices idle), at most TIMEOUT (default 60s): --wait or --wait=10s.
    #[arg(long, value_name = "TIMEOUT", num_args = 0..=1, require_equals = true,
          default_missing_value = "60s")]
    pub wait: Option<String>,

    /// Reader threads.
    #[arg(long, value_name = "N", default_value_t = 2,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,

    /// readahead (readahead(2), asynchronous), willneed (POSIX_FADV_WILLNEED,
    /// asynchronous) or read (pread, synchronous).
    #[arg(long, value_name = "METHOD", default_value = "readahead")]
    pub method: String,

    /// The order files are read in: as listed (a recording's order of
    /// first access) or by their place on disk (one sweep, by FIEMAP).
    #[arg(long, value_name = "ORDER", default_value = "listed",
          value_parser = ["listed", "disk"])]
    pub order: String,

    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,

    /// Start reading only once FILE exists (at most 60 s; then nothing is
    /// read and it fails): a tracer attached to what the prefetch races
    /// (`iolab boot --explain`) says so by making FILE. The report's times
    /// start after the hold.
    #[arg(long, value_name = "FILE")]
    pub start_when: Option<PathBuf>,

    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

const AFTER_HELP: &str = "\
readahead(2) and WILLNEED return before the reads finish: --wait checks the
requested pages with mincore (cached and up to date; cachestat would count
pages still being read) until all are in, or the devices have nothing in
flight and nothing changes. Bytes read from the device
come from /proc/diskstats and include anyone else's reads in that time.

Examples:
  iolab cache -r /data/app/*.apk > boot.list && iolab prefetch --wait boot.list
  iolab prefetch --ioprio idle --nice 19 --log --background -o /tmp/pf.json --json boot.list
  find /usr/lib -name '*.so*' | iolab prefetch --threads 4 --wait -";

pub fn run(a: PrefetchArgs) -> anyhow::Result<()> {
    let method: Method = a.method.parse()?;
    let ioprio = a.ioprio.as_deref().map(str::parse::<IoPrio>).transpose()?;
    let wait = a.wait.as_deref().map(parse_duration).transpose()?;
    let stdin = if a.inputs.iter().any(|i| i == "-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the list from stdin")?;
        Some(s)
    } else {
        None
    };
    let (mut list, notes) = build_list(&a, stdin.as_deref())?;
    if a.order == "disk" {
        let unmapped = list.sort_by_disk();
        if unmapped > 0 {
            iolab_sys::say!(
                "iolab: --order disk: {unmapped} file(s) could not be mapped (FIEMAP), read last in list order"
            );
        }
    }
    for s in notes.sentences() {
        iolab_sys::say!("iolab: {s}");
    }
    if list.is_empty() {
        return Err(UsageError::new(
            "nothing to prefetch: the inputs hold no files (expected a list, files or directories)",
        )
        .into());
    }
    let disks = prefetch::disks_of(list.entries.iter().map(|e| e.path.as_path()));
    if let Some(s) = &a.scheduler {
        super::require_root("--scheduler")?;
        if disks.is_empty() {
            return Err(UsageError::new(
                "--scheduler: the files are on no block device (tmpfs?), so there is no scheduler to set",
            )
            .into());
        }
        for d in &disks {
            let offered = d.schedulers()?.available;
            if !offered.contains(s) {
                return Err(UsageError::new(format!(
                    "--scheduler {s}: {} offers {}",
                    d.name,
                    offered.join(", ")
                ))
                .into());
            }
        }
    }
    if a.background && std::env::var_os(DETACHED_ENV).is_none() {
        return spawn_background(stdin.as_deref());
    }

    let guard = match &a.scheduler {
        Some(s) => {
            let g = iolab_guard::Guard::new();
            for d in &disks {
                let old = d.schedulers()?.current;
                g.set_scheduler(d, s)?;
                if a.verbose {
                    iolab_sys::say!(
                        "iolab: {}: scheduler {old} -> {s} (restored at exit)",
                        d.name
                    );
                }
            }
            Some(g)
        }
        None => None,
    };
    let opts = PrefetchOptions {
        method,
        threads: usize::from(a.threads),
        ioprio,
        nice: a.nice,
        wait,
        per_file: a.verbose,
        ..PrefetchOptions::default()
    };
    if let Some(f) = &a.start_when {
        hold_until(f, START_WHEN_MAX)?;
    }
    if a.log {
        iolab_sys::say!("iolab prefetch: start {}", stamp_text(Stamp::now()));
    }
    let report = prefetch::run(&list, &opts).map_err(cache_error)?;
    if a.log {
        // What a boot console keeps: how the reads ended, not only when.
        iolab_sys::say!(
            "iolab prefetch: end {} ({:.3} s): {}",
            stamp_text(report.end),
            report.duration_s,
            outcome_text(&report)
        );
    }
    drop(guard);
    let mut text = Vec::new();
    if a.json {
        serde_json::to_writer_pretty(&mut text, &report)?;
        text.push(b'\n');
    } else {
        text.extend_from_slice(
            iolab_cache::prefetch::render::report_text(&report, a.verbose, a.diskstats).as_bytes(),
        );
    }
    match &a.output {
        Some(p) => std::fs::write(p, &text).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout().write_all(&text)?,
    }
    if report.files_failed == report.files {
        anyhow::bail!("no file could be prefetched (see the errors above)");
    }
    Ok(())
}

/// The longest `--start-when` holds the prefetch.
const START_WHEN_MAX: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits until `f` exists, polling every 5 ms; an error after `max`.
fn hold_until(f: &std::path::Path, max: std::time::Duration) -> anyhow::Result<()> {
    let t0 = std::time::Instant::now();
    while !f.exists() {
        if t0.elapsed() > max || iolab_guard::stop_requested() {
            anyhow::bail!(
                "--start-when {}: it did not appear within {} s; nothing was read",
                f.display(),
                max.as_secs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Ok(())
}

/// Builds one list from all inputs, in order.
fn build_list(a: &PrefetchArgs, stdin: Option<&str>) -> anyhow::Result<(PrefetchList, Notes)> {
    let mut list = PrefetchList::default();
    let mut notes = Notes::default();
    for input in &a.inputs {
        if input == "-" {
            let text = stdin.unwrap_or_default();
            list.extend(PrefetchList::parse_named(text, "stdin").map_err(cache_error)?);
            continue;
        }
        let path = Path::new(input);
        let meta = std::fs::metadata(path).map_err(|e| {
            UsageError::new(format!(
                "{input}: {e}: expected a prefetch list, a file or a directory"
            ))
        })?;
        let as_list = !meta.is_dir() && !a.files && (a.list || sniff_list(path, meta.len()));
        if as_list {
            list.extend(PrefetchList::read_file(path).map_err(cache_error)?);
        } else {
            let (l, n) =
                PrefetchList::from_paths(&[path.to_path_buf()], a.follow).map_err(cache_error)?;
            list.extend(l);
            notes.merge(n);
        }
    }
    Ok((list, notes))
}

/// Is this regular file a prefetch list? Small text whose first entry is a
/// ranges line or an existing file. The head is read with O_DIRECT so that
/// sniffing a data file does not put its first pages (and a readahead
/// window) in the cache before the prefetch measures it.
fn sniff_list(path: &Path, len: u64) -> bool {
    if len > 64 << 20 {
        return false;
    }
    let mut buf = vec![0u8; SNIFF_BYTES + 4096];
    let start = buf.as_ptr().align_offset(4096);
    let head = &mut buf[start..start + SNIFF_BYTES];
    let n = read_head_uncached(path, head).unwrap_or(0);
    PrefetchList::looks_like_list(&head[..n], (n as u64) < len)
}

/// Reads the start of `path` into the page-aligned `head`, bypassing the
/// page cache where the filesystem allows O_DIRECT; elsewhere reads
/// without readahead (POSIX_FADV_RANDOM).
fn read_head_uncached(path: &Path, head: &mut [u8]) -> std::io::Result<usize> {
    use rustix::fs::{Mode, OFlags};
    let base = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    if let Ok(fd) = rustix::fs::open(path, base | OFlags::DIRECT, Mode::empty()) {
        if let Ok(n) = rustix::io::pread(&fd, &mut *head, 0) {
            return Ok(n);
        }
    }
    let fd = rustix::fs::open(path, base, Mode::empty())?;
    let _ = rustix::fs::fadvise(&fd, 0, None, rustix::fs::Advice::Random);
    let want = head.len().min(4096);
    Ok(rustix::io::pread(&fd, &mut head[..want], 0)?)
}

/// Starts the background copy and returns without waiting for it.
fn spawn_background(stdin: Option<&str>) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().context("finding the iolab binary")?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env(DETACHED_ENV, "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // SAFETY: setsid(2) is async-signal-safe and touches no Rust state.
    // Its own session: a terminal's Ctrl-C or hang-up does not reach it.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("starting the background prefetch")?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .context("handing the list to the background prefetch")?;
    }
    iolab_sys::say!(
        "iolab: prefetch continues in the background as pid {}",
        child.id()
    );
    Ok(())
}

/// The log's summary of a run: the wait's outcome, pages cached of those
/// asked for, what the devices read, the files that failed.
fn outcome_text(r: &iolab_cache::prefetch::PrefetchReport) -> String {
    let wait = r.wait.map_or("not waited for", |w| w.as_str());
    let cached = r
        .cached_pages_after
        .map_or_else(|| "unknown".to_string(), |c| c.to_string());
    format!(
        "{wait}, {cached} of {} pages cached, devices read {} bytes, {} of {} files failed",
        r.pages_requested, r.device_read_bytes, r.files_failed, r.files
    )
}

fn stamp_text(s: Stamp) -> String {
    let wall = iolab_store::rfc3339(UNIX_EPOCH + Duration::from_nanos(s.wall_ns));
    format!(
        "monotonic {}.{:09} s, wall {wall}",
        s.mono_ns / 1_000_000_000,
        s.mono_ns % 1_000_000_000
    )
}
