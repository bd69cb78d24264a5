//! Trims (fio's `rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`): a
//! discard of the range on a block device (BLKDISCARD), a hole punched in
//! a regular file (fallocate PUNCH_HOLE, size kept), nothing with the null
//! engine. Done synchronously by every engine's loop, as fio's libaio and
//! psync engines do them.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;

/// How a clone trims its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trimmer {
    /// BLKDISCARD on a block device.
    Discard,
    /// fallocate(PUNCH_HOLE | KEEP_SIZE) on a file.
    PunchHole,
    /// The null engine: nothing is done.
    Nothing,
}

impl Trimmer {
    /// The way to trim `file` (`null` for the null engine).
    pub fn for_file(file: &File, null: bool) -> Trimmer {
        if null {
            return Trimmer::Nothing;
        }
        match file.metadata() {
            Ok(m) if m.file_type().is_block_device() => Trimmer::Discard,
            _ => Trimmer::PunchHole,
        }
    }

    /// Trims `len` bytes at `offset`; returns the bytes trimmed.
    pub fn trim(self, file: &File, offset: u64, len: u64) -> std::io::Result<u64> {
        let fd = file.as_raw_fd();
        let r = match self {
            Trimmer::Nothing => 0,
            Trimmer::Discard => {
                // BLKDISCARD = _IO(0x12, 119); the argument is {start, len}.
                const BLKDISCARD: libc::c_ulong = 0x1277;
                let range: [u64; 2] = [offset, len];
                // SAFETY: the ioctl reads two u64 from a live array.
                unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) }
            }
            Trimmer::PunchHole => {
                // SAFETY: plain syscall on an open fd.
                unsafe {
                    libc::fallocate(
                        fd,
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        offset as libc::off_t,
                        len as libc::off_t,
                    )
                }
            }
        };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(len)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_punched_hole_frees_the_blocks_and_keeps_the_size() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        let mut f = File::create(&p).unwrap();
        f.write_all(&vec![0xabu8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        let before = std::fs::metadata(&p).unwrap().blocks();
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        let t = Trimmer::for_file(&f, false);
        assert_eq!(t, Trimmer::PunchHole);
        assert_eq!(t.trim(&f, 0, 512 << 10).unwrap(), 512 << 10);
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.len(), 1 << 20);
        // The file system says so (st_blocks), and the bytes read back as 0.
        assert!(
            m.blocks() * 512 <= before * 512 - (400 << 10),
            "{} -> {}",
            before,
            m.blocks()
        );
        let data = std::fs::read(&p).unwrap();
        assert!(data[..512 << 10].iter().all(|&b| b == 0));
        assert!(data[512 << 10..].iter().all(|&b| b == 0xab));
    }
}
