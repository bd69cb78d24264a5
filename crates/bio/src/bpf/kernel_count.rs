//! The kernel's own count of each traced disk's completed requests
//! (/proc/diskstats) beside what the programs counted: the check that
//! finds completions the programs were never run for.
//!
//! The kernel counts a program's skipped runs only when it skips them for
//! recursion ([`iolab_trace::bpf::skipped_runs`]). Measured here (6.18,
//! x86-64), an attached raw-tracepoint program is sometimes not run for a
//! block_rq_complete while another process loads or unloads BPF programs,
//! and nothing counts it: 5 of 150 loop traces missed 1–4 completions
//! beside bpftrace start-ups, 1 of 60 beside `bpftool prog load`, 1 of 40
//! beside another test's collector; 0 of 60 under CPU load alone. The
//! disk's counters are read after the programs are attached and before
//! they are detached, so every completion they count happened while the
//! programs were there: the programs can fall short of them only by the
//! requests already in flight at the start (completed, but issued before
//! the programs saw them). What the other counters already explain (a
//! completion the programs ran for and could not match, a request the
//! table had no room for, a run the kernel said it skipped) is not
//! counted again: only the rest is a completion missed, counted as lost.
//!
//! The programs' operations are set beside the kernel's stat groups so
//! that no class can make a shortfall out of nothing: an operation whose
//! group the letter does not tell (`N`: zone operations are reads,
//! write-zeroes and zone appends writes, passthrough neither; `D`: a
//! discard or a secure erase, which counts as a write) is counted on
//! every side it could be on. A stacked bio-based device (device-mapper,
//! md) is not checked: it accounts a bio split at a target's boundary
//! once per piece, while block_bio_complete fires once for the bio.

use iolab_sys::diskstats::{self, DiskStat};
use serde::{Deserialize, Serialize};

use crate::disks::Disk;

/// One disk's completions: the kernel's and the programs'.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskCount {
    /// The disk (its partitions' requests included).
    pub disk: String,
    /// Reads and writes /proc/diskstats counted while the programs were
    /// attached.
    pub diskstats_reads: u64,
    /// …
    pub diskstats_writes: u64,
    /// Reads and writes the programs counted (an operation whose group is
    /// not known, on both sides).
    pub counted_reads: u64,
    /// …
    pub counted_writes: u64,
    /// Requests in flight when the kernel's count was first read: their
    /// completions may be the kernel's alone.
    pub in_flight_at_start: u64,
    /// The kernel's completions beyond the programs' count and
    /// `in_flight_at_start`.
    pub shortfall: u64,
}

/// The check over the traced disks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskstatsCheck {
    /// Per disk checked.
    pub disks: Vec<DiskCount>,
    /// Their shortfalls, summed.
    pub shortfall: u64,
    /// What the programs' own counters explain of it (unmatched
    /// completions, requests not tracked, records with no room, runs
    /// the kernel said it skipped).
    pub explained: u64,
    /// The rest: completions the programs were never run for, which
    /// nothing else counts. Counted in `lost_events`.
    pub missed: u64,
    /// Disks not checked, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_checked: Vec<String>,
}

/// The disks' counters when the programs were attached: each checked
/// disk's, or why it is not checked.
pub(crate) struct KernelCount {
    at_start: Vec<(String, Result<DiskStat, String>)>,
}

/// The disks' counters before the programs were detached.
pub(crate) struct AtEnd(Vec<Result<DiskStat, String>>);

/// `disks`' lines of one read of /proc/diskstats.
fn read<'a>(disks: impl Iterator<Item = &'a str>) -> Vec<Result<DiskStat, String>> {
    let all = std::fs::read_to_string("/proc/diskstats")
        .map(|t| diskstats::parse(&t))
        .map_err(|e| format!("reading /proc/diskstats: {e}"));
    disks
        .map(|disk| match &all {
            Ok(all) => all
                .iter()
                .find(|s| s.name == disk)
                .cloned()
                .ok_or_else(|| format!("{disk}: not in /proc/diskstats")),
            Err(why) => Err(format!("{disk}: {why}")),
        })
        .collect()
}

/// Whether /proc/diskstats counts `disk`'s requests as the programs see
/// them: a request-based disk's requests, or a bio-based disk's bios
/// where the driver takes each bio whole (zram, brd).
fn countable(disk: &Disk) -> Result<(), String> {
    if !disk.bio_based || ["zram", "ram"].iter().any(|p| disk.name.starts_with(p)) {
        Ok(())
    } else {
        Err(format!(
            "{}: a stacked bio-based device accounts a split bio once per piece",
            disk.name
        ))
    }
}

