//! From the tracker's running totals to an [`Attribution`].

use std::collections::HashMap;

use crate::attribution::{
    Attribution, CauseTime, MainThread, StackTime, Stall, TaskTime, WakerTime,
};
use crate::rules::Kind;
use crate::stacks::syscall_of;
use crate::timeline::Tracker;

impl Tracker {
    /// Closes every phase at `end_ns` and summarizes. `root_pid` names the
    /// tree; `start_ns` is the window start.
    pub fn into_attribution(mut self, root_pid: i32, end_ns: u64) -> Attribution {
        self.close(end_ns);
        let main = self.main.take();
        let start_ns = self.opts.window_start_ns;
        let ncause = self.rules.rules.len() + 1;
        let kind = |t: &Tracker, i: usize| t.rules.kind(t.cause_of_index(i));

        let mut tasks: Vec<_> = self.tasks.values().collect();
        tasks.sort_by_key(|t| t.seq);
        let mut cause_blocked = vec![0u64; ncause];
        let mut task_times = Vec::new();
        for t in &tasks {
            let mut causes: Vec<(String, u64)> = Vec::new();
            let mut idle = 0;
            for (i, ns) in t.blocked.iter().enumerate().filter(|(_, ns)| **ns > 0) {
                cause_blocked[i] += ns;
                if kind(&self, i) == Kind::Idle {
                    idle += ns;
                }
                causes.push((self.rules.name(self.cause_of_index(i)).to_string(), *ns));
            }
            causes.sort_by_key(|c| std::cmp::Reverse(c.1));
            let end = t.end_ns.unwrap_or(end_ns);
            task_times.push(TaskTime {
                tid: t.tid,
                comm: t.comm.clone(),
                parent: t.parent,
                start_ns: t.start_ns,
                end_ns: end,
                exited: t.exited,
                on_cpu_ns: t.on_cpu_ns,
                runnable_ns: t.runnable_ns,
                preempted_ns: t.preempted_ns,
                blocked_ns: t.blocked.iter().sum(),
                idle_ns: idle,
                d_io_ns: t.d_io_ns,
                d_other_ns: t.d_other_ns,
                untraced_ns: t.untraced_ns,
                switches: t.switches,
                sleeps: t.sleeps,
                causes,
            });
        }
        let blocked_ns: u64 = cause_blocked.iter().sum();
        let idle_ns: u64 = (0..ncause)
            .filter(|&i| kind(&self, i) == Kind::Idle)
            .map(|i| cause_blocked[i])
            .sum();

        // Per cause: stalls, runnable delay, max, wakers.
        let mut count = vec![0u64; ncause];
        let mut runnable = vec![0u64; ncause];
        for ((ci, _), agg) in &self.by_stack {
            count[*ci] += agg.count;
            runnable[*ci] += agg.runnable_ns;
        }
        let mut max = vec![0u64; ncause];
        for s in &self.stalls {
            let ci = self.cause_index(s.stall.cause);
            max[ci] = max[ci].max(s.blocked_ns);
        }
        let mut wakers: HashMap<usize, Vec<WakerTime>> = HashMap::new();
        for ((ci, w), agg) in &self.by_waker {
            wakers.entry(*ci).or_default().push(WakerTime {
                waker: w.to_string(),
                count: agg.count,
                blocked_ns: agg.blocked_ns,
            });
        }
        let mut causes: Vec<CauseTime> = (0..ncause)
            .filter(|&i| cause_blocked[i] > 0 || count[i] > 0)
            .map(|i| {
                let k = kind(&self, i);
                let mut w = wakers.remove(&i).unwrap_or_default();
                w.sort_by(|a, b| b.blocked_ns.cmp(&a.blocked_ns).then(a.waker.cmp(&b.waker)));
                w.truncate(5);
                let stall_total = blocked_ns - idle_ns;
                CauseTime {
                    cause: self.rules.name(self.cause_of_index(i)).to_string(),
                    kind: k,
                    blocked_ns: cause_blocked[i],
                    runnable_ns: runnable[i],
                    share: ratio(cause_blocked[i], blocked_ns),
                    stall_share: (k != Kind::Idle).then(|| ratio(cause_blocked[i], stall_total)),
                    stalls: count[i],
                    max_ns: max[i],
                    wakers: w,
                }
            })
            .collect();
        causes.sort_by(|a, b| b.blocked_ns.cmp(&a.blocked_ns).then(a.cause.cmp(&b.cause)));

        let mut stacks: Vec<StackTime> = self
            .by_stack
            .iter()
            .map(|((ci, sid), agg)| StackTime {
                cause: self.rules.name(self.cause_of_index(*ci)).to_string(),
                frames: sid.map_or_else(Vec::new, |id| {
                    self.stacks.get(id).iter().map(|f| f.to_string()).collect()
                }),
                count: agg.count,
                blocked_ns: agg.blocked_ns,
                runnable_ns: agg.runnable_ns,
            })
            .collect();
        stacks.sort_by(|a, b| {
            b.blocked_ns
                .cmp(&a.blocked_ns)
                .then_with(|| a.frames.cmp(&b.frames))
        });

        let comm_of: HashMap<i32, &str> = tasks.iter().map(|t| (t.tid, t.comm.as_str())).collect();
        let stalls: Vec<Stall> = self
            .stalls
            .iter()
            .map(|s| {
                let frames = s.stall.stack.map_or(&[][..], |id| self.stacks.get(id));
                let site = self.rules.site(frames).map(str::to_string);
                let lock = site
                    .as_deref()
                    .and_then(|f| self.rules.lock_name(s.stall.cause, f))
                    .map(str::to_string);
                let wake = s.stall.wake.as_ref();
                Stall {
                    ts_ns: s.stall.start_ns,
                    tid: s.tid,
                    comm: comm_of.get(&s.tid).copied().unwrap_or("").to_string(),
                    cause: self.rules.name(s.stall.cause).to_string(),
                    state: s.stall.state.to_string(),
                    blocked_ns: s.blocked_ns,
                    runnable_ns: s.runnable_ns,
                    duration_ns: s.blocked_ns + s.runnable_ns,
                    waker: wake.and_then(|w| w.waker.as_deref()).map(str::to_string),
                    waker_site: wake.and_then(|w| w.site.as_deref()).map(str::to_string),
                    site,
                    lock,
                    syscall: syscall_of(frames),
                    open: s.open,
                    stack: frames.iter().map(|f| f.to_string()).collect(),
                }
            })
            .collect();

        let sum = |f: fn(&TaskTime) -> u64| task_times.iter().map(f).sum::<u64>();
        Attribution {
            root_pid,
            start_ns,
            end_ns,
            wall_ns: end_ns.saturating_sub(start_ns),
            task_ns: sum(|t| t.end_ns.saturating_sub(t.start_ns)),
            on_cpu_ns: sum(|t| t.on_cpu_ns),
            runnable_ns: sum(|t| t.runnable_ns),
            preempted_ns: sum(|t| t.preempted_ns),
            blocked_ns,
            idle_ns,
            untraced_ns: sum(|t| t.untraced_ns),
            causes,
            stacks,
            stalls,
            stalls_over_min: self.stalls_over_min,
            min_stall_ns: self.opts.min_stall_ns,
            tasks: task_times,
            trace: self.counts.clone(),
            on_cpu_check: None,
            rules: self.rules.source.clone(),
            main_thread: main.map(|(tid, spans)| MainThread {
                tid,
                comm: comm_of.get(&tid).copied().unwrap_or("").to_string(),
                spans,
            }),
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
