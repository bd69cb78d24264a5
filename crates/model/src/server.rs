//! The FUSE server: one file, `disk.img`, whose reads and writes go to the
//! lab's image file and complete when the device model says.
//!
//! The session thread admits each request to the [`DeviceClock`] (arrival
//! order), and hands it to a worker, which does the real I/O on the image
//! at once and replies at the completion time the model computed. Replies
//! sent from other threads is how fuser lets requests overlap; the kernel
//! sends at most the loop device's queue depth of them at a time, which
//! the lab sets to the model's.
//!
//! Memory pressure: this process writes the pages the lab's filesystem is
//! writing back; were its own allocations to wait for that writeback, it
//! would wait for itself. It therefore marks itself an I/O flusher
//! (PR_SET_IO_FLUSHER: allocations may not recurse into I/O) and reads and
//! writes the image with O_DIRECT where the request is aligned, so it does
//! not grow the host's page cache either.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyWrite, Request, WriteFlags,
};

use rustix::fs::FallocateFlags;

use crate::clock::{now_ns, sleep_until, Oversleep};
use crate::device::{DeviceClock, Op};
use crate::stats::Stats;

/// The device's file.
pub const FILE_NAME: &str = "disk.img";
/// The statistics file (JSON, computed when read).
pub const STATS_NAME: &str = "stats.json";
const ROOT: INodeNo = INodeNo(1);
const DISK: INodeNo = INodeNo(2);
const STATS: INodeNo = INodeNo(3);
const TTL: Duration = Duration::from_secs(3600);
/// Largest request the kernel sends (FUSE max_pages 256 × 4 KiB): a
/// loop device's 1 MiB request reaches the model whole.
pub const MAX_REQUEST: u32 = 1 << 20;

enum Reply {
    Data(ReplyData, u64, u32),
    Write(ReplyWrite, u64, Vec<u8>),
    Empty(ReplyEmpty),
    /// A fallocate of the image: `(offset, length, mode)`.
    Space(ReplyEmpty, u64, u64, FallocateFlags),
}

struct Job {
    reply: Reply,
    due_ns: u64,
    arrived_ns: u64,
}

/// The cost of the path itself — block layer, loop, FUSE, this server and
/// back — which every request pays on top of its modelled time. Measured
/// once when the lab comes up, through the lab's own loop device (reads
/// answered at once, with no model and no I/O: [`measure`]), written to
/// the `control` file, and taken off each request's due time: a 4 KiB
/// read then takes the modelled time, not the modelled time plus the
/// round trip.
///
/// A qemu guest's path (virtio, qemu, FUSE) also costs per byte (its
/// copies), and a write's differs from a read's; measured from inside the
/// guest (`iolab boot --disk`, calibrate.rs): the control file then says
/// `transport_ns=A transport_ps_per_byte=B write_transport_ns=C
/// write_transport_ps_per_byte=D`, and a read of n bytes has A + B·n taken
/// off, a write C + D·n (a flush and a discard C).
#[derive(Debug, Default)]
pub struct Transport {
    calibrated: std::sync::atomic::AtomicBool,
    ns: AtomicU64,
    ps_per_byte: AtomicU64,
    write_ns: AtomicU64,
    write_ps_per_byte: AtomicU64,
}

/// A path's cost: a fixed part and a part per byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathCost {
    /// Fixed part, ns.
    pub ns: u64,
    /// Per byte moved, ps.
    pub ps_per_byte: u64,
}

impl PathCost {
    /// The cost of moving `bytes`, ns.
    pub fn of(&self, bytes: u64) -> u64 {
        let per = u128::from(self.ps_per_byte) * u128::from(bytes) / 1000;
        self.ns
            .saturating_add(u64::try_from(per).unwrap_or(u64::MAX))
    }
}

impl Transport {
    /// Ends calibration with the measured round trips.
    fn set(&self, read: PathCost, write: PathCost) {
        self.ns.store(read.ns, Ordering::Relaxed);
        self.ps_per_byte.store(read.ps_per_byte, Ordering::Relaxed);
        self.write_ns.store(write.ns, Ordering::Relaxed);
        self.write_ps_per_byte
            .store(write.ps_per_byte, Ordering::Relaxed);
        self.calibrated.store(true, Ordering::Release);
    }

    /// A read's path and a write's.
    pub fn read(&self) -> PathCost {
        PathCost {
            ns: self.ns.load(Ordering::Relaxed),
            ps_per_byte: self.ps_per_byte.load(Ordering::Relaxed),
        }
    }