impl KernelCount {
    /// Reads the disks' counters (call after the programs are attached).
    pub(crate) fn start(disks: &[Disk]) -> KernelCount {
        let stats = read(disks.iter().map(|d| d.name.as_str()));
        KernelCount {
            at_start: disks
                .iter()
                .zip(stats)
                .map(|(d, s)| (d.name.clone(), countable(d).and(s)))
                .collect(),
        }
    }

    /// Reads them again: call before the programs are detached.
    pub(crate) fn end(&self) -> AtEnd {
        let stats = read(self.at_start.iter().map(|(name, _)| name.as_str()));
        AtEnd(
            self.at_start
                .iter()
                .zip(stats)
                .map(|((_, s), e)| match s {
                    Ok(_) => e,
                    Err(why) => Err(why.clone()),
                })
                .collect(),
        )
    }

    /// The counters' movement beside `counted(disk)`: the programs'
    /// (reads, writes) by the kernel's stat groups; `explained`: the
    /// losses the programs' counters already hold.
    pub(crate) fn check(
        &self,
        end: AtEnd,
        counted: &dyn Fn(&str) -> (u64, u64),
        explained: u64,
    ) -> DiskstatsCheck {
        let mut disks = Vec::new();
        let mut not_checked = Vec::new();
        for ((name, s), e) in self.at_start.iter().zip(end.0) {
            let (s, e) = match (s, e) {
                (Ok(s), Ok(e)) => (s, e),
                (Err(why), _) => {
                    not_checked.push(why.clone());
                    continue;
                }
                (Ok(_), Err(why)) => {
                    not_checked.push(why);
                    continue;
                }
            };
            let d = e.since(s);
            let (r, w) = counted(name);
            disks.push(DiskCount {
                disk: name.clone(),
                diskstats_reads: d.reads,
                diskstats_writes: d.writes,
                counted_reads: r,
                counted_writes: w,
                in_flight_at_start: s.in_flight,
                shortfall: shortfall(d.reads, d.writes, r, w, s.in_flight),
            });
        }
        let short: u64 = disks.iter().map(|d| d.shortfall).sum();
        DiskstatsCheck {
            disks,
            shortfall: short,
            explained,
            missed: short.saturating_sub(explained),
            not_checked,
        }
    }
}

/// A completed request's place in the kernel's stat groups (blk_types.h
/// op_stat_group), by the programs' operation letter: (read, write).
pub(crate) fn groups(op: char) -> (bool, bool) {
    match op {
        'R' => (true, false),
        'W' | 'D' => (false, true),
        'F' => (false, false),
        _ => (true, true),
    }
}

/// What the kernel completed that the programs did not count, beyond the
/// requests in flight at the start. Counted more than the kernel (a
/// completion after its counters' last read) is no shortfall.
fn shortfall(ds_r: u64, ds_w: u64, r: u64, w: u64, in_flight: u64) -> u64 {
    (ds_r.saturating_sub(r) + ds_w.saturating_sub(w)).saturating_sub(in_flight)
}

#[cfg(test)]
mod tests {
    use super::{groups, shortfall};

    #[test]
    fn only_a_shortfall_beyond_the_requests_in_flight_is_missed() {
        // The CI case: diskstats 208 reads, the programs 207, none in
        // flight when they were attached.
        assert_eq!(shortfall(208, 35, 207, 35, 0), 1);
        // One in flight at the start: its completion may be unmatched.
        assert_eq!(shortfall(208, 35, 207, 35, 1), 0);
        // More counted than diskstats saw (a completion after its last
        // read) does not hide a shortfall in the other direction.
        assert_eq!(shortfall(208, 35, 210, 33, 0), 2);
        assert_eq!(shortfall(0, 0, 5, 5, 0), 0);
    }

    #[test]
    fn an_operation_of_an_unknown_group_counts_on_both_sides() {
        assert_eq!(groups('R'), (true, false));
        assert_eq!(groups('W'), (false, true));
        // A secure erase is a write to the kernel; a discard is neither,
        // so counting it as one can only hide a shortfall, never make one.
        assert_eq!(groups('D'), (false, true));
        assert_eq!(groups('F'), (false, false));
        assert_eq!(groups('N'), (true, true));
    }
}
