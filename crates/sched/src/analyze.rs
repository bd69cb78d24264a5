//! The state machine: time-ordered scheduler events in, per-task delay
//! samples out.
//!
//! Each task is `Unknown` until an event says otherwise, then moves
//! between `Running` (on a CPU), `Sleeping` (switched out blocked),
//! `Runnable` (woken, or switched out while runnable) and `Dead`:
//!
//! ```text
//! Sleeping --sched_wakeup--> Runnable(wakeup) --switch in--> Running
//! Running --switch out, prev_state R/R+--> Runnable(preempt)
//! Running --switch out, prev_state S/D/I..--> Sleeping
//! Running --switch out, prev_state X/Z--> Dead (the tid may be reused)
//! ```
//!
//! A sample is taken at every switch in from `Runnable`: its kind, when the
//! task became runnable and when it got the CPU. Where the trace cannot
//! tell (a task first seen switching in, a switch in without a wakeup after
//! lost events), no sample is invented: the event is counted in
//! [`Counters`] instead. This is where iolab differs from `perf sched
//! latency`, which books a zero delay for a task first seen switching in
//! (the crate docs list every difference).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde::Serialize;

use crate::event::{PrevState, SchedEvent, Tid, Timed};
use crate::task::{DelayKind, DelaySample, TaskStats};
use crate::work::{WorkSample, WorkStats};

/// Where a wakeup delay starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WakeFrom {
    /// `sched_wakeup`: the task is on a run queue (perf sched latency).
    #[default]
    Wakeup,
    /// `sched_waking`: the waker started try_to_wake_up() (Perfetto's
    /// "wakeup"); includes the remote wake-list IPI, if any.
    Waking,
}

/// Things the trace could not tell, counted instead of guessed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Events fed.
    pub events: u64,
    /// Switch ins of tasks never seen before (running or runnable when the
    /// trace started): no delay sample (perf books 0).
    pub unknown_start: u64,
    /// Switch ins of a task that was sleeping with no wakeup seen (the
    /// wakeup was lost or not recorded): no sample.
    pub missing_wakeup: u64,
    /// Wakeups of a task already runnable or running (the kernel traces
    /// those too, e.g. a task woken before it finished going to sleep):
    /// ignored, as perf does.
    pub wakeups_ignored: u64,
    /// Events contradicting the state the analysis held (e.g. a switch out
    /// of a task believed runnable): the pending delay is dropped.
    pub inconsistent: u64,
    /// Times every task's state was reset because the trace lost events.
    pub loss_resets: u64,
    /// Tasks whose tid was reused within the trace.
    pub tid_reuses: u64,
    /// Switch outs of a task that the CPU's previous switch had not
    /// switched in: the kernel did not trace that switch in (or it was
    /// lost). The task's pending delay is dropped. Some kernels do not
    /// trace every switch out of the idle task (this VM's does not on
    /// CPU 1; perf sees the same gaps).
    pub untraced_switches: u64,
}

/// The result: every task and work function with their raw samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Analysis {
    /// Every task seen (one entry per task life: a reused tid is a new
    /// entry), in order of first appearance. Idle (`swapper`, tid 0) is
    /// not a task here, as in perf.
    pub tasks: Vec<TaskStats>,
    /// Work item latency per work function (queue → start of execution),
    /// when workqueue events were recorded.
    pub works: Vec<WorkStats>,
    /// What could not be measured.
    pub counters: Counters,
    /// First and last event time (CLOCK_MONOTONIC ns).
    pub first_ns: u64,
    /// Last event time.
    pub last_ns: u64,
    /// Events the kernel dropped (ring buffer full), from the trace.
    pub lost_events: u64,
    /// Where wakeup delays start.
    pub wake_from: WakeFrom,
}

#[derive(Debug, Clone, Copy)]
enum RunState {
    Unknown,
    Running {
        cpu: u32,
        since: u64,
        /// Index of the sample taken at this switch in, until a work item
        /// is attributed to it.
        unattributed: Option<usize>,
    },
    Sleeping {
        waking: u64,
        migrated: bool,
    },
    Runnable {
        kind: DelayKind,
        ready: u64,
        waking: u64,
        migrated: bool,
        kernel_preempt: bool,
    },
    Dead,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    idx: usize,
    state: RunState,
}

