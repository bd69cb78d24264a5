//! The background load of a cell, through the workload engine: started in
//! this process's threads (so it stays in the root blkio cgroup the lab's
//! throttle applies to) with the load's I/O priority, stopped at the end of
//! the cell. Files are laid out by `start` and reused by later cells.

use std::path::Path;

use iolab_guard::Guard;
use iolab_load::{jobs_from_spec, start, LoadReport, RunningLoad, StartOptions};
use iolab_sys::ioprio::IoPrio;

use super::StartupError;

/// A running background load.
pub struct Background {
    load: RunningLoad,
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
    ) -> Result<Option<Background>, StartupError> {
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
        Ok(Some(Background { load }))
    }

    /// Stops the load and returns what it measured.
    pub fn stop(self) -> LoadReport {
        self.load.stop()
    }
}
