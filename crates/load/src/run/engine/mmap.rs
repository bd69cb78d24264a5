//! The `mmap` engine: the job's region of the file is mapped shared and
//! every I/O is a memcpy to or from the mapping, as fio's mmap engine.
//! Reads fault pages in from the page cache or the device; writes dirty
//! pages that writeback (or `fsync`: they are page-cache pages) sends down.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

use crate::job::kinds::Dir;
use crate::job::model::Job;
use crate::run::engine::Blocking;

/// A shared mapping of `[0, len)` of the file.
pub struct MmapIo {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by one clone thread.
unsafe impl Send for MmapIo {}

impl MmapIo {
    /// Maps the file up to `end` bytes (extending it first for writers).
    pub fn new(file: &File, job: &Job, end: u64) -> Result<MmapIo, String> {
        let have = file.metadata().map_err(|e| e.to_string())?.len();
        let is_dev = have == 0 && job.filename.as_ref().is_some_and(|f| f.starts_with("/dev"));
        if end > have && job.writes() && !is_dev {
            file.set_len(end)
                .map_err(|e| format!("cannot extend the file to {end} bytes for mmap: {e}"))?;
        }
        let len = usize::try_from(end).map_err(|_| "region too large to map".to_string())?;
        let prot = if job.writes() {
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE
        } else {
            rustix::mm::ProtFlags::READ
        };
        // SAFETY: a fresh shared mapping of our own file descriptor; the
        // kernel picks the address.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len.max(1),
                prot,
                rustix::mm::MapFlags::SHARED,
                file.as_fd(),
                0,
            )
        }
        .map_err(|e| format!("mmap of {len} bytes failed: {e}"))?;
        Ok(MmapIo {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Blocking for MmapIo {
    #[inline]
    fn io(
        &mut self,
        _: BorrowedFd<'_>,
        dir: Dir,
        offset: u64,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        // Saturating: an offset past usize is past the mapping too.
        let off = iolab_sys::cast::usize_of(offset);
        if off >= self.len {
            return Ok(0);
        }
        let n = buf.len().min(self.len - off);
        // SAFETY: [off, off+n) lies inside the mapping; buf is ours.
        unsafe {
            match dir {
                Dir::Read => std::ptr::copy_nonoverlapping(self.ptr.add(off), buf.as_mut_ptr(), n),
                Dir::Write => std::ptr::copy_nonoverlapping(buf.as_ptr(), self.ptr.add(off), n),
                Dir::Trim => return Err(super::trim_not_here()),
            }
        }
        Ok(n)
    }
}

impl Drop for MmapIo {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.cast(), self.len.max(1)) };
    }
}
