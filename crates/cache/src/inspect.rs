//! One open file's page-cache residency: counts from cachestat(2) when the
//! kernel has it, the page map from mincore(2) when a map or ranges are
//! wanted (or cachestat is missing), and the permission check that keeps
//! mincore's "everything is cached" answer for foreign files out of the
//! results.

use std::os::fd::{AsRawFd, BorrowedFd};

use iolab_sys::cachestat::{self, CacheStat};
use iolab_sys::{cast, pagecache};

use crate::ranges::ByteRange;

/// Residency of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Measured {
    /// Pages the file spans.
    pub total_pages: u64,
    /// Pages in the page cache (from the map when one was taken, so map,
    /// bar and count agree).
    pub resident: u64,
    /// cachestat's counters, when the kernel offers cachestat.
    pub stat: Option<CacheStat>,
}

/// Why a file's residency could not be measured.
#[derive(Debug)]
pub enum Unmeasurable {
    /// The kernel would not describe this file to this user.
    NotInspectable,
    /// Another error (mmap failure, I/O error...).
    Failed(std::io::Error),
}

/// Per-thread measuring state: the probe results and a reusable page map,
/// so measuring a file allocates nothing.
#[derive(Debug)]
pub struct Probe {
    cachestat: bool,
    root: bool,
    euid: u32,
    page: u64,
    /// The page map of the last file measured with `want_map` (one byte
    /// per page, 1 = cached).
    pub map: Vec<u8>,
}

impl Default for Probe {
    fn default() -> Self {
        Self::new()
    }
}

impl Probe {
    /// Probes cachestat (once per process) and the caller's identity.
    pub fn new() -> Probe {
        let euid = rustix::process::geteuid();
        Probe {
            cachestat: cachestat::supported(),
            root: euid.is_root(),
            euid: euid.as_raw(),
            page: pagecache::page_size(),
            map: Vec::new(),
        }
    }

    /// True when counts come from cachestat(2).
    pub fn has_cachestat(&self) -> bool {
        self.cachestat
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> u64 {
        self.page
    }

    /// Measures the open regular file `fd` of `size` bytes owned by `uid`.
    /// With `want_map`, also fills [`Probe::map`].
    pub fn measure(
        &mut self,
        fd: BorrowedFd<'_>,
        size: u64,
        uid: u32,
        want_map: bool,
    ) -> Result<Measured, Unmeasurable> {
        let total_pages = size.div_ceil(self.page);
        let stat = if self.cachestat {
            match cachestat::cachestat(fd, 0, 0) {
                Ok(s) => Some(s),
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                    return Err(Unmeasurable::NotInspectable)
                }
                Err(e) => return Err(Unmeasurable::Failed(e)),
            }
        } else {
            None
        };
        if !want_map && stat.is_some() {
            self.map.clear();
            let resident = stat.map_or(0, |s| s.cache.min(total_pages));
            return Ok(Measured {
                total_pages,
                resident,
                stat,
            });
        }
        if let Some(s) = stat {
            // A file with no page cached, or every page, needs no mmap and
            // mincore for its map (most files of a big tree are one or the
            // other): this is what makes bars and ranges nearly as cheap as
            // counts. Like the counts, such a map includes pages still
            // being read in.
            if s.cache == 0 || s.cache >= total_pages {
                let all = s.cache > 0;
                self.map.clear();
                // One byte per page, as page_map would fill: a file too
                // big to map is refused the same way (EFBIG).
                let pages = usize::try_from(total_pages).map_err(|_| {
                    Unmeasurable::Failed(std::io::Error::from_raw_os_error(libc::EFBIG))
                })?;
                self.map.resize(pages, u8::from(all));
                return Ok(Measured {
                    total_pages,
                    resident: if all { total_pages } else { 0 },
                    stat,
                });
            }
        }
        if !self.mincore_tells_truth(fd, uid) {
            return Err(Unmeasurable::NotInspectable);
        }
        pagecache::page_map(fd, 0, size, &mut self.map).map_err(Unmeasurable::Failed)?;
        let resident = self.map.iter().map(|&b| u64::from(b)).sum();
        Ok(Measured {
            total_pages,
            resident,
            stat,
        })
    }

