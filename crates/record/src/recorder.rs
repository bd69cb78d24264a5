//! The recording itself: a trace session of the page-cache insertions (and
//! exec events, for names) of the chosen tasks, read by a thread that also
//! samples the tasks' `/proc` entries for the paths they use.
//!
//! Following a command from its first instruction: `iolab_spawn::hold`
//! forks it stopped just before exec (blocked on a pipe), the session starts with
//! its pid in `set_event_pid` and `event-fork` on (so every task it forks
//! later is followed), then the child is released. Tasks the command does
//! not fork are not followed: a daemon it asks to do work (Android's
//! `am start` asks system_server, which asks zygote to fork the app),
//! io_uring's io-wq workers (created by `create_io_thread`, which bypasses
//! the fork tracepoint event-fork hooks; rarely the ones adding pages:
//! buffered io_uring reads insert them from the submitting task, and a
//! 16 MiB fio `ioengine=io_uring` random read was recorded in full here),
//! and kernel threads (khugepaged collapsing file pages into huge pages, a
//! loop device's worker reading its backing file). For those, record every
//! task with a device filter.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use iolab_guard::Guard;
use iolab_trace::{EventRequest, Record, SessionConfig, TraceSession, TraceStats};

use crate::candidates::{exec_path, Candidates};
use crate::event::{DevNo, PageDecoder, EVENT};
use crate::pages::PageLog;
use crate::RecordError;

/// How often the reader thread drains the trace buffers and samples the
/// tasks' `/proc` entries.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(25);

/// Most exec'd filenames kept as candidate names (a busy system recorded
/// with every task execs a lot).
const MAX_NAMED: usize = 10_000;

/// Which tasks and devices to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOptions {
    /// Follow these tasks and every task they fork from now on; `None`:
    /// every task on the machine.
    pub pids: Option<Vec<i32>>,
    /// Only pages of files on these filesystems (kernel filter on
    /// `s_dev`); empty: every filesystem.
    pub devices: Vec<DevNo>,
    /// Ring buffer per CPU, KiB.
    pub buffer_kib_per_cpu: u32,
    /// Where `/proc` is (tests point it at fixtures).
    pub proc_root: PathBuf,
    /// Run the reader thread under SCHED_IDLE: it gets a CPU only when
    /// nothing else wants one, so recording beside a timed start takes
    /// as little of its CPU as it can (the ring buffer holds the events
    /// meanwhile).
    pub idle_reader: bool,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            pids: None,
            devices: Vec::new(),
            buffer_kib_per_cpu: 8 * 1024,
            proc_root: PathBuf::from("/proc"),
            idle_reader: false,
        }
    }
}

/// What a finished recording gathered, before names are resolved.
#[derive(Debug)]
pub struct Raw {
    /// Pages per file.
    pub log: PageLog,
    /// Paths seen.
    pub candidates: Candidates,
    /// Trace counters (lost events!).
    pub stats: TraceStats,
    /// CLOCK_MONOTONIC ns when tracing started and stopped.
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
}

/// A running recording; [`Recorder::finish`] stops it.
pub struct Recorder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Raw, RecordError>>>,
    start_ns: u64,
    /// The reader's thread id once it runs under SCHED_IDLE (0 before).
    idle_tid: Arc<AtomicI32>,
}

impl Recorder {
    /// Starts tracing (the session is set up when this returns: events of
    /// the chosen tasks from now on are recorded). `candidates` may already
    /// hold names (the command's arguments).
    pub fn start(
        guard: &Guard,
        opts: &RecordOptions,
        candidates: Candidates,
    ) -> Result<Recorder, RecordError> {
        let mut page_event = EventRequest::new(EVENT.0, EVENT.1);
        if !opts.devices.is_empty() {
            let f: Vec<String> = opts
                .devices
                .iter()
                .map(|d| format!("s_dev == {}", d.to_kernel()))
                .collect();
            page_event = page_event.filter(&f.join(" || "));
        }
        let config = SessionConfig {
            events: vec![
                page_event,
                EventRequest::new("sched", "sched_process_exec").optional(),
            ],
            buffer_kib_per_cpu: opts.buffer_kib_per_cpu,
            pids: opts.pids.clone(),
            read_interval: SAMPLE_INTERVAL,
            wake_on_event: false,
        };
        let session = TraceSession::start(guard, config)?;
        let decoder = session
            .format(EVENT.0, EVENT.1)
            .and_then(PageDecoder::new)
            .ok_or_else(|| {
                RecordError::Unsupported(format!(
                    "this kernel's {}/{} event lacks i_ino, index or a 32-bit s_dev",
                    EVENT.0, EVENT.1
                ))
            })?;
        let start_ns = session.start_ns();
        let stop = Arc::new(AtomicBool::new(false));
        let mut worker = Worker {
            decoder,
            log: PageLog::new(),
            candidates,
            live: opts.pids.iter().flatten().copied().collect(),
            dead: BTreeSet::new(),
            proc_root: opts.proc_root.clone(),
        };
        let flag = stop.clone();
        let idle = opts.idle_reader;
        let idle_tid = Arc::new(AtomicI32::new(0));
        let published = idle_tid.clone();
        let thread = std::thread::Builder::new()
            .name("iolab-record".into())
            .spawn(move || {
                if idle {
                    set_policy(0, libc::SCHED_IDLE);
                    // finish() puts the reader back to SCHED_OTHER; if it
                    // came before the tid was published, the reader does
                    // (SeqCst both ways: one of the two sees the other).
                    published.store(
                        rustix::thread::gettid().as_raw_nonzero().get(),
                        Ordering::SeqCst,
                    );
                    if flag.load(Ordering::SeqCst) {
                        set_policy(0, libc::SCHED_OTHER);
                    }
                }
                let raw = worker.run(session, &flag, start_ns);
                // Gone soon: its tid may be another task's later.
                published.store(0, Ordering::SeqCst);
                raw
            })
            .map_err(|e| RecordError::Io {
                path: PathBuf::from("(thread)"),
                source: e,
            })?;
        Ok(Recorder {
            stop,
            thread: Some(thread),
            start_ns,
            idle_tid,
        })
    }

