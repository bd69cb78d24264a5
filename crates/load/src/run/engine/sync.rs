//! The `sync` engine: read(2)/write(2) at the file position, with an
//! lseek(2) only when the next offset is not where the last I/O ended
//! (fio does the same, per file), so sequential I/O costs one syscall.

use std::os::fd::{AsRawFd, BorrowedFd};

use crate::job::kinds::Dir;
use crate::run::engine::Blocking;

/// Remembers each file's position (by descriptor) to skip needless seeks.
#[derive(Debug, Default)]
pub struct SyncIo {
    pos: Vec<(i32, Option<u64>)>,
}

impl Blocking for SyncIo {
    #[inline]
    fn io(
        &mut self,
        fd: BorrowedFd<'_>,
        dir: Dir,
        offset: u64,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        let raw = fd.as_raw_fd();
        let i = match self.pos.iter().position(|(f, _)| *f == raw) {
            Some(i) => i,
            None => {
                self.pos.push((raw, None));
                self.pos.len() - 1
            }
        };
        let pos = &mut self.pos[i].1;
        if *pos != Some(offset) {
            *pos = None;
            rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(offset))?;
        }
        let n = match dir {
            Dir::Read => rustix::io::read(fd, &mut *buf),
            Dir::Write => rustix::io::write(fd, buf),
            Dir::Trim => return Err(super::trim_not_here()),
        };
        match n {
            Ok(n) => {
                *pos = Some(offset + n as u64);
                Ok(n)
            }
            Err(e) => {
                *pos = None;
                Err(e.into())
            }
        }
    }
}