    /// A write's path (a flush's and a discard's fixed part too).
    pub fn write(&self) -> PathCost {
        PathCost {
            ns: self.write_ns.load(Ordering::Relaxed),
            ps_per_byte: self.write_ps_per_byte.load(Ordering::Relaxed),
        }
    }

    /// The round trip of `op`, ns.
    pub fn of(&self, op: &crate::device::Op) -> u64 {
        match op {
            crate::device::Op::Read { bytes, .. } => self.read().of(*bytes),
            crate::device::Op::Write { bytes, .. } => self.write().of(*bytes),
            _ => self.write().ns,
        }
    }

    fn calibrating(&self) -> bool {
        !self.calibrated.load(Ordering::Acquire)
    }

    /// The measured round trip of a read, ns.
    pub fn ns(&self) -> u64 {
        self.ns.load(Ordering::Relaxed)
    }
}

/// Measures the round trip through `dev` (the lab's loop device over this
/// server's `disk.img`, served at once while calibrating): 200 4 KiB
/// O_DIRECT reads, the median of the last 150, ns.
pub fn measure(dev: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = File::options()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)?;
    let mut buf = AlignedBuf::new(4096);
    let mut times = Vec::new();
    for _ in 0..200 {
        let t = now_ns();
        f.read_at(buf.as_mut(), 0)?;
        times.push(now_ns() - t);
    }
    let tail = &mut times[50..];
    tail.sort_unstable();
    Ok(tail[tail.len() / 2])
}

/// Reads the control file: `transport_ns=A`, then optionally
/// `transport_ps_per_byte=B`, `write_transport_ns=C` and
/// `write_transport_ps_per_byte=D` (a write's path the read's when not
/// given). (read, write)
pub fn parse_control(text: &str) -> Option<(PathCost, PathCost)> {
    let mut read = PathCost::default();
    let mut write: Option<PathCost> = None;
    let mut seen = false;
    for w in text.split_whitespace() {
        let (k, v) = w.split_once('=')?;
        let v: u64 = v.parse().ok()?;
        match k {
            "transport_ns" => {
                read.ns = v;
                seen = true;
            }
            "transport_ps_per_byte" => read.ps_per_byte = v,
            "write_transport_ns" => write.get_or_insert_with(PathCost::default).ns = v,
            "write_transport_ps_per_byte" => {
                write.get_or_insert_with(PathCost::default).ps_per_byte = v;
            }
            _ => return None,
        }
    }
    seen.then(|| (read, write.unwrap_or(read)))
}

/// The file `measure`'s result is written to: `transport_ns=N`.
pub const CONTROL_NAME: &str = "control";
const CONTROL: INodeNo = INodeNo(4);

/// The filesystem.
pub struct ModelFs {
    size: u64,
    device: Mutex<DeviceClock>,
    /// Where completions wait for their time: one pool of workers, or in a
    /// duplex model one for reads and one for the rest. Workers take jobs
    /// in arrival order and sleep until each is due, which is the order
    /// they fall due only within one channel: a duplex model's writes may
    /// be due long after a read that arrived behind them.
    jobs: Vec<Mutex<mpsc::Sender<Job>>>,
    stats: Arc<Stats>,
    in_model: Arc<AtomicU64>,
    started_ns: u64,
    transport: Arc<Transport>,
    /// `stats.json` as it was when each open handle opened it: a reader
    /// reading it in several chunks must get one snapshot, not pieces of
    /// several (the counters change between reads).
    snapshots: Mutex<std::collections::HashMap<u64, Vec<u8>>>,
    next_fh: AtomicU64,
}

impl ModelFs {
    /// Serves `image` (opened read-write) through `device`; `workers`
    /// threads complete requests (at least the queue depth).
    pub fn new(
        image: &Path,
        device: DeviceClock,
        stats: Arc<Stats>,
        transport: Arc<Transport>,
    ) -> std::io::Result<ModelFs> {
        let buffered = File::options().read(true).write(true).open(image)?;
        let direct = {
            use std::os::unix::fs::OpenOptionsExt;
            File::options()
                .read(true)
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(image)
                .ok()
        };
        let size = buffered.metadata()?.len();
        let files = Arc::new(Files { buffered, direct });
        let in_model = Arc::new(AtomicU64::new(0));
        let workers = device.params().queue_depth as usize + 4;
        let oversleep = Arc::new(Oversleep::default());
        let pools = if device.params().duplex { 2 } else { 1 };
        let mut jobs = Vec::with_capacity(pools);
        for pool in 0..pools {
            let (tx, rx) = mpsc::channel::<Job>();
            let rx = Arc::new(Mutex::new(rx));
            for i in 0..workers {
                let (rx, files, stats, in_model, oversleep) = (
                    rx.clone(),
                    files.clone(),
                    stats.clone(),
                    in_model.clone(),
                    oversleep.clone(),
                );
                std::thread::Builder::new()
                    .name(format!("model-{pool}-{i}"))
                    .spawn(move || worker(&rx, &files, &stats, &in_model, &oversleep))?;
            }
            jobs.push(Mutex::new(tx));
        }
        Ok(ModelFs {
            size,
            device: Mutex::new(device),
            jobs,
            stats,
            in_model,
            started_ns: now_ns(),
            transport,
            snapshots: Mutex::default(),
            next_fh: AtomicU64::new(1),
        })
    }

