//! The background load's traffic is counted by the load itself: a target
//! that reads from another disk (here the root filesystem, as every real
//! app does) neither cancels it nor invalidates a loaded cell, and what is
//! stored agrees with the lab's own /proc/diskstats, read by this test.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::time::Duration;

use bench_env::{ok, Bench};

use serde_json::Value;

/// (bytes read, bytes written) of `dev` now.
fn diskstats(dev: &str) -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap();
    let f: Vec<u64> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f[2] == dev)
        .unwrap()[3..]
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    (f[2] * 512, f[6] * 512)
}

/// A 1 GiB lab throttled to 40 MiB/s; its device's name.
fn lab_device(b: &Bench) -> String {
    let lab = b.env.up(&["--size", "1GiB", "--bw", "40MiB/s"]);
    lab["device"]
        .as_str()
        .unwrap()
        .trim_start_matches("/dev/")
        .to_string()
}

/// Each loaded cell's `cell_io` artifact, in order.
fn cell_ios(report: &Value) -> Vec<&Value> {
    report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "cell_io")
        .map(|a| &a["json"])
        .collect()
}

fn within(got: u64, want: u64, share: f64, slack: u64) -> bool {
    got.abs_diff(want) as f64 <= want as f64 * share + slack as f64
}

#[test]
fn a_target_on_another_disk_leaves_the_loads_counts_whole() {
    if !iolab_testkit::root_or_skip(
        "a_target_on_another_disk_leaves_the_loads_counts_whole",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("bgio");
    let dev = lab_device(&b);
    let before = diskstats(&dev);
    // The target reads a few MiB of the root filesystem's files cold: its
    // I/O is on another disk than the load's.
    let out = b
        .cmd()
        .arg("startup")
        .args(["--lab", &b.env.name, "--schedulers", "mq-deadline,bfq"])
        .args(["--workloads", "1r,1w", "--reps", "2", "--timeout", "10"])
        .args(["--warmup", "1", "--load-option", "size=64M"])
        .arg("--db")
        .arg(&b.db)
        .args(["--", "sh", "-c", "cat /usr/bin/* > /dev/null 2>&1; true"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    ok(&out);
    let after = diskstats(&dev);
    let report = b.export(1);
    for r in report["runs"].as_array().unwrap() {
        assert!(
            matches!(r["outcome"].as_str(), Some("ok" | "censored")),
            "a valid cell's start was not a sample: {r}"
        );
    }
    let cells = cell_ios(&report);
    assert_eq!(cells.len(), 4, "one per loaded cell");
    let (mut load_read, mut load_write) = (0, 0);
    for c in &cells {
        let n = |k: &str| c[k].as_u64().unwrap();
        // Per cell and direction: the load's counters against the device's
        // over the whole cell, its writeback flushed.
        assert!(
            within(n("device_read_bytes"), n("load_read_bytes"), 0.05, 4 << 20),
            "reads: {c}"
        );
        assert!(
            within(
                n("device_write_bytes"),
                n("load_write_bytes"),
                0.10,
                4 << 20
            ),
            "writes: {c}"
        );
        load_read += n("load_read_bytes");
        load_write += n("load_write_bytes");
    }
    assert!(
        load_read > 64 << 20 && load_write > 64 << 20,
        "{load_read} {load_write}"
    );
    // And against the test's own reading of the lab's counters over the
    // whole experiment: nothing else read from the lab (the target's reads
    // went to the root disk); writes include the reader's file laid out.
    let (dev_read, dev_write) = (after.0 - before.0, after.1 - before.1);
    assert!(
        within(dev_read, load_read, 0.05, 8 << 20),
        "{dev_read} read by the lab, {load_read} by the load"
    );
    assert!(
        dev_write >= load_write,
        "{dev_write} written to the lab, {load_write} by the load"
    );
    // Every start's stored background is the load's, not the device's
    // less the target's: a loaded start moved bytes, or says why it was
    // live without (a buffered writer held at the dirty-page limit while
    // the lab wrote its pages: seen in CI under bfq), naming the load's
    // threads waiting in the kernel.
    for r in report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] != "idle")
    {
        let bg = &r["background"];
        let moved = bg["read_bytes"].as_u64().unwrap() + bg["write_bytes"].as_u64().unwrap();
        let why = r["extra"]["load_live_without_io"].as_str();
        assert!(
            (moved > 0) != why.is_some(),
            "moved {moved} bytes, live without I/O: {why:?}: {r}"
        );
        if let Some(why) = why {
            assert!(why.contains("waiting in the kernel"), "{why}");
        }
    }
    b.env.down();
}

/// `--with-fio`: a job file (two files per job) loads the cell through the
/// installed fio; fio's byte counts, as iolab stores
/// them, agree with the lab's own /proc/diskstats; and a fio job that ends
/// mid-cell makes the starts after it invalid, with fio named as the cause.
#[test]
fn with_fio_a_job_file_iolab_refuses_loads_the_cell_and_is_counted() {
    if !iolab_testkit::root_or_skip(
        "with_fio_a_job_file_iolab_refuses_loads_the_cell_and_is_counted",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("bgfio");
    let reads = b.env.run.path().join("two-files.fio");
    std::fs::write(
        &reads,
        "[reader]\nfilename=r1:r2\nrw=read\nbs=256k\ndirect=1\ntime_based=1\nruntime=1h\n",
    )
    .unwrap();
    let ends = b.env.run.path().join("ends.fio");
    std::fs::write(
        &ends,
        "[short]\nfilename=s1:s2\nrw=read\nbs=256k\ndirect=1\ntime_based=1\nruntime=2\n",
    )
    .unwrap();
    let dev = lab_device(&b);
    let workloads = format!("{},{}", reads.display(), ends.display());
    let out = b
        .cmd()
        .arg("startup")
        .args(["--lab", &b.env.name, "--schedulers", "mq-deadline"])
        .args(["--workloads", &workloads, "--reps", "3", "--timeout", "10"])
        .args(["--warmup", "1", "--load-option", "size=32M", "--with-fio"])
        .arg("--db")
        .arg(&b.db)
        .args(["--", "sh", "-c", "sleep 1.5"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    // Everything is stored; the exit status says a cell stopped early.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("1 cell(s) stopped early"), "{err}");
    let report = b.export(1);
    let runs = report["runs"].as_array().unwrap();
    let of = |w: &std::path::Path| -> Vec<&Value> {
        runs.iter()
            .filter(|r| r["workload"].as_str() == w.to_str())
            .collect()
    };
    for r in of(&reads) {
        assert!(
            matches!(r["outcome"].as_str(), Some("ok" | "censored")),
            "a start under a running fio load is a sample: {r}"
        );
        assert_eq!(r["config"]["load_engine"], "fio", "{r}");
        assert!(r["background"]["read_bytes"].as_u64().unwrap() > 0, "{r}");
    }
    // fio's job ran 2 s: the starts after its end are not "under load".
    let short = of(&ends);
    let last = short.last().unwrap();
    assert_eq!(last["outcome"], "invalid", "{last}");
    assert!(
        last["reason"].as_str().unwrap_or("").contains("fio"),
        "the reason names fio: {last}"
    );
    // The reading cell: fio's reads as iolab stored them against the
    // lab's device counters over the cell (direct I/O: every byte fio
    // counts reaches the device, and nothing else reads the lab).
    let cell = cell_ios(&report)[0];
    let n = |k: &str| cell[k].as_u64().unwrap();
    eprintln!("the reading cell: {cell}");
    assert!(n("load_read_bytes") > 32 << 20, "{cell}");
    assert!(
        within(n("device_read_bytes"), n("load_read_bytes"), 0.05, 4 << 20),
        "fio's reads against {dev}'s: {cell}"
    );
    b.env.down();
}

/// Under `--with-fio` a job file is checked by fio itself before any lab
/// or start: its refusal is a usage error with fio's own words.
#[test]
fn with_fio_a_job_file_fio_refuses_stops_before_anything_runs() {
    if !iolab_testkit::root_or_skip(
        "with_fio_a_job_file_fio_refuses_stops_before_anything_runs",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("bgfiobad");
    let bad = b.env.run.path().join("bad.fio");
    std::fs::write(&bad, "[x]\nrw=bogus\n").unwrap();
    let out = b
        .cmd()
        .arg("startup")
        .args(["--workloads", bad.to_str().unwrap(), "--reps", "1"])
        .args(["--with-fio", "--db"])
        .arg(&b.db)
        .args(["--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("fio --parse-only refuses it") && err.contains("rw=bogus"),
        "{err}"
    );
}

/// A slow but live load is a load: a reader limited (fio's `rate=`) to
/// one 4 KiB read every 8 s completes nothing in most 1.2 s starts; each
/// such start is still a sample of the loaded cell, stored with why, and
/// the reads it did complete are the lab's own (its diskstats).
#[test]
fn a_slow_but_live_load_keeps_its_starts() {
    if !iolab_testkit::root_or_skip(
        "a_slow_but_live_load_keeps_its_starts",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("bgslow");
    let dev = lab_device(&b);
    let out = b
        .cmd()
        .arg("startup")
        .args(["--lab", &b.env.name, "--schedulers", "mq-deadline"])
        .args(["--workloads", "1r", "--reps", "3", "--timeout", "10"])
        .args(["--warmup", "9"])
        .args(["--load-option", "size=1M", "--load-option", "bs=4k"])
        .args(["--load-option", "direct=1", "--load-option", "rate=512"])
        .arg("--db")
        .arg(&b.db)
        .args(["--", "sleep", "1.2"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    ok(&out);
    let report = b.export(1);
    let loaded: Vec<&Value> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] == "1r")
        .collect();
    assert_eq!(loaded.len(), 3);
    let mut without = 0;
    for r in &loaded {
        assert_eq!(r["outcome"], "ok", "{r}");
        if let Some(why) = r["extra"]["load_live_without_io"].as_str() {
            assert!(why.contains("due"), "{why}");
            assert_eq!(r["background"]["read_bytes"], 0, "{r}");
            without += 1;
        }
    }
    // One read per 8 s against three 1.2 s windows: all three holding one
    // is a 1-in-300 chance.
    assert!(without > 0, "no start without a completed read: {loaded:?}");
    // The warm-up's rate is the limit the load was given, by its counters:
    // two reads (at 0 s and 8 s) in 9 s.
    let rate = loaded[0]["config"]["bg_warmup_read_bw_bytes"]
        .as_f64()
        .unwrap();
    assert!((400.0..1400.0).contains(&rate), "{rate}");
    let _ = dev;
    b.env.down();
}
