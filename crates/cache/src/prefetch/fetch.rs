//! Bringing a byte range of an open file into the page cache, three ways.
//!
//! readahead(2) and `POSIX_FADV_WILLNEED` read at most one readahead
//! window per call (mm/readahead.c `force_page_cache_ra` caps the request at
//! max(read_ahead_kb, max_sectors_kb) of the device): one call for a whole
//! 64 MiB file reads only the first 8 MiB here. So ranges are issued in
//! window-sized pieces. Both return once the reads are submitted, not when
//! they complete; `read` is synchronous.

use std::num::NonZeroU64;
use std::os::fd::BorrowedFd;

use rustix::fs::Advice;

use iolab_sys::{cast, pagecache};

/// How to bring pages into the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// readahead(2), window by window: asynchronous, returns when submitted.
    Readahead,
    /// posix_fadvise(POSIX_FADV_WILLNEED), window by window: the same
    /// reads through the fadvise path (works where readahead(2) is refused).
    WillNeed,
    /// WILLNEED over the range, then pread(2) through it: synchronous, done
    /// when it returns (costs a copy per byte).
    Read,
}

impl std::str::FromStr for Method {
    type Err = iolab_sys::UsageError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "readahead" => Ok(Method::Readahead),
            "willneed" => Ok(Method::WillNeed),
            "read" => Ok(Method::Read),
            _ => Err(iolab_sys::UsageError::new(format!(
                "invalid method {s:?}: expected readahead, willneed or read"
            ))),
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::Readahead => "readahead",
            Method::WillNeed => "willneed",
            Method::Read => "read",
        })
    }
}

/// Window used when the device's is unknown (no block device behind the
/// file): the kernel's default read_ahead_kb, small enough never to be cut.
pub const DEFAULT_WINDOW: u64 = 128 * 1024;

/// Size of the buffer `read` copies through.
const READ_BUF: usize = 1 << 20;

/// Issues `method` for `len` bytes at `offset`, in pieces of `window` bytes.
pub fn fetch(
    fd: BorrowedFd<'_>,
    offset: u64,
    len: u64,
    method: Method,
    window: u64,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    match method {
        Method::Readahead => {
            for (off, n) in pieces(offset, len, window) {
                match pagecache::readahead(fd, off, n) {
                    Ok(()) => {}
                    // Filesystems without readahead support refuse the call.
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        return fetch(fd, off, offset + len - off, Method::WillNeed, window, buf)
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
        Method::WillNeed => willneed(fd, offset, len, window),
        Method::Read => {
            let _ = willneed(fd, offset, len, window);
            read_range(fd, offset, len, buf)
        }
    }
}

fn willneed(fd: BorrowedFd<'_>, offset: u64, len: u64, window: u64) -> std::io::Result<()> {
    for (off, n) in pieces(offset, len, window) {
        rustix::fs::fadvise(fd, off, NonZeroU64::new(n), Advice::WillNeed)?;
    }
    Ok(())
}

/// Reads `len` bytes at `offset` through `buf` (stops early at end of file).
pub fn read_range(
    fd: BorrowedFd<'_>,
    offset: u64,
    len: u64,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    if buf.len() < READ_BUF {
        buf.resize(READ_BUF, 0);
    }
    let end = offset.saturating_add(len);
    let mut pos = offset;
    while pos < end {
        // Saturated, then clamped to the buffer: exact on every target.
        let want = cast::usize_of(end - pos).min(buf.len());
        match rustix::io::pread(fd, &mut buf[..want], pos) {
            Ok(0) => break,
            Ok(n) => pos += n as u64,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn pieces(offset: u64, len: u64, window: u64) -> impl Iterator<Item = (u64, u64)> {
    let window = window.max(4096);
    let end = offset.saturating_add(len);
    (0..)
        .map(move |i| offset + i * window)
        .take_while(move |&off| off < end)
        .map(move |off| (off, window.min(end - off)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_range_exactly() {
        let v: Vec<_> = pieces(100, 10_000, 4096).collect();
        assert_eq!(v, [(100, 4096), (4196, 4096), (8292, 1808)]);
        // Windows below a page are raised to one.
        assert_eq!(pieces(0, 8192, 1).count(), 2);
        assert_eq!(pieces(0, 0, 4096).count(), 0);
    }

    #[test]
    fn methods_parse_and_print() {
        for m in ["readahead", "willneed", "read"] {
            assert_eq!(
                m.parse::<Method>().map(|m| m.to_string()).ok(),
                Some(m.to_string())
            );
        }
        assert!("mmap".parse::<Method>().is_err());
    }
}
