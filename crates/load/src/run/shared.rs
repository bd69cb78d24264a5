//! What the clones of a load share across jobs: a job's stop flag and how
//! many of its clones ended (for `wait_for`, `exitall`), its I/O count
//! (for `flow`), and its running totals (for `steadystate`). Updated with
//! relaxed atomics; only jobs that use flow or steadystate pay for the
//! per-I/O additions.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::job::extra::ExitWhat;
use crate::run::plan::PlannedJob;

/// One job's shared state.
#[derive(Debug)]
pub struct JobShared {
    /// The job's name.
    pub name: String,
    /// Stonewall group.
    pub group: usize,
    /// Clones.
    pub numjobs: u32,
    /// Set to stop every clone of the job.
    pub stop: AtomicBool,
    /// Clones that ended.
    pub ended: AtomicU32,
    /// `flow` weight (0 = none) and `flow_id`.
    pub flow: (i64, u32),
    /// I/Os completed, for flow control.
    pub flow_ios: AtomicU64,
    /// Completed I/Os, bytes and latency sum, for steadystate.
    pub ss: [AtomicU64; 3],
}

/// The shared state of every job of a load, by job index.
#[derive(Debug)]
pub struct Shared {
    /// Per job.
    pub jobs: Vec<JobShared>,
    /// Every clone's random seed, in clone number order (`dedupe_global`
    /// repeats other clones' buffers).
    pub seeds: std::sync::Arc<Vec<u64>>,
}

impl Shared {
    /// State for the planned jobs.
    pub fn new(jobs: &[PlannedJob]) -> Shared {
        let seeds = jobs
            .iter()
            .enumerate()
            .flat_map(|(i, pj)| {
                (0..pj.job.numjobs).map(move |c| crate::run::clone::spec::seed_of(&pj.job, i, c))
            })
            .collect();
        Shared {
            seeds: std::sync::Arc::new(seeds),
            jobs: jobs
                .iter()
                .map(|pj| JobShared {
                    name: pj.job.name.clone(),
                    group: pj.group,
                    numjobs: pj.job.numjobs,
                    stop: AtomicBool::new(false),
                    ended: AtomicU32::new(0),
                    flow: (pj.job.x.flow, pj.job.x.flow_id),
                    flow_ios: AtomicU64::new(0),
                    ss: Default::default(),
                })
                .collect(),
        }
    }

    /// True once every clone of job `i` ended.
    pub fn job_done(&self, i: usize) -> bool {
        let j = &self.jobs[i];
        j.ended.load(Ordering::Acquire) >= j.numjobs
    }

    /// `exitall`: job `i` ended; stop what `what` says. Returns true when
    /// the whole load must stop.
    pub fn exit_all(&self, i: usize, what: ExitWhat) -> bool {
        let g = self.jobs[i].group;
        for j in &self.jobs {
            if what == ExitWhat::All || j.group == g {
                j.stop.store(true, Ordering::Relaxed);
            }
        }
        what == ExitWhat::All
    }

    /// Flow control: how long job `i` should wait before its next I/O
    /// (zero when it is not ahead of its share).
    pub fn flow_wait(&self, i: usize, sleep: Duration) -> Duration {
        let me = &self.jobs[i];
        let (w, id) = me.flow;
        if w == 0 {
            return Duration::ZERO;
        }
        let mine = me.flow_ios.load(Ordering::Relaxed) as f64 / w.unsigned_abs() as f64;
        let slowest = self
            .jobs
            .iter()
            .enumerate()
            .filter(|(k, j)| {
                *k != i
                    && j.flow.0 != 0
                    && j.flow.1 == id
                    && !self.job_done(*k)
                    && !j.stop.load(Ordering::Relaxed)
            })
            .map(|(_, j)| {
                j.flow_ios.load(Ordering::Relaxed) as f64 / j.flow.0.unsigned_abs() as f64
            })
            .fold(f64::INFINITY, f64::min);
        // A few I/Os of slack so jobs do not take turns one I/O at a time.
        if slowest.is_finite() && mine > slowest + 8.0 {
            if sleep.is_zero() {
                Duration::from_micros(50)
            } else {
                sleep
            }
        } else {
            Duration::ZERO
        }
    }
}
