//! `--sched`: how long the target's tasks waited for a CPU during each run
//! (`perf sched latency`'s delays, split into wakeup and preemption, as
//! `iolab sched` measures them), from the `sched_*` tracepoints of the
//! target's process tree (followed from before its exec). Stored as the
//! run's `sched` artifact: every task with every raw delay sample; its
//! headline (the run's `extra.observed.sched`) is the pooled delay
//! statistics of all the target's tasks.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use iolab_results::{ArtifactDoc, ArtifactKind};
use iolab_sched::decode::Decoder;
use iolab_sched::event::SchedEvent;
use iolab_sched::{Analysis, Analyzer, DelaySummary, RecordOptions, TaskStats, WakeFrom};
use iolab_sys::UsageError;
use iolab_trace::TraceSession;
use serde::Serialize;
use serde_json::json;

use super::{Collected, Collector, Entry, Flag, Needs, RunEnd, Scope};
use crate::CollectError;

/// The registry entry.
pub const ENTRY: Entry = Entry {
    name: "sched",
    flag: Flag::Switch("sched"),
    help: "measure how long the target's tasks waited for a CPU during every start (wakeup and preemption delays, as `iolab sched`); each run stores every task's delays (`sched`) and the table gains their mean, p99 and max",
    needs: Needs::Target,
    root: true,
    start,
};

/// What the reader thread returns: the analysis and the target's tasks.
type Read = Result<(Analysis, HashSet<i32>), CollectError>;

struct Sched {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Read>,
    /// The instance's `set_event_pid`, appended to when a late process
    /// (an app zygote forked) is followed.
    pid_file: std::path::PathBuf,
    /// Tasks followed late, for the reader to count as the target's.
    late: Arc<Late>,
}

/// Tasks followed late, handed to the reader thread; `pending` is what the
/// reader checks per record (a load, not a lock, on its hot path).
#[derive(Default)]
struct Late {
    pending: AtomicBool,
    tids: std::sync::Mutex<Vec<i32>>,
}

impl Late {
    fn add(&self, tids: &[i32]) {
        self.tids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(tids);
        self.pending.store(true, Ordering::Release);
    }

    /// Moves the tasks added since the last call into `tree`.
    fn take_into(&self, tree: &mut HashSet<i32>) {
        if self.pending.swap(false, Ordering::Acquire) {
            tree.extend(
                self.tids
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .drain(..),
            );
        }
    }
}

