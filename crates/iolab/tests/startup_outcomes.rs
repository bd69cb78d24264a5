//! What a start is worth, through the real binary on real labs: a target
//! that segfaults, exits without its ready line, or exits 1 is stored as
//! failed with its reason, excluded from the statistics and reported; a
//! background load that ends mid-cell stops the cell (exit 1) and no start
//! after it is stored as loaded; contradictory or unbounded options are
//! refused with one line and exit 2 before anything runs.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::process::Output;
use std::time::Duration;

use bench_env::{text, Bench};

use serde_json::Value;

impl Bench {
    /// `iolab startup` on a small temporary lab under `none`, then `args`,
    /// the database and the target after `--`.
    fn startup(&self, args: &[&str], target: &[&str]) -> Output {
        self.cmd()
            .arg("startup")
            .args(["--lab-size", "256MiB", "--schedulers", "none"])
            .args(args)
            .arg("--db")
            .arg(&self.db)
            .arg("--")
            .args(target)
            .timeout(Duration::from_secs(180))
            .output()
            .unwrap()
    }
}

/// Start n (counted in a file on the lab): 1 ready, 2 SIGSEGV, 3 exit 0
/// with no ready line, 4 exit 1 after a line on stderr, 5 ready.
const FLAKY: &str =
    "n=$(cat {dir}/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > {dir}/count; \
    case $n in 2) kill -SEGV $$;; 3) exit 0;; 4) echo 'oops: config missing' >&2; exit 1;; esac; \
    sleep 0.2; echo ready; sleep 5";

#[test]
fn failed_starts_are_stored_excluded_and_reported() {
    if !iolab_testkit::root_or_skip(
        "failed_starts_are_stored_excluded_and_reported",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("so-failed");
    let out = b.startup(
        &[
            "--workloads",
            "idle",
            "--reps",
            "5",
            "--ready-line",
            "^ready",
        ],
        &["sh", "-c", FLAKY],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let idle = stdout.lines().find(|l| l.starts_with("idle")).unwrap();
    assert!(
        idle.contains("[3/5 failed]") && idle.ends_with('!'),
        "{idle}"
    );
    assert!(stdout.contains("SIGSEGV"), "{stdout}");
    assert!(
        stdout.contains("without printing a line matching"),
        "{stdout}"
    );
    assert!(
        stdout.contains("status 1") && stdout.contains("oops: config missing"),
        "{stdout}"
    );

    let e = b.export(1);
    let runs = e["runs"].as_array().unwrap();
    let outcome: Vec<&str> = runs
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcome, ["ok", "failed", "failed", "failed", "ok"]);
    assert_eq!(runs[1]["signal"], 11);
    let cell = &e["cells"][0];
    assert_eq!(
        (cell["n"].as_u64(), cell["failed"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(cell["flagged"], true);
    // The statistics are those of the two real starts only: each waited
    // 0.2 s for its ready line (wall clock, not a number iolab made up),
    // where a failure counted as a sample would pull the mean toward 0.
    let mean = cell["mean"].as_f64().unwrap();
    assert!((0.19..1.0).contains(&mean), "mean {mean}");
    assert_eq!(cell["reps"], serde_json::json!([1, 5]));
}

#[test]
fn a_load_that_ends_mid_cell_stops_the_cell() {
    if !iolab_testkit::root_or_skip(
        "a_load_that_ends_mid_cell_stops_the_cell",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("so-load-ends");
    // The reader is told to stop after 2 s; the cell wants 30 starts of
    // 0.3 s, far longer.
    let out = b.startup(
        &[
            "--workloads",
            "1r",
            "--reps",
            "30",
            "--warmup",
            "0.5",
            "--load-option",
            "size=32M",
            "--load-option",
            "runtime=2",
        ],
        &["sleep", "0.3"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}\n{err}", text(&out.stdout));
    assert!(
        err.contains("stopped running") && err.contains("time_based"),
        "{err}"
    );
    let e = b.export(1);
    let loaded: Vec<&Value> = e["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] == "1r")
        .collect();
    assert!(
        loaded.len() < 30,
        "the cell went on: {} starts",
        loaded.len()
    );
    // Starts made while the load ran are samples with traffic; a start
    // the load ended during is invalid; none comes after.
    let last = loaded.last().unwrap();
    for r in &loaded[..loaded.len() - 1] {
        assert_eq!(r["outcome"], "ok", "{r}");
        let bg = &r["background"];
        assert!(bg["read_bytes"].as_u64().unwrap() > 0, "{r}");
    }
    assert!(
        matches!(last["outcome"].as_str(), Some("ok" | "invalid")),
        "{last}"
    );
    let idle = e["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] == "idle")
        .count();
    assert_eq!(idle, 30, "the idle cell is unaffected");
}

fn usage_error(b: &Bench, args: &[&str]) -> String {
    let out = b
        .env
        .cmd()
        .arg("startup")
        .args(args)
        .arg("--db")
        .arg(&b.db)
        .args(["--", "true"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!b.db.exists(), "{args:?}: a database was made");
    err
}

#[test]
fn contradictory_and_unbounded_options_are_refused() {
    if !iolab_testkit::root_or_skip(
        "contradictory_and_unbounded_options_are_refused",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("so-usage");
    for (args, says) in [
        (vec!["--lab", "x", "--bw", "20MiB/s"], "--bw"),
        (vec!["--lab", "x", "--lab-size", "1GiB"], "--lab-size"),
        (vec!["--lab", "x", "--iops", "100"], "--iops"),
        (
            vec!["--device", "vda", "--dir", "/x", "--lab-fs", "xfs"],
            "--lab-fs",
        ),
        (vec!["--dir", "/tmp"], "--device"),
        (
            vec!["--evict", "/tmp", "--cold", "none"],
            "with --cold none",
        ),
        (vec!["--timeout", "inf"], "finite"),
        (vec!["--timeout", "1e20"], "at most 86400"),
        (vec!["--timeout", "0"], "positive"),
        (vec!["--warmup", "inf"], "finite"),
        (vec!["--warmup=-1"], "at least 0"),
    ] {
        let err = usage_error(&b, &args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn probe_refuses_to_overwrite_a_block_device() {
    if !iolab_testkit::root_or_skip(
        "probe_refuses_to_overwrite_a_block_device",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("so-probe-dev");
    let lab = b.env.up(&["--size", "64MiB", "--fs", "none"]);
    let dev = lab["device"].as_str().unwrap().to_string();
    let input = b.env.run.path().join("in");
    std::fs::write(&input, vec![7u8; 1 << 16]).unwrap();
    let before = std::fs::read(&dev).unwrap()[..4096].to_vec();
    let out = b
        .env
        .cmd()
        .args(["probe", "--count", "20", "--write-every", "1", "--file"])
        .arg(&input)
        .args(["--out-file", &dev])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("block device") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&dev).unwrap()[..4096],
        before[..],
        "the device was written"
    );
    b.env.down();
}
