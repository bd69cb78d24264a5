//! The device model serves every size and every offset as a plain file
//! does (issue 45: a 4 GiB image answered no read at all, because the
//! bytes left were cast to u32). For images of 4 GiB, 8 GiB, 4 GiB +
//! 4 KiB and a sparse 17 TiB (past ext4's 16 TiB file limit, so on a
//! tmpfs), the same reads, writes, discards, write-zeroes and flushes go
//! to the model and to a plain twin file, and every read is compared:
//! at the first and last block, at every multiple of 4 GiB, across every
//! 2^32-byte boundary, and at random offsets drawn near them (proptest).
//! Reads and writes go both through the FUSE file and through a loop
//! device over it (the lab's real path, where the kernel splits and
//! aligns requests and sends discards as fallocate).
#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_model::{server, ModelParams, ModelStats};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const KIB: u64 = 1 << 10;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;
const B32: u64 = 1 << 32;

/// BLKDISCARD and BLKZEROOUT (`_IO(0x12, 119)`, `_IO(0x12, 127)`, linux/fs.h):
/// a range `[start, len]` of u64.
const BLKDISCARD: libc::c_ulong = 0x1277;
const BLKZEROOUT: libc::c_ulong = 0x127f;

/// A model that adds no time: this test is about bytes, not timing.
fn fast() -> ModelParams {
    ModelParams {
        profile: "rate".into(),
        read_bw: u64::MAX / 4,
        write_bw: u64::MAX / 4,
        read_latency_ns: 0,
        write_latency_ns: 0,
        seek_ns: 0,
        queue_depth: 4,
        flush_ns: 0,
        duplex: true,
    }
}

/// A buffer aligned for O_DIRECT.
struct Aligned {
    raw: Vec<u8>,
    at: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let raw = vec![0u8; len + 4096];
        let at = raw.as_ptr().align_offset(4096);
        Aligned { raw, at, len }
    }
    fn buf(&mut self) -> &mut [u8] {
        &mut self.raw[self.at..self.at + self.len]
    }
}

/// One image served by the model, with its plain twin.
struct Served {
    size: u64,
    disk: File,
    twin: File,
    stats: PathBuf,
}

/// Mounts the model over a fresh sparse image of `size` in `dir`, through
/// `guard`, and serves it from a thread of this process.
fn serve(guard: &Guard, dir: &Path, size: u64) -> Served {
    let image = dir.join(format!("img-{size}"));
    let twin = dir.join(format!("twin-{size}"));
    for p in [&image, &twin] {
        File::create(p).unwrap().set_len(size).unwrap();
    }
    let mnt = dir.join(format!("mnt-{size}"));
    guard.mkdir_all(&mnt).unwrap();
    let fuse = OwnedFd::from(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")
            .unwrap(),
    );
    let data = format!(
        "fd={},rootmode=40000,user_id=0,group_id=0,allow_other,max_read={}",
        fuse.as_raw_fd(),
        server::MAX_REQUEST
    );
    guard
        .mount("iolab-model-test", &mnt, "fuse.iolab-model", &data)
        .unwrap();
    let img = image.clone();
    std::thread::spawn(move || iolab_model::serve(fuse, &img, fast()));
    // Calibration: a round trip of 0, so reads are served from now on.
    std::fs::write(mnt.join(server::CONTROL_NAME), "transport_ns=0\n").unwrap();
    let open = |p: &Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(p)
            .unwrap()
    };
    Served {
        size,
        disk: open(&mnt.join(server::FILE_NAME)),
        twin: open(&twin),
        stats: mnt.join(server::STATS_NAME),
    }
}

/// A pattern no two writes share: the offset and a counter in every word.
fn pattern(offset: u64, len: usize, salt: u64) -> Vec<u8> {
    (0..len)
        .map(|i| {
            let w = (offset + i as u64 / 8) ^ salt.rotate_left(17);
            w.to_le_bytes()[i % 8]
        })
        .collect()
}

