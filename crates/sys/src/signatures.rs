//! iolab's own probe of the signatures a device about to be written must
//! not hold: the superblocks and headers libblkid (`blkid -p`) looks for
//! first, at the offsets util-linux's libblkid/src/superblocks/*.c and
//! partitions/*.c read them. It is what stands between iolab and a phone's
//! or a container's data where util-linux is absent (Android's blkid is
//! toybox's, with no low-level probe); where util-linux is present, its
//! probe runs as well (see [`crate::device_safety`]).

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What was found: libblkid's TYPE (or PTTYPE for a partition table) name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `ext4`, `LVM2_member`, `gpt`, ... as blkid names it.
    pub name: &'static str,
    /// True for a partition table (blkid's PTTYPE), false for TYPE.
    pub table: bool,
}

/// Bytes read from the start of the device: every signature below bar
/// md's 0.90/1.0 superblocks (at the end) lies within them.
const HEAD: usize = 256 << 10;

/// Probes the device or image at `path`.
pub fn probe(path: &Path) -> std::io::Result<Option<Found>> {
    let f = std::fs::File::open(path)?;
    let size = device_size(&f)?;
    let mut head = Vec::with_capacity(HEAD);
    (&f).take(HEAD as u64).read_to_end(&mut head)?;
    if let Some(found) = probe_head(&head) {
        return Ok(Some(found));
    }
    // md 0.90 and 1.0 keep their superblock at the end.
    for at in md_end_offsets(size) {
        let mut b = [0u8; 4];
        if f.read_exact_at(&mut b, at).is_ok() && u32::from_le_bytes(b) == MD_MAGIC {
            return Ok(Some(typ("linux_raid_member")));
        }
    }
    Ok(None)
}

/// The size of a block device (BLKGETSIZE64) or of a file.
fn device_size(f: &std::fs::File) -> std::io::Result<u64> {
    let meta = f.metadata()?;
    use std::os::unix::fs::FileTypeExt;
    if !meta.file_type().is_block_device() {
        return Ok(meta.len());
    }
    let mut size: u64 = 0;
    use std::os::fd::AsRawFd;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t).
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: the kernel writes one u64 into `size`.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64 as _, &mut size) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(size)
}

const MD_MAGIC: u32 = 0xa92b_4efc;

fn md_end_offsets(size: u64) -> Vec<u64> {
    let mut v = Vec::new();
    // 0.90: last 64 KiB-aligned 64 KiB block.
    if size >= 128 << 10 {
        v.push((size & !((64 << 10) - 1)) - (64 << 10));
    }
    // 1.0: 8 KiB from the end, 4 KiB aligned.
    if size >= 12 << 10 {
        v.push((size - (8 << 10)) & !((4 << 10) - 1));
    }
    v
}

fn typ(name: &'static str) -> Found {
    Found { name, table: false }
}

