//! What one clone hands back when it ends: what it measured and, when it
//! stopped early, why ([`Failure`]).

use std::path::Path;
use std::time::Instant;

use crate::job::kinds::Dir;
use crate::job::model::Job;
use crate::run::sinks::cpu::CpuUse;
use crate::run::sinks::stats::DirAcc;

/// Why a clone stopped early.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Failure {
    /// The errno (fio's `error` field), 0 if none applies.
    pub errno: i32,
    /// What happened and what was kept.
    pub message: String,
}

impl Failure {
    /// A failed read or write.
    pub fn io(job: &Job, err: &std::io::Error, dir: Dir, path: &Path, offset: u64) -> Failure {
        let errno = err.raw_os_error().unwrap_or(0);
        let op = match dir {
            Dir::Read => "reading",
            Dir::Write => "writing",
            Dir::Trim => "trimming",
        };
        let message = if errno == libc::ENOSPC {
            format!(
                "job {}: disk full (ENOSPC) {op} {} at offset {offset}: the job stopped; results measured so far are kept",
                job.name,
                path.display()
            )
        } else {
            format!(
                "job {}: {op} {} at offset {offset} failed: {err}; the job stopped",
                job.name,
                path.display()
            )
        };
        Failure { errno, message }
    }
}

/// The errors a clone continued past (fio's `total_err_count` and
/// `first_error`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Continued {
    /// How many.
    pub count: u64,
    /// The first one.
    pub first: Option<Failure>,
}

impl Continued {
    /// Adds another clone's.
    pub fn merge(&mut self, o: &Continued) {
        self.count += o.count;
        if self.first.is_none() {
            self.first.clone_from(&o.first);
        }
    }
}

/// What a clone measured.
#[derive(Debug)]
pub struct CloneResult {
    /// Index of the job.
    pub job_idx: usize,
    /// The clone's number across the load, from 1 (fio's thread order).
    pub number: usize,
    /// Kernel thread id (0 if setup never ran).
    pub tid: i32,
    /// Reads, writes and trims.
    pub dirs: [DirAcc; 3],
    /// CPU used while measuring.
    pub cpu: CpuUse,
    /// fsync/fdatasync calls made.
    pub syncs: u64,
    /// First and last instant of measurement.
    pub measured: Option<(Instant, Instant)>,
    /// Why it stopped early.
    pub failure: Option<Failure>,
    /// Errors it continued past (`continue_on_error`): how many, and the
    /// first.
    pub continued: Continued,
    /// `latency_target`: the depth the search reached (fio's
    /// `latency_qd`).
    pub lat_depth: Option<u32>,
    /// zonemode=zbd: the zone resets it made.
    pub zone_resets: Option<u64>,
    /// The clone's random seed (see [`clone_seeds`]).
    pub seed: u64,
    /// Samples, queue depths and sync latencies.
    pub fx: crate::run::sinks::fio_stats::FioExtras,
}

impl CloneResult {
    /// The result of a clone whose thread panicked (a bug in iolab): no
    /// numbers, and a failure that says so.
    pub fn lost(job_idx: usize, number: usize, thread: &str) -> CloneResult {
        CloneResult {
            job_idx,
            number,
            tid: 0,
            dirs: [DirAcc::new(false), DirAcc::new(false), DirAcc::new(false)],
            cpu: CpuUse::default(),
            syncs: 0,
            measured: None,
            failure: Some(Failure {
                errno: 0,
                message: format!(
                    "clone {thread} stopped on a bug in iolab (its thread panicked): its numbers are lost"
                ),
            }),
            continued: Continued::default(),
            lat_depth: None,
            zone_resets: None,
            seed: 0,
            fx: Default::default(),
        }
    }
}
