//! The stall state machine: scheduler events in, per-task time and stalls
//! out.
//!
//! Each followed task is in one phase at a time, and every nanosecond of
//! its life in the window goes to exactly one bucket:
//!
//! ```text
//!  Running ──switch-out R/R+──▶ Runnable ──switch-in──▶ Running   on-CPU / runnable
//!  Running ──switch-out S/D──▶ Blocked ──waking──▶ Runnable(stall) ──switch-in──▶ Running
//!                               blocked (by cause)       runnable delay
//! ```
//!
//! A stall is one sleep: switch-out (with the stack that names its cause)
//! → wakeup (`sched_waking`, in the waker's context) → switch-in. Events
//! that contradict the phase (a lost event in between) close the interval
//! as untraced rather than guessing.

use std::collections::HashMap;
use std::sync::Arc;

use crate::attribution::{StateSpan, ThreadState, TraceCounts};
use crate::event::{Frame, Leaving, SchedEvent, WakerContext};
use crate::rules::{CauseId, RuleSet};
use crate::stacks::{is_io_wait, StackId, Stacks};
use crate::wakers::{waker_group, waker_site};

/// How a task starts being followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Initial {
    /// Phase unknown until its first event.
    Unknown,
    /// Runnable or running (from /proc: `R`).
    Runnable,
    /// Asleep with this state letter and (from /proc/<tid>/stack) stack.
    Blocked(char, Option<Vec<Frame>>),
    /// Held before exec (`iolab_spawn::Held`): its life, and the window, start
    /// at the wakeup that releases it.
    Held,
}

/// Tracker settings.
#[derive(Debug, Clone)]
pub struct TrackerOptions {
    /// Time before this is not counted (events before it still set phases).
    pub window_start_ns: u64,
    /// Stalls at least this long (switch-out to switch-in) are listed.
    pub min_stall_ns: u64,
    /// At most this many stalls are kept (the longest).
    pub max_stalls: usize,
}

/// A wakeup seen for a sleeping task.
#[derive(Debug, Clone)]
pub(crate) struct Wake {
    pub(crate) ts_ns: u64,
    pub(crate) waker: Option<Arc<str>>,
    pub(crate) site: Option<Frame>,
}

#[derive(Debug, Clone)]
pub(crate) struct OpenStall {
    pub(crate) start_ns: u64,
    pub(crate) state: char,
    pub(crate) stack: Option<StackId>,
    pub(crate) cause: CauseId,
    pub(crate) wake: Option<Wake>,
    /// The task slept in `io_schedule*` (the kernel's `in_iowait`).
    pub(crate) io_wait: bool,
}

#[derive(Debug, Clone)]
enum Phase {
    Held,
    Unknown(u64),
    Running(u64),
    /// Since; the stall this runnable time ends, if it follows a wakeup.
    Runnable(u64, Option<OpenStall>),
    Blocked(u64, OpenStall),
    Dead,
}

impl Phase {
    /// When the current phase began, for phases that are timed.
    fn since(&self) -> Option<u64> {
        match self {
            Phase::Unknown(s)
            | Phase::Running(s)
            | Phase::Runnable(s, _)
            | Phase::Blocked(s, _) => Some(*s),
            Phase::Held | Phase::Dead => None,
        }
    }
}

/// One followed task's running totals.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub(crate) tid: i32,
    pub(crate) comm: String,
    pub(crate) parent: Option<i32>,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: Option<u64>,
    /// It exited (exit event or final switch-out) in the window.
    pub(crate) exited: bool,
    phase: Phase,
    pub(crate) on_cpu_ns: u64,
    pub(crate) runnable_ns: u64,
    pub(crate) preempted_ns: u64,
    pub(crate) untraced_ns: u64,
    /// Blocked time by cause index ([`Tracker::cause_index`]).
    pub(crate) blocked: Vec<u64>,
    /// Blocked time in uninterruptible sleep waiting for I/O.
    pub(crate) d_io_ns: u64,
    /// Blocked time in uninterruptible sleep for anything else.
    pub(crate) d_other_ns: u64,
    pub(crate) switches: u64,
    pub(crate) sleeps: u64,
    /// A wakeup seen while the task was still running (it had set its
    /// sleep state, the waker came before the switch-out was recorded).
    pending: Option<Wake>,
    /// While runnable: when the kernel's runtime says it was switched in
    /// (`sched_stat_runtime`), used only if its switch-out then comes
    /// without a recorded switch-in.
    pending_run: Option<u64>,
    /// Order of first appearance.
    pub(crate) seq: usize,
}