/// Integer keys (tids, addresses) need no DoS-resistant hashing; a
/// multiplicative hash keeps the per-event lookup cheap.
#[derive(Default)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(*b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_i32(&mut self, i: i32) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (i ^ (i >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// Feeds events in time order; [`Analyzer::finish`] returns the
/// [`Analysis`].
#[derive(Default)]
pub struct Analyzer {
    from: WakeFrom,
    tasks: Vec<TaskStats>,
    live: IntMap<Tid, Slot>,
    /// First event time per CPU: a task found running when the trace
    /// starts has run at least since then.
    cpu_first: Vec<Option<u64>>,
    /// The task the last switch on each CPU switched in.
    cpu_curr: Vec<Option<Tid>>,
    /// Pending work items: address → (queued at, workqueue name index).
    queued: IntMap<u64, (u64, u32)>,
    workqueues: Vec<String>,
    /// (function, workqueue index) → index in `work_stats`.
    works: HashMap<(u64, u32), usize, BuildHasherDefault<IntHasher>>,
    work_stats: Vec<WorkStats>,
    counters: Counters,
    first_ns: u64,
    last_ns: u64,
}

impl Analyzer {
    /// An analyzer measuring wakeup delays from `from`.
    pub fn new(from: WakeFrom) -> Analyzer {
        Analyzer {
            from,
            ..Analyzer::default()
        }
    }

    /// Feeds one event; events must come in time order.
    pub fn feed(&mut self, t: &Timed<'_>) {
        let ts = t.ts_ns;
        self.counters.events += 1;
        if self.counters.events == 1 {
            self.first_ns = ts;
        }
        self.last_ns = ts;
        let cpu = t.cpu as usize;
        if self.cpu_first.len() <= cpu {
            self.cpu_first.resize(cpu + 1, None);
            self.cpu_curr.resize(cpu + 1, None);
        }
        self.cpu_first[cpu].get_or_insert(ts);
        match t.event {
            SchedEvent::Waking { tid, comm } => self.waking(tid, comm, ts),
            SchedEvent::Wakeup { tid, comm, new } => self.wakeup(tid, comm, new, ts),
            SchedEvent::Switch {
                prev_tid,
                prev_comm,
                prev_state,
                next_tid,
                next_comm,
            } => {
                let untraced = self.cpu_curr[cpu].is_some_and(|c| c != prev_tid);
                if untraced {
                    self.counters.untraced_switches += 1;
                }
                self.switch_out(prev_tid, prev_comm, prev_state, t.cpu, ts, untraced);
                self.switch_in(next_tid, next_comm, t.cpu, ts);
                self.cpu_curr[cpu] = Some(next_tid);
            }
            SchedEvent::Migrate { tid, .. } => self.migrate(tid),
            SchedEvent::Fork {
                child_tid,
                child_comm,
                ..
            } => self.fork(child_tid, child_comm, ts),
            SchedEvent::Exec { tid, old_tid } => self.exec(tid, old_tid, ts),
            SchedEvent::Exit { tid, comm } => {
                if let Some((idx, _)) = self.lookup(tid, comm, ts) {
                    self.tasks[idx].exited = true;
                }
            }
            SchedEvent::WorkQueued {
                work, workqueue, ..
            } => {
                let wq = match self.workqueues.iter().position(|w| w == workqueue) {
                    Some(i) => i,
                    None => {
                        self.workqueues.push(workqueue.to_string());
                        self.workqueues.len() - 1
                    }
                };
                // Past u32::MAX distinct queues (no kernel has that many)
                // the queue is unknown: u32::MAX, as for unqueued work.
                self.queued
                    .insert(work, (ts, u32::try_from(wq).unwrap_or(u32::MAX)));
            }
            SchedEvent::WorkStart { work, function } => {
                self.work_start(work, function, t.current, t.cpu, ts)
            }
        }
    }

    /// The trace lost events (on any CPU) before the next one: any state
    /// may be stale, so every task goes back to `Unknown` and pending
    /// delays are dropped rather than overstated.
    pub fn lost(&mut self) {
        self.counters.loss_resets += 1;
        for s in self.live.values_mut() {
            if !matches!(s.state, RunState::Dead) {
                s.state = RunState::Unknown;
            }
        }
        self.queued.clear();
    }

    /// Ends the analysis.
    pub fn finish(self, lost_events: u64) -> Analysis {
        Analysis {
            tasks: self.tasks,
            works: self.work_stats,
            counters: self.counters,
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            lost_events,
            wake_from: self.from,
        }
    }

