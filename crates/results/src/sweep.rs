//! The cells of a sweep (`iolab sweep` and `sweep --max`): an access kind
//! and a numjobs/iodepth pattern, stored as the run's workload name
//! (`seq-read-4j-1qd`), from which the tables are rebuilt.

use serde::{Deserialize, Serialize};

use iolab_sys::UsageError;

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
        Kind::ALL
            .into_iter()
            .find(|k| k.fio_rw() == s)
            .ok_or_else(|| {
                UsageError::new(format!(
                    "--rw {s:?}: expected read, write, randread or randwrite (comma-separated)"
                ))
            })
    }

    /// fio's `rw` word.
    pub fn fio_rw(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::RandRead => "randread",
            Kind::RandWrite => "randwrite",
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
}