/// A finished stall.
#[derive(Debug, Clone)]
pub(crate) struct DoneStall {
    pub(crate) tid: i32,
    pub(crate) stall: OpenStall,
    pub(crate) blocked_ns: u64,
    pub(crate) runnable_ns: u64,
    pub(crate) open: bool,
}

/// Totals per (cause, stack).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StackAgg {
    pub(crate) count: u64,
    pub(crate) blocked_ns: u64,
    pub(crate) runnable_ns: u64,
}

/// Totals per (cause, waker).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WakerAgg {
    pub(crate) count: u64,
    pub(crate) blocked_ns: u64,
}

/// Comm of a task that is not followed (a waker), e.g. from /proc.
pub type CommLookup = Box<dyn FnMut(i32) -> Option<String> + Send>;

/// The state machine over all followed tasks.
pub struct Tracker {
    pub(crate) rules: RuleSet,
    pub(crate) opts: TrackerOptions,
    pub(crate) tasks: HashMap<i32, Task>,
    pub(crate) stacks: Stacks,
    causes_of: HashMap<StackId, CauseId>,
    pub(crate) by_stack: HashMap<(usize, Option<StackId>), StackAgg>,
    pub(crate) by_waker: HashMap<(usize, Arc<str>), WakerAgg>,
    pub(crate) stalls: Vec<DoneStall>,
    pub(crate) stalls_over_min: u64,
    pub(crate) counts: TraceCounts,
    waker_names: HashMap<i32, Arc<str>>,
    lookup: Option<CommLookup>,
    /// The main thread, and every interval of its life by state.
    pub(crate) main: Option<(i32, Vec<StateSpan>)>,
}

impl Tracker {
    /// A tracker with no task followed yet.
    pub fn new(rules: RuleSet, opts: TrackerOptions) -> Tracker {
        Tracker {
            rules,
            opts,
            tasks: HashMap::new(),
            stacks: Stacks::default(),
            causes_of: HashMap::new(),
            by_stack: HashMap::new(),
            by_waker: HashMap::new(),
            stalls: Vec::new(),
            stalls_over_min: 0,
            counts: TraceCounts::default(),
            waker_names: HashMap::new(),
            lookup: None,
            main: None,
        }
    }

    /// Records the state intervals of `tid` (the start's main thread)
    /// from now on, instead of any earlier one's.
    pub fn set_main(&mut self, tid: i32) {
        if self.main.as_ref().is_none_or(|(m, _)| *m != tid) {
            self.main = Some((tid, Vec::new()));
        }
    }

    /// Notes that `tid` was in `state` from `from` to `to` (inside the
    /// window), when it is the main thread.
    fn mark(&mut self, tid: i32, state: ThreadState, from: u64, to: u64) {
        let from = from.max(self.opts.window_start_ns);
        if let Some((m, spans)) = &mut self.main {
            if *m == tid && to > from {
                match spans.last_mut() {
                    // One sleep's blocked part ends where its runnable
                    // part begins: adjacent equal states merge.
                    Some(last) if last.2 == state && last.1 == from => last.1 = to,
                    _ => spans.push(StateSpan(from, to, state)),
                }
            }
        }
    }

    /// Sets how wakers that are not followed get their names.
    pub fn set_comm_lookup(&mut self, lookup: CommLookup) {
        self.lookup = Some(lookup);
    }

