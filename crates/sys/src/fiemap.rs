//! Where a file's bytes are on its device: the FS_IOC_FIEMAP ioctl
//! (Documentation/filesystems/fiemap.rst), as `filefrag -v` shows them.
//! For a prefetch in disk order and to measure what a relayout changed.

use std::os::fd::AsRawFd;
use std::path::Path;

use crate::SysError;

/// One extent: `length` bytes at `logical` in the file, at `physical`
/// on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Extent {
    /// Offset in the file, bytes.
    pub logical: u64,
    /// Offset on the device, bytes.
    pub physical: u64,
    /// Length, bytes.
    pub length: u64,
    /// FIEMAP_EXTENT_* flags.
    pub flags: u32,
}

/// FIEMAP_EXTENT_UNKNOWN: no physical location (e.g. delayed allocation).
pub const EXTENT_UNKNOWN: u32 = 0x2;
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_FLAG_SYNC: u32 = 0x1;
/// Extents asked for per call (`fm_extent_count`, a u32).
const BATCH: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

#[repr(C)]
struct Request {
    start: u64,
    length: u64,
    flags: u32,
    mapped: u32,
    count: u32,
    reserved: u32,
    extents: [RawExtent; BATCH as usize],
}

const LAST: u32 = 0x1;

/// Every extent of `path` (its dirty pages written first), in file order.
pub fn extents(path: &Path) -> Result<Vec<Extent>, SysError> {
    let f = std::fs::File::open(path).map_err(|e| SysError::io(path, e))?;
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        let mut req = Request {
            start,
            length: u64::MAX - start,
            flags: FIEMAP_FLAG_SYNC,
            mapped: 0,
            count: BATCH,
            reserved: 0,
            extents: [RawExtent::default(); BATCH as usize],
        };
        // SAFETY: `req` is a struct fiemap followed by room for BATCH
        // extents, as fm_extent_count says.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP, &mut req) };
        if rc != 0 {
            return Err(SysError::io(path, std::io::Error::last_os_error()));
        }
        let got = &req.extents[..req.mapped as usize];
        for e in got {
            out.push(Extent {
                logical: e.logical,
                physical: e.physical,
                length: e.length,
                flags: e.flags,
            });
        }
        match got.last() {
            Some(e) if e.flags & LAST == 0 => start = e.logical + e.length,
            _ => return Ok(out),
        }
    }
}

/// The device offset of byte `offset` of a file with `extents`, if it is
/// mapped.
pub fn physical_of(extents: &[Extent], offset: u64) -> Option<u64> {
    extents
        .iter()
        .find(|e| {
            offset >= e.logical && offset < e.logical + e.length && e.flags & EXTENT_UNKNOWN == 0
        })
        .map(|e| e.physical + (offset - e.logical))
}

/// Extents after merging those that continue one another on the device
/// (what a reader sees as one run): `filefrag`'s "extents found".
pub fn fragments(extents: &[Extent]) -> usize {
    let mut n = 0;
    let mut end = None;
    for e in extents {
        if end != Some(e.physical) {
            n += 1;
        }
        end = Some(e.physical + e.length);
    }
    n
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_maps_its_bytes_and_agrees_with_filefrag() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
        let ex = match extents(&p) {
            Ok(e) => e,
            // tmpfs and some others have no FIEMAP: nothing to check.
            Err(e) if e.to_string().contains("not supported") => {
                eprintln!("skip: /var/tmp has no FIEMAP here: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let mapped: u64 = ex.iter().map(|e| e.length).sum();
        assert!(mapped >= 1 << 20, "{ex:?}");
        assert!(physical_of(&ex, 0).is_some());
        // filefrag (e2fsprogs), where installed, counts the same.
        if let Ok(out) = std::process::Command::new("filefrag").arg(&p).output() {
            let text = String::from_utf8_lossy(&out.stdout);
            if let Some(n) = text.split(": ").nth(1).and_then(|t| t.split(' ').next()) {
                assert_eq!(n.parse::<usize>().unwrap(), fragments(&ex), "{text}");
            }
        }
    }

    #[test]
    fn fragments_merge_extents_that_continue_on_the_device() {
        let e = |l, p, n| Extent {
            logical: l,
            physical: p,
            length: n,
            flags: 0,
        };
        assert_eq!(
            fragments(&[e(0, 100, 10), e(10, 110, 10), e(20, 500, 5)]),
            2
        );
        assert_eq!(physical_of(&[e(0, 100, 10), e(10, 500, 10)], 12), Some(502));
        assert_eq!(physical_of(&[e(0, 100, 10)], 10), None);
    }
}
