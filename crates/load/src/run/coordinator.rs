//! The coordinator: runs a load's stonewall groups one after the other on
//! its own thread. For each group it switches the schedulers the jobs ask
//! for (through the guard), spawns one thread per clone, waits until every
//! clone has set itself up, then opens the gate so they start together;
//! a setup failure closes the gate instead and is reported (by `start`
//! for the first group, as a warning for later ones).

use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use iolab_guard::Guard;
use iolab_sys::ioprio::IoPrio;

use crate::error::LoadError;
use crate::run::clone::{CloneResult, CloneSpec};
use crate::run::live::{Control, Gate, LiveCounters};
use crate::run::plan::Plan;

/// Runs the stonewall groups in order on its own thread.
pub(crate) struct Coordinator {
    pub(crate) plan: Arc<Plan>,
    pub(crate) ctl: Arc<Control>,
    pub(crate) per_job: Vec<Vec<Arc<LiveCounters>>>,
    pub(crate) tids: Arc<Mutex<Vec<i32>>>,
    pub(crate) late_failures: Arc<Mutex<Vec<String>>>,
    pub(crate) guard: Option<Guard>,
    pub(crate) ioprio: Option<IoPrio>,
    pub(crate) shared: Arc<crate::run::shared::Shared>,
}

/// A running clone: its job, its number in the load, its thread.
type Handles = Vec<(usize, usize, JoinHandle<CloneResult>)>;

impl Coordinator {
    /// Runs every group; the first group's start (or failure) is sent on
    /// `first` as soon as it is known.
    pub(crate) fn run(self, first: mpsc::Sender<Result<(), LoadError>>) -> Vec<CloneResult> {
        let mut results = Vec::new();
        let groups = self
            .plan
            .jobs
            .iter()
            .map(|j| j.group + 1)
            .max()
            .unwrap_or(0);
        let mut first = Some(first);
        for g in 0..groups {
            if g > 0 && self.ctl.stopping() {
                let skipped: Vec<&str> = self
                    .plan
                    .jobs
                    .iter()
                    .filter(|j| j.group >= g)
                    .map(|j| j.job.name.as_str())
                    .collect();
                self.late(format!(
                    "not started because the load was stopped first: {}",
                    skipped.join(", ")
                ));
                break;
            }
            match self.start_group(g, &mut results) {
                Ok(handles) => {
                    if let Some(tx) = first.take() {
                        let _ = tx.send(Ok(()));
                    }
                    join_all(handles, &mut results);
                }
                Err(e) => match first.take() {
                    Some(tx) => {
                        let _ = tx.send(Err(e));
                        return results;
                    }
                    None => self.late(e.to_string()),
                },
            }
        }
        if let Some(tx) = first.take() {
            let _ = tx.send(Ok(()));
        }
        results
    }

    fn late(&self, msg: String) {
        self.late_failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(msg);
    }

    /// Switches schedulers, spawns the group's clones, waits for their
    /// setup and opens the gate; returns the running clones. On a setup
    /// failure the gate tells every clone to give up and the error is
    /// returned once they have ended.
    fn start_group(&self, g: usize, results: &mut Vec<CloneResult>) -> Result<Handles, LoadError> {
        let members: Vec<usize> = (0..self.plan.jobs.len())
            .filter(|&i| self.plan.jobs[i].group == g)
            .collect();
        for &i in &members {
            let pj = &self.plan.jobs[i];
            if let (Some(name), Some(guard)) = (&pj.job.ioscheduler, &self.guard) {
                for dev in &pj.scheduler_devs {
                    guard.set_scheduler(dev, name)?;
                }
            }
        }
        let gate = Arc::new(Gate::default());
        let (tx, rx) = mpsc::channel();
        let mut handles = Vec::new();
        for &i in &members {
            let pj = &self.plan.jobs[i];
            let first_number: usize = self.plan.jobs[..i]
                .iter()
                .map(|p| p.job.numjobs as usize)
                .sum();
            for clone in 0..pj.job.numjobs {
                let region = pj.region(clone);
                let spec = CloneSpec {
                    job_idx: i,
                    clone,
                    job: pj.job.clone(),
                    base: region.base,
                    size: region.size,
                    io_size: region.io_size,
                    zbd: pj.zbd.clone(),
                    number: first_number + clone as usize + 1,
                    targets: pj
                        .clone_files(clone as usize)
                        .iter()
                        .map(|t| t.path.clone())
                        .collect(),
                    ioprio: self.ioprio,
                    ctl: self.ctl.clone(),
                    shared: self.shared.clone(),
                    live: self.per_job[i][clone as usize].clone(),
                    gate: gate.clone(),
                    ready: tx.clone(),
                };
                let number = spec.number;
                let spawned = std::thread::Builder::new()
                    .name(format!("{}.{clone}", pj.job.name))
                    .spawn(move || crate::run::thread::run_clone(spec));
                match spawned {
                    Ok(h) => handles.push((i, number, h)),
                    Err(e) => {
                        gate.open(false);
                        join_all(handles, results);
                        return Err(LoadError::Setup {
                            job: pj.job.name.clone(),
                            why: format!("cannot start a thread: {e}"),
                        });
                    }
                }
            }
        }
        drop(tx);
        let mut failed: Option<LoadError> = None;
        for _ in 0..handles.len() {
            match rx.recv() {
                Ok((_, Ok(tid))) => self
                    .tids
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(tid),
                Ok((i, Err(why))) => {
                    failed.get_or_insert(LoadError::Setup {
                        job: self.plan.jobs[i].job.name.clone(),
                        why,
                    });
                }
                Err(_) => break,
            }
        }
        gate.open(failed.is_none());
        match failed {
            Some(e) => {
                join_all(handles, results);
                Err(e)
            }
            None => Ok(handles),
        }
    }
}

fn join_all(handles: Handles, results: &mut Vec<CloneResult>) {
    // A clone that panicked (a bug) loses its own numbers only, and says
    // so: its entry carries the failure, so the run is not an "ok".
    for (job_idx, number, h) in handles {
        let name = h.thread().name().unwrap_or("?").to_string();
        results.push(
            h.join()
                .unwrap_or_else(|_| CloneResult::lost(job_idx, number, &name)),
        );
    }
}