    /// The live slot of `tid`, made on first sight; `None` for the idle
    /// task. Also refreshes the name and last-seen time.
    fn slot(&mut self, tid: Tid, comm: &str, ts: u64) -> Option<&mut Slot> {
        if tid <= 0 {
            return None;
        }
        let tasks = &mut self.tasks;
        let s = self.live.entry(tid).or_insert_with(|| {
            tasks.push(TaskStats::new(tid, comm, ts));
            Slot {
                idx: tasks.len() - 1,
                state: RunState::Unknown,
            }
        });
        let task = &mut tasks[s.idx];
        task.set_comm(comm);
        task.last_ns = ts;
        Some(s)
    }

    /// Starts a new life for `tid` (fork, or a dead tid seen again).
    fn new_life(&mut self, tid: Tid, comm: &str, ts: u64, state: RunState) {
        if self.live.contains_key(&tid) {
            self.counters.tid_reuses += 1;
        }
        self.tasks.push(TaskStats::new(tid, comm, ts));
        self.live.insert(
            tid,
            Slot {
                idx: self.tasks.len() - 1,
                state,
            },
        );
    }

    /// `(index, state)` of `tid`'s live slot, made on first sight; `None`
    /// for the idle task.
    fn lookup(&mut self, tid: Tid, comm: &str, ts: u64) -> Option<(usize, RunState)> {
        self.slot(tid, comm, ts).map(|s| (s.idx, s.state))
    }

    fn set_state(&mut self, tid: Tid, state: RunState) {
        if let Some(s) = self.live.get_mut(&tid) {
            s.state = state;
        }
    }

    fn waking(&mut self, tid: Tid, comm: &str, ts: u64) {
        let Some((_, prior)) = self.lookup(tid, comm, ts) else {
            return;
        };
        let next = match prior {
            RunState::Unknown => RunState::Sleeping {
                waking: ts,
                migrated: false,
            },
            RunState::Sleeping { migrated, .. } if self.from == WakeFrom::Waking => {
                RunState::Runnable {
                    kind: DelayKind::Wakeup,
                    ready: ts,
                    waking: ts,
                    migrated,
                    kernel_preempt: false,
                }
            }
            RunState::Sleeping { migrated, .. } => RunState::Sleeping {
                waking: ts,
                migrated,
            },
            other => other,
        };
        self.set_state(tid, next);
    }

    fn wakeup(&mut self, tid: Tid, comm: &str, new: bool, ts: u64) {
        if new && matches!(self.live.get(&tid), Some(s) if matches!(s.state, RunState::Dead)) {
            // A new task on a dead task's tid whose fork was not recorded.
            self.new_life(tid, comm, ts, RunState::Unknown);
        }
        let Some((_, prior)) = self.lookup(tid, comm, ts) else {
            return;
        };
        let next = match prior {
            RunState::Unknown => RunState::Runnable {
                kind: DelayKind::Wakeup,
                ready: ts,
                waking: 0,
                migrated: false,
                kernel_preempt: false,
            },
            RunState::Sleeping { waking, migrated } => RunState::Runnable {
                kind: DelayKind::Wakeup,
                ready: if self.from == WakeFrom::Waking && waking != 0 {
                    waking
                } else {
                    ts
                },
                waking,
                migrated,
                kernel_preempt: false,
            },
            // Woken while still on a run queue or a CPU: nothing to wait
            // for (or, from sched_waking, the wakeup was already counted).
            RunState::Runnable { .. } | RunState::Running { .. } => {
                if self.from == WakeFrom::Wakeup {
                    self.counters.wakeups_ignored += 1;
                }
                return;
            }
            RunState::Dead => {
                self.counters.inconsistent += 1;
                return;
            }
        };
        self.set_state(tid, next);
    }

