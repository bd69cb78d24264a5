//! The background load's traffic is counted by the load itself: a target
//! that reads from another disk (here the root filesystem, as every real
//! app does) neither cancels it nor invalidates a loaded cell, and what is
//! stored agrees with the lab's own /proc/diskstats, read by this test.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::time::Duration;

use bench_env::{ok, Bench};
use lab_env::root_or_skip;
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

fn within(got: u64, want: u64, share: f64, slack: u64) -> bool {
    got.abs_diff(want) as f64 <= want as f64 * share + slack as f64
}

#[test]
fn a_target_on_another_disk_leaves_the_loads_counts_whole() {
    if !root_or_skip("a_target_on_another_disk_leaves_the_loads_counts_whole") {
        return;
    }
    let b = Bench::new("bgio");
    let lab = b.env.up(&["--size", "1GiB", "--bw", "40MiB/s"]);
    let dev = lab["device"]
        .as_str()
        .unwrap()
        .trim_start_matches("/dev/")
        .to_string();
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
    let cells: Vec<&Value> = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "cell_io")
        .map(|a| &a["json"])
        .collect();
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
    // less the target's: a loaded start moved bytes.
    for r in report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] != "idle")
    {
        let bg = &r["background"];
        assert!(
            bg["read_bytes"].as_u64().unwrap() + bg["write_bytes"].as_u64().unwrap() > 0,
            "{r}"
        );
    }
    b.env.down();
}
