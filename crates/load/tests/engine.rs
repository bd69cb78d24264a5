//! The engine through its library API, on real files in temp directories:
//! every engine moves bytes, background loads stop on request, priorities
//! reach the worker threads, ramp I/O stays out of the statistics and rate
//! limits hold.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use iolab_load::{job_from_options, run_to_completion, start, Job, LoadReport, StartOptions};
use iolab_sys::ioprio::IoPrio;

fn job(dir: &Path, opts: &[(&str, &str)]) -> Job {
    let mut all: Vec<(String, String)> =
        vec![("directory".into(), dir.to_string_lossy().into_owned())];
    all.extend(opts.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    job_from_options("t", &all).unwrap()
}

fn run(dir: &Path, opts: &[(&str, &str)]) -> LoadReport {
    run_to_completion(vec![job(dir, opts)], StartOptions::default()).unwrap()
}

/// O_DIRECT works on most filesystems; tmpfs gained it in 6.6.
fn direct_ok(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(dir.join("probe"))
        .is_ok()
}

#[test]
fn every_engine_moves_bytes() {
    let d = tempfile::tempdir().unwrap();
    for engine in ["sync", "psync", "io_uring"] {
        let r = run(
            d.path(),
            &[
                ("ioengine", engine),
                ("rw", "randrw"),
                ("size", "2m"),
                ("iodepth", "8"),
            ],
        );
        let j = &r.jobs[0];
        assert!(j.error.is_none(), "{engine}: {:?}", j.error);
        // One full pass: every 4 KiB block once, reads and writes mixed.
        assert_eq!(j.read.total_ios + j.write.total_ios, 512, "{engine}");
        assert_eq!(r.read_bytes() + r.write_bytes(), 2 << 20, "{engine}");
        let lat = j.read.lat.as_ref().unwrap();
        assert!(lat.min_ns > 0 && lat.min_ns <= lat.max_ns, "{engine}");
    }
}

#[test]
fn direct_io_uring_with_a_deep_queue() {
    let d = tempfile::tempdir().unwrap();
    if !direct_ok(d.path()) {
        iolab_testkit::skip_line(format!(
            "skip: {} does not support O_DIRECT",
            d.path().display()
        ));
        return;
    }
    let r = run(
        d.path(),
        &[
            ("ioengine", "io_uring"),
            ("iodepth", "32"),
            ("direct", "1"),
            ("rw", "randread"),
            ("size", "4m"),
            ("loops", "2"),
        ],
    );
    assert_eq!(r.jobs[0].read.total_ios, 2048, "{:?}", r.jobs[0].error);
}

#[test]
fn cpuio_burns_cpu_without_io() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        &[
            ("ioengine", "cpuio"),
            ("cpuload", "50"),
            ("cpumode", "qsort"),
            ("runtime", "1s"),
        ],
    );
    let j = &r.jobs[0];
    assert_eq!(j.io_bytes(), 0);
    assert!(j.runtime >= Duration::from_millis(1000));
    // The kernel's account of the thread's CPU time (getrusage) against
    // the clock: half the time, not all of it and not none (another test
    // may take some of a core, so the floor is lower than the ceiling).
    let share = (j.cpu.usr + j.cpu.sys).as_secs_f64() / j.runtime.as_secs_f64();
    assert!(
        (0.25..=0.65).contains(&share),
        "cpuload=50 used {share:.2} of a CPU"
    );
}

#[test]
fn background_load_stops_on_request_with_priorities_set() {
    let d = tempfile::tempdir().unwrap();
    let j = job(
        d.path(),
        &[
            ("rw", "read"),
            ("size", "1m"),
            ("numjobs", "2"),
            ("time_based", "1"),
        ],
    );
    assert!(j.until_stopped());
    let load = start(
        vec![j],
        StartOptions {
            ioprio: Some(IoPrio::BestEffort(5)),
            ..Default::default()
        },
    )
    .unwrap();
    let tids = load.thread_ids();
    assert_eq!(tids.len(), 2);
    for tid in &tids {
        assert_eq!(IoPrio::get_for(*tid).unwrap(), IoPrio::BestEffort(5));
    }
    while load.snapshot().read_bytes < 4 << 20 {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!load.is_finished());
    let r = load.stop();
    assert!(r.stopped);
    // Wrapping at the end of the 1 MiB file: far more than one pass.
    assert!(r.read_bytes() >= 2 << 20, "{}", r.read_bytes());
    // Without group_reporting, fio reports each clone on its own.
    assert_eq!(r.jobs.len(), 2);
    assert!(r.jobs.iter().all(|j| j.thread_ids.len() == 1));
}

