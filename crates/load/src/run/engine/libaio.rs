//! The `libaio` engine: Linux native AIO through its system calls
//! (io_setup, io_submit, io_getevents, io_destroy), as libaio wraps them,
//! without linking libaio. Like fio's engine it is asynchronous only with
//! O_DIRECT; buffered I/O completes inside io_submit.
//!
//! `userspace_reap` reads completions straight from the AIO ring the
//! kernel maps into the process (struct aio_ring), with no system call,
//! when the loop polls for completions without waiting (fio does the
//! same, and only then).

use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

use iolab_sys::cast;

use crate::job::kinds::Dir;
use crate::run::buffer::AlignedBuf;
use crate::run::engine::queue::Queue;
use crate::run::files::file_set::Target;

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
const AIO_RING_MAGIC: u32 = 0xa10a_10a1;

/// struct iocb (include/uapi/linux/aio_abi.h), little-endian layout.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoCb {
    data: u64,
    key: u32,
    rw_flags: i32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// `iocb.aio_flags`: `aio_reqprio` holds an ioprio value.
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

/// struct io_event.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

/// struct aio_ring's header (fs/aio.c), followed by the events.
#[repr(C)]
struct AioRing {
    id: u32,
    nr: u32,
    head: u32,
    tail: u32,
    magic: u32,
    compat_features: u32,
    incompat_features: u32,
    header_length: u32,
}

/// An AIO context, its control blocks and buffers.
pub struct Libaio {
    ctx: libc::c_ulong,
    bs: usize,
    iocbs: Vec<IoCb>,
    queued: Vec<*mut IoCb>,
    events: Vec<IoEvent>,
    userspace_reap: bool,
    buf: AlignedBuf,
}

// SAFETY: owned by one clone thread; the raw pointers point into `iocbs`.
unsafe impl Send for Libaio {}

impl Libaio {
    /// A context for `depth` I/Os of `bs` bytes (each names its file).
    pub fn new(depth: u32, bs: usize, seed: u64, userspace_reap: bool) -> Result<Libaio, String> {
        let depth = depth.clamp(1, 65_536) as usize;
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the context id into `ctx`.
        let r = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            let hint = if e.raw_os_error() == Some(libc::EAGAIN) {
                " (fs.aio-max-nr reached: raise it or lower iodepth/numjobs)"
            } else {
                ""
            };
            return Err(format!("io_setup({depth}) failed: {e}{hint}"));
        }
        let ring_ok = userspace_reap && {
            // SAFETY: the context id is the address of the kernel-mapped
            // ring; only its header is read.
            let ring = ctx as *const AioRing;
            unsafe { std::ptr::read_volatile(&(*ring).magic) == AIO_RING_MAGIC }
        };
        Ok(Libaio {
            ctx,
            bs,
            iocbs: vec![IoCb::default(); depth],
            queued: Vec::with_capacity(depth),
            events: vec![IoEvent::default(); depth],
            userspace_reap: ring_ok,
            buf: AlignedBuf::random(bs * depth, seed),
        })
    }

    fn submit(&mut self) -> std::io::Result<()> {
        let mut done = 0;
        while done < self.queued.len() {
            let n = self.queued.len() - done;
            // SAFETY: the iocb pointers point into self.iocbs, whose
            // buffers stay valid until their events are reaped.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    n as libc::c_long,
                    self.queued.as_mut_ptr().add(done),
                )
            };
            // A count of the iocbs taken, or -1 and errno.
            let Ok(r) = usize::try_from(r) else {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EAGAIN) || e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                self.queued.drain(..done);
                return Err(e);
            };
            done += r;
        }
        self.queued.clear();
        Ok(())
    }

    /// Completions from the ring in user memory; none if it is empty.
    fn reap_user(&mut self, max: usize, out: &mut Vec<(usize, i64)>) -> usize {
        let ring = self.ctx as *mut AioRing;
        // SAFETY: the ring is mapped for the context's lifetime; head is
        // ours to advance, tail the kernel's (read with acquire order).
        unsafe {
            let nr = std::ptr::read_volatile(&(*ring).nr);
            let events = (ring as *mut u8).add(std::mem::size_of::<AioRing>()) as *const IoEvent;
            let mut head = std::ptr::read_volatile(&(*ring).head);
            let mut n = 0;
            while n < max {
                let tail = std::ptr::read_volatile(&(*ring).tail);
                fence(Ordering::Acquire);
                if head == tail {
                    break;
                }
                let ev = std::ptr::read_volatile(events.add(head as usize));
                out.push((cast::usize_of(ev.data), ev.res));
                head = (head + 1) % nr;
                n += 1;
            }
            fence(Ordering::Release);
            std::ptr::write_volatile(&mut (*ring).head, head);
            n
        }
    }
}

impl Queue for Libaio {
    fn depth(&self) -> usize {
        self.iocbs.len()
    }

    fn buf(&mut self, slot: usize) -> &mut [u8] {
        self.buf.slot(slot, self.bs)
    }

    fn prep(&mut self, slot: usize, file: Target, dir: Dir, offset: u64, len: usize, prio: u16) {
        let ptr = self.buf.slot_ptr(slot, self.bs);
        self.iocbs[slot] = IoCb {
            data: slot as u64,
            opcode: match dir {
                Dir::Read => IOCB_CMD_PREAD,
                Dir::Write => IOCB_CMD_PWRITE,
                Dir::Trim => unreachable!("the queue loop does trims itself"),
            },
            fildes: file.fd as u32,
            buf: ptr as u64,
            nbytes: len as u64,
            offset: offset as i64,
            // A priority of this request's own (cmdprio), as fio's libaio
            // engine sets it: IOCB_FLAG_IOPRIO with aio_reqprio.
            reqprio: prio as i16,
            flags: if prio != 0 { IOCB_FLAG_IOPRIO } else { 0 },
            ..IoCb::default()
        };
        let p: *mut IoCb = &mut self.iocbs[slot];
        self.queued.push(p);
    }

    fn submit(&mut self) -> std::io::Result<()> {
        Libaio::submit(self)
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Option<Duration>,
        out: &mut Vec<(usize, i64)>,
    ) -> std::io::Result<()> {
        if min == 0 {
            // The loop submits early while the queue has room; like fio,
            // reap then only when it costs no system call (the ring in
            // user memory), else leave completions for the next wait.
            if self.userspace_reap {
                self.reap_user(max, out);
            }
            return Ok(());
        }
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let tsp: *const libc::timespec = match (&ts, min) {
            (_, 0) => &zero,
            (Some(t), _) => t,
            (None, _) => std::ptr::null(),
        };
        let max = max.min(self.events.len());
        loop {
            // SAFETY: events has room for `max` entries.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    max as libc::c_long,
                    self.events.as_mut_ptr(),
                    tsp,
                )
            };
            // A count of the events written, or -1 and errno.
            let Ok(r) = usize::try_from(r) else {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    if timeout.is_some() {
                        return Ok(());
                    }
                    continue;
                }
                return Err(e);
            };
            for ev in &self.events[..r] {
                out.push((cast::usize_of(ev.data), ev.res));
            }
            return Ok(());
        }
    }

    fn poison(&mut self) {}
}

impl Drop for Libaio {
    fn drop(&mut self) {
        // io_destroy waits for every I/O still in flight, so the buffers
        // (dropped after this) are no longer the kernel's.
        // SAFETY: destroying our own context once.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}
