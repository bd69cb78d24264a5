//! The `io_uring` engine.
//!
//! Set up once per clone: a ring of `iodepth` entries, the clone's files
//! registered as fixed files 0.. and one aligned buffer of `iodepth * bs` registered as
//! `iodepth` fixed buffers (READ_FIXED/WRITE_FIXED skip the per-I/O page
//! pinning). If registration is refused (e.g. locked-memory limits), plain
//! READ/WRITE on the same buffers are used. Submitting and waiting is one
//! syscall. `hipri` sets up an I/O-polled ring (IORING_SETUP_IOPOLL,
//! needs O_DIRECT and a device with poll queues).

use std::time::Duration;

use io_uring::{opcode, squeue, types, IoUring};
use iolab_sys::cast;

use crate::job::kinds::Dir;
use crate::run::buffer::AlignedBuf;
use crate::run::engine::queue::Queue;
use crate::run::files::file_set::{Files, Target};

/// A ring and its buffers.
pub struct Uring {
    ring: IoUring,
    fixed_file: bool,
    fixed_bufs: bool,
    bs: usize,
    depth: usize,
    /// Set if the ring failed with I/O possibly still in flight: the
    /// buffer is then leaked rather than freed under the kernel.
    poisoned: bool,
    /// Freed in `Drop` only when no I/O can still use it.
    buf: std::mem::ManuallyDrop<AlignedBuf>,
}

impl Uring {
    /// Creates the ring for `depth` I/Os of `bs` bytes on `files`.
    pub fn new(
        files: &Files,
        depth: u32,
        bs: usize,
        seed: u64,
        hipri: bool,
    ) -> Result<Uring, String> {
        let depth = depth.clamp(1, 4096);
        // An SQE carries a length of 32 bits: every I/O fits its slot, so
        // a slot that fits makes every `prep` length fit.
        if u32::try_from(bs).is_err() {
            return Err(format!(
                "io_uring: blocks of {bs} bytes: an io_uring I/O is at most {} bytes",
                u32::MAX
            ));
        }
        // One thread submits and reaps, so the kernel may skip cross-thread
        // wakeups and run completion work only when we wait (Linux 6.1+);
        // older kernels get a plain ring.
        let mut b = IoUring::builder();
        b.setup_single_issuer().setup_defer_taskrun();
        if hipri {
            b.setup_iopoll();
        }
        let ring = b
            .build(depth)
            .or_else(|e| if hipri { Err(e) } else { IoUring::new(depth) })
            .map_err(|e| {
                format!(
                    "io_uring is not available: {e} (kernel.io_uring_disabled? use ioengine=psync)"
                )
            })?;
        let mut buf = AlignedBuf::random(bs * depth as usize, seed);
        let fixed_file = ring.submitter().register_files(files.raw_fds()).is_ok();
        let base = buf.as_mut_ptr();
        let iovecs: Vec<libc::iovec> = (0..depth as usize)
            .map(|i| libc::iovec {
                // SAFETY: i * bs is inside the buffer of depth * bs bytes.
                iov_base: unsafe { base.add(i * bs) }.cast(),
                iov_len: bs,
            })
            .collect();
        // SAFETY: the iovecs point into `buf`, which lives (and stays put:
        // it is a heap allocation we never move or resize) until the ring
        // is dropped; see `Drop`.
        let fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(Uring {
            ring,
            fixed_file,
            fixed_bufs,
            bs,
            depth: depth as usize,
            poisoned: false,
            buf: std::mem::ManuallyDrop::new(buf),
        })
    }

    fn entry(
        &mut self,
        idx: usize,
        file: Target,
        dir: Dir,
        offset: u64,
        len: u32,
        prio: u16,
    ) -> squeue::Entry {
        let ptr = self.buf.slot_ptr(idx, self.bs);
        #[allow(
            clippy::cast_possible_truncation,
            reason = "idx is a slot, below depth <= 4096 (new() clamps it)"
        )]
        let bi = idx as u16;
        macro_rules! build {
            ($fd:expr) => {
                match (dir, self.fixed_bufs) {
                    (Dir::Read, true) => opcode::ReadFixed::new($fd, ptr, len, bi)
                        .offset(offset)
                        .ioprio(prio)
                        .build(),
                    (Dir::Write, true) => opcode::WriteFixed::new($fd, ptr, len, bi)
                        .offset(offset)
                        .ioprio(prio)
                        .build(),
                    (Dir::Read, false) => opcode::Read::new($fd, ptr, len)
                        .offset(offset)
                        .ioprio(prio)
                        .build(),
                    (Dir::Write, false) => opcode::Write::new($fd, ptr, len)
                        .offset(offset)
                        .ioprio(prio)
                        .build(),
                    (Dir::Trim, _) => unreachable!("the queue loop does trims itself"),
                }
            };
        }
        let e = if self.fixed_file {
            build!(types::Fixed(file.index))
        } else {
            build!(types::Fd(file.fd))
        };
        e.user_data(idx as u64)
    }
}

impl Queue for Uring {
    fn depth(&self) -> usize {
        self.depth
    }

    fn buf(&mut self, slot: usize) -> &mut [u8] {
        self.buf.slot(slot, self.bs)
    }

    fn prep(&mut self, slot: usize, file: Target, dir: Dir, offset: u64, len: usize, prio: u16) {
        #[allow(
            clippy::cast_possible_truncation,
            reason = "len <= self.bs (Queue::prep), and new() refused a bs past u32::MAX"
        )]
        let len = len as u32;
        let e = self.entry(slot, file, dir, offset, len, prio);
        // SAFETY: the entry's buffer slot is ours until its completion is
        // reaped (the loop keeps it off the free list). The ring has
        // `depth` entries and at most `depth` I/Os are queued, so the push
        // cannot fail.
        let _ = unsafe { self.ring.submission().push(&e) };
    }

    fn submit(&mut self) -> std::io::Result<()> {
        if self.ring.submission().is_empty() {
            return Ok(());
        }
        // io_uring_enter with nothing to wait for, as fio's commit does;
        // the wait is a second call in `reap` (fio's getevents), so the
        // submission's time is its own.
        match self.ring.submit() {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Option<Duration>,
        out: &mut Vec<(usize, i64)>,
    ) -> std::io::Result<()> {
        // Completions already in the ring cost no system call.
        let ready = self.ring.completion().len();
        let r = match timeout {
            _ if min <= ready => Ok(0),
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(min, &args)
            }
            None => self.ring.submit_and_wait(min),
        };
        match r {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY | libc::ETIME)
                ) => {}
            Err(e) => return Err(e),
        }
        for cqe in self.ring.completion().take(max) {
            // user_data is the slot entry() gave the I/O.
            out.push((cast::usize_of(cqe.user_data()), i64::from(cqe.result())));
        }
        Ok(())
    }

    fn poison(&mut self) {
        self.poisoned = true;
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        if !self.poisoned {
            // Every I/O was reaped, so the kernel no longer writes to the
            // buffer; fixed buffers are unregistered first so it also
            // drops its pins.
            let _ = self.ring.submitter().unregister_buffers();
            // SAFETY: dropped exactly once, here, and not used afterwards.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.buf) };
        }
    }
}