/// Probes the first bytes of a device: filesystems and volume headers
/// first, then partition tables (as blkid: a FAT boot sector also has the
/// MBR's 0x55AA).
pub fn probe_head(b: &[u8]) -> Option<Found> {
    let at = |off: usize, sig: &[u8]| b.get(off..off + sig.len()) == Some(sig);
    let le32 = |off: usize| {
        b.get(off..off + 4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    };
    let le16 = |off: usize| {
        b.get(off..off + 2)
            .map(|s| u16::from_le_bytes([s[0], s[1]]))
    };
    if at(0, b"LUKS\xba\xbe") {
        return Some(typ("crypto_LUKS"));
    }
    // LVM2: "LABELONE" in one of the first four sectors, "LVM2 001" at +24.
    if (0..4).any(|s| at(s * 512, b"LABELONE") && at(s * 512 + 24, b"LVM2 001")) {
        return Some(typ("LVM2_member"));
    }
    // md 1.1 at 0, 1.2 at 4 KiB.
    if le32(0) == Some(MD_MAGIC) || le32(4096) == Some(MD_MAGIC) {
        return Some(typ("linux_raid_member"));
    }
    if at(
        4096 + 24,
        b"\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81",
    ) {
        return Some(typ("bcache"));
    }
    if at(0, b"XFSB") {
        return Some(typ("xfs"));
    }
    if at(0x10040, b"_BHRfS_M") {
        return Some(typ("btrfs"));
    }
    if le32(0x400) == Some(0xF2F5_2010) {
        return Some(typ("f2fs"));
    }
    if le32(0x400) == Some(0xE0F5_E1E2) {
        return Some(typ("erofs"));
    }
    if at(0, b"hsqs") {
        return Some(typ("squashfs"));
    }
    if le16(0x438) == Some(0xEF53) {
        // ext4 when it has extents or a 64-bit layout, ext3 with a journal.
        let compat = le32(0x45C).unwrap_or(0);
        let incompat = le32(0x460).unwrap_or(0);
        return Some(typ(if incompat & (0x40 | 0x80 | 0x200) != 0 {
            "ext4"
        } else if compat & 0x4 != 0 {
            "ext3"
        } else {
            "ext2"
        }));
    }
    for page in [4096usize, 8192, 16384, 65536] {
        if at(page - 10, b"SWAPSPACE2") || at(page - 10, b"SWAP-SPACE") {
            return Some(typ("swap"));
        }
    }
    // ZFS: an uberblock (magic 0x00bab10c, either byte order) in the
    // first label's uberblock ring at 128 KiB.
    if (0..128).any(|i| {
        let off = (128 << 10) + i * 1024;
        matches!(le32(off), Some(0x00ba_b10c) | Some(0x0cb1_ba00))
    }) {
        return Some(typ("zfs_member"));
    }
    if at(0x8001, b"CD001") {
        return Some(typ("iso9660"));
    }
    if at(3, b"NTFS    ") {
        return Some(typ("ntfs"));
    }
    let boot = at(510, b"\x55\xaa");
    if boot && (at(0x36, b"FAT1") || at(0x52, b"FAT32   ") || at(3, b"MSDOS") || at(3, b"mkfs.fat"))
    {
        return Some(typ("vfat"));
    }
    if at(512, b"EFI PART") || at(4096, b"EFI PART") {
        return Some(Found {
            name: "gpt",
            table: true,
        });
    }
    // A DOS table: the boot mark and at least one entry with a type.
    if boot && (0..4).any(|i| b.get(446 + i * 16 + 4).is_some_and(|&t| t != 0)) {
        return Some(Found {
            name: "dos",
            table: true,
        });
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn with(off: usize, sig: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; HEAD];
        b[off..off + sig.len()].copy_from_slice(sig);
        b
    }

    #[test]
    fn zeros_hold_nothing_and_each_header_is_named() {
        assert_eq!(probe_head(&vec![0u8; HEAD]), None);
        assert_eq!(probe_head(&[]), None);
        let cases: [(usize, &[u8], &str); 8] = [
            (0, b"LUKS\xba\xbe", "crypto_LUKS"),
            (0, b"XFSB", "xfs"),
            (0x10040, b"_BHRfS_M", "btrfs"),
            (0x400, &0xF2F5_2010u32.to_le_bytes(), "f2fs"),
            (0x400, &0xE0F5_E1E2u32.to_le_bytes(), "erofs"),
            (4096 - 10, b"SWAPSPACE2", "swap"),
            (4096, &MD_MAGIC.to_le_bytes(), "linux_raid_member"),
            (0x438, &0xEF53u16.to_le_bytes(), "ext2"),
        ];
        for (off, sig, name) in cases {
            assert_eq!(probe_head(&with(off, sig)).map(|f| f.name), Some(name));
        }
        let mut lvm = with(512, b"LABELONE");
        lvm[512 + 24..512 + 32].copy_from_slice(b"LVM2 001");
        assert_eq!(probe_head(&lvm).unwrap().name, "LVM2_member");
        // "LABELONE" alone is not a PV.
        assert_eq!(probe_head(&with(512, b"LABELONE")), None);
    }

    #[test]
    fn md_at_the_end_is_found_by_the_device_size() {
        let size = 1u64 << 20;
        let offs = md_end_offsets(size);
        assert_eq!(offs, vec![size - (64 << 10), size - (8 << 10)]);
    }
}
