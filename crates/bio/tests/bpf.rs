//! The in-kernel collector against the kernel's own counters and against
//! the tracefs collector (root): both trace the same workload at once; the
//! requests the BPF programs counted per operation must be /proc/diskstats'
//! reads and writes, and the tracefs trace's, and their percentiles within
//! the bins' resolution of the tracefs trace's (from every sample). On a
//! request-based loop device and on a bio-based zram device, with each
//! rung of programs: tp_btf and raw tracepoints (this kernel's) and the
//! classic ones (an older kernel's).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use iolab_bio::bpf::{BioBpf, Tracepoints};
use iolab_bio::{BioHistograms, BioTracer, Disks};
use iolab_guard::Guard;
use iolab_sys::block::BlockDev;

mod common;
use common::{
    elsewhere, inflight, one_at_a_time, root_and_tracefs_or_skip, settle, stat, workload,
};

/// Both collectors over one workload: (bpf, tracefs, diskstats' reads and
/// writes, requests in flight at the edges).
fn both(
    guard: &Guard,
    dev: &BlockDev,
    from: Tracepoints,
) -> (BioHistograms, iolab_bio::BioTrace, (u64, u64), u64) {
    settle(dev);
    let disk = Disks::default().resolve(&dev.name).unwrap();
    let bpf = BioBpf::start_with(guard, std::slice::from_ref(&disk), from).unwrap();
    let tracefs = BioTracer::start(guard, vec![disk]).unwrap();
    let edge0 = inflight(dev);
    let before = stat(dev);
    workload(dev);
    elsewhere();
    settle(dev);
    let after = stat(dev);
    let edge = edge0 + inflight(dev);
    std::thread::sleep(Duration::from_millis(100));
    let t = tracefs.stop().unwrap();
    let b = bpf.finish().unwrap();
    let d = after.since(&before);
    (b, t, (d.reads, d.writes), edge)
}

fn count(h: &BioHistograms, op: &str) -> u64 {
    h.histograms
        .iter()
        .filter(|x| x.op == op)
        .map(|x| x.count)
        .sum()
}

fn check(
    dev: &BlockDev,
    b: &BioHistograms,
    trace: &iolab_bio::BioTrace,
    rw: (u64, u64),
    edge: u64,
) {
    let what = &dev.name;
    let t = &trace.histograms();
    eprintln!(
        "{what}: bpf R {} W {} (lost {}, unmatched {}, in flight {}); tracefs R {} W {}; diskstats R {} W {}; edge {edge}",
        count(b, "R"),
        count(b, "W"),
        b.counts.lost_events,
        b.counts.unmatched_completions,
        b.counts.in_flight_at_end,
        count(t, "R"),
        count(t, "W"),
        rw.0,
        rw.1
    );
    eprintln!(
        "{what}: bpf slots {:?}, program runs the kernel skipped {:?}",
        b.slots, b.counts.skipped_program_runs
    );
    assert_eq!(b.tracer, "bpf");
    let skipped = common::skipped(&b.attach, b.counts.skipped_program_runs);
    let missed = common::missed_as_said(
        what,
        b.diskstats_check.as_ref(),
        rw,
        (
            count(b, "R") + count(b, "N"),
            count(b, "W") + count(b, "D") + count(b, "N"),
        ),
        edge,
        skipped,
    );
    assert_eq!(
        b.counts.lost_events,
        skipped + missed,
        "{what}: the programs' maps were full"
    );
    assert!(rw.0 + rw.1 > 100, "{what}: too little I/O");
    // diskstats counts the window; both collectors ran a little longer on
    // either side, where nothing but udev's probe runs. A program run the
    // kernel skipped, or did not make, is a request missing, and said.
    for (op, n) in [("R", rw.0), ("W", rw.1)] {
        assert!(
            count(b, op) <= n + edge && count(b, op) + edge + skipped + missed >= n,
            "{what}: bpf counted {} {op}, diskstats {n}",
            count(b, op)
        );
        // BPF is attached first and read last: a request in flight at
        // the tracefs trace's edges is BPF's only.
        assert!(
            count(b, op).abs_diff(count(t, op)) <= edge + skipped + missed,
            "{what}: bpf {} vs tracefs {}, {op}",
            count(b, op),
            count(t, op)
        );
    }
    if b.counts.lost_events > 0 {
        // Requests missing: their bytes and latencies too.
        return;
    }
    for hb in &b.histograms {
        let ht = t
            .histograms
            .iter()
            .find(|x| x.op == hb.op && x.disk == hb.disk)
            .unwrap();
        assert_eq!(hb.bytes, ht.bytes, "{what} {}: bytes", hb.op);
        assert_eq!(
            hb.buckets.iter().map(|x| x.count).sum::<u64>(),
            hb.count,
            "{what} {}: log2 slots",
            hb.op
        );
        // The two collectors read their clocks at different points of the
        // same tracepoints (a preemption between them moves one sample),
        // and the bins are 1/64 wide: each BPF percentile lies between the
        // tracefs samples' percentiles 2 points either side, give or take
        // the bins' 1.6 % and 2 µs.
        let mut lat: Vec<u64> = trace
            .requests
            .iter()
            .filter(|r| r.op().letter().to_string() == hb.op)
            .map(|r| r.lat_ns())
            .collect();
        lat.sort_unstable();
        for (x, p) in [(hb.lat.p50_us, 50.0), (hb.lat.p90_us, 90.0)] {
            let lo = iolab_bio::hist::nearest_rank(&lat, p - 2.0) as f64 / 1000.0;
            let hi = iolab_bio::hist::nearest_rank(&lat, p + 2.0) as f64 / 1000.0;
            assert!(
                x >= lo * 0.984 - 2.0 && x <= hi * 1.016 + 2.0,
                "{what} {} p{p}: bpf {x} µs, tracefs p{}..p{} {lo}..{hi} µs\nbpf {:?}\ntracefs {:?}",
                hb.op,
                p - 2.0,
                p + 2.0,
                hb.buckets,
                ht.buckets
            );
        }
        assert!(hb.lat.max_us > 0.0 && hb.lat.p99_us <= hb.lat.max_us * 1.016);
    }
}

