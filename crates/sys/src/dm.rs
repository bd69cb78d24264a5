//! Device-mapper tables, as the kernel has them: the target types of a dm
//! device (`crypt`, `linear`, `default-key`, `verity`), read with the
//! DM_TABLE_STATUS ioctl on the control node — what `dmsetup status`
//! prints. sysfs names a dm device (`dm/name`, `dm/uuid`) but never says
//! what it does; the uuid's prefix is only a convention of the tool that
//! made it (cryptsetup, LVM), and Android's vold sets none. In status mode
//! (not table mode) no key of a crypt target is ever returned.

use std::os::fd::AsRawFd;

/// `struct dm_ioctl` of include/uapi/linux/dm-ioctl.h (312 bytes).
#[repr(C)]
struct DmIoctl {
    version: [u32; 3],
    data_size: u32,
    data_start: u32,
    target_count: u32,
    open_count: i32,
    flags: u32,
    event_nr: u32,
    padding: u32,
    dev: u64,
    name: [u8; 128],
    uuid: [u8; 129],
    data: [u8; 7],
}

/// `size_of::<DmIoctl>()` as the header's `data_start` (a u32) takes it.
const DM_IOCTL_LEN: u32 = 312;
const _: () = assert!(std::mem::size_of::<DmIoctl>() == DM_IOCTL_LEN as usize);

/// `struct dm_target_spec`: 40 bytes, then the target's status text.
const SPEC_LEN: usize = 40;
/// `_IOWR(0xfd, 12, struct dm_ioctl)`.
const DM_TABLE_STATUS: libc::c_ulong = (3 << 30) | (312 << 16) | (0xfd << 8) | 12;
/// The flag the kernel sets when the answer did not fit.
const DM_BUFFER_FULL_FLAG: u32 = 1 << 8;

/// The control node: `/dev/mapper/control`, or Android's.
const CONTROL: [&str; 2] = ["/dev/mapper/control", "/dev/device-mapper"];

/// Target types of dm device `major:minor`, in table order; `None` when
/// the control node cannot be opened (not root, no device-mapper) or the
/// kernel does not know the device.
pub fn target_types(major: u32, minor: u32) -> Option<Vec<String>> {
    let ctl = CONTROL.iter().find_map(|p| std::fs::File::open(p).ok())?;
    const SIZE: u32 = 16 << 10;
    // u64 words: the kernel writes u64 fields of the specs in place.
    let mut buf = vec![0u64; SIZE as usize / 8];
    let head = DmIoctl {
        version: [4, 0, 0],
        data_size: SIZE,
        data_start: DM_IOCTL_LEN,
        target_count: 0,
        open_count: 0,
        flags: 0,
        event_nr: 0,
        padding: 0,
        // huge_encode_dev: the device is found by number when no name or
        // uuid is given.
        dev: u64::from((minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)),
        name: [0; 128],
        uuid: [0; 129],
        data: [0; 7],
    };
    // SAFETY: the buffer is larger than the header and suitably aligned;
    // the header is plain data.
    unsafe { std::ptr::write(buf.as_mut_ptr().cast::<DmIoctl>(), head) };
    // SAFETY: DM_TABLE_STATUS reads and writes at most data_size bytes of
    // the buffer, which is exactly that long.
    let rc = unsafe { libc::ioctl(ctl.as_raw_fd(), DM_TABLE_STATUS as _, buf.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: the same buffer, as the kernel left it.
    let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), SIZE as usize) };
    parse_status(bytes)
}

/// The target types of a DM_TABLE_STATUS answer.
fn parse_status(bytes: &[u8]) -> Option<Vec<String>> {
    let u32_at = |o: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(bytes.get(o..o + 4)?.try_into().ok()?))
    };
    let (data_start, count, flags) = (u32_at(16)? as usize, u32_at(20)?, u32_at(28)?);
    if flags & DM_BUFFER_FULL_FLAG != 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut at = data_start;
    for _ in 0..count {
        let spec = bytes.get(at..at + SPEC_LEN)?;
        let ty = &spec[24..40];
        let end = ty.iter().position(|&b| b == 0).unwrap_or(ty.len());
        out.push(String::from_utf8_lossy(&ty[..end]).into_owned());
        // In a status answer `next` counts from the start of the data,
        // not from this spec (drivers/md/dm-ioctl.c, retrieve_status).
        let next = u32::from_ne_bytes(spec[20..24].try_into().ok()?) as usize;
        at = data_start + next;
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_the_kernels_size() {
        assert_eq!(std::mem::size_of::<DmIoctl>(), 312);
    }

    #[test]
    fn types_are_read_from_each_spec_in_turn() {
        // An answer as the kernel lays it out: header, then two specs
        // with their status text, `next` from the start of the data (the
        // last one's points past the end).
        let mut b = vec![0u8; 1024];
        b[16..20].copy_from_slice(&312u32.to_ne_bytes());
        b[20..24].copy_from_slice(&2u32.to_ne_bytes());
        let spec = |b: &mut Vec<u8>, at: usize, next: u32, ty: &str| {
            b[at + 20..at + 24].copy_from_slice(&next.to_ne_bytes());
            b[at + 24..at + 24 + ty.len()].copy_from_slice(ty.as_bytes());
        };
        spec(&mut b, 312, 48, "linear");
        spec(&mut b, 360, 96, "default-key");
        assert_eq!(parse_status(&b).unwrap(), ["linear", "default-key"]);
        b[28..32].copy_from_slice(&DM_BUFFER_FULL_FLAG.to_ne_bytes());
        assert_eq!(parse_status(&b), None);
    }
}