    fn stats_json(&self) -> Vec<u8> {
        let (params, busy_ns) = {
            let d = self.device.lock().unwrap_or_else(|p| p.into_inner());
            (d.params().clone(), d.busy_ns)
        };
        let mut snap =
            self.stats
                .snapshot(&params, (now_ns() - self.started_ns) as f64 / 1e9, busy_ns);
        snap.calibrated = !self.transport.calibrating();
        snap.transport_ns = self.transport.ns();
        snap.transport_ps_per_byte = self.transport.read().ps_per_byte;
        snap.write_transport = Some(self.transport.write());
        // Read by `lab status` and the tests: a snapshot that cannot be
        // written says so instead of reading as an empty file.
        let mut v = serde_json::to_vec_pretty(&snap).unwrap_or_else(|e| {
            format!("{{\"error\": \"stats.json could not be written: {e}\"}}").into_bytes()
        });
        v.push(b'\n');
        v
    }

    fn attr(&self, ino: INodeNo) -> FileAttr {
        let (kind, perm, size, nlink) = if ino == ROOT {
            (FileType::Directory, 0o755, 0, 2)
        } else if ino == STATS {
            // Its size is not known before it is read (direct I/O reads
            // ignore the size).
            (FileType::RegularFile, 0o444, 0, 1)
        } else if ino == CONTROL {
            (FileType::RegularFile, 0o200, 0, 1)
        } else {
            (FileType::RegularFile, 0o600, self.size, 1)
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: SystemTime::UNIX_EPOCH,
            mtime: SystemTime::UNIX_EPOCH,
            ctime: SystemTime::UNIX_EPOCH,
            crtime: SystemTime::UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    /// Admits a request to the model and queues its completion.
    fn submit(&self, op: Op, reply: Reply) {
        let now = now_ns();
        let early = self.transport.of(&op);
        let slot = self
            .device
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .admit_early(now, op, early);
        let depth = self.in_model.fetch_add(1, Ordering::Relaxed) + 1;
        self.stats.admitted(op, now, slot, depth);
        let job = Job {
            reply,
            due_ns: slot.done_ns.saturating_sub(early).max(now),
            arrived_ns: now,
        };
        let pool = match op {
            Op::Read { .. } => 0,
            _ => self.jobs.len() - 1,
        };
        if let Err(mpsc::SendError(job)) = self.jobs[pool]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(job)
        {
            fail(job.reply, Errno::EIO);
        }
    }
}

struct Files {
    buffered: File,
    direct: Option<File>,
}

impl Files {
    /// O_DIRECT when the request is sector-aligned (it always is from a
    /// loop device), through an aligned bounce buffer; buffered otherwise.
    fn read_at(&self, offset: u64, len: usize) -> std::io::Result<AlignedBuf> {
        let mut buf = AlignedBuf::new(len);
        let file = match (&self.direct, aligned(offset, len)) {
            (Some(d), true) => d,
            _ => &self.buffered,
        };
        read_full(file, buf.as_mut(), offset)?;
        Ok(buf)
    }

    /// A discard (hole punched) or write-zeroes of the image's range,
    /// through the buffered descriptor, whose cached pages of the range
    /// the kernel drops with it.
    /// Zeroes without unmap (`ZERO_RANGE`) on a filesystem that cannot
    /// zero a range in place (tmpfs) become a hole: it reads the same, and
    /// the model charged the write's time anyway.
    fn fallocate(&self, offset: u64, len: u64, mode: FallocateFlags) -> std::io::Result<()> {
        match rustix::fs::fallocate(&self.buffered, mode, offset, len) {
            Err(rustix::io::Errno::OPNOTSUPP) if mode.contains(FallocateFlags::ZERO_RANGE) => {
                let hole = (mode - FallocateFlags::ZERO_RANGE) | FallocateFlags::PUNCH_HOLE;
                rustix::fs::fallocate(&self.buffered, hole, offset, len)
            }
            r => r,
        }
        .map_err(std::io::Error::from)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        if let (Some(d), true) = (&self.direct, aligned(offset, data.len())) {
            let mut buf = AlignedBuf::new(data.len());
            buf.as_mut().copy_from_slice(data);
            return d.write_all_at(buf.as_mut(), offset);
        }
        self.buffered.write_all_at(data, offset)
    }
}

fn aligned(offset: u64, len: usize) -> bool {
    offset % 4096 == 0 && len % 4096 == 0 && len > 0
}

/// How much of a read of `len` bytes at `offset` lies inside an image of
/// `size` bytes: `len`, fewer at the end, 0 past it. Computed in u64:
/// the bytes left may be any size (a multiple of 4 GiB left is not 0).
pub fn read_len(size: u64, offset: u64, len: u32) -> u32 {
    let inside = size.saturating_sub(offset).min(u64::from(len));
    // inside ≤ len, a u32: the conversion cannot fail.
    u32::try_from(inside).unwrap_or(len)
}

/// Whether `len` bytes at `offset` lie wholly inside an image of `size`
/// bytes (an offset + length past 2^64 does not).
pub fn fits(size: u64, offset: u64, len: u64) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= size)
}

