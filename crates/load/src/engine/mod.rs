//! I/O engines. `sync` and `psync` are blocking engines behind the
//! [`Blocking`] trait and share one loop ([`run_blocking`]), monomorphised
//! per engine so the hot path has no dynamic dispatch; `io_uring` keeps
//! `iodepth` I/Os in flight with its own loop; `cpuio` burns CPU.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Instant;

use crate::buffer::AlignedBuf;
use crate::job::{Dir, IoEngine, Job};
use crate::worker::{Failure, Run};

pub mod cpuio;
pub mod psync;
pub mod sync;
pub mod uring;

/// A ready engine, with its buffers.
pub enum Engine {
    /// read/write + lseek.
    Sync(BlockingEngine<sync::SyncIo>),
    /// pread/pwrite.
    Psync(BlockingEngine<psync::PsyncIo>),
    /// io_uring.
    Uring(Box<uring::Uring>),
    /// No I/O.
    Cpu,
}

/// A blocking engine and its one buffer.
pub struct BlockingEngine<E> {
    io: E,
    buf: AlignedBuf,
}

/// One synchronous I/O at a time.
pub trait Blocking {
    /// Reads into or writes from `buf` at `offset`; returns the bytes moved.
    fn io(
        &mut self,
        fd: BorrowedFd<'_>,
        dir: Dir,
        offset: u64,
        buf: &mut [u8],
    ) -> std::io::Result<usize>;
}

/// Opens the engine for a job on an open file. Buffers are allocated here,
/// once, aligned for O_DIRECT and filled with random data.
pub fn setup(job: &Job, file: &File, seed: u64) -> Result<Engine, String> {
    let bs = usize::try_from(job.bs).map_err(|_| "bs too large".to_string())?;
    Ok(match job.ioengine {
        IoEngine::Sync => Engine::Sync(BlockingEngine {
            io: sync::SyncIo::default(),
            buf: AlignedBuf::random(bs, seed),
        }),
        IoEngine::Psync => Engine::Psync(BlockingEngine {
            io: psync::PsyncIo,
            buf: AlignedBuf::random(bs, seed),
        }),
        IoEngine::IoUring => {
            Engine::Uring(Box::new(uring::Uring::new(file, job.iodepth, bs, seed)?))
        }
        IoEngine::CpuIo => Engine::Cpu,
    })
}

/// The loop of the blocking engines: next I/O, time it, record it.
pub fn run_blocking<E: Blocking>(eng: &mut BlockingEngine<E>, run: &mut Run<'_>, file: &File) {
    let bs = run.job.bs as usize;
    let buf = &mut eng.buf.as_mut_slice()[..bs];
    let fd = file.as_fd();
    while let Some((dir, offset)) = run.next(file) {
        let t0 = Instant::now();
        let r = eng.io.io(fd, dir, offset, buf);
        let t1 = Instant::now();
        match r {
            Ok(0) => {
                let f = eof(run, dir, offset);
                run.fail(f);
            }
            Ok(n) => {
                run.complete(dir, n as u64, t1 - t0, t1);
                if dir == Dir::Write {
                    run.after_write(file);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let f = Failure::io(run.job, &e, dir, run.path(), offset);
                run.fail(f);
            }
        }
    }
}

/// A read or write that moved nothing: the file shrank under the load.
pub fn eof(run: &Run<'_>, dir: Dir, offset: u64) -> Failure {
    let e = std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        "end of file (was it truncated while the load ran?)",
    );
    Failure::io(run.job, &e, dir, run.path(), offset)
}