    /// Starts following `tid` at `ts_ns`.
    pub fn follow(&mut self, tid: i32, comm: &str, ts_ns: u64, initial: Initial) {
        let phase = match initial {
            Initial::Unknown => Phase::Unknown(ts_ns),
            Initial::Held => Phase::Held,
            Initial::Runnable => Phase::Runnable(ts_ns, None),
            Initial::Blocked(state, frames) => {
                let stall = self.open_stall(ts_ns, state, frames);
                Phase::Blocked(ts_ns, stall)
            }
        };
        let seq = self.tasks.len();
        self.tasks.insert(
            tid,
            Task {
                tid,
                comm: comm.to_string(),
                parent: None,
                start_ns: ts_ns.max(self.opts.window_start_ns),
                end_ns: None,
                exited: false,
                phase,
                on_cpu_ns: 0,
                runnable_ns: 0,
                preempted_ns: 0,
                untraced_ns: 0,
                blocked: Vec::new(),
                d_io_ns: 0,
                d_other_ns: 0,
                switches: 0,
                sleeps: 0,
                pending: None,
                pending_run: None,
                seq,
            },
        );
    }

    /// True when `tid` is followed and alive.
    pub fn follows(&self, tid: i32) -> bool {
        self.tasks
            .get(&tid)
            .is_some_and(|t| !matches!(t.phase, Phase::Dead))
    }

    /// The last exit time when every followed task has exited.
    pub fn all_exited_by(&self) -> Option<u64> {
        let mut last = None;
        for t in self.tasks.values() {
            last = Some(last.unwrap_or(0).max(t.end_ns?));
        }
        last
    }

    /// Tids followed so far (alive or not).
    pub fn tids(&self) -> Vec<i32> {
        self.tasks.keys().copied().collect()
    }

    /// Counts lost events (they are reported; phases that contradict the
    /// next events are then closed as untraced).
    pub fn add_lost(&mut self, lost: u64) {
        self.counts.lost += lost;
    }

    /// Counts delivered events.
    pub fn add_events(&mut self, n: u64) {
        self.counts.events += n;
    }

    /// Index of a cause in per-cause vectors: rules in order, `other` last.
    pub(crate) fn cause_index(&self, id: CauseId) -> usize {
        match self.rules.canonical(id) {
            CauseId::Rule(i) => i,
            CauseId::Other => self.rules.rules.len(),
        }
    }

    /// The cause id of an index.
    pub(crate) fn cause_of_index(&self, i: usize) -> CauseId {
        if i < self.rules.rules.len() {
            CauseId::Rule(i)
        } else {
            CauseId::Other
        }
    }

    fn span(&self, from: u64, to: u64) -> u64 {
        to.saturating_sub(from.max(self.opts.window_start_ns))
    }

    fn open_stall(&mut self, ts_ns: u64, state: char, frames: Option<Vec<Frame>>) -> OpenStall {
        let io_wait = frames.as_deref().is_some_and(is_io_wait);
        let stack = frames.and_then(|f| self.stacks.intern(f));
        let cause = match stack {
            Some(id) => match self.causes_of.get(&id) {
                Some(c) => *c,
                None => {
                    let c = self.rules.classify(self.stacks.get(id));
                    self.causes_of.insert(id, c);
                    c
                }
            },
            None => {
                self.counts.missing_stacks += 1;
                CauseId::Other
            }
        };
        OpenStall {
            start_ns: ts_ns,
            state,
            stack,
            cause,
            wake: None,
            io_wait,
        }
    }

    /// Applies one event.
    pub fn event(&mut self, ev: SchedEvent<'_>) {
        match ev {
            SchedEvent::Switch {
                ts_ns,
                prev_pid,
                prev_comm,
                prev_state,
                next_pid,
                next_comm,
                stack,
            } => {
                if self.follows(prev_pid) {
                    self.switch_out(ts_ns, prev_pid, prev_comm, prev_state, stack);
                }
                if self.follows(next_pid) {
                    self.switch_in(ts_ns, next_pid, next_comm);
                }
            }
            SchedEvent::Waking {
                ts_ns,
                pid,
                waker_pid,
                context,
                waker_stack,
            } => {
                if self.follows(pid) {
                    let waker = self.waker_name(waker_pid, context);
                    let site = waker_stack.as_deref().and_then(waker_site);
                    self.waking(
                        ts_ns,
                        pid,
                        Wake {
                            ts_ns,
                            waker: Some(waker),
                            site,
                        },
                    );
                }
            }
            SchedEvent::WakeupNew { ts_ns, pid } => {
                if let Some(t) = self.tasks.get_mut(&pid) {
                    if let Phase::Unknown(_) = t.phase {
                        t.phase = Phase::Runnable(ts_ns, None);
                    }
                }
            }
            SchedEvent::Fork {
                ts_ns,
                parent_pid,
                child_pid,
                child_comm,
            } => {
                if self.follows(parent_pid) && !self.tasks.contains_key(&child_pid) {
                    self.follow(child_pid, child_comm, ts_ns, Initial::Runnable);
                    if let Some(t) = self.tasks.get_mut(&child_pid) {
                        t.parent = Some(parent_pid);
                    }
                }
            }
            SchedEvent::Runtime {
                ts_ns,
                pid,
                runtime_ns,
            } => self.ran(ts_ns, pid, runtime_ns),
            SchedEvent::Exit { ts_ns, pid } => {
                if let Some(t) = self.tasks.get_mut(&pid) {
                    t.end_ns.get_or_insert(ts_ns);
                    t.exited = true;
                }
            }
        }
    }

