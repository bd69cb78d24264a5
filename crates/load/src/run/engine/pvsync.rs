//! `pvsync` (preadv(2)/pwritev(2) of one buffer) and `pvsync2`
//! (preadv2(2)/pwritev2(2) with per-I/O flags: `hipri` = RWF_HIPRI,
//! polled completion on devices with poll queues; `nowait` = RWF_NOWAIT,
//! fail with EAGAIN instead of blocking; `uncached` = RWF_DONTCACHE,
//! buffered I/O that drops its pages once written back, Linux 6.14+).

use std::os::fd::{AsRawFd, BorrowedFd};

use crate::job::kinds::Dir;
use crate::run::engine::Blocking;

/// RWF_DONTCACHE (include/uapi/linux/fs.h, Linux 6.14).
const RWF_DONTCACHE: i32 = 0x80;

/// The flags of every I/O (0 for plain `pvsync`).
#[derive(Debug)]
pub struct PvsyncIo {
    flags: i32,
    v2: bool,
}

impl PvsyncIo {
    /// preadv/pwritev.
    pub fn plain() -> PvsyncIo {
        PvsyncIo {
            flags: 0,
            v2: false,
        }
    }

    /// preadv2/pwritev2 with flags; refuses flags this kernel lacks.
    pub fn with_flags(hipri: bool, nowait: bool, uncached: bool) -> Result<PvsyncIo, String> {
        let mut flags = 0;
        if hipri {
            flags |= libc::RWF_HIPRI;
        }
        if nowait {
            flags |= libc::RWF_NOWAIT;
        }
        if uncached {
            let (maj, min) = kernel_version()?;
            if (maj, min) < (6, 14) {
                return Err(format!(
                    "uncached=1 needs RWF_DONTCACHE (Linux 6.14 or later); this kernel is {maj}.{min}"
                ));
            }
            flags |= RWF_DONTCACHE;
        }
        Ok(PvsyncIo { flags, v2: true })
    }
}

/// The running kernel's MAJOR.MINOR (uname's release); a release without
/// them is an error, not a kernel 0.0 that lacks every feature.
fn kernel_version() -> Result<(u32, u32), String> {
    let u = rustix::system::uname();
    let r = u.release().to_string_lossy();
    let mut it = r
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok());
    match (it.next(), it.next()) {
        (Some(maj), Some(min)) => Ok((maj, min)),
        _ => Err(format!(
            "uname's kernel release {r:?} has no MAJOR.MINOR to check RWF_DONTCACHE (6.14) against"
        )),
    }
}

impl Blocking for PvsyncIo {
    #[inline]
    fn io(
        &mut self,
        fd: BorrowedFd<'_>,
        dir: Dir,
        offset: u64,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let off = offset as libc::off_t;
        let fd = fd.as_raw_fd();
        // SAFETY: one iovec over `buf`, which outlives the call.
        let n = unsafe {
            match (dir, self.v2) {
                (Dir::Read, false) => libc::preadv(fd, &iov, 1, off),
                (Dir::Write, false) => libc::pwritev(fd, &iov, 1, off),
                (Dir::Read, true) => libc::preadv2(fd, &iov, 1, off, self.flags),
                (Dir::Write, true) => libc::pwritev2(fd, &iov, 1, off, self.flags),
                (Dir::Trim, _) => return Err(super::trim_not_here()),
            }
        };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}
