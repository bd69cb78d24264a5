//! What both block tests share: root, the device's counters and a
//! workload of direct reads, direct writes and buffered writes.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use iolab_sys::block::BlockDev;
use iolab_sys::diskstats::{self, DiskStat};

/// Root (testkit's one check), then a tracefs to trace on.
pub fn root_and_tracefs_or_skip(test: &str) -> bool {
    if !iolab_testkit::root_or_skip(test, "loop/zram devices, tracefs") {
        return false;
    }
    if !Path::new("/sys/kernel/tracing").exists() {
        iolab_testkit::skip_line(format!("skip {test}: no tracefs mount point"));
        return false;
    }
    true
}

pub fn stat(dev: &BlockDev) -> DiskStat {
    diskstats::read_device(Path::new("/proc"), &dev.name)
        .unwrap()
        .unwrap()
}

/// Requests in flight (`inflight`: reads and writes).
pub fn inflight(dev: &BlockDev) -> u64 {
    std::fs::read_to_string(dev.sysfs.join("inflight"))
        .map(|t| {
            t.split_whitespace()
                .filter_map(|v| v.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// Waits until nothing is in flight (udev's probe of a new device ends).
pub fn settle(dev: &BlockDev) {
    let _ = Command::new("udevadm").arg("settle").status();
    let end = Instant::now() + Duration::from_secs(10);
    while inflight(dev) > 0 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn dd(args: &[&str]) {
    let st = Command::new("dd")
        .args(args)
        .arg("status=none")
        .status()
        .unwrap();
    assert!(st.success(), "dd {args:?}");
}

/// Reads and writes on `dev`: direct 4 KiB random-ish reads, direct 64 KiB
/// writes, buffered writes flushed with fsync (merges, flushes, writeback
/// by kworkers).
pub fn workload(dev: &BlockDev) {
    let p = dev.dev_path();
    let p = p.to_str().unwrap();
    let of = format!("of={p}");
    let iff = format!("if={p}");
    for skip in [7, 1000, 33, 2047, 512] {
        dd(&[
            &iff,
            "of=/dev/null",
            "bs=4k",
            "count=40",
            "iflag=direct",
            &format!("skip={skip}"),
        ]);
    }
    dd(&[
        "if=/dev/urandom",
        &of,
        "bs=64k",
        "count=32",
        "oflag=direct",
        "seek=8",
    ]);
    dd(&[
        "if=/dev/urandom",
        &of,
        "bs=4k",
        "count=300",
        "conv=fsync,notrunc",
        "seek=3000",
    ]);
    dd(&[&iff, "of=/dev/null", "bs=1M", "count=4", "iflag=direct"]);
}
