//! The sweep's matrix and its jobs: seed 002's four numjobs/iodepth
//! patterns × sequential/random × read/write × schedulers × repetitions,
//! and the fio-style job of a run (its size from [`super::sizing`]).
//!
//! Order: repetition, then scheduler, then kind, then pattern. Every
//! scheduler gets its first repetition before any gets its second, so a
//! drift of the device over the sweep (a host disk warming up, another
//! tenant) spreads over all columns instead of landing on the last one.

use std::path::Path;

use iolab_load::{job_from_options, Job, LoadError, Rw};

use super::config::SweepConfig;
use super::sizing::Sizing;
use crate::engine::Cell;
use crate::ExperimentError;

pub use iolab_results::sweep::{parse_workload, workload_name, Kind, Pattern, SEED_PATTERNS};

/// The load engine's pattern for an access kind.
pub fn rw(kind: Kind) -> Rw {
    match kind {
        Kind::Read => Rw::Read,
        Kind::Write => Rw::Write,
        Kind::RandRead => Rw::RandRead,
        Kind::RandWrite => Rw::RandWrite,
    }
}

/// One run to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPlan {
    /// Scheduler.
    pub scheduler: String,
    /// Access kind.
    pub kind: Kind,
    /// numjobs/iodepth.
    pub pattern: Pattern,
    /// Repetition, from 1.
    pub rep: u32,
}

impl RunPlan {
    /// The stored workload name.
    pub fn workload(&self) -> String {
        workload_name(self.kind, self.pattern)
    }

    /// The run a one-repetition cell of the plan stands for.
    pub fn of(cell: &Cell) -> Result<RunPlan, ExperimentError> {
        let bad = || {
            iolab_sys::UsageError::new(format!(
                "{} rep {:?} is not a sweep run",
                cell.workload, cell.reps
            ))
        };
        let (kind, pattern) = parse_workload(&cell.workload).ok_or_else(bad)?;
        Ok(RunPlan {
            scheduler: cell.scheduler.clone(),
            kind,
            pattern,
            rep: *cell.reps.first().ok_or_else(bad)?,
        })
    }

    /// As a cell of the engine's plan: one repetition.
    pub fn cell(&self) -> Cell {
        Cell {
            scheduler: self.scheduler.clone(),
            workload: self.workload(),
            reps: vec![self.rep],
            variant: None,
        }
    }
}

/// Every run of the matrix (see the module docs for the order), skipping
/// those `done` says are recorded (`--resume`).
pub fn plan(
    cfg: &SweepConfig,
    schedulers: &[String],
    done: impl Fn(&str, &str, u32) -> bool,
) -> Vec<RunPlan> {
    let mut runs = Vec::new();
    for rep in 1..=cfg.reps {
        for s in schedulers {
            for &kind in &cfg.kinds {
                for &pattern in &cfg.patterns {
                    if !done(s, &workload_name(kind, pattern), rep) {
                        runs.push(RunPlan {
                            scheduler: s.clone(),
                            kind,
                            pattern,
                            rep,
                        });
                    }
                }
            }
        }
    }
    runs
}

/// The job of one run, through the load engine's option table (fio's
/// names): each of `numjobs` threads moves its share of the run's bytes in
/// its own file under `dir`, with io_uring and O_DIRECT — iolab's
/// equivalent of seed 002's `ioengine=libaio direct=1`, so `iodepth`
/// really keeps that many I/Os in flight and the page cache stays out.
pub fn job(
    run: &RunPlan,
    sizing: &Sizing,
    cfg: &SweepConfig,
    dir: &Path,
) -> Result<Job, LoadError> {
    let cap_ms = iolab_sys::cast::round_u64(cfg.runtime_cap_s() * 1000.0);
    let opts: Vec<(String, String)> = [
        ("directory", dir.to_string_lossy().into_owned()),
        ("rw", rw(run.kind).as_str().to_string()),
        ("bs", cfg.bs_bytes.to_string()),
        ("size", sizing.per_job(run.pattern.numjobs).to_string()),
        ("numjobs", run.pattern.numjobs.to_string()),
        ("iodepth", run.pattern.iodepth.to_string()),
        ("ioengine", "io_uring".to_string()),
        ("direct", "1".to_string()),
        ("runtime", format!("{cap_ms}ms")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    job_from_options(&run.workload(), &opts)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sweep::config::tests::cfg;
    use crate::sweep::sizing::scale;

    fn scheds() -> Vec<String> {
        ["none", "mq-deadline", "kyber", "bfq"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn seed_matrix_expands_to_every_cell() {
        let p = plan(&cfg(), &scheds(), |_, _, _| false);
        assert_eq!(p.len(), 4 * 4 * 4 * 3);
        // Repetition outermost, then scheduler, kind, pattern.
        assert_eq!(p[0].workload(), "seq-read-1j-1qd");
        assert_eq!(p[1].workload(), "seq-read-4j-1qd");
        assert_eq!(p[3].workload(), "seq-read-4j-4qd");
        assert_eq!(p[4].workload(), "rand-read-1j-1qd");
        assert_eq!(
            (p[15].scheduler.as_str(), p[16].scheduler.as_str()),
            ("none", "mq-deadline")
        );
        assert!(p[..64].iter().all(|r| r.rep == 1));
        assert_eq!(p[64].rep, 2);
        let mut names: Vec<String> = p.iter().map(RunPlan::workload).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 16);
    }

    #[test]
    fn resume_skips_recorded_runs() {
        let p = plan(&cfg(), &scheds(), |s, w, r| {
            r == 1 || (s == "bfq" && w == "rand-write-4j-4qd")
        });
        assert_eq!(p.len(), 4 * 4 * 4 * 2 - 2);
        assert!(p.iter().all(|r| r.rep > 1));
    }

    #[test]
    fn jobs_are_direct_io_uring_with_the_pattern() {
        let s = scale(&cfg(), 1 << 30, Some((40.0 * 1048576.0, "lab"))).unwrap();
        let run = RunPlan {
            scheduler: "bfq".into(),
            kind: Kind::RandWrite,
            pattern: SEED_PATTERNS[3],
            rep: 1,
        };
        let j = job(&run, &s, &cfg(), Path::new("/mnt/x")).unwrap();
        assert_eq!(j.name, "rand-write-4j-4qd");
        assert_eq!((j.numjobs, j.iodepth), (4, 4));
        assert_eq!(j.size, Some(10 << 20));
        assert_eq!(j.bs, 1 << 20);
        assert!(j.direct);
        assert_eq!(j.ioengine, iolab_load::IoEngine::IoUring);
        assert_eq!(j.rw, Rw::RandWrite);
        assert_eq!(j.runtime, Some(std::time::Duration::from_secs(10)));
        assert!(!j.time_based);
    }
}