#[test]
fn ramp_io_is_excluded_from_the_statistics() {
    let d = tempfile::tempdir().unwrap();
    let j = job(
        d.path(),
        &[
            ("rw", "read"),
            ("size", "1m"),
            ("time_based", "1"),
            ("ramp_time", "200ms"),
            ("runtime", "200ms"),
        ],
    );
    let load = start(vec![j], StartOptions::default()).unwrap();
    while !load.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let live = load.snapshot();
    let r = load.wait();
    assert!(!r.stopped);
    assert!(r.read_bytes() > 0);
    assert!(
        live.read_bytes > r.read_bytes(),
        "{} <= {}",
        live.read_bytes,
        r.read_bytes()
    );
}

#[test]
fn rate_iops_caps_the_rate() {
    let d = tempfile::tempdir().unwrap();
    for engine in ["psync", "io_uring"] {
        let r = run(
            d.path(),
            &[
                ("rw", "randread"),
                ("size", "1m"),
                ("ioengine", engine),
                ("iodepth", "8"),
                ("rate_iops", "100"),
                ("runtime", "500ms"),
                ("time_based", "1"),
            ],
        );
        let ios = r.jobs[0].read.total_ios;
        // The schedule allows 51 I/Os in 0.5 s (the first is due at 0),
        // plus those already queued when the runtime ends; a slow machine
        // only does fewer.
        // Reads of a cached 1 MiB file take microseconds: even a slow,
        // busy machine keeps up with 100 per second, so most are made.
        assert!(
            (40..=51 + 8).contains(&ios),
            "{engine}: {ios} I/Os in 0.5 s at 100 IOPS"
        );
    }
}

#[test]
fn stonewall_groups_run_in_order() {
    let d = tempfile::tempdir().unwrap();
    let a = job(
        d.path(),
        &[("name", "first"), ("rw", "write"), ("size", "1m")],
    );
    let b = job(
        d.path(),
        &[
            ("name", "second"),
            ("rw", "read"),
            ("size", "1m"),
            ("stonewall", "1"),
        ],
    );
    let r = run_to_completion(vec![a, b], StartOptions::default()).unwrap();
    let names: Vec<&str> = r.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    assert_eq!((r.jobs[0].group, r.jobs[1].group), (0, 1));
    assert_eq!(r.total.io_bytes(), 2 << 20);
}

#[test]
fn impossible_jobs_are_refused_before_starting() {
    let d = tempfile::tempdir().unwrap();
    let huge = job(d.path(), &[("rw", "read"), ("size", "1024t")]);
    let e = start(vec![huge], StartOptions::default()).err().unwrap();
    assert!(
        iolab_sys::is_usage(&e) && e.to_string().contains("free"),
        "{e}"
    );
    assert!(
        std::fs::read_dir(d.path()).unwrap().next().is_none(),
        "nothing laid out"
    );
}

#[test]
fn setup_failures_are_returned_by_start() {
    // Root may set real-time I/O priorities: as root the setup cannot
    // fail, so the test runs again as nobody.
    if !iolab_testkit::unprivileged("setup_failures_are_returned_by_start") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let j = job(d.path(), &[("rw", "read"), ("size", "64k")]);
    let opts = StartOptions {
        ioprio: Some(IoPrio::RealTime(0)),
        ..Default::default()
    };
    let e = start(vec![j], opts).err().unwrap();
    assert!(e.to_string().contains("I/O priority rt:0"), "{e}");
}
