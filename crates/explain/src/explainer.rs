//! The library entry: follow a task tree from now until `finish`, then
//! return its [`Attribution`].
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let guard = iolab_guard::Guard::new();
//! let held = iolab_spawn::hold(&iolab_spawn::Spec::new(&["ls".into()]))?;
//! let explainer = iolab_explain::Explainer::start(&guard, held.pid())?;
//! let done = held.release()?.wait()?;
//! let attribution = explainer.finish_with_cpu(Some(done.cpu_ns()))?;
//! iolab_sys::show!("{}", attribution.wall_ns);
//! # Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use iolab_guard::Guard;
use iolab_sys::UsageError;
use iolab_trace::{monotonic_ns, EventRequest, Kallsyms, SessionConfig, TraceError, TraceSession};

use crate::attribution::{Attribution, OnCpuCheck};
use crate::decode::Decoder;
use crate::event::state::SLEEP_MASK;
use crate::procfs;
use crate::rules::{RuleError, RuleSet};
use crate::timeline::{Initial, Tracker, TrackerOptions};

/// Why explaining failed.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The trace session failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A required tracepoint is missing.
    #[error("this kernel has no tracepoint sched/{0}: iolab explain needs the sched tracepoints (CONFIG_TRACING)")]
    MissingEvent(String),
    /// Bad input (exit code 2): a rule file that is wrong, a task to
    /// follow that does not exist.
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// /proc could not be read to find the tasks to follow.
    #[error("cannot read {path}: {source} (iolab explain lists the tasks to follow there)")]
    Proc {
        /// The directory that could not be listed.
        path: std::path::PathBuf,
        /// The OS's reason.
        source: std::io::Error,
    },
    /// The thread reading the trace panicked.
    #[error("the trace reader thread of iolab explain panicked")]
    Thread,
}

/// A rule file is the user's: whatever is wrong with it is a usage error.
impl From<RuleError> for ExplainError {
    fn from(e: RuleError) -> Self {
        ExplainError::Usage(UsageError::new(e.to_string()))
    }
}

/// How to explain.
#[derive(Debug, Clone)]
pub struct ExplainerConfig {
    /// The rule table.
    pub rules: RuleSet,
    /// Stalls at least this long are listed individually.
    pub min_stall_ns: u64,
    /// At most this many stalls are kept (the longest).
    pub max_stalls: usize,
    /// Record the waker's stack with each wakeup (names where the waker
    /// was, e.g. `blk_update_request`; one more stack per wakeup).
    pub waker_stacks: bool,
    /// Ring buffer per CPU, KiB.
    pub buffer_kib_per_cpu: u32,
    /// procfs root.
    pub proc: PathBuf,
    /// The root is a child held before exec (`iolab_spawn::Held`): the
    /// window starts when it is released, not counting its wait.
    pub held_root: bool,
    /// Follow the root's whole process tree (its threads and descendants);
    /// `false`: only the root task and what it creates from now on (e.g.
    /// iolab's own probe thread).
    pub tree: bool,
}

impl Default for ExplainerConfig {
    fn default() -> Self {
        ExplainerConfig {
            rules: RuleSet::builtin(),
            min_stall_ns: 1_000_000,
            max_stalls: 1000,
            waker_stacks: true,
            buffer_kib_per_cpu: 16 * 1024,
            proc: PathBuf::from("/proc"),
            held_root: false,
            tree: true,
        }
    }
}

/// The trace events `iolab explain` records.
pub fn events(waker_stacks: bool) -> Vec<EventRequest> {
    let waking = EventRequest::new("sched", "sched_waking");
    vec![
        EventRequest::new("sched", "sched_switch")
            .stacktrace(&format!("prev_state & {SLEEP_MASK}")),
        if waker_stacks {
            waking.stacktrace("")
        } else {
            waking
        },
        EventRequest::new("sched", "sched_wakeup_new").optional(),
        EventRequest::new("sched", "sched_process_fork"),
        EventRequest::new("sched", "sched_process_exit"),
        // A followed task's switch-in from the idle task or a kernel
        // thread is not recorded under `set_event_pid` on some kernels
        // (6.18 here: 2 of 130 were); the CPU time the kernel reports as
        // it runs dates the switch-in the trace missed.
        EventRequest::new("sched", "sched_stat_runtime").optional(),
    ]
}

struct Shared {
    tracker: Tracker,
    stats: iolab_trace::TraceStats,
}

/// A task tree being followed; [`Explainer::finish`] returns where its
/// time went.
pub struct Explainer {
    root: i32,
    /// The instance's `set_event_pid`, appended to by [`Explainer::follow_late`].
    pid_file: PathBuf,
    /// Tasks to follow from now on, for the reader thread's tracker.
    late: std::sync::mpsc::Sender<(i32, String, u64, Initial, bool)>,
    /// True once a task outside the root's tree is followed: `wait4` of
    /// the root then says nothing of all the time traced.
    followed_late: bool,
    stop: Arc<AtomicBool>,
    /// The end of the window once `finish` is called (0 before): events
    /// after it, still read while tracing stops, are not counted.
    end_at: Arc<AtomicU64>,
    thread: Option<JoinHandle<Result<Option<Shared>, ExplainError>>>,
    /// On-CPU ns per tid at the start, for the schedstat cross-check.
    schedstat: Vec<(i32, u64)>,
    proc: PathBuf,
}

