//! A throttled lab on the real kernel: the rules name only its lower loop
//! device, it delivers the bandwidth it was given, and requests queue in
//! the scheduler under test above the throttle (with a control showing
//! why the lab limits the driver's queue depth, and that the depth is
//! given back).
#![allow(clippy::unwrap_used)]

mod lab_env;

use std::path::Path;

use lab_env::{devno, kname, s, Env};

/// The rest of the machine keeps its speed: the only rules the lab adds
/// name its lower loop device — not the system disk, not the top device.
#[test]
fn throttle_rules_name_only_the_lower_device() {
    if !iolab_testkit::root_or_skip("throttle_rules", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("thr_rules");
    let up = env.up(&[
        "--fs", "none", "--size", "64MiB", "--bw", "30MiB/s", "--iops", "400",
    ]);
    let lower = devno(&kname(s(&up, "lower")));
    let top = devno(&kname(s(&up, "device")));
    let root_dev = iolab_sys::mounts::containing(Path::new("/")).unwrap().devno;
    let vda = Path::new("/sys/block/vda/dev")
        .exists()
        .then(|| devno("vda"));
    for file in [
        "read_bps_device",
        "write_bps_device",
        "read_iops_device",
        "write_iops_device",
    ] {
        let path = Path::new(iolab_guard::BLKIO_ROOT).join(format!("blkio.throttle.{file}"));
        let text = std::fs::read_to_string(&path).unwrap();
        let devs: Vec<&str> = text.lines().filter_map(|l| l.split(' ').next()).collect();
        assert!(
            devs.contains(&lower.as_str()),
            "{file}: no rule for {lower}: {text}"
        );
        assert!(
            !devs.contains(&top.as_str()),
            "{file}: rule on the top device"
        );
        assert!(
            !devs.contains(&root_dev.as_str()),
            "{file}: rule on / ({root_dev})"
        );
        if let Some(v) = &vda {
            assert!(!devs.contains(&v.as_str()), "{file}: rule on vda");
        }
    }
    env.down();
    let text = std::fs::read_to_string(
        Path::new(iolab_guard::BLKIO_ROOT).join("blkio.throttle.read_bps_device"),
    )
    .unwrap();
    assert!(!text.lines().any(|l| l.starts_with(&format!("{lower} "))));
}
/// A buffer aligned for O_DIRECT.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len, 4096).unwrap();
        // SAFETY: non-zero size; freed in Drop with the same layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Aligned { ptr, layout }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes and uniquely owned.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn open_direct(dev: &str, write: bool) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap()
}

/// Sequential O_DIRECT I/O of `total` bytes in 1 MiB requests from offset
/// 0; returns MiB/s.
fn direct_mib_per_s(dev: &str, write: bool, total: u64) -> f64 {
    use std::os::unix::fs::FileExt;
    let f = open_direct(dev, write);
    let mut buf = Aligned::new(1 << 20);
    buf.as_mut().fill(0x5a);
    let start = std::time::Instant::now();
    let mut off = 0;
    while off < total {
        if write {
            f.write_all_at(buf.as_mut(), off).unwrap();
        } else {
            f.read_exact_at(buf.as_mut(), off).unwrap();
        }
        off += 1 << 20;
    }
    total as f64 / (1 << 20) as f64 / start.elapsed().as_secs_f64()
}

