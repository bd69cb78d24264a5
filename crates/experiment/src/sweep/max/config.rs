//! What defines a maximum-throughput sweep (`iolab sweep --max`), stored
//! as JSON with the experiment so `--resume ID` runs the same points.

use serde::{Deserialize, Serialize};

use iolab_sys::UsageError;

use crate::place::Place;
use crate::sweep::plan::Kind;
use crate::Schedulers;

/// Everything that defines the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaxConfig {
    /// Where it runs: [`Place::TmpfsLab`] (a loop device over a file in
    /// a tmpfs: the fastest device with a real request queue), or a
    /// device the user gave, read, or written with `--force`.
    pub place: Place,
    /// Schedulers, in column order.
    pub schedulers: Schedulers,
    /// Access kinds, one table each.
    pub kinds: Vec<Kind>,
    /// Thread counts N, in row order (seed 003's IOSpeed: 1, 2, 4, 8 ...).
    pub threads: Vec<u32>,
    /// I/Os in flight per thread: 1 = blocking `psync`, as IOSpeed's
    /// threads; more = io_uring with that queue depth.
    pub iodepth: u32,
    /// Repetitions of every point.
    pub reps: u32,
    /// Block size in bytes.
    pub bs_bytes: u64,
    /// Seconds every point runs.
    pub runtime_s: f64,
}

/// Thread counts when none are given: 1, 2, 4, ... up to twice the CPUs
/// and at least 8, so the curve goes past the point where the CPUs (or
/// the scheduler's lock) saturate.
pub fn default_threads(cpus: usize) -> Vec<u32> {
    #[allow(clippy::cast_possible_truncation, reason = "clamped to 8..=64")]
    let top = (2 * cpus).clamp(8, 64) as u32;
    let mut v = vec![1u32];
    while v[v.len() - 1] * 2 <= top {
        let next = v[v.len() - 1] * 2;
        v.push(next);
    }
    v
}

impl MaxConfig {
    /// Checks what needs no system access.
    pub fn validate(&self) -> Result<(), UsageError> {
        crate::sweep::config::check_common(self.reps, &self.kinds, self.runtime_s)?;
        if self.threads.is_empty() {
            return Err(UsageError::new(
                "--threads needs at least one thread count, e.g. 1,2,4,8",
            ));
        }
        if let Some(t) = self.threads.iter().find(|t| !(1..=256).contains(*t)) {
            return Err(UsageError::new(format!(
                "--threads {t}: expected thread counts from 1 to 256"
            )));
        }
        if !(1..=1024).contains(&self.iodepth) {
            return Err(UsageError::new(format!(
                "--iodepth {}: expected 1 to 1024",
                self.iodepth
            )));
        }
        if self.bs_bytes == 0 || self.bs_bytes % 512 != 0 {
            return Err(UsageError::new(format!(
                "block size {} is not a positive multiple of 512 (O_DIRECT needs aligned blocks): use e.g. 4k",
                self.bs_bytes
            )));
        }
        Ok(())
    }

    /// True when any kind writes (the device's contents are destroyed).
    pub fn writes(&self) -> bool {
        self.kinds.iter().any(|k| !k.reads())
    }

    /// The engine every point uses, for messages and the job.
    pub fn engine(&self) -> &'static str {
        if self.iodepth == 1 {
            "psync"
        } else {
            "io_uring"
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn cfg() -> MaxConfig {
        MaxConfig {
            place: Place::TmpfsLab {
                size_bytes: 1 << 30,
            },
            schedulers: Schedulers::all(),
            kinds: vec![Kind::Read, Kind::RandRead],
            threads: vec![1, 2, 4, 8],
            iodepth: 1,
            reps: 3,
            bs_bytes: 4096,
            runtime_s: 2.0,
        }
    }

    #[test]
    fn default_threads_double_past_the_cpus() {
        assert_eq!(default_threads(2), vec![1, 2, 4, 8]);
        assert_eq!(default_threads(8), vec![1, 2, 4, 8, 16]);
        assert_eq!(default_threads(100), vec![1, 2, 4, 8, 16, 32, 64]);
    }

    #[test]
    fn validation_names_the_flag() {
        assert!(cfg().validate().is_ok());
        let mut c = cfg();
        c.threads = vec![0];
        assert!(c.validate().unwrap_err().0.contains("--threads 0"));
        let mut c = cfg();
        c.bs_bytes = 1000;
        assert!(c.validate().unwrap_err().0.contains("multiple of 512"));
        let mut c = cfg();
        c.iodepth = 0;
        assert!(c.validate().unwrap_err().0.contains("--iodepth"));
    }

    #[test]
    fn engine_follows_the_depth_and_config_round_trips() {
        let mut c = cfg();
        assert_eq!(c.engine(), "psync");
        assert!(!c.writes());
        c.iodepth = 8;
        c.kinds.push(Kind::RandWrite);
        assert_eq!(c.engine(), "io_uring");
        assert!(c.writes());
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["place"]["kind"], "tmpfs_lab");
        assert_eq!(serde_json::from_value::<MaxConfig>(v).unwrap(), c);
    }
}
