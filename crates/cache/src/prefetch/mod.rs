//! Prefetching (seed 001's treadahead, complete): bring the ranges of a
//! [`PrefetchList`] into the page cache with N reader threads at a chosen
//! I/O priority and nice level, optionally wait until the reads have really
//! finished, and report what it cost: duration, bytes requested, bytes the
//! devices actually read (/proc/diskstats), and the residency achieved.
//!
//! ```no_run
//! use iolab_cache::prefetch::{self, PrefetchList, PrefetchOptions};
//! let list = PrefetchList::parse("/usr/bin/ls 0:65536\n/usr/bin/cat\n")?;
//! let report = prefetch::run(&list, &PrefetchOptions::default())?;
//! iolab_sys::show!("{} bytes in {:.3} s", report.bytes_requested, report.duration_s);
//! # Ok::<(), iolab_cache::CacheError>(())
//! ```
//!
//! Priorities apply to the reader threads only (ioprio_set and
//! setpriority per thread), never to the caller: `iolab startup` can
//! prefetch at idle priority in parallel with the app it measures.

mod devices;
pub(crate) mod fetch;
mod list;
pub mod render;
mod wait;

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use iolab_sys::ioprio::{current_tid, IoPrio};
use rustix::fs::{FileType, Mode, OFlags, CWD};

pub use devices::{disk_of, disks_of, DeviceDelta};
pub use fetch::Method;
pub use list::{ListEntry, PrefetchList};
pub use wait::WaitOutcome;

use crate::inspect::Probe;
use crate::ranges::{self, ByteRange};
use crate::CacheError;

/// How to prefetch.
#[derive(Debug, Clone)]
pub struct PrefetchOptions {
    /// How pages are brought in (default readahead).
    pub method: Method,
    /// Reader threads (default 2).
    pub threads: usize,
    /// I/O priority of the reader threads (`None`: inherit).
    pub ioprio: Option<IoPrio>,
    /// Nice value of the reader threads (`None`: inherit).
    pub nice: Option<i32>,
    /// Wait until the reads have finished, for at most this long.
    pub wait: Option<Duration>,
    /// Keep a [`FileOutcome`] per file in the report.
    pub per_file: bool,
    /// Where `diskstats` is read (`/proc`; tests point it elsewhere).
    pub proc_root: PathBuf,
}

impl Default for PrefetchOptions {
    fn default() -> Self {
        PrefetchOptions {
            method: Method::Readahead,
            threads: 2,
            ioprio: None,
            nice: None,
            wait: None,
            per_file: false,
            proc_root: PathBuf::from("/proc"),
        }
    }
}

/// A point in time on both clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Stamp {
    /// CLOCK_MONOTONIC in ns (comparable with trace timestamps).
    pub mono_ns: u64,
    /// Wall clock (CLOCK_REALTIME) in ns since the Unix epoch.
    pub wall_ns: u64,
}