    fn waker_name(&mut self, pid: i32, context: WakerContext) -> Arc<str> {
        match context {
            WakerContext::SoftIrq => return "[softirq]".into(),
            WakerContext::HardIrq => return "[hardirq]".into(),
            WakerContext::Nmi => return "[nmi]".into(),
            WakerContext::Task => {}
        }
        if pid == 0 {
            return "[idle]".into();
        }
        if let Some(t) = self.tasks.get(&pid) {
            return format!("{}:{pid}", t.comm).into();
        }
        if let Some(n) = self.waker_names.get(&pid) {
            return n.clone();
        }
        let comm = self.lookup.as_mut().and_then(|l| l(pid));
        let name: Arc<str> = match comm {
            Some(c) => format!("{c}:{pid}").into(),
            None => format!("pid {pid}").into(),
        };
        self.waker_names.insert(pid, name.clone());
        name
    }

    fn switch_out(
        &mut self,
        ts: u64,
        tid: i32,
        comm: &str,
        prev_state: u64,
        stack: Option<Vec<Frame>>,
    ) {
        let leaving = Leaving::from_state(prev_state);
        let Some(mut t) = self.tasks.remove(&tid) else {
            return;
        };
        if t.comm != comm {
            t.comm = comm.to_string();
        }
        match std::mem::replace(&mut t.phase, Phase::Dead) {
            Phase::Running(since) => {
                t.on_cpu_ns += self.span(since, ts);
                self.mark(tid, ThreadState::Running, since, ts);
            }
            // Runnable, then a switch-out with no switch-in recorded in
            // between, but the kernel said when it ran: runnable up to
            // then, on a CPU after.
            Phase::Runnable(since, stall) if t.pending_run.is_some() => {
                let at = t.pending_run.take().unwrap_or(since).clamp(since, ts);
                let d = self.span(since, at);
                t.runnable_ns += d;
                self.mark(tid, ThreadState::Runnable, since, at);
                match stall {
                    Some(s) => self.finish_stall(&mut t, s, at, false),
                    None => t.preempted_ns += d,
                }
                self.inferred_run(&mut t, at, ts);
            }
            Phase::Unknown(since) => {
                t.untraced_ns += self.span(since, ts);
                self.mark(tid, ThreadState::Untraced, since, ts);
            }
            Phase::Held => {}
            Phase::Runnable(since, stall) => {
                self.counts.inconsistent += 1;
                t.untraced_ns += self.span(since, ts);
                self.mark(tid, ThreadState::Untraced, since, ts);
                if let Some(s) = stall {
                    self.finish_stall(&mut t, s, ts, false);
                }
            }
            Phase::Blocked(since, stall) => {
                self.counts.inconsistent += 1;
                t.untraced_ns += self.span(since, ts);
                self.mark(tid, ThreadState::Untraced, since, ts);
                self.finish_stall(&mut t, stall, ts, false);
            }
            Phase::Dead => {}
        }
        t.switches += 1;
        t.pending_run = None;
        let pending = t.pending.take();
        t.phase = match leaving {
            Leaving::Runnable => Phase::Runnable(ts, None),
            Leaving::Dead => {
                t.end_ns = Some(ts);
                t.exited = true;
                Phase::Dead
            }
            Leaving::Sleep(state) => {
                t.sleeps += 1;
                let mut stall = self.open_stall(ts, state, stack);
                // A wakeup that raced the switch-out: kept as a fallback;
                // a later waking overrides it.
                stall.wake = pending.map(|w| Wake { ts_ns: ts, ..w });
                Phase::Blocked(ts, stall)
            }
        };
        self.tasks.insert(tid, t);
    }

