//! The block devices behind the files of a prefetch: their readahead window
//! (how much one readahead call may read), their /proc/diskstats counters
//! (what the prefetch really read from them) and in-flight count (whether
//! the reads have finished).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use iolab_sys::block::BlockDev;
use iolab_sys::diskstats::{self, DiskStat};

use super::fetch::DEFAULT_WINDOW;
use crate::CacheError;

/// The whole disk holding the filesystem with device number `dev`
/// (`st_dev`), if it is a block device (not tmpfs, not a btrfs anonymous
/// device). Cached per device number.
pub fn disk_of(dev: u64) -> Option<BlockDev> {
    static CACHE: Mutex<Option<HashMap<u64, Option<BlockDev>>>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    cache
        .get_or_insert_with(HashMap::new)
        .entry(dev)
        .or_insert_with(|| {
            let (maj, min) = (libc::major(dev), libc::minor(dev));
            if maj == 0 {
                return None;
            }
            BlockDev::from_devno(maj, min).ok()
        })
        .clone()
}

/// The disks holding `paths` (deduplicated, in first-seen order); files
/// that cannot be stat'ed or live on no block device are left out.
pub fn disks_of<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Vec<BlockDev> {
    let mut out: Vec<BlockDev> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for p in paths {
        let Ok(st) = rustix::fs::stat(p) else {
            continue;
        };
        if !seen.insert(st.st_dev) {
            continue;
        }
        if let Some(d) = disk_of(st.st_dev) {
            if !out.iter().any(|o| o.name == d.name) {
                out.push(d);
            }
        }
    }
    out
}

/// The most one readahead(2)/WILLNEED call reads on `dev`:
/// max(read_ahead_kb, max_sectors_kb), as mm/readahead.c caps it.
pub fn readahead_window(dev: u64) -> u64 {
    let Some(d) = disk_of(dev) else {
        return DEFAULT_WINDOW;
    };
    let kb = |attr: &str| {
        d.queue_attr(attr)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let w = kb("read_ahead_kb").max(kb("max_sectors_kb")) * 1024;
    if w == 0 {
        DEFAULT_WINDOW
    } else {
        w
    }
}

/// Counters of `names` now, from `<proc>/diskstats` (missing devices are
/// left out). An unreadable file is an error: the device traffic would
/// otherwise read as none.
pub fn snapshot(proc_root: &Path, names: &[String]) -> Result<Vec<DiskStat>, CacheError> {
    let path = proc_root.join("diskstats");
    let text = std::fs::read_to_string(&path).map_err(|e| CacheError::io(&path, e))?;
    Ok(diskstats::parse(&text)
        .into_iter()
        .filter(|d| names.contains(&d.name))
        .collect())
}

/// What one device did between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceDelta {
    /// Kernel name (`vda`, `loop3`).
    pub device: String,
    /// Bytes read from it in the interval (by anyone: the device cannot
    /// tell whose reads they were).
    pub read_bytes: u64,
    /// Every /proc/diskstats counter's difference (in_flight: at the end).
    pub diskstats: DiskStat,
}

/// Differences `after - before` per device present in both.
pub fn deltas(before: &[DiskStat], after: &[DiskStat]) -> Vec<DeviceDelta> {
    after
        .iter()
        .filter_map(|a| {
            let b = before.iter().find(|b| b.name == a.name)?;
            let d = a.since(b);
            Some(DeviceDelta {
                device: a.name.clone(),
                read_bytes: d.read_bytes(),
                diskstats: d,
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn deltas_from_fixture_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let line = |sectors: u64| {
            format!(
                " 253 0 vda 10 0 {sectors} 5 0 0 0 0 0 7 9\n   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n"
            )
        };
        std::fs::write(dir.path().join("diskstats"), line(100)).unwrap();
        let a = snapshot(dir.path(), &["vda".into()]).unwrap();
        std::fs::write(dir.path().join("diskstats"), line(164)).unwrap();
        let b = snapshot(dir.path(), &["vda".into()]).unwrap();
        let d = deltas(&a, &b);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].read_bytes, 64 * 512);
    }

    #[test]
    fn tmpfs_like_devices_have_no_disk() {
        assert!(disk_of(libc::makedev(0, 42)).is_none());
        assert_eq!(readahead_window(libc::makedev(0, 42)), DEFAULT_WINDOW);
    }
}