#[test]
fn bpf_histograms_match_diskstats_and_tracefs_on_loop() {
    if !root_and_tracefs_or_skip("bpf_histograms_match_diskstats_and_tracefs_on_loop") {
        return;
    }
    let _one = one_at_a_time();
    let run = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let guard = Guard::in_dir(run.path().to_path_buf());
    let img = work.path().join("bpf.img");
    let f = guard.create_file(&img).unwrap();
    f.set_len(32 << 20).unwrap();
    drop(f);
    let dev = guard.attach_loop(&img, true).unwrap();
    every_rung(&guard, &dev);
}

/// The same workload traced from each rung of the ladder, each held to
/// diskstats and tracefs.
fn every_rung(guard: &Guard, dev: &BlockDev) {
    for (from, attach) in [
        (Tracepoints::Btf, "tp_btf"),
        (Tracepoints::Raw, "raw_tracepoint"),
        (Tracepoints::Classic, "tracepoint"),
    ] {
        let (b, t, rw, edge) = both(guard, dev, from);
        // Each rung is the one asked for: a fallback to a lower one would
        // name it and say why (classic says it was asked for).
        assert_eq!(b.attach.split(';').next(), Some(attach), "{}", b.attach);
        assert!(
            from == Tracepoints::Classic || !b.attach.contains(';'),
            "{}",
            b.attach
        );
        check(dev, &b, &t, rw, edge);
    }
}

#[test]
fn bpf_histograms_match_diskstats_and_tracefs_on_zram() {
    if !root_and_tracefs_or_skip("bpf_histograms_match_diskstats_and_tracefs_on_zram") {
        return;
    }
    let _one = one_at_a_time();
    if !Path::new("/sys/class/zram-control/hot_add").exists() {
        iolab_testkit::skip_line(
            "skip bpf_histograms_match_diskstats_and_tracefs_on_zram: zram not loaded (modprobe zram)"
                .to_string(),
        );
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let guard = Guard::in_dir(run.path().to_path_buf());
    let dev = guard.add_zram(64 << 20, None).unwrap();
    every_rung(&guard, &dev);
}
