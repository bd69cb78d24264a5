//! Replaying the S suite's recorded start-up I/O (`comm_startup_lat`'s
//! `xterm.trace`, `gnometerm.trace`, `lowriter.trace`) with the semantics
//! of S's `replay-startup-io.cc`, so S's workloads run in iolab and the
//! two can be compared on one lab:
//!
//! - a trace line is `PROC DELTA_S SECTORS POSITION Seq|Rand - - ACTION
//!   TIME FLAG`; each distinct PROC is one thread, and the requests are
//!   issued in trace order, one thread at a time, handing over between
//!   threads as S does;
//! - each thread reads its own 20,000,000-byte file
//!   (`replay_startup_file<N>`, S's names), O_DIRECT, with a fresh
//!   buffer per request that is never freed (S's way of making memory
//!   grow as in a start-up);
//! - `Seq` continues where the thread's previous request ended (back to 0
//!   near the end of the file), `Rand` reads a random 512-byte-aligned
//!   place;
//! - `RA` (readahead) is submitted asynchronously; any other action waits
//!   for the thread's pending readahead, then reads synchronously.
//!
//! One difference, on purpose: S issues as fast as it can (its sleep is
//! `#if 0`'d out). Here each request is issued no earlier than DELTA after
//! the previous one, as in the recorded start-up (a sync read that takes
//! longer delays what follows, as it did there); `--no-delays` gives S's
//! behaviour.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iolab_sys::cast;
use serde::Serialize;

use super::content::SplitMix64;

/// S's per-thread file size.
pub const FILE_BYTES: u64 = 20_000_000;

/// One request of a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceRequest {
    /// The thread (one per process name in the trace, in order of first
    /// appearance).
    pub thread: usize,
    /// Time since the previous request's issue, seconds.
    pub delta_s: f64,
    /// Size in 512-byte sectors.
    pub sectors: u64,
    /// Sequential (continues the thread's last request) or random.
    pub seq: bool,
    /// `R`, `RA` (readahead, asynchronous) or `RM` (page fault).
    pub action: String,
}

/// A parsed trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    /// Process names, index = thread.
    pub procs: Vec<String>,
    /// The requests in order.
    pub requests: Vec<TraceRequest>,
}

impl Trace {
    /// Total bytes the trace reads.
    pub fn bytes(&self) -> u64 {
        self.requests.iter().map(|r| r.sectors * 512).sum()
    }

    /// Parses S's trace text; errors name the line.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut procs: Vec<String> = Vec::new();
        let mut requests = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.is_empty() {
                continue;
            }
            let bad = |what: &str| {
                format!(
                    "line {}: {what}; expected S's `PROC DELTA SECTORS POSITION Seq|Rand - - R|RA|RM ...`: {line:?}",
                    i + 1
                )
            };
            if f.len() < 8 {
                return Err(bad("fewer than 8 fields"));
            }
            let thread = match procs.iter().position(|p| p == f[0]) {
                Some(t) => t,
                None => {
                    procs.push(f[0].to_string());
                    procs.len() - 1
                }
            };
            let delta_s: f64 = f[1]
                .parse()
                .ok()
                .filter(|d: &f64| d.is_finite() && *d >= 0.0 && *d < 3600.0)
                .ok_or_else(|| bad("the delay is not 0 to 3600 seconds"))?;
            let sectors: u64 = f[2]
                .parse()
                .ok()
                .filter(|&s| s > 0 && s * 512 < FILE_BYTES / 2)
                .ok_or_else(|| bad("the size is not a positive number of sectors"))?;
            let seq = match f[4] {
                "Seq" => true,
                "Rand" => false,
                _ => return Err(bad("the 5th field is neither Seq nor Rand")),
            };
            requests.push(TraceRequest {
                thread,
                // S zeroes the first delay.
                delta_s: if requests.is_empty() { 0.0 } else { delta_s },
                sectors,
                seq,
                action: f[7].to_string(),
            });
        }
        if requests.is_empty() {
            return Err("the trace holds no requests".into());
        }
        Ok(Trace { procs, requests })
    }
}

/// The file thread `i` reads.
pub fn file_of(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("replay_startup_file{i}"))
}

/// Creates the per-thread files S's replay reads (seeded random content,
/// written once and made durable; existing files of the right size are
/// kept).
pub fn prepare(dir: &Path, trace: &Trace) -> Result<(), iolab_sys::SysError> {
    for i in 0..trace.procs.len() {
        let p = file_of(dir, i);
        if std::fs::metadata(&p).is_ok_and(|m| m.len() == FILE_BYTES) {
            continue;
        }
        super::content::write_file(&p, FILE_BYTES, i as u64, b"")?;
    }
    Ok(())
}

