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

/// The program runs the kernel skipped, which it counts wherever it can
/// (programs attached as `attach` says).
pub fn skipped(attach: &str, skipped: Option<u64>) -> u64 {
    if skipped_counted(attach) {
        skipped.expect("this kernel counts skipped program runs")
    } else {
        skipped.unwrap_or(0)
    }
}

/// Whether this kernel counts the runs it skips of programs attached as
/// `attach` says (raw and tp_btf tracepoints since 5.12, classic ones
/// since 6.7).
fn skipped_counted(attach: &str) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|x| x.parse::<u32>().unwrap_or(0));
    let version = (v.next().unwrap_or(0), v.next().unwrap_or(0));
    if attach.starts_with("raw_tracepoint") || attach.starts_with("tp_btf") {
        version >= (5, 12)
    } else {
        version >= (6, 7)
    }
}

/// One BPF test at a time in this binary: while another loads or unloads
/// BPF programs, this kernel sometimes does not run an attached program
/// for an event and counts nothing (the collector finds and reports it
/// against /proc/diskstats); the tests compare whole traces.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static M: std::sync::Mutex<()> = std::sync::Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

/// I/O on another disk than the traced one (the host's, under /var/tmp):
/// what a check of the traced disk must not count.
pub fn elsewhere() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let of = format!("of={}", dir.path().join("elsewhere").display());
    dd(&["if=/dev/zero", &of, "bs=1M", "count=4", "conv=fsync"]);
}

/// The collector's own check against the disk's counters: whatever the
/// test sees missing (diskstats' `rw` beyond what was `counted`, reads and
/// writes by the kernel's groups, and the `edge`), the collector's
/// counters account for, and what it calls missed it did not make up; a
/// loss (with the runs the kernel `skipped`) stays a few requests. Its
/// missed count.
pub fn missed_as_said(
    what: &str,
    check: Option<&iolab_bio::bpf::DiskstatsCheck>,
    rw: (u64, u64),
    counted: (u64, u64),
    edge: u64,
    skipped: u64,
) -> u64 {
    let kc = check.expect("a BPF trace checks diskstats");
    assert!(
        kc.not_checked.is_empty() && kc.disks.len() == 1,
        "{what}: {kc:?}"
    );
    let short =
        (rw.0.saturating_sub(counted.0) + rw.1.saturating_sub(counted.1)).saturating_sub(edge);
    eprintln!("{what}: diskstats check {kc:?}; the test sees {short} missing");
    assert!(
        kc.missed + kc.explained + edge >= short && kc.missed <= short + edge + 1,
        "{what}: the collector says {} completions missed ({} explained), the test sees {short}",
        kc.missed,
        kc.explained
    );
    assert!(
        kc.missed + skipped <= 3.max((rw.0 + rw.1) / 50),
        "{what}: {} missed and {skipped} skipped of {} requests",
        kc.missed,
        rw.0 + rw.1
    );
    kc.missed
}
