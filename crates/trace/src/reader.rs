//! The reader thread: drains every CPU's `trace_pipe_raw` into a sink.
//!
//! One thread per session sweeps all CPUs (non-blocking reads, one page per
//! read(2)), hands the pages to its sink, then sleeps: for a fixed interval,
//! or (`wake_on_event`, for a watcher that must act on an event at once)
//! in poll(2) on every CPU's pipe until the kernel has any event for it
//! (the instance's `buffer_percent` is 0), the interval being only a
//! bound. A thread per session
//! rather than per CPU: a sweep of an idle CPU costs one EAGAIN read, and
//! the merge needs a single "every CPU read up to time T" point anyway.
//! Reading in a thread of its own keeps the kernel buffers drained even
//! when the consumer is busy between polls.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::page::PageLayout;
use crate::TraceError;

/// Pages one sweep reads from one CPU at most, so a CPU flooding its
/// buffer cannot starve the others.
const MAX_PAGES_PER_SWEEP: usize = 1024;
/// The last sweep (tracing off) empties the buffers; the bound only
/// guards against a writer that did not stop.
const MAX_PAGES_LAST_SWEEP: usize = 1 << 20;

/// Where the reader thread puts what it reads.
pub(crate) trait PageSink: Send + 'static {
    /// A page from CPU index `i`, trimmed to its used bytes.
    fn page(&mut self, i: usize, page: Vec<u8>) -> Result<(), TraceError>;
    /// A sweep that started at trace-clock time `t0` has read every CPU.
    fn swept(&mut self, t0: u64) -> Result<(), TraceError>;
}

/// CLOCK_MONOTONIC now, in ns: the instance's `mono` trace clock.
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

pub(crate) struct CpuFile {
    file: File,
    path: std::path::PathBuf,
}

impl CpuFile {
    pub(crate) fn open(instance: &Path, cpu: u32) -> Result<CpuFile, TraceError> {
        let path = instance.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| TraceError::io(&path, e))?;
        Ok(CpuFile { file, path })
    }

    /// One page, or `None` when the buffer is empty.
    fn read_page(&mut self, layout: &PageLayout) -> Result<Option<Vec<u8>>, TraceError> {
        let mut buf = vec![0u8; layout.page_size];
        loop {
            match self.file.read(&mut buf) {
                Ok(0) => return Ok(None),
                Ok(n) => {
                    buf.truncate(n);
                    let used = layout.used_len(&buf);
                    buf.truncate(used);
                    return Ok(Some(buf));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(TraceError::io(&self.path, e)),
            }
        }
    }
}

/// A running reader thread.
pub(crate) struct Reader<S: PageSink> {
    stop: Arc<AtomicBool>,
    /// Wakes a thread sleeping in poll(2) (`wake_on_event`).
    waker: Option<Arc<OwnedFd>>,
    handle: Option<JoinHandle<Result<S, TraceError>>>,
}

/// Sleeps in poll(2) until any CPU's pipe has an event, the waker is
/// written, or `interval` passes.
fn wait_for_events(files: &[CpuFile], waker: &OwnedFd, interval: Duration) {
    use rustix::event::{PollFd, PollFlags};
    let mut fds: Vec<PollFd<'_>> = files
        .iter()
        .map(|f| PollFd::new(&f.file, PollFlags::IN))
        .chain(std::iter::once(PollFd::new(waker, PollFlags::IN)))
        .collect();
    let timeout = rustix::time::Timespec {
        // Saturating: `as` would wrap an interval past i64::MAX seconds
        // to a negative timeout, which poll refuses at once.
        tv_sec: rustix::time::Secs::try_from(interval.as_secs()).unwrap_or(rustix::time::Secs::MAX),
        tv_nsec: interval.subsec_nanos().into(),
    };
    // EINTR or an error: the caller sweeps anyway, bounded by the interval.
    let _ = rustix::event::poll(&mut fds, Some(&timeout));
}

impl<S: PageSink> Reader<S> {
    pub(crate) fn spawn(
        mut files: Vec<CpuFile>,
        layout: PageLayout,
        interval: Duration,
        wake_on_event: bool,
        mut sink: S,
    ) -> Result<Reader<S>, TraceError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let waker = if wake_on_event {
            let fd = rustix::event::eventfd(
                0,
                rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
            )
            .map_err(|e| TraceError::io("eventfd", e.into()))?;
            Some(Arc::new(fd))
        } else {
            None
        };
        let thread_waker = waker.clone();
        let handle = std::thread::Builder::new()
            .name("iolab-trace".into())
            .spawn(move || {
                let mut woke_early = false;
                loop {
                    // Read the flag before the sweep: after stop, one more
                    // complete sweep collects what is left.
                    let last = flag.load(Ordering::Acquire);
                    let t0 = monotonic_ns();
                    let mut busy = false;
                    let mut read = 0usize;
                    for (i, f) in files.iter_mut().enumerate() {
                        let mut n = 0;
                        while let Some(p) = f.read_page(&layout)? {
                            sink.page(i, p)?;
                            n += 1;
                            read += 1;
                            if n >= MAX_PAGES_PER_SWEEP {
                                busy = true;
                                if !last || n >= MAX_PAGES_LAST_SWEEP {
                                    break;
                                }
                            }
                        }
                    }
                    sink.swept(t0)?;
                    if last {
                        return Ok(sink);
                    }
                    match (&thread_waker, busy) {
                        (_, true) => {}
                        (Some(w), false) => {
                            if read == 0 && woke_early {
                                // poll(2) said ready and the sweep found
                                // nothing: a short nap keeps a pipe that
                                // stays readable without yielding a page
                                // from spinning (no latency for a real
                                // event, which the sweep would have read).
                                std::thread::park_timeout(Duration::from_micros(200));
                            }
                            let at = std::time::Instant::now();
                            wait_for_events(&files, w, interval);
                            woke_early = at.elapsed() < interval;
                        }
                        // `stop` unparks: finishing does not wait out the nap.
                        (None, false) => std::thread::park_timeout(interval),
                    }
                }
            })
            .map_err(|e| TraceError::io("reader thread", e))?;
        Ok(Reader {
            stop,
            waker,
            handle: Some(handle),
        })
    }

    /// True when the thread has ended on its own (a read or write error).
    pub(crate) fn failed(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| h.is_finished())
    }

    /// Stops the thread after one last full sweep and returns its sink.
    pub(crate) fn stop(mut self) -> Result<S, TraceError> {
        self.join()
    }

    fn join(&mut self) -> Result<S, TraceError> {
        self.stop.store(true, Ordering::Release);
        if let Some(w) = &self.waker {
            // Out of poll(2) at once (an eventfd write of 1 cannot fail
            // short of overflow).
            let _ = rustix::io::write(w.as_ref(), &1u64.to_ne_bytes());
        }
        match self.handle.take() {
            Some(h) => {
                h.thread().unpark();
                h.join().map_err(|_| {
                    TraceError::io("reader thread", std::io::Error::other("panicked"))
                })?
            }
            None => Err(TraceError::io(
                "reader thread",
                std::io::Error::other("already stopped"),
            )),
        }
    }
}

impl<S: PageSink> Drop for Reader<S> {
    fn drop(&mut self) {
        if self.handle.is_some() {
            let _ = self.join();
        }
    }
}