    /// Tells the reader to stop, at the normal policy: what the ring
    /// buffer still holds is drained once the start is over. Under
    /// SCHED_IDLE, beside a load that keeps every CPU busy (the guest's
    /// one vCPU under 1r1w), the drain got a few ms of CPU a second and
    /// took minutes (seen: 530 s).
    fn stop_reader(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let tid = self.idle_tid.load(Ordering::SeqCst);
        if tid > 0 {
            set_policy(tid, libc::SCHED_OTHER);
        }
    }

    /// CLOCK_MONOTONIC ns when tracing started.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Stops tracing and returns what was gathered.
    pub fn finish(mut self) -> Result<Raw, RecordError> {
        self.stop_reader();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => Err(RecordError::Unsupported(
                "the recording thread panicked".into(),
            )),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // Dropped without finish (an error elsewhere, Ctrl-C): stop the
        // thread so the session (and its tracefs instance) goes away now.
        if let Some(t) = self.thread.take() {
            self.stop_reader();
            let _ = t.join();
        }
    }
}

struct Worker {
    decoder: PageDecoder,
    log: PageLog,
    candidates: Candidates,
    /// Tasks to sample.
    live: BTreeSet<i32>,
    /// Tasks found gone.
    dead: BTreeSet<i32>,
    proc_root: PathBuf,
}

impl Worker {
    fn run(
        &mut self,
        mut session: TraceSession,
        stop: &AtomicBool,
        start_ns: u64,
    ) -> Result<Raw, RecordError> {
        while !stop.load(Ordering::Relaxed) {
            session.poll(&mut |r| self.record(r))?;
            self.sample();
            std::thread::sleep(SAMPLE_INTERVAL);
        }
        let stats = session.finish(&mut |r| self.record(r))?;
        self.sample();
        Ok(Raw {
            log: std::mem::take(&mut self.log),
            candidates: std::mem::take(&mut self.candidates),
            stats,
            start_ns,
            end_ns: iolab_trace::monotonic_ns(),
        })
    }

    fn record(&mut self, r: &Record<'_>) {
        if let Some(e) = self.decoder.decode(r) {
            if !self.dead.contains(&e.pid) {
                self.live.insert(e.pid);
            }
            self.log.add(&e);
        } else if r.is("sched", "sched_process_exec") {
            if self.candidates.named.len() < MAX_NAMED {
                if let Some(p) = r
                    .str("filename")
                    .and_then(|f| exec_path(&self.proc_root, r.pid, f))
                {
                    self.candidates.add_named(p);
                }
            }
            self.live.insert(r.pid);
        }
    }

    fn sample(&mut self) {
        let pids: Vec<i32> = self.live.iter().copied().collect();
        for pid in pids {
            if !self.proc_root.join(pid.to_string()).exists() {
                self.live.remove(&pid);
                self.dead.insert(pid);
                continue;
            }
            self.candidates.sample(&self.proc_root, pid);
        }
    }
}

/// Sets thread `tid`'s policy (0: the calling thread), priority 0. A
/// failure leaves it as it was: the reader is then only slower.
fn set_policy(tid: i32, policy: libc::c_int) {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a thread id of this process and a valid parameter; no
    // memory is handed over.
    unsafe { libc::sched_setscheduler(tid, policy, &param) };
}
