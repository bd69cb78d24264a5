//! `iolab record`: which byte ranges of which files a command (and every
//! task it forks) brings into the page cache, as a prefetch list — the
//! record half of Android's record/replay prefetch, built on the
//! `filemap:mm_filemap_add_to_page_cache` tracepoint.
//!
//! - [`event`]: the tracepoint, decoded through its `format` file;
//! - [`recorder`]: the trace session (pid following, device filter), the
//!   reader thread that also samples the tasks' `/proc` entries (the
//!   command is held before exec by `iolab_spawn` until tracing follows
//!   it);
//! - [`pages`]: pages per file, in order of first access, merged;
//! - [`candidates`] and [`resolve`]: naming (device, inode) pairs — see
//!   [`resolve`] for the method and its limits;
//! - [`result`]: the [`Recording`], as a list or JSON.
//!
//! A crate of its own rather than a module of `iolab-cache`: recording
//! needs the trace session (`iolab-trace`) and the guard, which the cache
//! crate (page-cache residency and reads, no tracing) has no reason to
//! depend on; the list it writes is the cache crate's
//! [`iolab_cache::prefetch::PrefetchList`], so `iolab prefetch` reads it.
//!
//! Only pages *added* to the page cache are seen: pages already cached
//! when the command reads them leave no event, so record cold (evict the
//! files or drop caches first). Pages another task adds first are that
//! task's, even when the command reads them afterwards.
#![deny(missing_docs)]

pub mod candidates;
mod error;
pub mod event;
pub mod pages;
pub mod recorder;
pub mod resolve;
pub mod result;

use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

use iolab_guard::Guard;

pub use error::RecordError;
pub use event::DevNo;
pub use recorder::{RecordOptions, Recorder};
pub use resolve::ResolveOptions;
pub use result::{RecordedFile, Recording};

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSpec {
    /// The command (may be empty with `all_pids` and a `duration`).
    pub argv: Vec<String>,
    /// Record every task, not just the command's.
    pub all_pids: bool,
    /// Only these filesystems (empty: all).
    pub devices: Vec<DevNo>,
    /// Record at least this long (also after the command exits); with
    /// `until_file`, at most this long.
    pub duration: Option<Duration>,
    /// Stop when this file appears (a boot's end marker).
    pub until_file: Option<std::path::PathBuf>,
    /// A descriptor to write one byte to, then close, once the trace is
    /// on (boot-init holds init until then: what init reads before it
    /// would be missing from the list).
    pub ready_fd: Option<i32>,
    /// Send the command's stdout to our stderr (the list goes to stdout).
    pub stdout_to_stderr: bool,
    /// Ring buffer per CPU, KiB.
    pub buffer_kib_per_cpu: u32,
    /// How to name inodes.
    pub resolve: ResolveOptions,
}

impl Default for RecordSpec {
    fn default() -> Self {
        RecordSpec {
            argv: Vec::new(),
            all_pids: false,
            devices: Vec::new(),
            duration: None,
            until_file: None,
            ready_fd: None,
            stdout_to_stderr: false,
            buffer_kib_per_cpu: RecordOptions::default().buffer_kib_per_cpu,
            resolve: ResolveOptions::default(),
        }
    }
}

/// Runs the command under a recording and returns what it read.
pub fn record(guard: &Guard, spec: &RecordSpec) -> Result<Recording, RecordError> {
    if spec.argv.is_empty() && !(spec.all_pids && spec.duration.is_some()) {
        return Err(iolab_sys::UsageError::new(
            "nothing to record: give a command after -- (or --all-pids --duration S)",
        )
        .into());
    }
    let mut cands = candidates::Candidates::default();
    cands.add_argv(&spec.argv);
    let child = if spec.argv.is_empty() {
        None
    } else {
        let out = if spec.stdout_to_stderr {
            iolab_spawn::Output::ToStderr
        } else {
            iolab_spawn::Output::Inherit
        };
        Some(iolab_spawn::hold(&iolab_spawn::Spec {
            stdout: out,
            ..iolab_spawn::Spec::new(&spec.argv)
        })?)
    };
    let opts = RecordOptions {
        pids: match (&child, spec.all_pids) {
            (Some(c), false) => Some(vec![c.pid()]),
            _ => None,
        },
        devices: spec.devices.clone(),
        buffer_kib_per_cpu: spec.buffer_kib_per_cpu,
        ..RecordOptions::default()
    };
    let rec = Recorder::start(guard, &opts, cands)?;
    if let Some(fd) = spec.ready_fd {
        // SAFETY: the descriptor was handed to this process for this one
        // write; nothing else owns it.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let _ = rustix::io::write(&fd, b"r");
    }
    let t0 = Instant::now();
    let status = match child {
        Some(held) => Some(
            held.release()?
                .wait()
                .map_err(|e| RecordError::io("waitpid", e))?
                .status,
        ),
        None => None,
    };
    if let Some(d) = spec.duration {
        let marked = || spec.until_file.as_ref().is_some_and(|f| f.exists());
        while t0.elapsed() < d && !iolab_guard::stop_requested() && !marked() {
            std::thread::sleep(Duration::from_millis(20).min(d.saturating_sub(t0.elapsed())));
        }
    }
    let raw = rec.finish()?;
    Ok(Recording::build(
        raw,
        spec.argv.clone(),
        if opts.pids.is_some() { "pids" } else { "all" },
        spec.devices.iter().map(DevNo::to_string).collect(),
        status,
        spec.resolve,
    ))
}
