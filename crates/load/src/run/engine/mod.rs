//! I/O engines. The blocking engines (`sync`, `psync`, `pvsync`,
//! `pvsync2`, `mmap`, `null`) sit behind [`Blocking`] and share one loop
//! ([`run_blocking`]), monomorphised per engine so the hot path has no
//! dynamic dispatch. The queueing engines (`io_uring`, `libaio`,
//! `posixaio`) sit behind [`queue::Queue`] and share [`queue::run`], which
//! keeps `iodepth` I/Os in flight; `cpuio` burns CPU.

use std::os::fd::{AsFd, BorrowedFd};
use std::time::Instant;

use iolab_sys::cast;

use crate::job::kinds::{Dir, IoEngine};
use crate::job::model::Job;
use crate::run::buffer::AlignedBuf;
use crate::run::clone::result::Failure;
use crate::run::clone::state::Run;
use crate::run::files::file_set::Files;

pub mod cpuio;
pub mod libaio;
pub mod mmap;
pub mod posixaio;
pub mod psync;
pub mod pvsync;
pub mod queue;
pub mod sync;
pub mod trim;
pub mod uring;

/// A ready engine, with its buffers.
pub enum Engine {
    /// read/write + lseek.
    Sync(BlockingEngine<sync::SyncIo>),
    /// pread/pwrite.
    Psync(BlockingEngine<psync::PsyncIo>),
    /// preadv/pwritev (and preadv2/pwritev2 with flags).
    Pvsync(BlockingEngine<pvsync::PvsyncIo>),
    /// memcpy to and from a mapping.
    Mmap(BlockingEngine<mmap::MmapIo>),
    /// No I/O.
    Null(BlockingEngine<NullIo>),
    /// io_uring.
    Uring(Box<queue::Queued<uring::Uring>>),
    /// Linux native AIO.
    Libaio(Box<queue::Queued<libaio::Libaio>>),
    /// POSIX AIO.
    Posixaio(Box<queue::Queued<posixaio::PosixAio>>),
    /// No I/O: burns CPU.
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

/// The `null` engine: every I/O completes at once, moving nothing
/// (measures the loop's own cost per I/O).
#[derive(Debug, Default)]
pub struct NullIo;

impl Blocking for NullIo {
    #[inline]
    fn io(&mut self, _: BorrowedFd<'_>, _: Dir, _: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }
}

fn blocking<E>(io: E, job: &Job, seed: u64) -> Result<BlockingEngine<E>, String> {
    let bs = usize::try_from(job.buf_size()).map_err(|_| "bs too large".to_string())?;
    let mut buf = AlignedBuf::random(bs, seed);
    if job.x.buffer != crate::job::extra::BufferFill::Random {
        use rand::SeedableRng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        crate::run::buffer::fill(buf.as_mut_slice(), &job.x.buffer, &mut rng);
    }
    Ok(BlockingEngine { io, buf })
}

/// Opens the engine for a job on an open file (`region` bytes from the
/// job's offset `base`). Buffers are allocated here, once, aligned for O_DIRECT
/// and filled with random data (or as the buffer options say).
pub fn setup(
    job: &Job,
    files: &Files,
    base: u64,
    region: u64,
    seed: u64,
) -> Result<Engine, String> {
    let file = files.first();
    let bs = usize::try_from(job.buf_size()).map_err(|_| "bs too large".to_string())?;
    let x = &job.x;
    Ok(match job.ioengine {
        IoEngine::Sync => Engine::Sync(blocking(sync::SyncIo::default(), job, seed)?),
        IoEngine::Psync => Engine::Psync(blocking(psync::PsyncIo, job, seed)?),
        IoEngine::Pvsync => Engine::Pvsync(blocking(pvsync::PvsyncIo::plain(), job, seed)?),
        IoEngine::Pvsync2 => Engine::Pvsync(blocking(
            pvsync::PvsyncIo::with_flags(x.hipri, x.nowait, x.uncached)?,
            job,
            seed,
        )?),
        IoEngine::Mmap => Engine::Mmap(blocking(
            mmap::MmapIo::new(file, job, base + region)?,
            job,
            seed,
        )?),
        IoEngine::Null => Engine::Null(blocking(NullIo, job, seed)?),
        IoEngine::IoUring => Engine::Uring(Box::new(queue::Queued::new(
            uring::Uring::new(files, job.iodepth, bs, seed, x.hipri)?,
            job,
        ))),
        IoEngine::Libaio => Engine::Libaio(Box::new(queue::Queued::new(
            libaio::Libaio::new(job.iodepth, bs, seed, x.userspace_reap)?,
            job,
        ))),
        IoEngine::Posixaio => Engine::Posixaio(Box::new(queue::Queued::new(
            posixaio::PosixAio::new(job.iodepth, bs, seed)?,
            job,
        ))),
        IoEngine::CpuIo => Engine::Cpu,
    })
}

/// Runs a clone's I/O on its engine.
pub fn run(eng: &mut Engine, run: &mut Run<'_>, file: &Files) {
    match eng {
        Engine::Sync(e) => run_blocking(e, run, file),
        Engine::Psync(e) => run_blocking(e, run, file),
        Engine::Pvsync(e) => run_blocking(e, run, file),
        Engine::Mmap(e) => run_blocking(e, run, file),
        Engine::Null(e) => run_blocking(e, run, file),
        Engine::Uring(q) => q.run(run, file),
        Engine::Libaio(q) => q.run(run, file),
        Engine::Posixaio(q) => q.run(run, file),
        Engine::Cpu => cpuio::run(run),
    }
}

/// The error of a trim that reached an engine's read/write path: the
/// loops do trims themselves ([`trim::Trimmer`]).
pub(crate) fn trim_not_here() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "a trim reached an engine's read/write path",
    )
}

