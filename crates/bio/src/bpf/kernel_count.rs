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
//! the programs saw them). Any shortfall beyond that is a completion
//! missed, counted as lost.

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
    /// Reads and writes the programs counted.
    pub counted_reads: u64,
    /// …
    pub counted_writes: u64,
    /// Requests in flight when the kernel's count was first read: their
    /// completions may be the kernel's alone.
    pub in_flight_at_start: u64,
    /// Completions the kernel counted that the programs cannot have seen:
    /// the shortfall beyond `in_flight_at_start`.
    pub missed: u64,
}

/// The check over every traced disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskstatsCheck {
    /// Per disk.
    pub disks: Vec<DiskCount>,
    /// Their `missed`, summed: counted in `lost_events` too.
    pub missed: u64,
    /// Why the check could not be made (a disk gone from /proc/diskstats,
    /// the file unreadable): then `missed` is 0 and unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The disks' counters when the programs were attached.
pub(crate) struct KernelCount {
    at_start: Result<Vec<DiskStat>, String>,
}

/// The disks' counters before the programs were detached.
pub(crate) struct AtEnd(Result<Vec<DiskStat>, String>);

fn read(disks: &[String]) -> Result<Vec<DiskStat>, String> {
    let path = std::path::Path::new("/proc");
    disks
        .iter()
        .map(|d| match diskstats::read_device(path, d) {
            Ok(Some(s)) => Ok(s),
            Ok(None) => Err(format!("{d} is not in /proc/diskstats")),
            Err(e) => Err(format!("reading /proc/diskstats: {e}")),
        })
        .collect()
}

impl KernelCount {
    /// Reads the disks' counters (call after the programs are attached).
    pub(crate) fn start(disks: &[Disk]) -> KernelCount {
        let names: Vec<String> = disks.iter().map(|d| d.name.clone()).collect();
        KernelCount {
            at_start: read(&names),
        }
    }

    /// Reads them again: call before the programs are detached.
    pub(crate) fn end(&self) -> AtEnd {
        AtEnd(match &self.at_start {
            Ok(s) => read(&s.iter().map(|s| s.name.clone()).collect::<Vec<_>>()),
            Err(why) => Err(why.clone()),
        })
    }

    /// The counters' movement beside `counted(disk)`: the programs'
    /// (reads, writes), where writes are every operation the kernel
    /// counts as one (a write, write-zeroes, a zone append).
    pub(crate) fn check(&self, end: AtEnd, counted: &dyn Fn(&str) -> (u64, u64)) -> DiskstatsCheck {
        let unavailable = |why: String| DiskstatsCheck {
            disks: Vec::new(),
            missed: 0,
            unavailable: Some(why),
        };
        let (start, end) = match (&self.at_start, end.0) {
            (Ok(s), Ok(e)) => (s, e),
            (Err(why), _) => return unavailable(why.clone()),
            (_, Err(why)) => return unavailable(why),
        };
        let disks: Vec<DiskCount> = start
            .iter()
            .zip(&end)
            .map(|(s, e)| {
                let d = e.since(s);
                let (r, w) = counted(&s.name);
                DiskCount {
                    disk: s.name.clone(),
                    diskstats_reads: d.reads,
                    diskstats_writes: d.writes,
                    counted_reads: r,
                    counted_writes: w,
                    in_flight_at_start: s.in_flight,
                    missed: shortfall(d.reads, d.writes, r, w, s.in_flight),
                }
            })
            .collect();
        DiskstatsCheck {
            missed: disks.iter().map(|d| d.missed).sum(),
            disks,
            unavailable: None,
        }
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
    use super::shortfall;

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
}
