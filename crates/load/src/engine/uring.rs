//! The `io_uring` engine: keeps `iodepth` reads/writes in flight.
//!
//! Set up once per clone: a ring of `iodepth` entries, the file registered
//! as fixed file 0 and one aligned buffer of `iodepth * bs` registered as
//! `iodepth` fixed buffers (READ_FIXED/WRITE_FIXED skip the per-I/O page
//! pinning). If registration is refused (e.g. locked-memory limits), plain
//! READ/WRITE on the same buffers are used. The loop fills the queue,
//! submits and waits for at least one completion in one syscall, and reaps
//! every completion available. Latency runs from just before the submit
//! that carried an I/O to the reap that saw it complete: fio's `lat`.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types, IoUring};

use crate::buffer::AlignedBuf;
use crate::job::Dir;
use crate::worker::{Failure, Run, Step};

#[derive(Debug, Clone, Copy)]
struct Slot {
    dir: Dir,
    offset: u64,
    start: Instant,
}

/// A ring, its buffers and its bookkeeping.
pub struct Uring {
    ring: IoUring,
    fixed_file: bool,
    fixed_bufs: bool,
    raw_fd: i32,
    bs: usize,
    slots: Vec<Slot>,
    free: Vec<u32>,
    batch: Vec<u32>,
    /// Set if the ring failed with I/O possibly still in flight: the
    /// buffer is then leaked rather than freed under the kernel.
    poisoned: bool,
    /// Freed in `Drop` only when no I/O can still use it.
    buf: std::mem::ManuallyDrop<AlignedBuf>,
}

impl Uring {
    /// Creates the ring for `depth` I/Os of `bs` bytes on `file`.
    pub fn new(file: &File, depth: u32, bs: usize, seed: u64) -> Result<Uring, String> {
        let depth = depth.clamp(1, 4096);
        // One thread submits and reaps, so the kernel may skip cross-thread
        // wakeups and run completion work only when we wait (Linux 6.1+);
        // older kernels get a plain ring.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(depth)
            .or_else(|_| IoUring::new(depth))
            .map_err(|e| {
                format!(
                    "io_uring is not available: {e} (kernel.io_uring_disabled? use ioengine=psync)"
                )
            })?;
        let mut buf = AlignedBuf::random(bs * depth as usize, seed);
        let raw_fd = file.as_raw_fd();
        let fixed_file = ring.submitter().register_files(&[raw_fd]).is_ok();
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
        // is dropped; see the field order and `Drop`.
        let fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        let now = Instant::now();
        Ok(Uring {
            ring,
            fixed_file,
            fixed_bufs,
            raw_fd,
            bs,
            slots: vec![
                Slot {
                    dir: Dir::Read,
                    offset: 0,
                    start: now,
                };
                depth as usize
            ],
            free: (0..depth).rev().collect(),
            batch: Vec::with_capacity(depth as usize),
            poisoned: false,
            buf: std::mem::ManuallyDrop::new(buf),
        })
    }

    fn entry(&mut self, idx: u32, dir: Dir, offset: u64) -> squeue::Entry {
        // SAFETY: idx < depth, so the slice lies inside the buffer.
        let ptr = unsafe { self.buf.as_mut_ptr().add(idx as usize * self.bs) };
        let len = self.bs as u32;
        macro_rules! build {
            ($fd:expr) => {
                match (dir, self.fixed_bufs) {
                    (Dir::Read, true) => opcode::ReadFixed::new($fd, ptr, len, idx as u16)
                        .offset(offset)
                        .build(),
                    (Dir::Write, true) => opcode::WriteFixed::new($fd, ptr, len, idx as u16)
                        .offset(offset)
                        .build(),
                    (Dir::Read, false) => opcode::Read::new($fd, ptr, len).offset(offset).build(),
                    (Dir::Write, false) => opcode::Write::new($fd, ptr, len).offset(offset).build(),
                }
            };
        }
        let e = if self.fixed_file {
            build!(types::Fixed(0))
        } else {
            build!(types::Fd(self.raw_fd))
        };
        e.user_data(u64::from(idx))
    }