    /// Cached, readable pages among those `ranges` touch (ranges already
    /// clipped to the file); `None` when the kernel would not say.
    ///
    /// Always from mincore, never cachestat: cachestat counts every page in
    /// the cache, including pages readahead has only just inserted and is
    /// still reading, while mincore reports a page only once it is
    /// up to date. Waiting for a prefetch needs the latter.
    pub fn range_residency(
        &mut self,
        fd: BorrowedFd<'_>,
        size: u64,
        uid: u32,
        ranges: &[ByteRange],
    ) -> Option<u64> {
        if !self.mincore_tells_truth(fd, uid) {
            return None;
        }
        let (Some(first), Some(last)) = (ranges.first(), ranges.last()) else {
            return Some(0);
        };
        // Map only the span the ranges cover (they are sorted).
        let base = first.offset / self.page;
        let end = last.end().min(size);
        let span = end.saturating_sub(base * self.page);
        pagecache::page_map(fd, base * self.page, span, &mut self.map).ok()?;
        let mut sum = 0;
        for r in ranges {
            let (first, n) = r.pages(self.page);
            // Page numbers past the map (saturated or not) clamp to its end.
            let lo = cast::usize_of(first - base).min(self.map.len());
            let hi = cast::usize_of(first + n - base).min(self.map.len());
            sum += self.map[lo..hi].iter().map(|&b| u64::from(b)).sum::<u64>();
        }
        Some(sum)
    }

    /// Pages of `ranges` the kernel is still reading in: present in the
    /// cache (cachestat counts them from the moment readahead inserts them)
    /// but not yet up to date (mincore reports only those). `None` without
    /// cachestat, or when the kernel would not describe the file.
    ///
    /// Checks the last page first (pieces are read in order, so while it is
    /// in flight the file is) before counting every range.
    pub fn in_flight(
        &mut self,
        fd: BorrowedFd<'_>,
        size: u64,
        uid: u32,
        ranges: &[ByteRange],
    ) -> Option<u64> {
        if !self.cachestat {
            return None;
        }
        let last = ranges.last()?;
        let page = (last.end().max(1) - 1) / self.page * self.page;
        let present = cachestat::cachestat(fd, page, 1).ok()?.cache;
        if present > 0 {
            if !self.mincore_tells_truth(fd, uid) {
                return None;
            }
            pagecache::page_map(fd, page, 1, &mut self.map).ok()?;
            if self.map.first() != Some(&1) {
                return Some(1);
            }
        }
        let mut present = 0;
        for r in ranges {
            present += cachestat::cachestat(fd, r.offset, r.len).ok()?.cache;
        }
        let uptodate = self.range_residency(fd, size, uid, ranges)?;
        Some(present.saturating_sub(uptodate))
    }

    /// mincore answers truthfully for root, the owner, and users who may
    /// write the file (mm/mincore.c `can_do_mincore`); for everyone else it
    /// claims every page is cached.
    fn mincore_tells_truth(&self, fd: BorrowedFd<'_>, uid: u32) -> bool {
        if self.root || uid == self.euid {
            return true;
        }
        may_write(fd)
    }
}

/// faccessat2(fd, "", W_OK, AT_EMPTY_PATH | AT_EACCESS): may the effective
/// user write this file (also false on a read-only mount, as the kernel's
/// own check is)?
fn may_write(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: an empty NUL-terminated path and integer arguments.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_faccessat2,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::W_OK,
            libc::AT_EMPTY_PATH | libc::AT_EACCESS,
        )
    };
    rc == 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn counts_and_map_agree_on_a_fresh_file() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let page = cast::usize_of(pagecache::page_size());
        f.write_all(&vec![3u8; 5 * page + 10]).unwrap();
        f.flush().unwrap();
        let uid = rustix::process::geteuid().as_raw();
        let mut p = Probe::new();
        let fd = f.as_file().as_fd();
        let size = (5 * page + 10) as u64;
        let counts = p.measure(fd, size, uid, false).unwrap();
        assert_eq!(counts.total_pages, 6);
        let mapped = p.measure(fd, size, uid, true).unwrap();
        assert_eq!(p.map.len(), 6);
        assert_eq!(mapped.resident, 6, "{mapped:?}");
        if p.has_cachestat() {
            assert_eq!(counts.resident, 6);
            assert!(counts.stat.is_some());
        }
        let r = [ByteRange {
            offset: page as u64,
            len: 2 * page as u64,
        }];
        assert_eq!(p.range_residency(fd, size, uid, &r), Some(2));
        if p.has_cachestat() {
            assert_eq!(p.in_flight(fd, size, uid, &r), Some(0));
        }
        let tail = [ByteRange {
            offset: 5 * page as u64 + 3,
            len: 7,
        }];
        assert_eq!(p.range_residency(fd, size, uid, &tail), Some(1));
    }

    #[test]
    fn own_files_are_writable() {
        let f = tempfile::NamedTempFile::new().unwrap();
        assert!(may_write(f.as_file().as_fd()));
    }
}