impl Stamp {
    /// Now.
    pub fn now() -> Stamp {
        let ns = |clock| {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes one timespec we own.
            unsafe { libc::clock_gettime(clock, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        Stamp {
            mono_ns: ns(libc::CLOCK_MONOTONIC),
            wall_ns: ns(libc::CLOCK_REALTIME),
        }
    }
}

/// One file's part in a prefetch.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FileOutcome {
    /// The file.
    pub file: PathBuf,
    /// Bytes requested (ranges clipped to the file).
    pub bytes_requested: u64,
    /// Pages those ranges touch.
    pub pages_requested: u64,
    /// Of those, cached before.
    pub cached_pages_before: Option<u64>,
    /// Of those, cached at the end.
    pub cached_pages_after: Option<u64>,
    /// Why the file could not be prefetched.
    pub error: Option<String>,
}

/// What a prefetch did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PrefetchReport {
    /// How pages were brought in.
    pub method: Method,
    /// Reader threads.
    pub threads: usize,
    /// Files in the list.
    pub files: u64,
    /// Files that could not be opened or read.
    pub files_failed: u64,
    /// Bytes requested (ranges clipped to the files' sizes).
    pub bytes_requested: u64,
    /// Pages the requested ranges touch.
    pub pages_requested: u64,
    /// Of those, cached before the prefetch (`None` if the kernel would
    /// not tell for some file).
    pub cached_pages_before: Option<u64>,
    /// Of those, cached at the end.
    pub cached_pages_after: Option<u64>,
    /// `cached_pages_after / pages_requested` in percent.
    pub residency_percent: Option<f64>,
    /// Seconds until every read was submitted (readahead/willneed) or done
    /// (read).
    pub submit_s: f64,
    /// Seconds spent waiting for the reads (`--wait`).
    pub wait_s: f64,
    /// Seconds from start to end (the devices' counters cover this).
    pub duration_s: f64,
    /// How the wait ended (`None`: no wait asked).
    pub wait: Option<WaitOutcome>,
    /// Bytes read from the files' devices during the prefetch (by anyone).
    pub device_read_bytes: u64,
    /// `device_read_bytes / duration_s`.
    pub device_read_bytes_per_s: f64,
    /// Per device: bytes read and every diskstats counter's difference.
    pub devices: Vec<DeviceDelta>,
    /// Start time.
    pub start: Stamp,
    /// End time.
    pub end: Stamp,
    /// Per file (when asked for), else only the files that failed.
    pub per_file: Vec<FileOutcome>,
}

/// A list entry resolved against the file system.
pub(crate) struct ListFile {
    path: PathBuf,
    size: u64,
    uid: u32,
    dev: u64,
    ranges: Vec<ByteRange>,
    bytes: u64,
    pub(crate) pages: u64,
    before: Option<u64>,
    pub(crate) error: Option<String>,
}

impl ListFile {
    fn resolve(entry: &ListEntry, probe: &mut Probe) -> ListFile {
        let mut t = ListFile {
            path: entry.path.clone(),
            size: 0,
            uid: 0,
            dev: 0,
            ranges: Vec::new(),
            bytes: 0,
            pages: 0,
            before: None,
            error: None,
        };
        let fd = match open(&entry.path) {
            Ok(fd) => fd,
            Err(e) => {
                t.error = Some(e);
                return t;
            }
        };
        let st = match rustix::fs::fstat(&fd) {
            Ok(st) => st,
            Err(e) => {
                t.error = Some(std::io::Error::from(e).to_string());
                return t;
            }
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            t.error = Some("not a regular file".into());
            return t;
        }
        t.size = st.st_size as u64;
        t.uid = st.st_uid;
        t.dev = st.st_dev;
        t.ranges = match &entry.ranges {
            Some(r) => r.iter().filter_map(|r| r.clip(t.size)).collect(),
            None => ByteRange {
                offset: 0,
                len: t.size,
            }
            .clip(t.size)
            .into_iter()
            .collect(),
        };
        ranges::merge(&mut t.ranges);
        let page = probe.page_size();
        t.bytes = t.ranges.iter().map(|r| r.len).sum();
        t.pages = t.ranges.iter().map(|r| r.pages(page).1).sum();
        t.before = probe.range_residency(fd.as_fd(), t.size, t.uid, &t.ranges);
        t
    }

    /// Cached pages of the requested ranges now.
    pub(crate) fn cached(&self, probe: &mut Probe) -> Option<u64> {
        let fd = open(&self.path).ok()?;
        probe.range_residency(fd.as_fd(), self.size, self.uid, &self.ranges)
    }

    /// Where this target's reads stand.
    pub(crate) fn poll(&self, probe: &mut Probe) -> Poll {
        let Ok(fd) = open(&self.path) else {
            return Poll::Unknown;
        };
        let fd = fd.as_fd();
        match probe.in_flight(fd, self.size, self.uid, &self.ranges) {
            Some(0) => {}
            Some(_) => return Poll::Reading,
            None if probe.has_cachestat() => return Poll::Unknown,
            // Without cachestat, only "everything is in" can be seen.
            None => {}
        }
        match probe.range_residency(fd, self.size, self.uid, &self.ranges) {
            Some(c) if c >= self.pages => Poll::Done { complete: true },
            Some(_) if probe.has_cachestat() => Poll::Done { complete: false },
            Some(_) => Poll::Reading,
            None => Poll::Unknown,
        }
    }
}

/// Where one target's reads stand during a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Poll {
    /// Some requested page is still being read.
    Reading,
    /// No read is pending; `complete` when every requested page is cached
    /// (else some were never read or were dropped again, e.g. by memory
    /// pressure or a drop_caches).
    Done {
        /// Every requested page is cached.
        complete: bool,
    },
    /// The kernel would not say (file gone, not inspectable).
    Unknown,
}

fn open(path: &Path) -> Result<OwnedFd, String> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    rustix::fs::openat(CWD, path, flags, Mode::empty())
        .map_err(|e| std::io::Error::from(e).to_string())
}