    fn switch_in(&mut self, ts: u64, tid: i32, comm: &str) {
        let Some(mut t) = self.tasks.remove(&tid) else {
            return;
        };
        t.pending_run = None;
        if t.comm != comm {
            t.comm = comm.to_string();
        }
        match std::mem::replace(&mut t.phase, Phase::Dead) {
            Phase::Runnable(since, stall) => {
                let d = self.span(since, ts);
                t.runnable_ns += d;
                self.mark(tid, ThreadState::Runnable, since, ts);
                match stall {
                    Some(s) => self.finish_stall(&mut t, s, ts, false),
                    None => t.preempted_ns += d,
                }
            }
            Phase::Blocked(_, stall) => {
                // No wakeup seen (lost, or it raced the switch-out).
                if stall.wake.is_none() {
                    self.counts.missing_wakeups += 1;
                }
                let mut stall = stall;
                let wake_ts = stall.wake.as_ref().map_or(ts, |w| w.ts_ns).min(ts);
                self.add_blocked(&mut t, &stall, wake_ts);
                t.runnable_ns += self.span(wake_ts, ts);
                self.mark(tid, ThreadState::Runnable, wake_ts, ts);
                if let Some(w) = stall.wake.as_mut() {
                    w.ts_ns = wake_ts;
                } else {
                    stall.wake = Some(Wake {
                        ts_ns: ts,
                        waker: None,
                        site: None,
                    });
                }
                self.finish_stall(&mut t, stall, ts, false);
            }
            Phase::Running(since) => {
                self.counts.inconsistent += 1;
                t.untraced_ns += self.span(since, ts);
                self.mark(tid, ThreadState::Untraced, since, ts);
            }
            Phase::Unknown(since) => {
                t.untraced_ns += self.span(since, ts);
                self.mark(tid, ThreadState::Untraced, since, ts);
            }
            Phase::Held | Phase::Dead => {}
        }
        t.phase = Phase::Running(ts);
        self.tasks.insert(tid, t);
    }

    /// The task ran for `runtime` up to `ts`: when the trace has it
    /// runnable (or unknown), its switch-in was not recorded, and it is
    /// dated `runtime` before now (never before the runnable phase began).
    fn ran(&mut self, ts: u64, tid: i32, runtime: u64) {
        if let Some(t) = self.tasks.get_mut(&tid) {
            if let Phase::Runnable(since, _) = t.phase {
                // The first report since it became runnable dates the
                // switch-in best (later ones count from a tick).
                t.pending_run
                    .get_or_insert(ts.saturating_sub(runtime).max(since));
            }
        }
    }

    /// On a CPU from `at` (a switch-in dated by the kernel's runtime) to
    /// `to`: counted apart, as an estimate.
    fn inferred_run(&mut self, t: &mut Task, at: u64, to: u64) {
        let d = self.span(at, to);
        t.on_cpu_ns += d;
        self.counts.inferred_on_cpu_ns += d;
        self.counts.inferred_switch_ins += 1;
        self.mark(t.tid, ThreadState::Running, at, to);
    }

    fn waking(&mut self, ts: u64, tid: i32, wake: Wake) {
        let Some(mut t) = self.tasks.remove(&tid) else {
            return;
        };
        t.pending_run = None;
        t.phase = match std::mem::replace(&mut t.phase, Phase::Dead) {
            Phase::Blocked(_, mut stall) => {
                self.add_blocked(&mut t, &stall, ts);
                stall.wake = Some(wake);
                Phase::Runnable(ts, Some(stall))
            }
            Phase::Running(since) => {
                t.pending = Some(wake);
                Phase::Running(since)
            }
            Phase::Unknown(since) => {
                t.untraced_ns += self.span(since, ts);
                self.mark(tid, ThreadState::Untraced, since, ts);
                Phase::Runnable(ts, None)
            }
            Phase::Held => {
                self.opts.window_start_ns = ts;
                t.start_ns = ts;
                Phase::Runnable(ts, None)
            }
            other => other,
        };
        self.tasks.insert(tid, t);
    }

