//! The `posixaio` engine: POSIX aio_read(3)/aio_write(3), with
//! aio_suspend(3) to wait and aio_error(3)/aio_return(3) to reap, as fio's
//! engine. glibc implements POSIX AIO with helper threads doing pread/
//! pwrite, so this measures that implementation, not kernel AIO.

use std::time::Duration;

use crate::job::kinds::Dir;
use crate::run::buffer::AlignedBuf;
use crate::run::engine::queue::Queue;
use crate::run::files::file_set::Target;

/// Control blocks, what is in flight, buffers.
pub struct PosixAio {
    bs: usize,
    cbs: Vec<libc::aiocb>,
    inflight: Vec<usize>,
    queued: Vec<(usize, Dir)>,
    buf: AlignedBuf,
}

// SAFETY: owned by one clone thread.
unsafe impl Send for PosixAio {}

impl PosixAio {
    /// Room for `depth` I/Os of `bs` bytes (each names its file).
    pub fn new(depth: u32, bs: usize, seed: u64) -> Result<PosixAio, String> {
        let depth = depth.clamp(1, 4096) as usize;
        Ok(PosixAio {
            bs,
            // SAFETY: aiocb is plain data; all zeros is its initial state.
            cbs: vec![unsafe { std::mem::zeroed() }; depth],
            inflight: Vec::with_capacity(depth),
            queued: Vec::with_capacity(depth),
            buf: AlignedBuf::random(bs * depth, seed),
        })
    }
}

impl Queue for PosixAio {
    fn depth(&self) -> usize {
        self.cbs.len()
    }

    fn buf(&mut self, slot: usize) -> &mut [u8] {
        self.buf.slot(slot, self.bs)
    }

    fn prep(&mut self, slot: usize, file: Target, dir: Dir, offset: u64, len: usize, _prio: u16) {
        let ptr = self.buf.slot_ptr(slot, self.bs);
        // SAFETY: as in `new`.
        let mut cb: libc::aiocb = unsafe { std::mem::zeroed() };
        cb.aio_fildes = file.fd;
        cb.aio_buf = ptr.cast();
        cb.aio_nbytes = len;
        cb.aio_offset = offset as libc::off_t;
        self.cbs[slot] = cb;
        self.queued.push((slot, dir));
    }

    fn submit(&mut self) -> std::io::Result<()> {
        for (slot, dir) in std::mem::take(&mut self.queued) {
            let cb: *mut libc::aiocb = &mut self.cbs[slot];
            // SAFETY: the control block and its buffer stay put until the
            // request is reaped below (or waited for in Drop).
            let r = unsafe {
                match dir {
                    Dir::Read => libc::aio_read(cb),
                    Dir::Write => libc::aio_write(cb),
                    Dir::Trim => unreachable!("the queue loop does trims itself"),
                }
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
            self.inflight.push(slot);
        }
        Ok(())
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Option<Duration>,
        out: &mut Vec<(usize, i64)>,
    ) -> std::io::Result<()> {
        let start = std::time::Instant::now();
        loop {
            let mut i = 0;
            while i < self.inflight.len() && out.len() < max {
                let slot = self.inflight[i];
                // SAFETY: a submitted control block of ours.
                let e = unsafe { libc::aio_error(&self.cbs[slot]) };
                if e == libc::EINPROGRESS {
                    i += 1;
                    continue;
                }
                // SAFETY: the request finished; aio_return collects it once.
                let r = unsafe { libc::aio_return(&mut self.cbs[slot]) };
                out.push((slot, if e != 0 { -i64::from(e) } else { r as i64 }));
                self.inflight.swap_remove(i);
            }
            if out.len() >= min || self.inflight.is_empty() {
                return Ok(());
            }
            if timeout.is_some_and(|t| start.elapsed() >= t) {
                return Ok(());
            }
            let list: Vec<*const libc::aiocb> = self
                .inflight
                .iter()
                .map(|&s| &self.cbs[s] as *const _)
                .collect();
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            #[allow(
                clippy::cast_possible_truncation,
                reason = "at most depth <= 4096 control blocks (new() clamps depth)"
            )]
            let n = list.len() as i32;
            // SAFETY: a list of our submitted control blocks.
            unsafe { libc::aio_suspend(list.as_ptr(), n, &ts) };
        }
    }

    fn poison(&mut self) {}
}

impl Drop for PosixAio {
    fn drop(&mut self) {
        // Wait for anything still in flight before the buffer goes.
        for &slot in &self.inflight {
            let cb: *const libc::aiocb = &self.cbs[slot];
            // SAFETY: our own control block, waited for one at a time.
            while unsafe { libc::aio_error(cb) } == libc::EINPROGRESS {
                unsafe { libc::aio_suspend(&cb, 1, std::ptr::null()) };
            }
        }
    }
}