/// Does one trim for a loop: times it, records it, or fails the clone.
pub fn do_trim(run: &mut Run<'_>, files: &Files, trimmer: trim::Trimmer, offset: u64, len: u64) {
    let (file, off) = files.at(offset);
    let t0 = Instant::now();
    // zonemode=zbd: a trim of a sequential zone is its reset.
    let r = match run.zbd_trim(offset) {
        Some(r) => r.map(|()| len),
        None => trimmer.trim(file, off, len),
    };
    let t1 = Instant::now();
    run.zbd_done(Dir::Trim, offset, len);
    match r {
        Ok(n) => run.complete_at(Dir::Trim, n, t1 - t0, t1, offset),
        Err(e) => {
            let f = run.io_failure(&e, Dir::Trim, offset);
            run.error(f, Dir::Trim, 1);
        }
    }
}

/// The loop of the blocking engines: next I/O, time it, record it.
pub fn run_blocking<E: Blocking>(eng: &mut BlockingEngine<E>, run: &mut Run<'_>, file: &Files) {
    let whole = eng.buf.as_mut_slice();
    // One file (the usual case): its descriptor once, not per I/O.
    let (single, fd0) = (file.single(), file.first().as_fd());
    let checks = run.checks_reads();
    let timed = run.timed();
    let trimmer = trim::Trimmer::for_file(
        file.first(),
        run.job.ioengine == crate::job::kinds::IoEngine::Null,
    );
    while let Some((dir, offset, len)) = run.next(file) {
        if dir == Dir::Trim {
            do_trim(run, file, trimmer, offset, len);
            continue;
        }
        let buf = &mut whole[..cast::usize_of(len)];
        if dir == Dir::Write {
            run.prepare_write(buf, offset);
        }
        let (fd, off) = if single {
            (fd0, offset)
        } else {
            let (f, off) = file.at(offset);
            (f.as_fd(), off)
        };
        let t0 = if timed { Instant::now() } else { run.time.now };
        let r = eng.io.io(fd, dir, off, buf);
        let t1 = Instant::now();
        run.zbd_done(dir, offset, len);
        match r {
            Ok(0) => {
                let f = eof(run, dir, offset);
                run.fail(f);
            }
            Ok(n) => {
                if checks && dir == Dir::Read {
                    run.check_read(&buf[..n], offset);
                }
                run.complete_at(dir, n as u64, t1 - t0, t1, offset);
                if dir == Dir::Write {
                    run.after_write_at(file, offset, n as u64);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if run.fill_done(&e) => return,
            Err(e) => {
                let f = run.io_failure(&e, dir, offset);
                run.error(f, dir, 1);
            }
        }
        // latency_target at depth 1: judged each I/O; a sync engine is
        // always quiesced, so its final window restarts at once.
        match run.lat_turn() {
            crate::run::lat_target::Step::FinalWindow => run.restart_measurement(),
            crate::run::lat_target::Step::Done => return,
            _ => {}
        }
    }
}

/// A read or write that moved nothing: the file shrank under the load.
pub fn eof(run: &Run<'_>, dir: Dir, offset: u64) -> Failure {
    let e = std::io::Error::new(
        std::io::ErrorKind::UnexpectedEof,
        "end of file (was it truncated while the load ran?)",
    );
    run.io_failure(&e, dir, offset)
}