/// Reads `len` at `offset` from both files and compares (a read past the
/// end returns fewer bytes from both).
fn same(s: &Served, offset: u64, len: usize, what: &str) {
    let mut a = vec![0u8; len];
    let mut b = vec![0u8; len];
    let na = read_upto(&s.disk, &mut a, offset);
    let nb = read_upto(&s.twin, &mut b, offset);
    assert_eq!(
        na, nb,
        "{what}: model read {na} bytes at {offset} of a {} image, a plain file {nb}",
        s.size
    );
    assert!(
        a == b,
        "{what}: {len} bytes at {offset} of a {} image differ from a plain file's",
        s.size
    );
}

fn read_upto(f: &File, buf: &mut [u8], offset: u64) -> usize {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], offset + done as u64).unwrap() {
            0 => break,
            n => done += n,
        }
    }
    done
}

/// Writes the same bytes to both, within the image (clamped at its end).
fn write_both(s: &Served, offset: u64, len: usize, salt: u64) {
    let len = len.min(usize::try_from(s.size.saturating_sub(offset)).unwrap_or(usize::MAX));
    if len == 0 {
        return;
    }
    let data = pattern(offset, len, salt);
    s.disk.write_all_at(&data, offset).unwrap();
    s.twin.write_all_at(&data, offset).unwrap();
}

/// The offsets every image is checked at: the first and last block, and
/// 4 KiB either side of each multiple of `step` inside the image.
fn boundaries(size: u64, step: u64) -> Vec<u64> {
    let mut v = vec![0, size - 4 * KIB];
    let mut k = step;
    while k < size {
        v.extend([k - 4 * KIB, k]);
        k += step;
    }
    v
}

/// The reads and writes of one image through the FUSE file.
fn through_the_file(s: &Served, step: u64) {
    for (n, &off) in boundaries(s.size, step).iter().enumerate() {
        // A write that straddles the boundary, then reads around it.
        let at = off.saturating_sub(2 * KIB);
        write_both(s, at, 8 * 1024, n as u64);
        same(s, off, 4096, "the block at a boundary");
        same(s, at, 8192, "a span across a boundary");
    }
    // The end: a read that runs past it, and one past it entirely.
    same(s, s.size - 512, 4096, "a read running past the end");
    same(s, s.size, 4096, "a read past the end");
    // A write past the end is refused by the model (the device has a size).
    assert!(s.disk.write_at(&[1u8; 512], s.size).is_err());
    assert!(s.disk.write_all_at(&[1u8; 1024], s.size - 512).is_err());
}

/// Random reads and writes drawn near the 2^32-byte boundaries and
/// anywhere, compared with the twin (the property test).
fn random_ops(s: &Served, cases: u32) {
    let size = s.size;
    let near = (0..=size / B32)
        .prop_flat_map(move |k| (Just(k * B32), -(64 * KIB as i64)..(64 * KIB as i64)))
        .prop_map(move |(b, d)| b.saturating_add_signed(d).min(size - 1));
    let offset = prop_oneof![near, 0..size];
    let op = (offset, 1usize..(300 * 1024), any::<bool>(), any::<u64>());
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(op, 1..8), |ops| {
            for (off, len, write, salt) in ops {
                if write {
                    write_both(s, off, len, salt);
                }
                same(s, off, len, "a random read");
            }
            Ok(())
        })
        .unwrap();
}