/// One unit of reader work: a piece of one file's range.
#[derive(Debug, Clone, Copy)]
struct Task {
    target: usize,
    offset: u64,
    len: u64,
    window: u64,
}

/// Ranges are cut into pieces of at most this size, so N threads share a
/// single big file too; list order is kept.
const TASK_BYTES: u64 = 16 << 20;

/// Prefetches `list`. Files that cannot be opened are reported, not fatal;
/// failing to set the requested priority is.
pub fn run(list: &PrefetchList, opts: &PrefetchOptions) -> Result<PrefetchReport, CacheError> {
    let start = Stamp::now();
    let t0 = Instant::now();
    let mut probe = Probe::new();
    let files: Vec<ListFile> = list
        .entries
        .iter()
        .map(|e| ListFile::resolve(e, &mut probe))
        .collect();
    let mut names: Vec<String> = Vec::new();
    for t in files.iter().filter(|t| t.error.is_none()) {
        if let Some(d) = disk_of(t.dev) {
            if !names.contains(&d.name) {
                names.push(d.name);
            }
        }
    }
    let before_stats = devices::snapshot(&opts.proc_root, &names)?;
    let mut tasks = Vec::new();
    for (i, t) in files.iter().enumerate() {
        if t.error.is_some() {
            continue;
        }
        let window = devices::readahead_window(t.dev);
        for r in &t.ranges {
            let mut off = r.offset;
            while off < r.end() {
                let len = TASK_BYTES.min(r.end() - off);
                tasks.push(Task {
                    target: i,
                    offset: off,
                    len,
                    window,
                });
                off += len;
            }
        }
    }
    let read_errors = read(&files, &tasks, opts)?;
    let submit_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let outcome = opts
        .wait
        .map(|timeout| wait::wait(&files, &names, timeout, &opts.proc_root));
    let wait_s = if outcome.is_some() {
        t1.elapsed().as_secs_f64()
    } else {
        0.0
    };
    let after: Vec<Option<u64>> = files
        .iter()
        .map(|t| {
            if t.error.is_some() {
                None
            } else {
                t.cached(&mut probe)
            }
        })
        .collect();
    let devices = devices::deltas(&before_stats, &devices::snapshot(&opts.proc_root, &names)?);
    let duration_s = t0.elapsed().as_secs_f64();
    let end = Stamp::now();

    let mut per_file = Vec::new();
    let mut failed = 0;
    for (i, (t, a)) in files.iter().zip(&after).enumerate() {
        let error = t.error.clone().or_else(|| {
            read_errors
                .iter()
                .find(|(j, _)| *j == i)
                .map(|(_, e)| e.clone())
        });
        failed += u64::from(error.is_some());
        if opts.per_file || error.is_some() {
            per_file.push(FileOutcome {
                file: t.path.clone(),
                bytes_requested: t.bytes,
                pages_requested: t.pages,
                cached_pages_before: t.before,
                cached_pages_after: *a,
                error,
            });
        }
    }
    let ok = || files.iter().filter(|t| t.error.is_none());
    let pages_requested: u64 = ok().map(|t| t.pages).sum();
    let sum = |v: &mut dyn Iterator<Item = Option<u64>>| v.sum::<Option<u64>>();
    let cached_after = sum(&mut files
        .iter()
        .zip(&after)
        .filter(|(t, _)| t.error.is_none())
        .map(|(_, a)| *a));
    let device_read_bytes = devices.iter().map(|d| d.read_bytes).sum();
    Ok(PrefetchReport {
        method: opts.method,
        threads: opts.threads.max(1),
        files: files.len() as u64,
        files_failed: failed,
        bytes_requested: ok().map(|t| t.bytes).sum(),
        pages_requested,
        cached_pages_before: sum(&mut ok().map(|t| t.before)),
        cached_pages_after: cached_after,
        residency_percent: cached_after.map(|c| crate::scan::percent(c, pages_requested)),
        submit_s,
        wait_s,
        duration_s,
        wait: outcome,
        device_read_bytes,
        device_read_bytes_per_s: if duration_s > 0.0 {
            device_read_bytes as f64 / duration_s
        } else {
            0.0
        },
        devices,
        start,
        end,
        per_file,
    })
}

