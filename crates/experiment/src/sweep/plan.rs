//! The sweep's matrix and its jobs: seed 002's four numjobs/iodepth
//! patterns × sequential/random × read/write × schedulers × repetitions,
//! and the fio-style job of a run (its size from [`super::sizing`]).
//!
//! Order: repetition, then scheduler, then kind, then pattern. Every
//! scheduler gets its first repetition before any gets its second, so a
//! drift of the device over the sweep (a host disk warming up, another
//! tenant) spreads over all columns instead of landing on the last one.

use std::path::Path;

use serde::{Deserialize, Serialize};

use iolab_load::{job_from_options, Job, LoadError, Rw};
use iolab_sys::UsageError;

use super::config::SweepConfig;
use super::sizing::Sizing;

/// One of the four access kinds, one table each (seed 002's charts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
}

impl Kind {
    /// Every kind, in table order.
    pub const ALL: [Kind; 4] = [Kind::Read, Kind::RandRead, Kind::Write, Kind::RandWrite];

    /// Parses fio's `rw` spelling.
    pub fn parse(s: &str) -> Result<Kind, UsageError> {
        match s {
            "read" => Ok(Kind::Read),
            "write" => Ok(Kind::Write),
            "randread" => Ok(Kind::RandRead),
            "randwrite" => Ok(Kind::RandWrite),
            _ => Err(UsageError::new(format!(
                "--rw {s:?}: expected read, write, randread or randwrite (comma-separated)"
            ))),
        }
    }

    /// The load engine's pattern.
    pub fn rw(self) -> Rw {
        match self {
            Kind::Read => Rw::Read,
            Kind::Write => Rw::Write,
            Kind::RandRead => Rw::RandRead,
            Kind::RandWrite => Rw::RandWrite,
        }
    }

    /// True for reads.
    pub fn reads(self) -> bool {
        matches!(self, Kind::Read | Kind::RandRead)
    }

    /// `seq-read`, `rand-write`, ...: the prefix of workload names.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Read => "seq-read",
            Kind::Write => "seq-write",
            Kind::RandRead => "rand-read",
            Kind::RandWrite => "rand-write",
        }
    }

    /// Title words: `sequential read`, ...
    pub fn title(self) -> &'static str {
        match self {
            Kind::Read => "sequential read",
            Kind::Write => "sequential write",
            Kind::RandRead => "random read",
            Kind::RandWrite => "random write",
        }
    }
}

/// A numjobs/iodepth pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pattern {
    /// Threads, each on its own file.
    pub numjobs: u32,
    /// I/Os in flight per thread.
    pub iodepth: u32,
}

/// Seed 002's patterns 1-4: numjobs/iodepth 1/1, 4/1, 1/4, 4/4.
pub const SEED_PATTERNS: [Pattern; 4] = [
    Pattern {
        numjobs: 1,
        iodepth: 1,
    },
    Pattern {
        numjobs: 4,
        iodepth: 1,
    },
    Pattern {
        numjobs: 1,
        iodepth: 4,
    },
    Pattern {
        numjobs: 4,
        iodepth: 4,
    },
];

impl Pattern {
    /// Parses `NUMJOBS/IODEPTH`, e.g. `4/1`.
    pub fn parse(s: &str) -> Result<Pattern, UsageError> {
        let bad = || {
            UsageError::new(format!(
                "--patterns {s:?}: expected NUMJOBS/IODEPTH with both from 1 to 64, e.g. 1/1,4/1,1/4,4/4"
            ))
        };
        let (j, d) = s.split_once('/').ok_or_else(bad)?;
        let n = |t: &str| {
            t.trim()
                .parse::<u32>()
                .ok()
                .filter(|v| (1..=64).contains(v))
        };
        Ok(Pattern {
            numjobs: n(j).ok_or_else(bad)?,
            iodepth: n(d).ok_or_else(bad)?,
        })
    }

    /// `1j-4qd`.
    pub fn label(self) -> String {
        format!("{}j-{}qd", self.numjobs, self.iodepth)
    }
}

/// The workload name of a cell, e.g. `seq-read-1j-1qd`.
pub fn workload_name(kind: Kind, pattern: Pattern) -> String {
    format!("{}-{}", kind.label(), pattern.label())
}

/// The inverse of [`workload_name`].
pub fn parse_workload(name: &str) -> Option<(Kind, Pattern)> {
    let kind = Kind::ALL
        .into_iter()
        .find(|k| name.starts_with(k.label()) && name[k.label().len()..].starts_with('-'))?;
    let rest = &name[kind.label().len() + 1..];
    let (j, d) = rest.split_once("j-")?;
    let d = d.strip_suffix("qd")?;
    Some((
        kind,
        Pattern {
            numjobs: j.parse().ok()?,
            iodepth: d.parse().ok()?,
        },
    ))
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
    let cap_ms = (cfg.runtime_cap_s() * 1000.0).round() as u64;
    let opts: Vec<(String, String)> = [
        ("directory", dir.to_string_lossy().into_owned()),
        ("rw", run.kind.rw().as_str().to_string()),
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
    use crate::sweep::config::SweepPlace;
    use crate::sweep::sizing::scale;

    fn cfg() -> SweepConfig {
        SweepConfig {
            place: SweepPlace::NewLab {
                size_bytes: 1 << 30,
                bw_bytes: Some(40 << 20),
                backend: None,
                model: None,
            },
            schedulers: vec![],
            kinds: Kind::ALL.to_vec(),
            patterns: SEED_PATTERNS.to_vec(),
            reps: 3,
            bs_bytes: 1 << 20,
            size_bytes: None,
            runtime_s: 1.0,
            fs: "ext4".into(),
        }
    }

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
    fn workload_names_round_trip() {
        for k in Kind::ALL {
            for pat in SEED_PATTERNS {
                let n = workload_name(k, pat);
                assert_eq!(parse_workload(&n), Some((k, pat)), "{n}");
            }
        }
        assert_eq!(
            workload_name(Kind::RandWrite, SEED_PATTERNS[3]),
            "rand-write-4j-4qd"
        );
        assert_eq!(parse_workload("1r1w"), None);
        assert_eq!(parse_workload("seq-read-xj-1qd"), None);
    }

    #[test]
    fn patterns_and_kinds_parse() {
        assert_eq!(Pattern::parse("4/1").unwrap(), SEED_PATTERNS[1]);
        assert!(Pattern::parse("4")
            .unwrap_err()
            .0
            .contains("NUMJOBS/IODEPTH"));
        assert!(Pattern::parse("0/1").is_err());
        assert_eq!(Kind::parse("randwrite").unwrap(), Kind::RandWrite);
        assert!(Kind::parse("trim").unwrap_err().0.contains("randread"));
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
