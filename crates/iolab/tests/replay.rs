//! `iolab app --replay` on S's xterm.trace, checked with `iolab trace bio`
//! on the lab device: the same number of block requests and bytes as the
//! trace lists; by the replayer's own issue times, no request issued
//! sooner after the previous one than the trace says; and at the block
//! layer, the whole span no shorter than the trace's. These hold however
//! busy the machine is (contention only delays). How close the delays
//! come to the trace's (within 10 % where gaps are large, on a quiet
//! machine) is measured by bench/replay_vs_s.py, not asserted here.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_env::{ok, text};
use lab_env::{have, Env};
use serde_json::Value;

const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/s/xterm.trace");

/// (delta s, bytes) of each trace line.
fn trace_lines() -> Vec<(f64, u64)> {
    std::fs::read_to_string(TRACE)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let d = if i == 0 { 0.0 } else { f[1].parse().unwrap() };
            (d, f[2].parse::<u64>().unwrap() * 512)
        })
        .collect()
}

fn extents(p: &Path) -> usize {
    let out = std::process::Command::new("filefrag")
        .arg(p)
        .output()
        .unwrap();
    // "<path>: N extents found" (or "1 extent found").
    text(&out.stdout)
        .rsplit(": ")
        .next()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn xterm_trace_replays_its_requests_bytes_and_delays() {
    let test = "xterm_trace_replays_its_requests_bytes_and_delays";
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return;
    }
    if !have("filefrag") {
        iolab_testkit::skip(test, "filefrag (e2fsprogs) is missing");
        return;
    }
    let env = Env::new("replay");
    // 1 GiB: ext4 then uses 4 KiB blocks and 128 MiB groups, so each
    // 20 MB replay file is one extent and no request is split in two.
    let lab = env.up(&["--size", "1GiB", "--scheduler", "none"]);
    let dir = PathBuf::from(lab["mountpoint"].as_str().unwrap()).join("s");
    let out = env
        .cmd()
        .args(["app", "--replay", TRACE, "--prepare", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    ok(&out);
    for i in 0..2 {
        let f = dir.join(format!("replay_startup_file{i}"));
        assert_eq!(extents(&f), 1, "{} is fragmented", f.display());
    }
    let out = env
        .cmd()
        .args(["trace", "bio", "--json", "-d", &env.name, "--"])
        .arg(assert_cmd::cargo::cargo_bin("iolab"))
        .args(["app", "--replay", TRACE, "--json", "--dir"])
        .arg(&dir)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    ok(&out);
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (counters, reqs) = lines.split_last().unwrap();
    assert_eq!(counters["lost_events"], 0, "{counters}");
    let trace = trace_lines();
    assert_eq!(reqs.len(), trace.len(), "{counters}");
    let bytes: u64 = reqs.iter().map(|r| r["bytes"].as_u64().unwrap()).sum();
    assert_eq!(bytes, trace.iter().map(|t| t.1).sum::<u64>());
    // The replayer's own report (the traced command's stdout goes to
    // stderr, to keep trace bio's lines parseable).
    let stderr = text(&out.stderr);
    let (from, to) = (stderr.find('{').unwrap(), stderr.rfind('}').unwrap());
    let report: Value = serde_json::from_str(&stderr[from..=to]).unwrap();
    let issued: Vec<f64> = report["issued_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(issued.len(), trace.len());
    // Never sooner than the trace's delay after the previous issue (the
    // clock's rounding aside); every gap of 5 ms or more is checked.
    let mut checked = 0;
    for (i, w) in issued.windows(2).enumerate() {
        let want = trace[i + 1].0;
        let got = w[1] - w[0];
        assert!(
            got >= want - 1e-6,
            "request {}: issued {got:.6} s after the previous, the trace says {want:.6} s",
            i + 1
        );
        if want >= 0.005 {
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} delays of 5 ms or more");
    // When each request entered the block layer: completion less latency
    // and queueing. The span can only grow under contention; it may come
    // short of the trace's only by the first request's own way from its
    // issue into the block layer.
    let mut queued: Vec<f64> = reqs
        .iter()
        .map(|r| {
            r["time_s"].as_f64().unwrap()
                - (r["que_ms"].as_f64().unwrap() + r["lat_ms"].as_f64().unwrap()) / 1e3
        })
        .collect();
    queued.sort_by(f64::total_cmp);
    let want_span: f64 = trace.iter().map(|t| t.0).sum();
    let span = queued.last().unwrap() - queued[0];
    assert!(
        span >= want_span - 0.02,
        "span {span:.3} s at the block layer, trace {want_span:.3} s"
    );
    eprintln!(
        "replay: {} requests, {bytes} bytes, span {span:.3} s (trace {want_span:.3} s), {checked} delays checked",
        reqs.len()
    );
    env.down();
}