/// Reads `buf.len()` bytes, zero-filling past the end of the file.
fn read_full(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], offset + done as u64)? {
            0 => {
                buf[done..].fill(0);
                break;
            }
            n => done += n,
        }
    }
    Ok(())
}

/// A zeroed buffer aligned to 4 KiB (O_DIRECT's requirement).
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
            .unwrap_or_else(|_| std::alloc::Layout::new::<u8>());
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, len, layout }
    }

    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to len initialised (zeroed) bytes we own.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn fail(reply: Reply, e: Errno) {
    match reply {
        Reply::Data(r, _, _) => r.error(e),
        Reply::Write(r, _, _) => r.error(e),
        Reply::Empty(r) | Reply::Space(r, ..) => r.error(e),
    }
}

fn worker(
    rx: &Mutex<mpsc::Receiver<Job>>,
    files: &Files,
    stats: &Stats,
    in_model: &AtomicU64,
    oversleep: &Oversleep,
) {
    loop {
        let job = {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            match rx.recv() {
                Ok(j) => j,
                Err(_) => return,
            }
        };
        // The real I/O first, then wait for the model's completion time:
        // a host that cannot keep up shows as an overrun, not as a
        // silently faster device.
        let io = match &job.reply {
            // A u32 length is a usize on every target iolab builds for.
            Reply::Data(_, offset, size) => files
                .read_at(*offset, iolab_sys::cast::usize_of(u64::from(*size)))
                .map(Some),
            Reply::Write(_, offset, data) => files.write_at(*offset, data).map(|_| None),
            Reply::Space(_, offset, len, mode) => {
                files.fallocate(*offset, *len, *mode).map(|_| None)
            }
            Reply::Empty(_) => Ok(None),
        };
        // Late only if the model wanted time to pass: a request due at
        // once (a free flush, a zero-latency model) cannot be early.
        if now_ns() > job.due_ns && job.due_ns > job.arrived_ns {
            stats.overrun();
        }
        sleep_until(job.due_ns, oversleep);
        in_model.fetch_sub(1, Ordering::Relaxed);
        match (job.reply, io) {
            (Reply::Data(r, _, _), Ok(Some(mut buf))) => r.data(buf.as_mut()),
            // The kernel sends at most max_write (MAX_REQUEST) bytes.
            (Reply::Write(r, _, data), Ok(_)) => match u32::try_from(data.len()) {
                Ok(n) => r.written(n),
                Err(_) => r.error(Errno::EIO),
            },
            (Reply::Empty(r) | Reply::Space(r, ..), Ok(_)) => r.ok(),
            (reply, Err(e)) => {
                stats.error();
                fail(
                    reply,
                    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)),
                );
            }
            (reply, Ok(_)) => fail(reply, Errno::EIO),
        }
    }
}