/// A throttled lab delivers the bandwidth it was given, within 10 %, for
/// writes and for reads (about 4 s of I/O each).
#[test]
fn throttled_lab_delivers_the_set_bandwidth() {
    if !iolab_testkit::root_or_skip("bandwidth", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("bw");
    let up = env.up(&["--fs", "none", "--size", "128MiB", "--bw", "20MiB/s"]);
    let dev = s(&up, "device").to_string();
    let total = 80 << 20;
    let write = direct_mib_per_s(&dev, true, total);
    let read = direct_mib_per_s(&dev, false, total);
    eprintln!("throttle 20 MiB/s: write {write:.2} MiB/s, read {read:.2} MiB/s");
    for (what, got) in [("write", write), ("read", read)] {
        assert!(
            (18.0..=22.0).contains(&got),
            "{what} ran at {got:.2} MiB/s, not within 10 % of 20 MiB/s"
        );
    }
}

/// Samples of where a throttled lab's requests are while `readers`
/// threads each keep one 256 KiB O_DIRECT read outstanding on the top
/// device for about 3 s.
struct QueueSample {
    /// Little's law over the top device's diskstats: Δ(time spent
    /// reading) / Δ(wall time) = average number of read requests that
    /// exist at the top, from allocation (so including time waiting in the
    /// scheduler) to completion.
    outstanding_top: f64,
    /// Mean of `/sys/block/<top>/inflight`: requests the scheduler has
    /// dispatched to the loop driver (and so sit in the throttle below).
    dispatched_top: f64,
    /// Most requests ever seen dispatched at once.
    max_dispatched_top: u64,
    /// Little's law on the lower device: its own request queue.
    outstanding_lower: f64,
}

fn sample_queue(top: &str, lower: &str, readers: u64) -> QueueSample {
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let region = 12 << 20; // per reader: more than 3 s at its share
    let threads: Vec<_> = (0..readers)
        .map(|i| {
            let stop = stop.clone();
            let f = open_direct(&format!("/dev/{top}"), false);
            std::thread::spawn(move || {
                let mut buf = Aligned::new(256 << 10);
                let mut off = i * region;
                while !stop.load(Ordering::Relaxed) {
                    f.read_exact_at(buf.as_mut(), off).unwrap();
                    off = i * region + (off + (256 << 10) - i * region) % region;
                }
            })
        })
        .collect();
    // Let the queue build before measuring.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let stat = |d: &str| {
        iolab_sys::diskstats::read_device(Path::new("/proc"), d)
            .unwrap()
            .unwrap()
    };
    let inflight = |d: &str| -> u64 {
        std::fs::read_to_string(format!("/sys/block/{d}/inflight"))
            .unwrap()
            .split_whitespace()
            .map(|v| v.parse::<u64>().unwrap())
            .sum()
    };
    let (t0, l0, start) = (stat(top), stat(lower), std::time::Instant::now());
    let (mut sum, mut n, mut max) = (0, 0, 0);
    while start.elapsed() < std::time::Duration::from_secs(3) {
        let v = inflight(top);
        sum += v;
        max = max.max(v);
        n += 1;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let wall_ms = start.elapsed().as_secs_f64() * 1000.0;
    let (t1, l1) = (stat(top), stat(lower));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    QueueSample {
        outstanding_top: t1.since(&t0).read_ms as f64 / wall_ms,
        dispatched_top: sum as f64 / n as f64,
        max_dispatched_top: max,
        outstanding_lower: l1.since(&l0).read_ms as f64 / wall_ms,
    }
}

/// The scheduler under test sees the queue. With 8 readers on a 20 MiB/s
/// lab, ~8 read requests exist at the top device at any time; at most 4
/// (the lab's driver depth) are dispatched into the throttle below, so
/// the other ~4 wait inside the top device's scheduler, which therefore
/// picks the order in which they reach the bottleneck. The lower device's
/// own queue stays near empty: the throttle holds bios before they become
/// its requests, and only what the top dispatched can be there.
#[test]
fn requests_queue_in_the_scheduler_above_the_throttle() {
    if !iolab_testkit::root_or_skip("queue_above", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("q_above");
    let up = env.up(&[
        "--fs",
        "none",
        "--size",
        "128MiB",
        "--bw",
        "20MiB/s",
        "--scheduler",
        "mq-deadline",
    ]);
    let (top, lower) = (kname(s(&up, "device")), kname(s(&up, "lower")));
    let q = sample_queue(&top, &lower, 8);
    let waiting = q.outstanding_top - q.dispatched_top;
    eprintln!(
        "depth 4: outstanding at top {:.2}, dispatched {:.2} (max {}), waiting in mq-deadline {waiting:.2}, lower queue {:.2}",
        q.outstanding_top, q.dispatched_top, q.max_dispatched_top, q.outstanding_lower
    );
    assert!(q.max_dispatched_top <= 4, "driver depth not limited");
    assert!(q.outstanding_top > 6.0, "readers did not keep the lab busy");
    assert!(
        waiting > 2.0,
        "only {waiting:.2} requests waited in the scheduler"
    );
    assert!(
        q.outstanding_lower < 1.0,
        "lower queue {:.2}",
        q.outstanding_lower
    );
}

/// The control for the test above, and the reason for the depth limit:
/// with the loop driver's full depth, the scheduler dispatches everything
/// at once and nothing waits in it — the throttle's FIFO decides the order.
#[test]
fn without_a_shallow_queue_the_throttle_would_decide_the_order() {
    if !iolab_testkit::root_or_skip("queue_deep", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("q_deep");
    let up = env.up(&[
        "--fs",
        "none",
        "--size",
        "128MiB",
        "--bw",
        "20MiB/s",
        "--scheduler",
        "mq-deadline",
        "--queue-depth",
        "128",
    ]);
    let (top, lower) = (kname(s(&up, "device")), kname(s(&up, "lower")));
    let q = sample_queue(&top, &lower, 8);
    let waiting = q.outstanding_top - q.dispatched_top;
    eprintln!(
        "depth 128: outstanding at top {:.2}, dispatched {:.2} (max {}), waiting in mq-deadline {waiting:.2}",
        q.outstanding_top, q.dispatched_top, q.max_dispatched_top
    );
    assert!(
        q.dispatched_top > 6.0,
        "dispatched only {:.2}",
        q.dispatched_top
    );
    assert!(
        waiting < 1.0,
        "{waiting:.2} requests waited in the scheduler"
    );
}
/// The queue depth is given back: a guard cuts a lab device's depth to 4
/// and attaches an elevator; once undone, the scheduler dispatches all 8
/// readers' requests again. (nr_requests reads 128 throughout, so only
/// I/O shows the real depth.)
#[test]
fn queue_depth_is_restored_after_an_elevator_round_trip() {
    if !iolab_testkit::root_or_skip("depth_restore", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("depth_rs");
    let up = env.up(&[
        "--fs",
        "none",
        "--size",
        "128MiB",
        "--bw",
        "20MiB/s",
        "--queue-depth",
        "128",
    ]);
    let (top_name, lower) = (kname(s(&up, "device")), kname(s(&up, "lower")));
    let top = iolab_sys::block::BlockDev::from_name(&top_name).unwrap();
    let run = tempfile::tempdir().unwrap();
    let guard = iolab_guard::Guard::in_dir(run.path().to_path_buf());
    assert_eq!(guard.set_queue_depth(&top, 4).unwrap(), 4);
    guard.set_scheduler(&top, "mq-deadline").unwrap();
    let shallow = sample_queue(&top_name, &lower, 8);
    let report = guard.restore();
    assert!(report.iter().all(Result::is_ok), "{report:?}");
    assert_eq!(top.schedulers().unwrap().current, "none");
    let deep = sample_queue(&top_name, &lower, 8);
    eprintln!(
        "dispatched at depth 4: max {}; after restore: max {}",
        shallow.max_dispatched_top, deep.max_dispatched_top
    );
    assert!(shallow.max_dispatched_top <= 4);
    assert!(deep.max_dispatched_top >= 7, "depth not restored");
}
