//! The trace against the kernel's own counters (root): over the same
//! interval, the requests traced on a device must be exactly the reads and
//! writes /proc/diskstats counted, and their sizes its sector counts — on a
//! request-based loop device (request events) and on a bio-based zram
//! device (bio events). Each test makes its own device through its own
//! guard and run directory; the guard removes it at the end.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use iolab_bio::{BioTrace, BioTracer, Disks, Op};
use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use iolab_sys::diskstats::{self, DiskStat};

/// Root (testkit's one check), then a tracefs to trace on.
fn root_and_tracefs_or_skip(test: &str) -> bool {
    if !iolab_testkit::root_or_skip(test, "loop/zram devices, tracefs") {
        return false;
    }
    if !Path::new("/sys/kernel/tracing").exists() {
        iolab_testkit::skip_line(format!("skip {test}: no tracefs mount point"));
        return false;
    }
    true
}

fn stat(dev: &BlockDev) -> DiskStat {
    diskstats::read_device(Path::new("/proc"), &dev.name)
        .unwrap()
        .unwrap()
}

/// Requests in flight (`inflight`: reads and writes).
fn inflight(dev: &BlockDev) -> u64 {
    std::fs::read_to_string(dev.sysfs.join("inflight"))
        .map(|t| {
            t.split_whitespace()
                .filter_map(|v| v.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// Waits until nothing is in flight (udev's probe of a new device ends).
fn settle(dev: &BlockDev) {
    let _ = Command::new("udevadm").arg("settle").status();
    let end = Instant::now() + Duration::from_secs(10);
    while inflight(dev) > 0 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn dd(args: &[&str]) {
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
fn workload(dev: &BlockDev) {
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

struct Window {
    before: DiskStat,
    after: DiskStat,
    t0: u64,
    t1: u64,
    edge: u64,
}

/// Runs the workload between two diskstats readings, traced throughout.
fn traced_window(guard: &Guard, dev: &BlockDev) -> (BioTrace, Window) {
    settle(dev);
    let disk = Disks::default().resolve(&dev.name).unwrap();
    let tracer = BioTracer::start(guard, vec![disk]).unwrap();
    let edge0 = inflight(dev);
    let t0 = iolab_trace::monotonic_ns();
    let before = stat(dev);
    workload(dev);
    settle(dev);
    let after = stat(dev);
    let t1 = iolab_trace::monotonic_ns();
    let edge = edge0 + inflight(dev);
    // Let the last completions reach the trace before stopping.
    std::thread::sleep(Duration::from_millis(100));
    let trace = tracer.stop().unwrap();
    (
        trace,
        Window {
            before,
            after,
            t0,
            t1,
            edge,
        },
    )
}

fn check(trace: &BioTrace, w: &Window, what: &str) {
    assert_eq!(trace.lost_events, 0, "{what}: events lost");
    let inside: Vec<_> = trace
        .requests
        .iter()
        .filter(|r| r.complete_ns >= w.t0 && r.complete_ns <= w.t1)
        .filter(|r| matches!(r.op(), Op::Read | Op::Write))
        .collect();
    let d = w.after.since(&w.before);
    let counted = d.reads + d.writes;
    let traced = inside.len() as u64;
    let sectors: u64 = inside.iter().map(|r| u64::from(r.nr_sector)).sum();
    eprintln!(
        "{what}: traced {traced} requests / {sectors} sectors; diskstats {counted} ({} r, {} w) / {} sectors; edge {}; {}",
        d.reads,
        d.writes,
        d.sectors_read + d.sectors_written,
        w.edge,
        trace.counts_line()
    );
    assert!(
        counted > 100,
        "{what}: the workload did too little I/O ({counted})"
    );
    assert!(
        traced.abs_diff(counted) <= w.edge,
        "{what}: traced {traced} requests, diskstats counted {counted} (in flight at the edges: {})",
        w.edge
    );
    if w.edge == 0 {
        assert_eq!(
            sectors,
            d.sectors_read + d.sectors_written,
            "{what}: sectors"
        );
        let reads = inside.iter().filter(|r| r.op() == Op::Read).count() as u64;
        assert_eq!(reads, d.reads, "{what}: reads");
    }
    // Every request has a plausible life.
    for r in &inside {
        assert!(r.lat_ns() < 10_000_000_000, "{what}: {r:?}");
        assert!(r.issue_ns.unwrap_or(r.complete_ns) <= r.complete_ns);
    }
}

#[test]
fn loop_device_requests_match_diskstats() {
    if !root_and_tracefs_or_skip("loop_device_requests_match_diskstats") {
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let guard = Guard::in_dir(run.path().to_path_buf());
    let img = work.path().join("bio-trace.img");
    let f = guard.create_file(&img).unwrap();
    f.set_len(32 << 20).unwrap();
    drop(f);
    let dev = guard.attach_loop(&img, true).unwrap();
    let (trace, w) = traced_window(&guard, &dev);
    check(&trace, &w, &dev.name);
    // The submitter is known: dd queued its own direct reads.
    assert!(
        trace
            .requests
            .iter()
            .any(|r| r.comm.as_str() == "dd" && r.op() == Op::Read),
        "no read attributed to dd"
    );
    let h = trace.histograms();
    assert!(h.histograms.iter().any(|h| h.op == "R" && h.count > 0));
}

#[test]
fn zram_bios_match_diskstats() {
    if !root_and_tracefs_or_skip("zram_bios_match_diskstats") {
        return;
    }
    if !Path::new("/sys/class/zram-control/hot_add").exists() {
        iolab_testkit::skip_line(
            "skip zram_bios_match_diskstats: zram not loaded (modprobe zram)".to_string(),
        );
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let guard = Guard::in_dir(run.path().to_path_buf());
    let dev = guard.add_zram(64 << 20, None).unwrap();
    let (trace, w) = traced_window(&guard, &dev);
    check(&trace, &w, &dev.name);
    assert!(
        trace
            .requests
            .iter()
            .all(|r| r.origin == iolab_bio::Origin::BioQueue),
        "zram requests come from bio events"
    );
}
