//! The trace against the kernel's own counters (root): over the same
//! interval, the requests traced on a device must be exactly the reads and
//! writes /proc/diskstats counted, and their sizes its sector counts — on a
//! request-based loop device (request events) and on a bio-based zram
//! device (bio events). Each test makes its own device through its own
//! guard and run directory; the guard removes it at the end.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use iolab_bio::{BioTrace, BioTracer, Disks, Op};
use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use iolab_sys::diskstats::DiskStat;

mod common;
use common::{inflight, root_and_tracefs_or_skip, settle, stat, workload};

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