impl Explainer {
    /// Follows `root_pid`, its threads, its descendants and every task
    /// they create from now on, with the default configuration.
    pub fn start(guard: &Guard, root_pid: i32) -> Result<Explainer, ExplainError> {
        Self::start_with(guard, root_pid, ExplainerConfig::default())
    }

    /// As [`Explainer::start`], configured.
    pub fn start_with(
        guard: &Guard,
        root_pid: i32,
        config: ExplainerConfig,
    ) -> Result<Explainer, ExplainError> {
        let proc = config.proc.clone();
        if procfs::state(&proc, root_pid).is_none() {
            return Err(ExplainError::Usage(UsageError::new(format!(
                "no process {root_pid}: expected the pid of a running process"
            ))));
        }
        let tids = if config.tree {
            procfs::tree_tids(&proc, root_pid)?
        } else {
            vec![root_pid]
        };
        // The reader thread exists before tracing starts: created later by
        // a followed thread (iolab tracing itself), event-fork would follow
        // it and the trace would record its own reading.
        let (tx, rx) = std::sync::mpsc::channel::<(TraceSession, Decoder, Tracker)>();
        let (late, late_rx) = std::sync::mpsc::channel::<(i32, String, u64, Initial, bool)>();
        let stop = Arc::new(AtomicBool::new(false));
        let end_at = Arc::new(AtomicU64::new(0));
        let (stop2, end_at2) = (stop.clone(), end_at.clone());
        let thread = std::thread::Builder::new()
            .name("iolab-explain".into())
            .spawn(move || match rx.recv() {
                Ok((session, decoder, tracker)) => {
                    run(session, decoder, tracker, &late_rx, &stop2, &end_at2).map(Some)
                }
                Err(_) => Ok(None),
            })
            .map_err(|e| TraceError::Io {
                path: PathBuf::from("thread"),
                source: e,
            })?;
        let kallsyms = Kallsyms::load()?;
        let session = TraceSession::start(
            guard,
            SessionConfig {
                events: events(config.waker_stacks),
                buffer_kib_per_cpu: config.buffer_kib_per_cpu,
                pids: Some(tids.clone()),
                ..SessionConfig::default()
            },
        )?;
        let start_ns = session.start_ns();
        let pid_file = session.instance_path().join("set_event_pid");
        let decoder = Decoder::new(session.formats(), kallsyms)?;
        let mut tracker = Tracker::new(
            config.rules.clone(),
            TrackerOptions {
                window_start_ns: start_ns,
                min_stall_ns: config.min_stall_ns,
                max_stalls: config.max_stalls,
            },
        );
        let lookup_proc = proc.clone();
        tracker.set_comm_lookup(Box::new(move |pid| procfs::comm(&lookup_proc, pid)));
        // The root's main thread is the start's, until an app a launcher
        // started is followed (`follow_late`).
        tracker.set_main(root_pid);
        let mut schedstat = Vec::new();
        for &tid in &tids {
            // Tasks already running: their phase now, and the stack of a
            // sleeper, so a sleep that began before tracing is named too.
            let initial = match procfs::state(&proc, tid) {
                _ if config.held_root && tid == root_pid => Initial::Held,
                // Gone (or a zombie) since the tree was listed.
                None | Some('Z' | 'X') => continue,
                Some(c @ ('S' | 'D' | 'I' | 'T' | 't')) => {
                    let state = if c == 't' { 'T' } else { c };
                    Initial::Blocked(state, procfs::stack(&proc, tid))
                }
                _ => Initial::Unknown,
            };
            let comm = procfs::comm(&proc, tid).unwrap_or_else(|| "?".into());
            tracker.follow(tid, &comm, start_ns, initial);
            if let Some(ns) = procfs::on_cpu_ns(&proc, tid) {
                schedstat.push((tid, ns));
            }
        }
        tx.send((session, decoder, tracker))
            .map_err(|_| ExplainError::Thread)?;
        Ok(Explainer {
            root: root_pid,
            pid_file,
            late,
            followed_late: false,
            stop,
            end_at,
            thread: Some(thread),
            schedstat,
            proc,
        })
    }

