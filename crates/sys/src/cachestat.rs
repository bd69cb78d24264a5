//! cachestat(2) (Linux ≥ 6.5): page-cache counters of a byte range of a
//! file in one system call, without mapping the file.
//!
//! mincore(2) needs an mmap/munmap pair per file and returns a byte per
//! page that the caller then has to count; cachestat returns the counts
//! (cached, dirty, under writeback, evicted, recently evicted) directly.
//! It is what makes a scan of 100k files cheap when only counts are wanted.
//!
//! Permissions: since Linux 6.14 (backported to stable kernels) cachestat,
//! like mincore since 5.2, answers only for files the caller could write or
//! owns (root always can) and fails with `EPERM` otherwise. mincore in that
//! case does not fail but reports every page as resident, which is why the
//! callers check permission themselves before trusting a mincore map.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::OnceLock;

/// The cachestat syscall number: 451 in the generic table, which every
/// architecture shares since 6.5 (x86_64 included).
const SYS_CACHESTAT: libc::c_long = 451;

/// Counters cachestat(2) returns for a range, in pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStat {
    /// Pages in the page cache.
    pub cache: u64,
    /// Cached pages that are dirty.
    pub dirty: u64,
    /// Cached pages under writeback.
    pub writeback: u64,
    /// Pages evicted from the cache (workingset shadow entries).
    pub evicted: u64,
    /// Evicted pages whose re-reading would count as a refault (thrashing).
    pub recently_evicted: u64,
}

/// `struct cachestat_range` from include/uapi/linux/mman.h.
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// `struct cachestat` from include/uapi/linux/mman.h.
#[repr(C)]
#[derive(Default)]
struct RawCachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Page-cache counters of `len` bytes from `offset` of the file behind
/// `fd` (`len` 0 = to the end of the file).
pub fn cachestat(fd: BorrowedFd<'_>, offset: u64, len: u64) -> std::io::Result<CacheStat> {
    let range = CachestatRange { off: offset, len };
    let mut out = RawCachestat::default();
    // SAFETY: both pointers point at live, correctly laid out structs for
    // the duration of the call; flags must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_raw_fd() as libc::c_uint,
            &range as *const CachestatRange,
            &mut out as *mut RawCachestat,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(CacheStat {
        cache: out.nr_cache,
        dirty: out.nr_dirty,
        writeback: out.nr_writeback,
        evicted: out.nr_evicted,
        recently_evicted: out.nr_recently_evicted,
    })
}

/// True when this kernel offers cachestat(2). Probed once per process with
/// an invalid descriptor: `EBADF` means the call exists; `ENOSYS` means an
/// older kernel, and `EPERM` a seccomp filter that blocks it (container
/// runtimes answer unknown calls that way), both meaning "use mincore".
pub fn supported() -> bool {
    static PROBE: OnceLock<bool> = OnceLock::new();
    *PROBE.get_or_init(|| {
        let range = CachestatRange { off: 0, len: 0 };
        let mut out = RawCachestat::default();
        // SAFETY: as in `cachestat`; fd -1 makes the kernel fail early.
        let rc = unsafe {
            libc::syscall(
                SYS_CACHESTAT,
                -1 as libc::c_int as libc::c_uint,
                &range as *const CachestatRange,
                &mut out as *mut RawCachestat,
                0 as libc::c_uint,
            )
        };
        rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn counts_the_pages_of_a_freshly_written_file() {
        if !supported() {
            iolab_testkit::skip_line("skip: this kernel has no cachestat(2)".to_string());
            return;
        }
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let page = crate::cast::usize_of(crate::pagecache::page_size());
        f.write_all(&vec![1u8; 8 * page]).unwrap();
        f.flush().unwrap();
        let s = cachestat(f.as_file().as_fd(), 0, 0).unwrap();
        // Just written: all 8 pages cached, and (before writeback) dirty.
        assert_eq!(s.cache, 8, "{s:?}");
        assert!(s.dirty + s.writeback <= 8, "{s:?}");
        let part = cachestat(f.as_file().as_fd(), page as u64, 2 * page as u64).unwrap();
        assert_eq!(part.cache, 2, "{part:?}");
    }

    #[test]
    fn probe_is_stable() {
        assert_eq!(supported(), supported());
    }
}
