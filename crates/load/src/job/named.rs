//! Named workloads: the thesis's and the S suite's background loads, each
//! just a generated job list.
//!
//! | name        | generates                                             |
//! |-------------|-------------------------------------------------------|
//! | `idle`      | no jobs (the baseline)                                |
//! | `1r`        | 1 sequential reader                                   |
//! | `1w`        | 1 writer                                              |
//! | `1r1w`      | 1 sequential reader + 1 writer                        |
//! | `10r-seq`   | 10 sequential readers                                 |
//! | `5r5w-seq`  | 5 sequential readers + 5 writers                      |
//! | `10r-rand`  | 10 random readers                                     |
//! | `5r5w-rand` | 5 random readers + 5 writers                          |
//!
//! `--readers N --writers M --pattern seq|rand` builds the same jobs for
//! any N and M. A reader (job `reader`, `numjobs=N`) reads its own file
//! `reader.K.0`, laid out before the load starts, with buffered 1 MiB
//! `read`s (seq) or 4 KiB `randread`s (rand), psync. A writer (job
//! `writer`) writes its own file `writer.K.0` sequentially with buffered
//! 1 MiB writes and, like the thesis's looping `dd`, starts again from the
//! beginning when it reaches the end; the pattern applies to readers only.
//! Every job is `time_based` without a runtime, so it runs until the
//! experiment stops it (or `--runtime`), and `invalidate` drops a file's
//! cached pages at each wrap so every pass reaches the device, as each new
//! `dd` did on the thesis's small-memory phone. File sizes: 512 MiB (the
//! thesis's `bs=1M count=512`), or less so that all files fit in 90 % of
//! the directory's free space (at least 16 MiB each); `--size` sets it.

use crate::job::model::Job;

use crate::job::kinds::Rw;

/// The workload names, in the order users meet them.
pub const NAMES: &[&str] = &[
    "idle",
    "1r",
    "1w",
    "1r1w",
    "10r-seq",
    "5r5w-seq",
    "10r-rand",
    "5r5w-rand",
];

/// Sequential or random readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// 1 MiB sequential reads.
    Seq,
    /// 4 KiB random reads.
    Rand,
}

impl Pattern {
    /// Parses `seq` or `rand`.
    pub fn parse(s: &str) -> Option<Pattern> {
        match s {
            "seq" | "sequential" => Some(Pattern::Seq),
            "rand" | "random" => Some(Pattern::Rand),
            _ => None,
        }
    }
}

/// Readers and writers, the S suite's way of describing a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shorthand {
    /// Reader threads.
    pub readers: u32,
    /// Writer threads.
    pub writers: u32,
    /// Reader pattern.
    pub pattern: Pattern,
}

/// The shorthand behind a workload name, if it is one.
pub fn lookup(name: &str) -> Option<Shorthand> {
    let (readers, writers, pattern) = match name {
        "idle" => (0, 0, Pattern::Seq),
        "1r" => (1, 0, Pattern::Seq),
        "1w" => (0, 1, Pattern::Seq),
        "1r1w" => (1, 1, Pattern::Seq),
        "10r-seq" => (10, 0, Pattern::Seq),
        "5r5w-seq" => (5, 5, Pattern::Seq),
        "10r-rand" => (10, 0, Pattern::Rand),
        "5r5w-rand" => (5, 5, Pattern::Rand),
        _ => return None,
    };
    Some(Shorthand {
        readers,
        writers,
        pattern,
    })
}

/// The jobs for a shorthand (empty for no readers and no writers).
pub fn generate(s: &Shorthand) -> Vec<Job> {
    let mut jobs = Vec::new();
    if s.readers > 0 {
        let mut r = base("reader", s.readers);
        (r.rw, r.bs) = match s.pattern {
            Pattern::Seq => (Rw::Read, 1 << 20),
            Pattern::Rand => (Rw::RandRead, 4 << 10),
        };
        record(&mut r);
        jobs.push(r);
    }
    if s.writers > 0 {
        let mut w = base("writer", s.writers);
        (w.rw, w.bs) = (Rw::Write, 1 << 20);
        record(&mut w);
        jobs.push(w);
    }
    jobs
}

fn base(name: &str, n: u32) -> Job {
    let mut j = Job::new(name);
    j.numjobs = n;
    j.time_based = true;
    j.auto_size = true;
    j
}

/// Lists the generated options as fio would show them.
fn record(j: &mut Job) {
    j.options = vec![
        ("rw".into(), j.rw.as_str().into()),
        ("bs".into(), iolab_sys::units::format_bytes(j.bs)),
        ("numjobs".into(), j.numjobs.to_string()),
        ("ioengine".into(), j.ioengine.as_str().into()),
        ("time_based".into(), "1".into()),
    ];
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_name_resolves() {
        for name in NAMES {
            assert!(lookup(name).is_some(), "{name}");
        }
        assert!(lookup("2r").is_none());
    }

    #[test]
    fn idle_has_no_jobs() {
        assert!(generate(&lookup("idle").unwrap()).is_empty());
    }

    #[test]
    fn mixed_seq_workload() {
        let jobs = generate(&lookup("5r5w-seq").unwrap());
        assert_eq!(jobs.len(), 2);
        let (r, w) = (&jobs[0], &jobs[1]);
        assert_eq!(
            (r.name.as_str(), r.rw, r.bs, r.numjobs),
            ("reader", Rw::Read, 1 << 20, 5)
        );
        assert_eq!(
            (w.name.as_str(), w.rw, w.bs, w.numjobs),
            ("writer", Rw::Write, 1 << 20, 5)
        );
        for j in &jobs {
            assert!(j.time_based && j.until_stopped() && j.auto_size && !j.direct);
            assert!(j.invalidate && j.size.is_none());
            assert!(j.validate().is_ok());
        }
    }

    #[test]
    fn random_pattern_applies_to_readers_only() {
        let jobs = generate(&lookup("5r5w-rand").unwrap());
        assert_eq!((jobs[0].rw, jobs[0].bs), (Rw::RandRead, 4096));
        assert_eq!((jobs[1].rw, jobs[1].bs), (Rw::Write, 1 << 20));
        let only_r = generate(&lookup("10r-rand").unwrap());
        assert_eq!(only_r.len(), 1);
        assert_eq!(only_r[0].numjobs, 10);
    }

    #[test]
    fn shorthand_any_counts() {
        let jobs = generate(&Shorthand {
            readers: 3,
            writers: 2,
            pattern: Pattern::Seq,
        });
        assert_eq!(jobs.iter().map(|j| j.numjobs).collect::<Vec<_>>(), [3, 2]);
        assert_eq!(Pattern::parse("rand"), Some(Pattern::Rand));
        assert_eq!(Pattern::parse("zigzag"), None);
    }
}
