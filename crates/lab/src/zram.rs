//! zram labs: a RAM-speed block device for engine and tracer benchmarks,
//! where the storage must not be the bottleneck. zram is bio-based: it has
//! no request queue, so no I/O scheduler, queue depth or throttle applies
//! (`LabSpec::validate` refuses those combinations).

use std::path::Path;

use serde::Serialize;

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use iolab_sys::units::format_bytes;

use crate::LabError;

/// Hot-adds a zram device of `size_bytes` after checking that the memory
/// exists to fill it: benchmarks write incompressible data, and a zram
/// device larger than free memory would push the machine into reclaim or
/// the OOM killer instead of measuring anything.
pub(crate) fn make(guard: &Guard, size_bytes: u64) -> Result<BlockDev, LabError> {
    if let Some(avail) = mem_available(Path::new("/proc/meminfo")) {
        if size_bytes > avail {
            return Err(LabError::usage(format!(
                "a {} zram device does not fit in memory ({} available): use a smaller --size",
                format_bytes(size_bytes),
                format_bytes(avail)
            )));
        }
    }
    Ok(guard.add_zram(size_bytes, None)?)
}

/// `MemAvailable` from a meminfo file (`/proc/meminfo`), in bytes: how
/// much a RAM-backed lab (zram, a tmpfs image) may take.
pub fn mem_available(meminfo: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(meminfo).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What a zram device holds, from `comp_algorithm` and `mm_stat`
/// (Documentation/admin-guide/blockdev/zram.rst).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ZramStatus {
    /// Compression algorithm in use.
    pub comp_algorithm: String,
    /// Uncompressed bytes stored.
    pub orig_data_size: u64,
    /// Compressed bytes stored.
    pub compr_data_size: u64,
    /// Memory used, allocator overhead included.
    pub mem_used_total: u64,
}

/// Reads a zram device's state; `None` when it is not a zram device.
pub fn status(dev: &BlockDev) -> Option<ZramStatus> {
    let alg = std::fs::read_to_string(dev.sysfs.join("comp_algorithm")).ok()?;
    let mm = std::fs::read_to_string(dev.sysfs.join("mm_stat")).ok()?;
    parse(&alg, &mm)
}

fn parse(alg: &str, mm_stat: &str) -> Option<ZramStatus> {
    let current = iolab_sys::block::parse_schedulers(alg.trim())
        .map(|s| s.current)
        .unwrap_or_else(|| alg.trim().to_string());
    let f: Vec<u64> = mm_stat
        .split_whitespace()
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    Some(ZramStatus {
        comp_algorithm: current,
        orig_data_size: *f.first()?,
        compr_data_size: *f.get(1)?,
        mem_used_total: *f.get(2)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_mm_stat_and_the_bracketed_algorithm() {
        let z = parse("[lzo-rle] lzo lz4\n", "4096 74 12288 0 12288 0 0 0 0\n").unwrap();
        assert_eq!(z.comp_algorithm, "lzo-rle");
        assert_eq!(z.orig_data_size, 4096);
        assert_eq!(z.compr_data_size, 74);
        assert_eq!(z.mem_used_total, 12288);
        assert!(parse("lz4", "x y").is_none());
    }

    #[test]
    fn reads_mem_available() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("meminfo");
        std::fs::write(&p, "MemTotal: 100 kB\nMemAvailable:    2048 kB\n").unwrap();
        assert_eq!(mem_available(&p), Some(2 << 20));
        assert!(mem_available(Path::new("/proc/meminfo")).unwrap() > 0);
    }
}