impl Filesystem for ModelFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Requests up to 1 MiB, and as many in flight as the device has
        // slots (the loop device's depth bounds them anyway).
        let _ = config.set_max_write(MAX_REQUEST);
        let _ = config.add_capabilities(fuser::InitFlags::FUSE_ASYNC_DIO);
        // A duplex model has twice the slots and workers: with the
        // kernel's limit at one direction's, its FIFO of background
        // requests would queue reads behind writes before the model sees
        // them.
        let (depth, pools) = self
            .device
            .lock()
            .map(|d| {
                (
                    d.params().queue_depth,
                    if d.params().duplex { 2 } else { 1 },
                )
            })
            .unwrap_or((1, 1));
        let bg = u16::try_from((depth + 4) * pools).unwrap_or(u16::MAX);
        let _ = config.set_max_background(bg);
        let _ = config.set_congestion_threshold(bg);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == ROOT && name == FILE_NAME {
            reply.entry(&TTL, &self.attr(DISK), Generation(0));
        } else if parent == ROOT && name == STATS_NAME {
            reply.entry(&Duration::ZERO, &self.attr(STATS), Generation(0));
        } else if parent == ROOT && name == CONTROL_NAME {
            reply.entry(&Duration::ZERO, &self.attr(CONTROL), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino == ROOT || ino == DISK || ino == STATS || ino == CONTROL {
            reply.attr(&TTL, &self.attr(ino));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    /// Truncation of `control` (opening it for writing truncates) and any
    /// other attribute change: nothing to change, the attributes as they are.
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.attr(&TTL, &self.attr(ino));
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino == ROOT {
            return reply.error(Errno::EISDIR);
        }
        let fh = if ino == STATS {
            let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
            self.snapshots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(fh, self.stats_json());
            fh
        } else {
            0
        };
        // No page cache between the loop device and the model: every
        // request the scheduler dispatches reaches the device.
        reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.snapshots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&fh.0);
        reply.ok();
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if ino == STATS {
            let snapshots = self.snapshots.lock().unwrap_or_else(|p| p.into_inner());
            let json = snapshots.get(&fh.0).map_or(&[][..], Vec::as_slice);
            let len = iolab_sys::cast::u64_of(json.len());
            let from = offset.min(len);
            let to = from.saturating_add(u64::from(size)).min(len);
            // Both are at most json.len(), a usize.
            let (from, to) = (
                iolab_sys::cast::usize_of(from),
                iolab_sys::cast::usize_of(to),
            );
            return reply.data(&json[from..to]);
        }
        let size = read_len(self.size, offset, size);
        if size == 0 {
            // At or past the end: end of file, as any file answers.
            return reply.data(&[]);
        }
        if self.transport.calibrating() {
            return reply.data(&vec![0u8; iolab_sys::cast::usize_of(u64::from(size))]);
        }
        self.submit(
            Op::Read {
                offset,
                bytes: u64::from(size),
            },
            Reply::Data(reply, offset, size),
        );
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if ino == CONTROL {
            let text = String::from_utf8_lossy(data);
            return match (parse_control(&text), u32::try_from(data.len())) {
                (Some((r, w)), Ok(n)) => {
                    self.transport.set(r, w);
                    reply.written(n);
                }
                _ => reply.error(Errno::EINVAL),
            };
        }
        if ino != DISK {
            return reply.error(Errno::EACCES);
        }
        let bytes = iolab_sys::cast::u64_of(data.len());
        if !fits(self.size, offset, bytes) {
            return reply.error(Errno::ENOSPC);
        }
        self.submit(
            Op::Write { offset, bytes },
            Reply::Write(reply, offset, data.to_vec()),
        );
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lo: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.submit(Op::Flush, Reply::Empty(reply));
    }

    /// A loop device's discard (`PUNCH_HOLE | KEEP_SIZE`) and write-zeroes
    /// (`ZERO_RANGE | KEEP_SIZE`, or a hole when the request allows unmap)
    /// reach the model as fallocate of `disk.img`. Done on the image, at
    /// the model's cost: a hole is a discard (a command, no data moved);
    /// zeroes written without unmap are a write of the range. Any mode
    /// that would change the image's size is refused: the device has one.
    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino != DISK {
            return reply.error(Errno::EACCES);
        }
        // The mode's bits as the kernel passed them; unknown bits are
        // kept, so the image's filesystem refuses what it does not know.
        let mode = FallocateFlags::from_bits_retain(u32::from_ne_bytes(mode.to_ne_bytes()));
        if !mode.contains(FallocateFlags::KEEP_SIZE) || !fits(self.size, offset, length) {
            return reply.error(Errno::EINVAL);
        }
        let op = if mode.contains(FallocateFlags::ZERO_RANGE) {
            Op::Write {
                offset,
                bytes: length,
            }
        } else {
            Op::Discard {
                offset,
                bytes: length,
            }
        };
        self.submit(op, Reply::Space(reply, offset, length, mode));
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: fuser::ReplyDirectory,
    ) {
        if ino != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (DISK, FileType::RegularFile, FILE_NAME),
            (STATS, FileType::RegularFile, STATS_NAME),
            (CONTROL, FileType::RegularFile, CONTROL_NAME),
        ];
        let skip = iolab_sys::cast::usize_of(offset);
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(skip) {
            if reply.add(*ino, iolab_sys::cast::u64_of(i + 1), *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_control_file_takes_a_round_trip_and_its_part_per_byte() {
        let c = |ns, ps_per_byte| PathCost { ns, ps_per_byte };
        assert_eq!(
            parse_control("transport_ns=120000\n"),
            Some((c(120_000, 0), c(120_000, 0)))
        );
        assert_eq!(
            parse_control("transport_ns=90000 transport_ps_per_byte=850\n"),
            Some((c(90_000, 850), c(90_000, 850)))
        );
        assert_eq!(
            parse_control(
                "transport_ns=90000 transport_ps_per_byte=850 write_transport_ns=200000 write_transport_ps_per_byte=1200"
            ),
            Some((c(90_000, 850), c(200_000, 1200)))
        );
        assert_eq!(parse_control("transport_ps_per_byte=850"), None);
        assert_eq!(parse_control("transport_ns=x"), None);
        assert_eq!(parse_control("transport_ns=1 other=2"), None);
        let t = Transport::default();
        t.set(c(90_000, 850), c(200_000, 1200));
        // 128 KiB at 0.85 ns a byte: 111 µs on top of the 90 µs.
        let read = crate::device::Op::Read {
            offset: 0,
            bytes: 131_072,
        };
        let write = crate::device::Op::Write {
            offset: 0,
            bytes: 131_072,
        };
        assert_eq!(t.of(&read), 90_000 + 111_411);
        assert_eq!(t.of(&write), 200_000 + 157_286);
        assert_eq!(t.of(&crate::device::Op::Flush), 200_000);
    }

    #[test]
    fn a_read_at_a_multiple_of_4_gib_from_the_end_is_served_whole() {
        // The bug of issue 45: 4 GiB left was read as 0 bytes left.
        assert_eq!(read_len(4 * GIB, 0, 4096), 4096);
        assert_eq!(read_len(8 * GIB, 0, MAX_REQUEST), MAX_REQUEST);
        assert_eq!(read_len(5 * GIB, GIB, 4096), 4096);
        assert_eq!(read_len(4 * GIB + 4096, 4096, 4096), 4096);
        // The end of the image: the bytes left, then nothing.
        assert_eq!(read_len(4 * GIB, 4 * GIB - 512, 4096), 512);
        assert_eq!(read_len(4 * GIB, 4 * GIB, 4096), 0);
        assert_eq!(read_len(4 * GIB, u64::MAX, 4096), 0);
        assert_eq!(read_len(17 << 40, (17 << 40) - 4096, 8192), 4096);
    }

    #[test]
    fn writes_past_the_end_or_past_2_to_the_64_do_not_fit() {
        assert!(fits(4 * GIB, 4 * GIB - 4096, 4096));
        assert!(!fits(4 * GIB, 4 * GIB - 4096, 4097));
        assert!(!fits(u64::MAX, u64::MAX - 1, 2));
        assert!(fits(17 << 40, (17 << 40) - 4096, 4096));
    }

    proptest! {
        /// Against the same arithmetic in u128, where nothing wraps.
        #[test]
        fn read_len_is_the_overlap_with_the_image(
            size in prop_oneof![0u64..(1 << 45), Just(u64::MAX), (1u64..5).prop_map(|k| k << 32)],
            offset: u64,
            delta in -(1i64 << 20)..(1i64 << 20),
            len: u32,
        ) {
            // Offsets near the end as often as anywhere.
            let offset = if offset % 2 == 0 { size.saturating_add_signed(delta) } else { offset };
            let want = (u128::from(size).saturating_sub(u128::from(offset))).min(u128::from(len));
            prop_assert_eq!(u128::from(read_len(size, offset, len)), want);
            let end = u128::from(offset) + u128::from(len);
            prop_assert_eq!(fits(size, offset, u64::from(len)), end <= u128::from(size));
        }
    }
}