/// Runs the reader threads over `tasks`; returns per-target read errors.
fn read(
    files: &[ListFile],
    tasks: &[Task],
    opts: &PrefetchOptions,
) -> Result<Vec<(usize, String)>, CacheError> {
    let next = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let errors = Mutex::new(Vec::new());
    let setup = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..opts.threads.max(1) {
            s.spawn(|| {
                if let Err(e) = set_priorities(opts) {
                    abort.store(true, Ordering::Relaxed);
                    *setup.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    return;
                }
                let mut buf = Vec::new();
                let mut open_file: Option<(usize, OwnedFd)> = None;
                while !abort.load(Ordering::Relaxed) && !iolab_guard::stop_requested() {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(task) = tasks.get(i) else { break };
                    if open_file.as_ref().map(|(t, _)| *t) != Some(task.target) {
                        match open(&files[task.target].path) {
                            Ok(fd) => open_file = Some((task.target, fd)),
                            Err(e) => {
                                push_error(&errors, task.target, e);
                                continue;
                            }
                        }
                    }
                    let Some((_, fd)) = &open_file else { continue };
                    let r = fetch::fetch(
                        fd.as_fd(),
                        task.offset,
                        task.len,
                        opts.method,
                        task.window,
                        &mut buf,
                    );
                    if let Err(e) = r {
                        push_error(&errors, task.target, e.to_string());
                    }
                }
            });
        }
    });
    if let Some(e) = setup.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(CacheError::usage(e));
    }
    Ok(errors.into_inner().unwrap_or_else(|p| p.into_inner()))
}

fn push_error(errors: &Mutex<Vec<(usize, String)>>, target: usize, e: String) {
    let mut v = errors.lock().unwrap_or_else(|p| p.into_inner());
    if !v.iter().any(|(t, _)| *t == target) {
        v.push((target, e));
    }
}

/// Applies the I/O priority and nice value to the calling (reader) thread.
fn set_priorities(opts: &PrefetchOptions) -> Result<(), String> {
    let tid = current_tid();
    if let Some(p) = opts.ioprio {
        p.set_for(tid).map_err(|e| {
            format!("cannot set I/O priority {p}: {e} (rt:N needs root; be:N and idle do not)")
        })?;
    }
    if let Some(n) = opts.nice {
        // SAFETY: setpriority takes integers only; PRIO_PROCESS with a tid
        // changes just that thread on Linux.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, n) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!(
                "cannot set nice {n}: {e} (negative values need root)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn synced_file(pages: usize) -> Option<tempfile::NamedTempFile> {
        let mut f = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
        let fs = iolab_sys::mounts::containing(f.path()).map(|m| m.fstype);
        if matches!(fs.as_deref(), Some("tmpfs" | "ramfs")) {
            iolab_testkit::skip_line(
                "skip: /var/tmp is tmpfs, whose pages cannot be evicted".to_string(),
            );
            return None;
        }
        f.write_all(&vec![9u8; pages * 4096]).unwrap();
        f.as_file().sync_all().unwrap();
        Some(f)
    }

    #[test]
    fn dropped_pages_end_the_wait_instead_of_blocking_it() {
        let Some(f) = synced_file(64) else { return };
        let mut probe = Probe::new();
        let entry = ListEntry {
            path: f.path().to_path_buf(),
            ranges: None,
        };
        let t = ListFile::resolve(&entry, &mut probe);
        assert_eq!((t.pages, t.before), (64, Some(64)));
        assert_eq!(t.poll(&mut probe), Poll::Done { complete: true });
        // Pages dropped after they were read will not come back: the reads
        // are over, the wait must end (as settled), not go on forever.
        // (The whole file: a freshly written file may sit in large folios,
        // which a partial DONTNEED leaves alone.)
        let fd = open(f.path()).unwrap();
        rustix::fs::fadvise(&fd, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        let want = if probe.has_cachestat() {
            Poll::Done { complete: false }
        } else {
            Poll::Reading
        };
        assert_eq!(t.poll(&mut probe), want);
        let names: Vec<String> = Vec::new();
        let out = wait::wait(&[t], &names, Duration::from_secs(5), Path::new("/proc"));
        assert_eq!(out, WaitOutcome::Settled);
    }

    #[test]
    fn missing_files_are_reported_not_fatal() {
        let list = PrefetchList::parse("/nonexistent/iolab-pf-x 0:4096\n").unwrap();
        let r = run(&list, &PrefetchOptions::default()).unwrap();
        assert_eq!((r.files, r.files_failed), (1, 1));
        assert!(r.per_file[0]
            .error
            .as_deref()
            .unwrap()
            .contains("No such file"));
    }
}
