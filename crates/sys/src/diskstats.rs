//! `/proc/diskstats`, field by field as in the kernel's
//! Documentation/admin-guide/iostats.rst. Counters are raw samples; rates are
//! derived by subtracting two samples.

use std::path::Path;

use crate::error::read_trimmed;
use crate::SysError;

/// One device's counters at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskStat {
    /// Kernel name.
    pub name: String,
    /// Reads completed.
    pub reads: u64,
    /// Reads merged.
    pub reads_merged: u64,
    /// Sectors (512 B) read.
    pub sectors_read: u64,
    /// Milliseconds spent reading.
    pub read_ms: u64,
    /// Writes completed.
    pub writes: u64,
    /// Writes merged.
    pub writes_merged: u64,
    /// Sectors (512 B) written.
    pub sectors_written: u64,
    /// Milliseconds spent writing.
    pub write_ms: u64,
    /// I/Os currently in flight.
    pub in_flight: u64,
    /// Milliseconds with at least one I/O in flight.
    pub io_ms: u64,
    /// Weighted milliseconds doing I/O.
    pub weighted_io_ms: u64,
}

impl DiskStat {
    /// Bytes read.
    pub fn read_bytes(&self) -> u64 {
        self.sectors_read * 512
    }
    /// Bytes written.
    pub fn write_bytes(&self) -> u64 {
        self.sectors_written * 512
    }
    /// Counter differences `self - earlier` (saturating: a device re-created
    /// between samples restarts its counters).
    pub fn since(&self, earlier: &DiskStat) -> DiskStat {
        DiskStat {
            name: self.name.clone(),
            reads: self.reads.saturating_sub(earlier.reads),
            reads_merged: self.reads_merged.saturating_sub(earlier.reads_merged),
            sectors_read: self.sectors_read.saturating_sub(earlier.sectors_read),
            read_ms: self.read_ms.saturating_sub(earlier.read_ms),
            writes: self.writes.saturating_sub(earlier.writes),
            writes_merged: self.writes_merged.saturating_sub(earlier.writes_merged),
            sectors_written: self.sectors_written.saturating_sub(earlier.sectors_written),
            write_ms: self.write_ms.saturating_sub(earlier.write_ms),
            in_flight: self.in_flight,
            io_ms: self.io_ms.saturating_sub(earlier.io_ms),
            weighted_io_ms: self.weighted_io_ms.saturating_sub(earlier.weighted_io_ms),
        }
    }
}

/// Parses the whole file.
pub fn parse(text: &str) -> Vec<DiskStat> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<DiskStat> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 14 {
        return None;
    }
    let n = |i: usize| f[i].parse::<u64>().ok();
    Some(DiskStat {
        name: f[2].to_string(),
        reads: n(3)?,
        reads_merged: n(4)?,
        sectors_read: n(5)?,
        read_ms: n(6)?,
        writes: n(7)?,
        writes_merged: n(8)?,
        sectors_written: n(9)?,
        write_ms: n(10)?,
        in_flight: n(11)?,
        io_ms: n(12)?,
        weighted_io_ms: n(13)?,
    })
}

/// The counters of several devices added up (the disks under one
/// filesystem), named `a+b`; `None` when any of them is missing.
pub fn read_sum(proc_root: &Path, names: &[&str]) -> Result<Option<DiskStat>, SysError> {
    let text = read_trimmed(&proc_root.join("diskstats"))?;
    let all = parse(&text);
    let mut sum: Option<DiskStat> = None;
    for name in names {
        let Some(d) = all.iter().find(|d| d.name == *name) else {
            return Ok(None);
        };
        sum = Some(match sum {
            None => d.clone(),
            Some(s) => DiskStat {
                name: format!("{}+{}", s.name, d.name),
                reads: s.reads + d.reads,
                reads_merged: s.reads_merged + d.reads_merged,
                sectors_read: s.sectors_read + d.sectors_read,
                read_ms: s.read_ms + d.read_ms,
                writes: s.writes + d.writes,
                writes_merged: s.writes_merged + d.writes_merged,
                sectors_written: s.sectors_written + d.sectors_written,
                write_ms: s.write_ms + d.write_ms,
                in_flight: s.in_flight + d.in_flight,
                io_ms: s.io_ms.max(d.io_ms),
                weighted_io_ms: s.weighted_io_ms + d.weighted_io_ms,
            },
        });
    }
    Ok(sum)
}

/// Reads one device's counters from `<proc>/diskstats`.
pub fn read_device(proc_root: &Path, name: &str) -> Result<Option<DiskStat>, SysError> {
    let text = read_trimmed(&proc_root.join("diskstats"))?;
    Ok(parse(&text).into_iter().find(|d| d.name == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = " 253       0 vda 1000 10 80000 500 2000 20 160000 900 0 1200 1400 0 0 0 0 5 6\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    #[test]
    fn parses_fields() {
        let v = parse(SAMPLE);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name, "vda");
        assert_eq!(v[0].read_bytes(), 80000 * 512);
        assert_eq!(v[0].writes, 2000);
        assert_eq!(v[0].weighted_io_ms, 1400);
    }

    #[test]
    fn difference() {
        let a = parse(SAMPLE).remove(0);
        let mut b = a.clone();
        b.sectors_read += 8;
        assert_eq!(b.since(&a).read_bytes(), 4096);
        assert_eq!(a.since(&b).sectors_read, 0);
    }
}
