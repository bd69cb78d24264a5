//! Zoned block devices as the kernel reports them: the zoned model
//! (`queue/zoned`), the open-zone limit (`queue/max_open_zones`) and the
//! zones themselves with their write pointers (the BLKREPORTZONE ioctl,
//! include/uapi/linux/blkzoned.h) — what util-linux's `blkzone report`
//! prints. [`reset`] is here only because it is the same ioctl family:
//! resetting a zone discards its data, a write that only `iolab load`
//! with zonemode=zbd makes, on a device the user named for writing.

use std::os::fd::AsRawFd;

use crate::block::BlockDev;

/// How a block device takes writes (`queue/zoned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Not zoned.
    None,
    /// Zones with write pointers that also take random writes.
    HostAware,
    /// Sequential-write-required zones: a write not at the zone's write
    /// pointer fails.
    HostManaged,
}

impl Model {
    /// A device's model; `None` for a value this kernel does not name
    /// (a newer kernel's, reported by the caller as an error).
    pub fn of(dev: &BlockDev) -> Result<Model, String> {
        let v = dev
            .queue_attr("zoned")
            .map_err(|e| format!("{}: cannot read queue/zoned: {e}", dev.name))?;
        match v.as_str() {
            "none" => Ok(Model::None),
            "host-aware" => Ok(Model::HostAware),
            "host-managed" => Ok(Model::HostManaged),
            other => Err(format!(
                "{}: queue/zoned says {other:?}, which is none of none, host-aware, host-managed",
                dev.name
            )),
        }
    }

    /// The kernel's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Model::None => "none",
            Model::HostAware => "host-aware",
            Model::HostManaged => "host-managed",
        }
    }
}

/// The device's open-zone limit (`queue/max_open_zones`; 0 = none, and
/// absent on kernels before 5.9, which read as 0).
pub fn max_open_zones(dev: &BlockDev) -> u32 {
    dev.queue_attr("max_open_zones")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `BLK_ZONE_TYPE_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneType {
    /// No write pointer: written anywhere.
    Conventional,
    /// Sequential write required.
    SeqRequired,
    /// Sequential write preferred (host-aware).
    SeqPreferred,
}

/// `BLK_ZONE_COND_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    /// A conventional zone.
    NotWp,
    /// Nothing written.
    Empty,
    /// Opened by a write.
    ImplicitOpen,
    /// Opened by BLKOPENZONE.
    ExplicitOpen,
    /// Written to, not open.
    Closed,
    /// Read-only.
    ReadOnly,
    /// Written to its capacity.
    Full,
    /// Not usable.
    Offline,
}

/// One zone, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    /// Where it starts.
    pub start: u64,
    /// Its length (the zone size).
    pub len: u64,
    /// Where the next write must go.
    pub wp: u64,
    /// What can be written of it (`len` unless the device says less).
    pub capacity: u64,
    /// Its type.
    pub kind: ZoneType,
    /// Its condition.
    pub cond: Cond,
}

/// `struct blk_zone` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct BlkZone {
    start: u64,
    len: u64,
    wp: u64,
    kind: u8,
    cond: u8,
    non_seq: u8,
    reset: u8,
    resv: [u8; 4],
    capacity: u64,
    reserved: [u8; 24],
}

/// `BLK_ZONE_REP_CAPACITY`: the report's capacity fields are valid.
const REP_CAPACITY: u32 = 1;

/// Zones of `fd` (a zoned block device) from byte `from`, at most `max`.
pub fn report(fd: &impl AsRawFd, from: u64, max: u32) -> std::io::Result<Vec<Zone>> {
    let n = max.clamp(1, 4096) as usize;
    // u64 words hold the 16-byte header then the zones, aligned.
    let words = 2 + n * 8;
    let mut buf = vec![0u64; words];
    buf[0] = from >> 9;
    buf[1] = n as u64; // nr_zones (low u32), flags 0 (high u32)
                       // SAFETY: BLKREPORTZONE reads the header and writes at most nr_zones
                       // `struct blk_zone` after it, all inside the buffer.
    let rc = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            linux_raw_sys::ioctl::BLKREPORTZONE as _,
            buf.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let got = (buf[1] & 0xffff_ffff) as usize;
    let flags = (buf[1] >> 32) as u32;
    let mut out = Vec::with_capacity(got.min(n));
    for i in 0..got.min(n) {
        // SAFETY: zone i lies inside the buffer (i < n) and the kernel
        // filled it; BlkZone is plain data of 64 bytes, 8-aligned.
        let z: BlkZone = unsafe { std::ptr::read(buf.as_ptr().add(2 + i * 8).cast::<BlkZone>()) };
        let kind = match z.kind {
            1 => ZoneType::Conventional,
            2 => ZoneType::SeqRequired,
            3 => ZoneType::SeqPreferred,
            k => {
                return Err(std::io::Error::other(format!(
                    "zone at sector {} has type {k}, unknown to iolab",
                    z.start
                )))
            }
        };
        let cond = match z.cond {
            0x0 => Cond::NotWp,
            0x1 => Cond::Empty,
            0x2 => Cond::ImplicitOpen,
            0x3 => Cond::ExplicitOpen,
            0x4 => Cond::Closed,
            0xd => Cond::ReadOnly,
            0xe => Cond::Full,
            0xf => Cond::Offline,
            c => {
                return Err(std::io::Error::other(format!(
                    "zone at sector {} has condition {c:#x}, unknown to iolab",
                    z.start
                )))
            }
        };
        let capacity = if flags & REP_CAPACITY != 0 {
            z.capacity
        } else {
            z.len
        };
        out.push(Zone {
            start: z.start << 9,
            len: z.len << 9,
            wp: z.wp << 9,
            capacity: capacity << 9,
            kind,
            cond,
        });
    }
    Ok(out)
}

/// Every zone of `fd`, `size` bytes long.
pub fn report_all(fd: &impl AsRawFd, size: u64) -> std::io::Result<Vec<Zone>> {
    let mut all = Vec::new();
    let mut at = 0;
    while at < size {
        let part = report(fd, at, 4096)?;
        let Some(last) = part.last() else {
            return Err(std::io::Error::other(format!(
                "the zone report from sector {} is empty",
                at >> 9
            )));
        };
        at = last.start + last.len;
        all.extend(part);
    }
    Ok(all)
}

/// Resets the write pointers of the zones in `[start, start + len)`
/// (BLKRESETZONE): their data is gone.
pub fn reset(fd: &impl AsRawFd, start: u64, len: u64) -> std::io::Result<()> {
    let range: [u64; 2] = [start >> 9, len >> 9];
    // SAFETY: BLKRESETZONE reads a struct blk_zone_range (two u64) from a
    // live array.
    let r = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            linux_raw_sys::ioctl::BLKRESETZONE as _,
            range.as_ptr(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn blk_zone_is_the_kernels_64_bytes() {
        assert_eq!(std::mem::size_of::<super::BlkZone>(), 64);
    }
}