fn start(scope: &Scope<'_>) -> Result<Box<dyn Collector>, CollectError> {
    let pid = scope
        .target
        .ok_or_else(|| UsageError::new("--sched needs a target to follow"))?;
    let mut config = iolab_sched::session_config(&RecordOptions {
        workqueue: false,
        buffer_kib_per_cpu: scope.tuning.trace_buffer_kib,
    });
    // The target's tree only: the kernel also keeps a switch whose other
    // side is followed, and a wakeup of a followed task by anyone.
    config.pids = Some(vec![pid]);
    let session = TraceSession::start(scope.guard, config).map_err(trace_error)?;
    let decoder = Decoder::new(session.formats());
    let from = if decoder.knows(session.formats(), "sched", "sched_wakeup") {
        WakeFrom::Wakeup
    } else {
        WakeFrom::Waking
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let pid_file = session.instance_path().join("set_event_pid");
    let late = Arc::new(Late::default());
    let late_reader = late.clone();
    let thread = std::thread::Builder::new()
        .name("iolab-sched".into())
        .spawn(move || read(session, &decoder, from, pid, &flag, &late_reader))
        .map_err(|e| CollectError::collector("sched", e))?;
    Ok(Box::new(Sched {
        stop,
        thread,
        pid_file,
        late,
    }))
}

/// Every thread of `pid` now: the pid alone once it is gone (the trace
/// follows what it forks from then on); its task directory unreadable for
/// another reason is the error, not a tree silently cut to one thread.
fn threads_of(pid: i32) -> Result<Vec<i32>, CollectError> {
    let proc = std::path::Path::new("/proc");
    let mut tids = iolab_sys::process::tids(proc, pid)
        .map_err(|e| iolab_sys::SysError::io(proc.join(pid.to_string()).join("task"), e))?;
    if tids.is_empty() {
        tids.push(pid);
    }
    Ok(tids)
}

/// Reads until told to stop: every event to the analyzer, and the tasks
/// the target forks into its tree.
fn read(
    mut session: TraceSession,
    decoder: &Decoder,
    from: WakeFrom,
    root: i32,
    stop: &AtomicBool,
    late: &Late,
) -> Read {
    let mut analyzer = Analyzer::new(from);
    let mut tree: HashSet<i32> = HashSet::from([root]);
    let mut feed = |r: &iolab_trace::Record| {
        // Tasks followed late join before their forks are seen.
        late.take_into(&mut tree);
        if let Some(t) = decoder.decode(r) {
            if let SchedEvent::Fork {
                parent_tid,
                child_tid,
                ..
            } = t.event
            {
                if tree.contains(&parent_tid) {
                    tree.insert(child_tid);
                }
            }
            analyzer.feed(&t);
        }
    };
    while !stop.load(Ordering::Relaxed) {
        session.poll(&mut feed).map_err(trace_error)?;
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = session.finish(&mut feed).map_err(trace_error)?;
    // Tasks followed late are the target's too (their forks, traced by
    // event-fork, were added as they came).
    late.take_into(&mut tree);
    Ok((analyzer.finish(stats.lost), tree))
}

fn trace_error(e: iolab_trace::TraceError) -> CollectError {
    CollectError::collector("sched", e)
}

/// The `sched` artifact: the target's tasks and what could not be measured.
#[derive(Serialize)]
struct SchedDoc<'a> {
    /// Every task of the target's tree, with every raw delay sample.
    tasks: Vec<&'a TaskStats>,
    /// Pooled statistics of their wakeup and preemption delays.
    wakeup: DelaySummary,
    /// Preemption delays.
    preempt: DelaySummary,
    /// Both kinds together (perf's "Avg delay" pools them).
    all: DelaySummary,
    /// Events the kernel dropped; their delays are missing, not guessed.
    lost_events: u64,
    /// The analyzer's counters (switches it did not see, unknown starts).
    counters: &'a iolab_sched::Counters,
}

impl Collector for Sched {
    /// An app zygote forked: its threads join the pid filter (appended,
    /// so the tree already followed stays) and count as the target's;
    /// what they fork from now on follows by `event-fork`.
    fn follow(&mut self, pid: i32) -> Result<bool, CollectError> {
        let tids = threads_of(pid)?;
        self.late.add(&tids);
        use std::io::Write;
        let list: Vec<String> = tids.iter().map(i32::to_string).collect();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&self.pid_file)
            .and_then(|mut f| f.write_all(list.join(" ").as_bytes()))
            .map_err(|e| CollectError::collector("sched", e))?;
        Ok(true)
    }

    fn stop(self: Box<Self>, _: &RunEnd) -> Result<Collected, CollectError> {
        self.stop.store(true, Ordering::Relaxed);
        let (analysis, tree) = self.thread.join().map_err(|_| {
            // A bug of ours, not the user's: no `UsageError`.
            CollectError::collector("sched", std::io::Error::other("its reader thread panicked"))
        })??;
        let tasks: Vec<&TaskStats> = analysis
            .tasks
            .iter()
            .filter(|t| tree.contains(&t.tid))
            .collect();
        let spans = |kind: Option<iolab_sched::DelayKind>| {
            tasks
                .iter()
                .flat_map(|t| t.samples.iter())
                .filter(move |s| kind.is_none_or(|k| s.kind == k))
                .map(|s| (s.ready_ns, s.start_ns))
                .collect::<Vec<_>>()
        };
        let doc = SchedDoc {
            wakeup: DelaySummary::of(spans(Some(iolab_sched::DelayKind::Wakeup))),
            preempt: DelaySummary::of(spans(Some(iolab_sched::DelayKind::Preempt))),
            all: DelaySummary::of(spans(None)),
            lost_events: analysis.lost_events,
            counters: &analysis.counters,
            tasks,
        };
        let us = |ns: Option<f64>| ns.map(|v| v / 1e3);
        let summary = json!({
            "headline": {
                "tasks": doc.tasks.len(),
                "delays": doc.all.count,
                "delay_avg_us": us(doc.all.avg_ns),
                "delay_p99_us": us(doc.all.p99_ns.map(|v| v as f64)),
                "delay_max_us": us(doc.all.max_ns.map(|v| v as f64)),
            },
            "wakeup_total_ms": doc.wakeup.total_ns as f64 / 1e6,
            "preempt_total_ms": doc.preempt.total_ns as f64 / 1e6,
            "lost_events": doc.lost_events,
        });
        Ok(Collected {
            docs: vec![ArtifactDoc::of(ArtifactKind::Sched, &doc)
                .map_err(CollectError::serialise("the scheduling delays"))?],
            summary: Some(summary),
            // A target's view: no one-shot command runs it.
            ..Collected::default()
        })
    }
}