    /// Runs the clone's I/O until it is done, then drains the queue.
    pub fn run(&mut self, run: &mut Run<'_>, file: &File) {
        let depth = self.slots.len();
        let mut inflight = 0usize;
        let mut done = false;
        loop {
            // Rate-limited: how long until the next I/O is due.
            let mut due_in: Option<Duration> = None;
            while !done && inflight < depth {
                match run.step(file) {
                    Step::Io(dir, offset) => {
                        if !self.queue(dir, offset, run.time.now) {
                            break;
                        }
                        inflight += 1;
                        if run.paced() {
                            // A paced I/O goes out when it is due, not when
                            // the queue is full.
                            self.submit_batch();
                        }
                    }
                    Step::Wait(w) => {
                        due_in = Some(w.min(Duration::from_millis(50)));
                        break;
                    }
                    Step::Done => done = true,
                }
            }
            if inflight == 0 {
                match due_in {
                    Some(w) if !done => {
                        std::thread::sleep(w);
                        run.time.tick(Instant::now());
                        continue;
                    }
                    _ => return,
                }
            }
            if let Err(e) = self.submit_and_wait(due_in) {
                self.poisoned = true;
                run.fail(Failure {
                    errno: e.raw_os_error().unwrap_or(0),
                    message: format!("job {}: io_uring submit failed: {e}", run.job.name),
                });
                return;
            }
            let t_done = Instant::now();
            run.time.tick(t_done);
            let Uring {
                ring, slots, free, ..
            } = self;
            for cqe in ring.completion() {
                let idx = cqe.user_data() as u32;
                let slot = slots[idx as usize];
                free.push(idx);
                inflight -= 1;
                let res = cqe.result();
                if res < 0 {
                    let err = std::io::Error::from_raw_os_error(-res);
                    let f = Failure::io(run.job, &err, slot.dir, run.path(), slot.offset);
                    run.fail(f);
                    done = true;
                } else if res == 0 {
                    let f = super::eof(run, slot.dir, slot.offset);
                    run.fail(f);
                    done = true;
                } else {
                    run.complete(slot.dir, res as u64, t_done - slot.start, t_done);
                    if slot.dir == Dir::Write {
                        run.after_write(file);
                    }
                }
            }
        }
    }

    /// Puts one I/O in the submission queue; false if no slot is free.
    fn queue(&mut self, dir: Dir, offset: u64, now: Instant) -> bool {
        let Some(idx) = self.free.pop() else {
            return false;
        };
        let entry = self.entry(idx, dir, offset);
        self.slots[idx as usize] = Slot {
            dir,
            offset,
            start: now,
        };
        // SAFETY: the entry's buffer slot is ours until its completion is
        // reaped (it left the free list).
        if unsafe { self.ring.submission().push(&entry) }.is_err() {
            // Cannot happen: the ring has `depth` entries and at most
            // `depth` I/Os are queued; give the slot back.
            self.free.push(idx);
            return false;
        }
        self.batch.push(idx);
        true
    }

    /// Stamps the queued batch's start time; the caller submits.
    fn stamp_batch(&mut self) {
        let t = Instant::now();
        for &i in &self.batch {
            self.slots[i as usize].start = t;
        }
        self.batch.clear();
    }

    /// Submits what is queued without waiting.
    fn submit_batch(&mut self) {
        self.stamp_batch();
        // A failure here resurfaces in the next submit_and_wait.
        let _ = self.ring.submit();
    }

    /// Submits what is queued and waits for one completion, or at most
    /// `timeout` when a rate-limited I/O falls due sooner.
    fn submit_and_wait(&mut self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.stamp_batch();
        let r = match timeout {
            None => self.ring.submit_and_wait(1),
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
        };
        match r {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY | libc::ETIME)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
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