/// The lab's path: a loop device over the model's file, O_DIRECT reads
/// and writes at the boundaries, a discard and a write-zeroes, a flush.
fn through_a_loop_device(guard: &Guard, s: &Served, mnt_disk: &Path, step: u64) {
    let mark = guard.mark().unwrap();
    let dev = guard.attach_loop(mnt_disk, true).unwrap();
    let node = dev.dev_path();
    let blk = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&node)
        .unwrap();
    let mut buf = Aligned::new(16 * 1024);
    for (n, &off) in boundaries(s.size, step).iter().enumerate() {
        // Written through the device: 16 KiB across the boundary.
        let at = off.saturating_sub(8 * KIB).min(s.size - 16 * KIB);
        let data = pattern(at, 16 * 1024, 1000 + n as u64);
        buf.buf().copy_from_slice(&data);
        blk.write_all_at(buf.buf(), at).unwrap();
        s.twin.write_all_at(&data, at).unwrap();
        buf.buf().fill(0);
        blk.read_exact_at(buf.buf(), at).unwrap();
        let mut want = vec![0u8; 16 * 1024];
        s.twin.read_exact_at(&mut want, at).unwrap();
        assert!(
            buf.buf() == want.as_slice(),
            "the loop device read 16 KiB at {at} of a {} image unlike a plain file",
            s.size
        );
    }
    // Discard and write-zeroes of a range across the last boundary: the
    // model punches (or zeroes) the image's range; the twin does the same.
    let last = boundaries(s.size, step)
        .last()
        .copied()
        .unwrap()
        .min(s.size - 64 * KIB);
    let mut buf = Aligned::new(64 * 1024);
    for (ioctl, name) in [(BLKDISCARD, "discard"), (BLKZEROOUT, "write-zeroes")] {
        let at = last & !4095;
        let range: [u64; 2] = [at, 64 * KIB];
        // SAFETY: the ioctl reads two u64 from a valid pointer.
        let rc = unsafe { libc::ioctl(blk.as_raw_fd(), ioctl, range.as_ptr()) };
        assert_eq!(
            rc,
            0,
            "{name} of 64 KiB at {at} of a {} image: {}",
            s.size,
            std::io::Error::last_os_error()
        );
        s.twin.write_all_at(&[0u8; 64 * 1024], at).unwrap();
        blk.read_exact_at(buf.buf(), at).unwrap();
        assert!(
            buf.buf().iter().all(|&b| b == 0),
            "after a {name}, the range reads as data"
        );
        same(
            s,
            at.saturating_sub(4096),
            72 * 1024,
            "around a discarded range",
        );
    }
    blk.sync_all().unwrap();
    drop(blk);
    for r in guard.undo_since(mark) {
        r.unwrap();
    }
}

#[test]
fn the_model_serves_every_size_as_a_plain_file_does() {
    let test = "the_model_serves_every_size_as_a_plain_file_does";
    if !iolab_testkit::root_or_skip(test, "it mounts FUSE, a tmpfs and loop devices") {
        return;
    }
    if !Path::new("/dev/fuse").exists() {
        return iolab_testkit::skip(test, "no /dev/fuse (modprobe fuse)");
    }
    let guard = Guard::new();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    // Sparse images hold only what is written: a small tmpfs holds a
    // 17 TiB one (ext4, /var/tmp here, stops at 16 TiB).
    guard
        .mount("iolab-model-test", dir.path(), "tmpfs", "size=1g")
        .unwrap();
    for (size, step, cases) in [
        (4 * GIB, 4 * GIB, 64),
        (8 * GIB, 4 * GIB, 64),
        (4 * GIB + 4 * KIB, 4 * GIB, 64),
        // Every 2^32-byte boundary of 17 TiB: 4352 of them.
        (17 * TIB, B32, 32),
    ] {
        let s = serve(&guard, dir.path(), size);
        through_the_file(&s, step);
        random_ops(&s, cases);
        let disk = dir
            .path()
            .join(format!("mnt-{size}"))
            .join(server::FILE_NAME);
        through_a_loop_device(&guard, &s, &disk, step);
        let st: ModelStats = serde_json::from_slice(&std::fs::read(&s.stats).unwrap()).unwrap();
        assert_eq!(st.errors, 0, "{size}: {st:?}");
        assert!(
            st.reads > 0 && st.writes > 0 && st.discards > 0,
            "{size}: {st:?}"
        );
        assert!(st.flushes > 0, "{size}: the loop device's flush: {st:?}");
        eprintln!(
            "{size} bytes: {} reads, {} writes, {} discards, {} flushes served like a plain file",
            st.reads, st.writes, st.discards, st.flushes
        );
    }
    // Undo: loop devices, FUSE mounts (their servers end), the tmpfs.
    for r in guard.restore() {
        r.unwrap();
    }
}