    /// `untraced`: the switch that put `tid` on this CPU was not traced
    /// (already counted), so neither its run time nor its pending delay
    /// is known.
    fn switch_out(
        &mut self,
        tid: Tid,
        comm: &str,
        state: PrevState,
        cpu: u32,
        ts: u64,
        untraced: bool,
    ) {
        let Some((idx, prior)) = self.lookup(tid, comm, ts) else {
            return;
        };
        let ran_since = match prior {
            RunState::Running { cpu: c, since, .. } if c == cpu => Some(since),
            RunState::Unknown if !untraced => self.cpu_first[cpu as usize],
            RunState::Dead | RunState::Unknown => None,
            _ if untraced => None,
            _ => {
                self.counters.inconsistent += 1;
                None
            }
        };
        if let Some(since) = ran_since {
            self.tasks[idx].runtime_ns += ts.saturating_sub(since);
        }
        let next = if state.is_dead() {
            RunState::Dead
        } else if state.is_runnable() {
            RunState::Runnable {
                kind: DelayKind::Preempt,
                ready: ts,
                waking: 0,
                migrated: false,
                kernel_preempt: state.is_kernel_preempt(),
            }
        } else {
            RunState::Sleeping {
                waking: 0,
                migrated: false,
            }
        };
        self.set_state(tid, next);
    }

    fn switch_in(&mut self, tid: Tid, comm: &str, cpu: u32, ts: u64) {
        if tid > 0 && matches!(self.live.get(&tid), Some(s) if matches!(s.state, RunState::Dead)) {
            self.new_life(tid, comm, ts, RunState::Unknown);
        }
        let Some((idx, prior)) = self.lookup(tid, comm, ts) else {
            return;
        };
        let task = &mut self.tasks[idx];
        task.switches += 1;
        let mut unattributed = None;
        match prior {
            RunState::Runnable {
                kind,
                ready,
                waking,
                migrated,
                kernel_preempt,
            } if ready <= ts => {
                task.samples.push(DelaySample {
                    kind,
                    ready_ns: ready,
                    waking_ns: waking,
                    start_ns: ts,
                    cpu,
                    migrated,
                    kernel_preempt,
                    work: None,
                });
                unattributed = Some(task.samples.len() - 1);
            }
            RunState::Unknown => self.counters.unknown_start += 1,
            RunState::Sleeping { .. } => self.counters.missing_wakeup += 1,
            RunState::Runnable { .. } | RunState::Running { .. } | RunState::Dead => {
                self.counters.inconsistent += 1
            }
        }
        self.set_state(
            tid,
            RunState::Running {
                cpu,
                since: ts,
                unattributed,
            },
        );
    }

    fn migrate(&mut self, tid: Tid) {
        if let Some(s) = self.live.get_mut(&tid) {
            match &mut s.state {
                RunState::Runnable { migrated, .. } | RunState::Sleeping { migrated, .. } => {
                    *migrated = true
                }
                _ => {}
            }
        }
    }

    fn fork(&mut self, child: Tid, comm: &str, ts: u64) {
        if child <= 0 {
            return;
        }
        // Created, not yet runnable: sched_wakeup_new follows.
        self.new_life(
            child,
            comm,
            ts,
            RunState::Sleeping {
                waking: 0,
                migrated: false,
            },
        );
    }

    fn exec(&mut self, tid: Tid, old_tid: Tid, ts: u64) {
        if tid == old_tid || tid <= 0 {
            return;
        }
        // A non-leader thread exec'd and took over the leader's tid: the
        // old tid is gone, the leader's tid continues as this thread.
        let Some(old) = self.live.remove(&old_tid) else {
            return;
        };
        let comm = self.tasks[old.idx].comm.clone();
        self.tasks[old.idx].exited = true;
        self.new_life(tid, &comm, ts, old.state);
    }

    fn work_start(&mut self, work: u64, function: u64, current: Tid, cpu: u32, ts: u64) {
        let queued = self.queued.remove(&work);
        let wq = queued.map_or(u32::MAX, |q| q.1);
        let n = self.work_stats.len();
        let i = *self.works.entry((function, wq)).or_insert(n);
        if i == n {
            let name = self.workqueues.get(wq as usize).map_or("", String::as_str);
            self.work_stats.push(WorkStats::new(function, name));
        }
        if let Some((queued_ns, _)) = queued {
            self.work_stats[i].samples.push(WorkSample {
                queued_ns,
                start_ns: ts,
                tid: current,
                cpu,
            });
        }
        if let Some(s) = self.live.get_mut(&current) {
            if let RunState::Running { unattributed, .. } = &mut s.state {
                if let Some(k) = unattributed.take() {
                    // An index past u32 (never: one per function and
                    // queue) leaves the sample unattributed.
                    self.tasks[s.idx].samples[k].work = u32::try_from(i).ok();
                }
            }
        }
    }
}