/// What a replay did: every request's issue time, for checking against
/// the trace.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// Requests issued.
    pub requests: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Wall time, seconds.
    pub duration_s: f64,
    /// Each request's issue time since the start, seconds (trace order).
    pub issued_s: Vec<f64>,
    /// False when io_uring was unavailable (qemu-user, Android's SELinux
    /// policy for some domains): readahead was then read synchronously.
    pub async_readahead: bool,
}

/// How to replay.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// Honour the trace's inter-arrival delays (else S's as-fast-as-possible).
    pub delays: bool,
    /// Seed for `Rand` offsets.
    pub seed: u64,
}

/// Replays `trace` on the files in `dir` (made by [`prepare`]).
pub fn replay(dir: &Path, trace: &Trace, opts: ReplayOptions) -> std::io::Result<ReplayReport> {
    let n = trace.procs.len();
    let mut files = Vec::with_capacity(n);
    for i in 0..n {
        let p = file_of(dir, i);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&p)
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("{}: {e} (create the files with --prepare)", p.display()),
                )
            })?;
        if f.metadata()?.len() != FILE_BYTES {
            return Err(std::io::Error::other(format!(
                "{} is not {FILE_BYTES} bytes: run --prepare again",
                p.display()
            )));
        }
        files.push(f);
    }
    let t0 = Instant::now();
    // The baton: (index of the next request, when the previous was issued).
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| mpsc::channel::<Baton>()).unzip();
    let (done_tx, done_rx) = mpsc::channel::<Result<(Vec<(usize, f64)>, bool), String>>();
    std::thread::scope(|s| {
        for (i, (rx, file)) in rxs.into_iter().zip(files).enumerate() {
            let txs = txs.clone();
            let done_tx = done_tx.clone();
            s.spawn(move || {
                let r = worker(i, rx, &txs, file, trace, opts, t0);
                let _ = done_tx.send(r);
            });
        }
        let _ = txs[trace.requests[0].thread].send(Baton::Go(0, t0));
    });
    drop(done_tx);
    let mut issued = vec![0.0; trace.requests.len()];
    let mut async_readahead = true;
    for r in done_rx {
        let (times, was_async) = r.map_err(std::io::Error::other)?;
        async_readahead &= was_async;
        for (i, t) in times {
            issued[i] = t;
        }
    }
    Ok(ReplayReport {
        requests: trace.requests.len(),
        bytes: trace.bytes(),
        duration_s: t0.elapsed().as_secs_f64(),
        issued_s: issued,
        async_readahead,
    })
}

enum Baton {
    /// Issue from this request on; the previous one was issued then.
    Go(usize, Instant),
    /// The trace is done.
    Stop,
}