    /// Follows `pid` too from now on (its threads, its descendants and what
    /// they create later): a process outside the root's tree that belongs
    /// to the start, as an Android app zygote forked after `am start`.
    /// Its time before this call is not in the attribution.
    pub fn follow_late(&mut self, pid: i32) -> Result<(), ExplainError> {
        let tids = procfs::tree_tids(&self.proc, pid)?;
        let now = monotonic_ns();
        for &tid in &tids {
            let initial = match procfs::state(&self.proc, tid) {
                None | Some('Z' | 'X') => continue,
                Some(c @ ('S' | 'D' | 'I' | 'T' | 't')) => {
                    let state = if c == 't' { 'T' } else { c };
                    Initial::Blocked(state, procfs::stack(&self.proc, tid))
                }
                _ => Initial::Unknown,
            };
            let comm = procfs::comm(&self.proc, tid).unwrap_or_else(|| "?".into());
            // Followed before its events can arrive: the reader takes this
            // before it next reads the buffer, and the pid filter below is
            // what lets the events in.
            self.late
                .send((tid, comm, now, initial, tid == pid))
                .map_err(|_| ExplainError::Thread)?;
            if let Some(ns) = procfs::on_cpu_ns(&self.proc, tid) {
                self.schedstat.push((tid, ns));
            }
        }
        // Appended (no O_TRUNC): the tree already followed stays.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.pid_file)
            .map_err(|e| TraceError::Io {
                path: self.pid_file.clone(),
                source: e,
            })?;
        let list: Vec<String> = tids.iter().map(i32::to_string).collect();
        f.write_all(list.join(" ").as_bytes())
            .map_err(|e| TraceError::Io {
                path: self.pid_file.clone(),
                source: e,
            })?;
        self.followed_late = true;
        Ok(())
    }

    /// Stops following and returns the attribution, with the on-CPU time
    /// cross-checked against per-thread `schedstat` of the tasks alive at
    /// both ends.
    pub fn finish(self) -> Result<Attribution, ExplainError> {
        self.finish_with_cpu(None)
    }

    /// As [`Explainer::finish`]; with `tree_cpu_ns` (user + system time of
    /// the root and its reaped descendants, from `wait4`) the on-CPU time
    /// is checked against that instead.
    pub fn finish_with_cpu(
        mut self,
        tree_cpu_ns: Option<u64>,
    ) -> Result<Attribution, ExplainError> {
        let now = monotonic_ns();
        let end_schedstat: Vec<(i32, u64)> = self
            .schedstat
            .iter()
            .filter_map(|&(tid, _)| Some((tid, procfs::on_cpu_ns(&self.proc, tid)?)))
            .collect();
        self.end_at.store(now, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        let shared = self
            .thread
            .take()
            .ok_or(ExplainError::Thread)?
            .join()
            .map_err(|_| ExplainError::Thread)??
            .ok_or(ExplainError::Thread)?;
        let mut tracker = shared.tracker;
        tracker.add_lost(shared.stats.lost);
        // When every task exited, the window ends with the last exit.
        let end_ns = tracker.all_exited_by().unwrap_or(now).min(now);
        let mut a = tracker.into_attribution(self.root, end_ns);
        a.start_ns = a.start_ns.min(end_ns);
        a.trace.events = shared.stats.events;
        a.trace.out_of_order = shared.stats.out_of_order;
        // wait4 covers the root's tree only.
        let tree_cpu_ns = tree_cpu_ns.filter(|_| !self.followed_late);
        a.on_cpu_check = match tree_cpu_ns {
            Some(ns) => Some(OnCpuCheck::new("wait4", a.on_cpu_ns, ns)),
            None => {
                let start: std::collections::HashMap<i32, u64> =
                    self.schedstat.iter().copied().collect();
                let mut traced = 0;
                let mut measured = 0;
                for (tid, end) in &end_schedstat {
                    let Some(t) = a.tasks.iter().find(|t| t.tid == *tid) else {
                        continue;
                    };
                    traced += t.on_cpu_ns;
                    measured += end.saturating_sub(start.get(tid).copied().unwrap_or(*end));
                }
                (!end_schedstat.is_empty()).then(|| OnCpuCheck::new("schedstat", traced, measured))
            }
        };
        Ok(a)
    }
}

impl Drop for Explainer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The reader loop: poll, decode, track; on stop, finish the session.
fn run(
    mut session: TraceSession,
    mut decoder: Decoder,
    mut tracker: Tracker,
    late: &std::sync::mpsc::Receiver<(i32, String, u64, Initial, bool)>,
    stop: &AtomicBool,
    end_at: &AtomicU64,
) -> Result<Shared, ExplainError> {
    while !stop.load(Ordering::Relaxed) {
        for (tid, comm, ts, initial, main) in late.try_iter() {
            tracker.follow(tid, &comm, ts, initial);
            if main {
                tracker.set_main(tid);
            }
        }
        session.poll(&mut |r: &iolab_trace::Record| {
            let end = end_at.load(Ordering::Relaxed);
            if end == 0 || r.ts_ns <= end {
                decoder.feed(r, &mut tracker);
            }
        })?;
        std::thread::sleep(Duration::from_millis(50));
    }
    for (tid, comm, ts, initial, main) in late.try_iter() {
        tracker.follow(tid, &comm, ts, initial);
        if main {
            tracker.set_main(tid);
        }
    }
    let mut feed = |r: &iolab_trace::Record| {
        let end = end_at.load(Ordering::Relaxed);
        if end == 0 || r.ts_ns <= end {
            decoder.feed(r, &mut tracker);
        }
    };
    let stats = session.finish(&mut feed)?;
    Ok(Shared { tracker, stats })
}
