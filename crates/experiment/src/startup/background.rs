//! The background load of a cell, through the workload engine: started in
//! this process's threads (so it stays in the root blkio cgroup the lab's
//! throttle applies to) with the load's I/O priority, stopped at the end of
//! the cell. Files are laid out by `start` and reused by later cells.
//!
//! A start is "under 1r" only if the reader is still reading: a job file
//! without `time_based`, a `runtime=` override, or a full disk ends a job
//! mid-cell, and every start after that would be an idle start stored
//! under the loaded workload's name. So the load is checked before and
//! after every start ([`Background::ended`]), and the device's traffic
//! during the warm-up is kept as the rate the load is expected to reach.

use std::path::Path;
use std::time::Instant;

use iolab_guard::Guard;
use iolab_load::{jobs_from_spec, start, LoadReport, RunningLoad, StartOptions};
use iolab_sys::ioprio::IoPrio;

use crate::ExperimentError;

/// A running background load.
pub struct Background {
    load: RunningLoad,
    workload: String,
    started: Instant,
}

impl Background {
    /// Starts `workload` (a named workload or a job file) with its files in
    /// `dir`; `None` for `idle`. `overrides` are fio options applied to every
    /// job (e.g. `size=128M`).
    pub fn start(
        workload: &str,
        dir: &Path,
        overrides: &[(String, String)],
        prio: Option<IoPrio>,
        guard: &Guard,
    ) -> Result<Option<Background>, ExperimentError> {
        if workload == "idle" {
            return Ok(None);
        }
        let mut all = vec![("directory".to_string(), dir.to_string_lossy().into_owned())];
        all.extend(overrides.iter().cloned());
        let jobs = jobs_from_spec(workload, &all)?;
        let load = start(
            jobs,
            StartOptions {
                guard: Some(guard.clone()),
                ioprio: prio,
                progress: false,
                force: false,
            },
        )?;
        Ok(Some(Background {
            load,
            workload: workload.to_string(),
            started: Instant::now(),
        }))
    }

    /// `None` while every job of the load runs; otherwise one line saying
    /// which jobs ended, after how long, and with which error.
    pub fn ended(&self) -> Option<String> {
        let ended = self.load.ended_clones();
        if ended.is_empty() {
            return None;
        }
        let what: Vec<String> = ended
            .iter()
            .map(|c| match &c.error {
                Some(e) => format!("{} failed: {e}", c.name),
                None => format!("{} reached its end (runtime, size or loops)", c.name),
            })
            .collect();
        Some(format!(
            "the background load {:?} stopped running {:.1} s after it started ({}); \
             a background job must run until iolab stops it: use time_based=1 with no \
             runtime, or a named workload",
            self.workload,
            self.started.elapsed().as_secs_f64(),
            what.join("; ")
        ))
    }

    /// Bytes the load has read and written so far, by its own counters
    /// (every clone, updated at each completed I/O).
    pub fn io(&self) -> (u64, u64) {
        let s = self.load.snapshot();
        (s.read_bytes, s.write_bytes)
    }

    /// Stops the load; what it measured, and every byte it read and
    /// wrote once its last I/O ended.
    pub fn stop(self) -> (LoadReport, (u64, u64)) {
        let (report, s) = self.load.stop_counted();
        (report, (s.read_bytes, s.write_bytes))
    }
}