    fn add_blocked(&mut self, t: &mut Task, stall: &OpenStall, until: u64) {
        let i = self.cause_index(stall.cause);
        if t.blocked.len() <= i {
            t.blocked.resize(i + 1, 0);
        }
        let d = self.span(stall.start_ns, until);
        t.blocked[i] += d;
        let state = match (stall.state, stall.io_wait) {
            ('D', true) => {
                t.d_io_ns += d;
                ThreadState::UninterruptibleIo
            }
            ('D', false) => {
                t.d_other_ns += d;
                ThreadState::UninterruptibleOther
            }
            _ => ThreadState::Sleeping,
        };
        self.mark(t.tid, state, stall.start_ns, until);
    }

    /// Records a stall whose blocked part was already added to the task.
    fn finish_stall(&mut self, t: &mut Task, stall: OpenStall, end: u64, open: bool) {
        let wake_ts = stall.wake.as_ref().map_or(end, |w| w.ts_ns);
        let blocked = self.span(stall.start_ns, wake_ts);
        let runnable = if open { 0 } else { self.span(wake_ts, end) };
        let ci = self.cause_index(stall.cause);
        let agg = self.by_stack.entry((ci, stall.stack)).or_default();
        agg.count += 1;
        agg.blocked_ns += blocked;
        agg.runnable_ns += runnable;
        if let Some(w) = stall.wake.as_ref().and_then(|w| w.waker.clone()) {
            let wa = self.by_waker.entry((ci, waker_group(&w))).or_default();
            wa.count += 1;
            wa.blocked_ns += blocked;
        }
        if blocked + runnable >= self.opts.min_stall_ns && end > self.opts.window_start_ns {
            self.stalls_over_min += 1;
            self.stalls.push(DoneStall {
                tid: t.tid,
                stall,
                blocked_ns: blocked,
                runnable_ns: runnable,
                open,
            });
            if self.stalls.len() > self.opts.max_stalls.saturating_mul(2).max(64) {
                self.trim_stalls();
            }
        }
    }

    pub(crate) fn trim_stalls(&mut self) {
        self.stalls
            .sort_by_key(|s| std::cmp::Reverse(s.blocked_ns + s.runnable_ns));
        self.stalls.truncate(self.opts.max_stalls);
    }

    /// Closes every phase at `end_ns` (tasks still asleep get an open
    /// stall up to the end).
    pub fn close(&mut self, end_ns: u64) {
        let tids: Vec<i32> = self.tasks.keys().copied().collect();
        for tid in tids {
            let Some(mut t) = self.tasks.remove(&tid) else {
                continue;
            };
            let mut end = t.end_ns.unwrap_or(end_ns).min(end_ns).max(t.start_ns);
            // An exit event with no dead switch-out after it (the trace
            // lost it): the task was seen on and off a CPU after its exit
            // event, so its life ends no earlier than its last phase began;
            // when after that it died is not known, and is not invented.
            if let Some(since) = t.phase.since() {
                end = end.max(since.min(end_ns));
            }
            match std::mem::replace(&mut t.phase, Phase::Dead) {
                Phase::Running(since) => {
                    t.on_cpu_ns += self.span(since, end);
                    self.mark(tid, ThreadState::Running, since, end);
                }
                Phase::Runnable(since, stall) => {
                    let d = self.span(since, end);
                    t.runnable_ns += d;
                    self.mark(tid, ThreadState::Runnable, since, end);
                    match stall {
                        Some(s) => self.finish_stall(&mut t, s, end, false),
                        None => t.preempted_ns += d,
                    }
                }
                Phase::Blocked(_, stall) => {
                    self.add_blocked(&mut t, &stall, end);
                    self.finish_stall(&mut t, stall, end, true);
                }
                Phase::Unknown(since) => {
                    t.untraced_ns += self.span(since, end);
                    self.mark(tid, ThreadState::Untraced, since, end);
                }
                Phase::Held | Phase::Dead => {}
            }
            t.end_ns = Some(end);
            self.tasks.insert(tid, t);
        }
        self.trim_stalls();
    }
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