/// One trace process: issues its run of requests when handed the baton,
/// then hands it to the next request's thread.
fn worker(
    me: usize,
    rx: mpsc::Receiver<Baton>,
    txs: &[mpsc::Sender<Baton>],
    file: File,
    trace: &Trace,
    opts: ReplayOptions,
    t0: Instant,
) -> Result<(Vec<(usize, f64)>, bool), String> {
    let mut ring = io_uring::IoUring::new(1024).ok();
    let was_async = ring.is_some();
    let mut pending = 0usize;
    let mut offset = 0u64;
    let mut rng = SplitMix64::stream(opts.seed, &trace.procs[me]);
    // Buffers are kept to the end, as S never frees them.
    let mut buffers: Vec<Aligned> = Vec::new();
    let mut issued = Vec::new();
    let stop_all = |txs: &[mpsc::Sender<Baton>]| {
        for t in txs {
            let _ = t.send(Baton::Stop);
        }
    };
    while let Ok(Baton::Go(mut idx, mut prev)) = rx.recv() {
        loop {
            if idx == trace.requests.len() {
                drain(ring.as_mut(), &mut pending)?;
                stop_all(txs);
                return Ok((issued, was_async));
            }
            let rq = &trace.requests[idx];
            if rq.thread != me {
                let _ = txs[rq.thread].send(Baton::Go(idx, prev));
                break;
            }
            let len = rq.sectors * 512;
            // An io_uring read takes a u32 length (parsing keeps a request
            // under FILE_BYTES / 2).
            let len_u32 = u32::try_from(len).map_err(|_| {
                format!(
                    "request {idx} is {len} bytes: an io_uring read takes at most {}",
                    u32::MAX
                )
            })?;
            if rq.seq {
                if offset >= FILE_BYTES - len {
                    offset = 0;
                }
            } else {
                offset = rng.range(0, FILE_BYTES / 512 - rq.sectors - 1) * 512;
            }
            if opts.delays {
                let due = prev + Duration::from_secs_f64(rq.delta_s);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
            buffers.push(Aligned::new(cast::usize_of(len)));
            let buf = buffers
                .last_mut()
                .map(|b| b.ptr)
                .unwrap_or(std::ptr::null_mut());
            let at = Instant::now();
            issued.push((idx, at.duration_since(t0).as_secs_f64()));
            prev = at;
            let last = idx + 1 == trace.requests.len();
            if let Some(ring) = ring.as_mut().filter(|_| rq.action == "RA" && !last) {
                let sqe = io_uring::opcode::Read::new(
                    io_uring::types::Fd(file.as_raw_fd()),
                    buf,
                    len_u32,
                )
                .offset(offset)
                .build();
                // The ring holds 1024: beyond that, wait for one first.
                if pending >= 1024 {
                    reap_one(ring, &mut pending)?;
                }
                // SAFETY: the buffer lives in `buffers` until the thread
                // ends, after every completion was reaped.
                let pushed = unsafe { ring.submission().push(&sqe) };
                pushed.map_err(|e| format!("io_uring push: {e}"))?;
                ring.submit().map_err(|e| format!("io_uring submit: {e}"))?;
                pending += 1;
            } else {
                drain(ring.as_mut(), &mut pending)?;
                // SAFETY: `buf` holds `len` bytes, aligned for O_DIRECT.
                let r = unsafe {
                    libc::pread(
                        file.as_raw_fd(),
                        buf.cast(),
                        cast::usize_of(len),
                        offset as i64,
                    )
                };
                if r < 0 {
                    return Err(format!(
                        "thread {me} ({}): pread: {}",
                        trace.procs[me],
                        std::io::Error::last_os_error()
                    ));
                }
            }
            offset += len;
            idx += 1;
        }
    }
    drain(ring.as_mut(), &mut pending)?;
    Ok((issued, was_async))
}

/// Waits for every pending readahead of the thread.
fn drain(ring: Option<&mut io_uring::IoUring>, pending: &mut usize) -> Result<(), String> {
    if let Some(ring) = ring {
        while *pending > 0 {
            reap_one(ring, pending)?;
        }
    }
    Ok(())
}

/// Waits for at least one completion and reaps all there are.
fn reap_one(ring: &mut io_uring::IoUring, pending: &mut usize) -> Result<(), String> {
    ring.submit_and_wait(1)
        .map_err(|e| format!("io_uring wait: {e}"))?;
    for cqe in ring.completion() {
        if cqe.result() < 0 {
            return Err(format!(
                "readahead failed: {}",
                std::io::Error::from_raw_os_error(-cqe.result())
            ));
        }
        *pending -= 1;
    }
    Ok(())
}

/// A 4096-byte-aligned buffer (O_DIRECT).
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len.max(512), 4096)
            .unwrap_or(std::alloc::Layout::new::<[u8; 4096]>());
        // SAFETY: a non-zero size layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Aligned { ptr, layout }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const HEAD: &str = "\
xterm-31657 \t   0     8   113314048  Rand    -427336      0        RM   4.666589 START
xterm-31657  .015820     8   113248520  Rand     -65536      0        RA   4.682409   C
Xorg-925  .000066     16   113248528   Seq          0      8        R   4.682475   C
xterm-31657  .000040     8   113248536   Seq          0     16        RA   4.682515   C
";

    #[test]
    fn parses_s_traces_with_one_thread_per_process() {
        let t = Trace::parse(HEAD).unwrap();
        assert_eq!(t.procs, ["xterm-31657", "Xorg-925"]);
        assert_eq!(t.requests.len(), 4);
        assert_eq!(t.requests[2].thread, 1);
        assert_eq!(t.requests[1].delta_s, 0.015820);
        assert!(!t.requests[1].seq && t.requests[3].seq);
        assert_eq!(t.requests[1].action, "RA");
        assert_eq!(t.bytes(), (8 + 8 + 16 + 8) * 512);
    }

    #[test]
    fn a_bad_line_is_named() {
        let e = Trace::parse("xterm 0.1 8 0 Sideways 0 0 R\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("Seq nor Rand"), "{e}");
        assert!(Trace::parse("").is_err());
        assert!(Trace::parse("x nan 8 0 Seq 0 0 R\n").is_err());
    }

    #[test]
    fn replays_every_request_in_order_with_the_delays() {
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let t = Trace::parse(HEAD).unwrap();
        prepare(d.path(), &t).unwrap();
        let r = replay(
            d.path(),
            &t,
            ReplayOptions {
                delays: true,
                seed: 1,
            },
        )
        .unwrap();
        assert_eq!(r.requests, 4);
        assert_eq!(r.issued_s.len(), 4);
        // Issued in trace order, the second at least 15.8 ms after the first.
        assert!(
            r.issued_s.windows(2).all(|w| w[0] <= w[1]),
            "{:?}",
            r.issued_s
        );
        assert!(r.issued_s[1] - r.issued_s[0] >= 0.0158, "{:?}", r.issued_s);
    }
}
