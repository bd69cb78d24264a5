//! The `psync` engine: pread(2)/pwrite(2), fio's default on Linux.

use std::os::fd::BorrowedFd;

use crate::job::kinds::Dir;
use crate::run::engine::Blocking;

/// Stateless: the offset travels with each call.
#[derive(Debug, Default)]
pub struct PsyncIo;

impl Blocking for PsyncIo {
    #[inline]
    fn io(
        &mut self,
        fd: BorrowedFd<'_>,
        dir: Dir,
        offset: u64,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        let n = match dir {
            Dir::Read => rustix::io::pread(fd, &mut *buf, offset),
            Dir::Write => rustix::io::pwrite(fd, buf, offset),
            Dir::Trim => return Err(super::trim_not_here()),
        };
        Ok(n?)
    }
}
