//! `iolab trace bio` end to end: bad input exits 2 with one line; on a loop
//! device of the test's own (root), the JSON stream has biosnoop's fields
//! and attributes dd's reads to dd, --hist/--summary give one document, and
//! --perfetto writes a valid Chrome-JSON trace. The counts themselves are
//! checked against /proc/diskstats in crates/bio/tests/diskstats.rs.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use serde_json::Value;

struct Env {
    run: tempfile::TempDir,
    work: tempfile::TempDir,
    /// One trace at a time: while another process loads or unloads BPF
    /// programs, this kernel sometimes does not run an attached program
    /// for an event (iolab reports it, against /proc/diskstats, as lost);
    /// these tests hold every count to 0 lost.
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Env {
    fn new() -> Env {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        Env {
            _one: ONE.lock().unwrap_or_else(|e| e.into_inner()),
            run: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir_in("/var/tmp").unwrap(),
        }
    }

    fn iolab(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_iolab"))
            .env("IOLAB_RUN_DIR", self.run.path())
            .args(args)
            .output()
            .unwrap()
    }

    /// A 16 MiB loop device owned by this test's guard.
    fn loop_dev(&self, guard: &Guard) -> BlockDev {
        let img = self.work.path().join("trace.img");
        let f = guard.create_file(&img).unwrap();
        f.set_len(16 << 20).unwrap();
        drop(f);
        let dev = guard.attach_loop(&img, true).unwrap();
        let _ = Command::new("udevadm").arg("settle").status();
        dev
    }

    fn guard(&self) -> Guard {
        Guard::in_dir(self.run.path().join("fixture"))
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `dd` reading COUNT 4 KiB blocks of `dev` with O_DIRECT.
fn dd_read(dev: &Path, count: u32) -> Vec<String> {
    vec![
        "--".into(),
        "dd".into(),
        format!("if={}", dev.display()),
        "of=/dev/null".into(),
        "bs=4k".into(),
        format!("count={count}"),
        "iflag=direct".into(),
        "status=none".into(),
    ]
}

fn args<'a>(head: &[&'a str], tail: &'a [String]) -> Vec<&'a str> {
    head.iter()
        .copied()
        .chain(tail.iter().map(String::as_str))
        .collect()
}

#[test]
fn a_bad_device_is_a_one_line_usage_error() {
    let env = Env::new();
    let out = env.iolab(&["trace", "bio", "-d", "no-such-disk-xyz"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("no-such-disk-xyz") && err.contains("/sys/block"),
        "{err}"
    );
    let out = env.iolab(&["trace", "bio", "-p", "notapid"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("-p notapid"), "{}", stderr(&out));
    let out = env.iolab(&["trace", "bio", "--duration", "5"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // A rung of BPF programs that does not exist: refused before anything
    // runs, not a silent fall back to tracefs under --tracer auto.
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .env("IOLAB_RUN_DIR", env.run.path())
        .env("IOLAB_BPF_ATTACH", "fentry")
        .args(["trace", "bio", "--hist", "--tracer", "auto", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("IOLAB_BPF_ATTACH=\"fentry\"") && err.contains("tp_btf, raw or classic"),
        "{err}"
    );
    // Never in the way of undoing a killed run's changes.
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .env("IOLAB_RUN_DIR", env.run.path())
        .env("IOLAB_BPF_ATTACH", "fentry")
        .arg("restore")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn json_lines_carry_biosnoop_fields_and_the_submitter() {
    if !iolab_testkit::root_or_skip(
        "json_lines_carry_biosnoop_fields_and_the_submitter",
        "loop devices, tracefs",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let dev = env.loop_dev(&guard);
    let cmd = dd_read(&dev.dev_path(), 64);
    let d = dev.dev_path();
    let t0 = std::time::Instant::now();
    let out = env.iolab(&args(
        &["trace", "bio", "--json", "-d", d.to_str().unwrap()],
        &cmd,
    ));
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (last, requests) = lines.split_last().unwrap();
    assert_eq!(last["lost_events"], 0, "{last}");
    let dd: Vec<&Value> = requests
        .iter()
        .filter(|r| r["comm"] == "dd" && r["t"] == "R")
        .collect();
    assert_eq!(dd.len(), 64, "{text}");
    for r in &dd {
        for k in [
            "time_s", "comm", "pid", "disk", "t", "sector", "bytes", "que_ms", "lat_ms",
        ] {
            assert!(!r[k].is_null(), "{k} missing: {r}");
        }
        assert_eq!(r["disk"], dev.name.as_str());
        assert_eq!(r["bytes"], 4096);
        // Issue to completion of a 4 KiB read on a loop device: more than
        // nothing, less than the whole dd run measured by the wall clock.
        let lat = r["lat_ms"].as_f64().unwrap();
        assert!(
            lat > 0.0 && lat < wall_ms,
            "lat_ms {lat} vs wall {wall_ms} ms"
        );
    }
    // Sequential: each read starts where the previous one ended.
    let sectors: Vec<u64> = dd.iter().map(|r| r["sector"].as_u64().unwrap()).collect();
    assert!(sectors.windows(2).all(|w| w[1] == w[0] + 8), "{sectors:?}");
}

#[test]
fn hist_summary_and_perfetto_are_documents() {
    if !iolab_testkit::root_or_skip(
        "hist_summary_and_perfetto_are_documents",
        "loop devices, tracefs",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let dev = env.loop_dev(&guard);
    let devno = std::fs::read_to_string(dev.sysfs.join("dev")).unwrap();
    let trace = env.work.path().join("bio.json");
    let cmd = dd_read(&dev.dev_path(), 100);
    let out = env.iolab(&args(
        &[
            "trace",
            "bio",
            "--hist",
            "--summary",
            "--json",
            "-d",
            devno.trim(),
            "--perfetto",
            trace.to_str().unwrap(),
        ],
        &cmd,
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["lost_events"], 0);
    let reads = doc["histograms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["op"] == "R")
        .unwrap();
    assert!(reads["count"].as_u64().unwrap() >= 100, "{reads}");
    let buckets: u64 = reads["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(buckets), reads["count"].as_u64());
    assert!(reads["lat"]["p99_us"].as_f64().unwrap() <= reads["lat"]["max_us"].as_f64().unwrap());
    let dd = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["comm"] == "dd" && p["op"] == "R")
        .unwrap();
    assert_eq!(dd["count"], 100);
    assert!(dd["sequential_pct"].as_f64().unwrap() >= 98.0, "{dd}");

    let p: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = p["traceEvents"].as_array().unwrap();
    let begins = events.iter().filter(|e| e["ph"] == "b").count();
    let ends = events.iter().filter(|e| e["ph"] == "e").count();
    assert!(
        begins >= 100 && begins == ends,
        "{begins} begins, {ends} ends"
    );
    assert!(events
        .iter()
        .any(|e| e["ph"] == "C" && e["name"] == "depth"));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["args"]["name"].as_str().unwrap_or("").contains(&dev.name)));
    assert_eq!(p["otherData"]["lost_events"], 0);
}

#[test]
fn the_command_exit_code_passes_through() {
    if !iolab_testkit::root_or_skip(
        "the_command_exit_code_passes_through",
        "loop devices, tracefs",
    ) {
        return;
    }
    let env = Env::new();
    let out = env.iolab(&[
        "trace",
        "bio",
        "--duration",
        "20s",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("0 lost"), "{}", stderr(&out));
}

#[test]
fn load_with_trace_bio_reports_histograms_under_bio() {
    let env = Env::new();
    let out = env.iolab(&["load", "--rw", "read", "--size", "1m", "--trace", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // The registry's flag: clap names the value and the ones it takes.
    let err = stderr(&out);
    assert!(
        err.contains("nope") && err.contains("--trace") && err.contains("bio"),
        "{err}"
    );
    if !iolab_testkit::root_or_skip(
        "load_with_trace_bio_reports_histograms_under_bio",
        "loop devices, tracefs",
    ) {
        return;
    }
    let guard = env.guard();
    let dev = env.loop_dev(&guard);
    let d = dev.dev_path();
    let out = env.iolab(&[
        "load",
        "--filename",
        d.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--direct",
        "--size",
        "4m",
        "--trace",
        "bio",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ios = doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert_eq!(doc["bio"]["lost_events"], 0);
    let h = &doc["bio"]["histograms"][0];
    assert_eq!(
        (h["disk"].as_str(), h["op"].as_str()),
        (Some(dev.name.as_str()), Some("R"))
    );
    // Every read the load did is a request (random 4 KiB reads of one
    // thread do not merge); udev may add a few of its own.
    let count = h["count"].as_u64().unwrap();
    assert!(
        count >= ios && count <= ios + 64,
        "{count} requests for {ios} reads"
    );
    // The table mode prints one line per histogram and the counters.
    let out = env.iolab(&[
        "load",
        "--filename",
        d.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--direct",
        "--size",
        "1m",
        "--trace",
        "bio",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("bio {} R:", dev.name)), "{text}");
    assert!(text.contains("0 lost"), "{text}");
}

/// `--tracer bpf`: --hist is counted in the kernel (said in --json and in
/// the footer, with how the programs are attached), with the same counts
/// as tracefs gives; every other output gets the programs' per-request
/// records (dd's reads the same as tracefs's); a SIGKILLed BPF
/// trace leaves no program attached (the kernel drops them with the last
/// file of the process).
#[test]
fn hist_is_counted_in_the_kernel_and_a_kill_leaves_nothing_attached() {
    if !iolab_testkit::root_or_skip(
        "hist_is_counted_in_the_kernel_and_a_kill_leaves_nothing_attached",
        "loop devices, BPF",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let dev = env.loop_dev(&guard);
    let name = dev.name.clone();
    let cmd = dd_read(&dev.dev_path(), 200);
    let mut counts = Vec::new();
    for tracer in ["bpf", "tracefs"] {
        let out = env.iolab(&args(
            &[
                "trace", "bio", "--hist", "--json", "--tracer", tracer, "-d", &name,
            ],
            &cmd,
        ));
        assert!(out.status.success(), "{tracer}: {}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["tracer"], tracer, "{doc}");
        assert_eq!(doc["lost_events"], 0);
        let reads = doc["histograms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["op"] == "R")
            .unwrap()
            .clone();
        counts.push((
            reads["count"].as_u64().unwrap(),
            reads["bytes"].as_u64().unwrap(),
        ));
    }
    assert_eq!(counts[0], counts[1], "bpf vs tracefs (count, bytes)");
    // `--tracer auto` counts --hist alone in the kernel on bio-based disks
    // (zram), where BPF was measured the cheaper, and reads tracefs on a
    // request-based one (this loop device), where tracefs was.
    let auto = env.iolab(&args(
        &["trace", "bio", "--hist", "--json", "-d", &name],
        &cmd,
    ));
    assert!(auto.status.success(), "{}", stderr(&auto));
    let doc: Value = serde_json::from_slice(&auto.stdout).unwrap();
    assert_eq!(doc["tracer"], "tracefs", "{doc}");
    assert!(doc.get("bpf_unavailable").is_none(), "{doc}");
    if std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        let z = guard.add_zram(16 << 20, None).unwrap();
        let zcmd = dd_read(&z.dev_path(), 50);
        let auto = env.iolab(&args(
            &["trace", "bio", "--hist", "--json", "-d", &z.name],
            &zcmd,
        ));
        assert!(auto.status.success(), "{}", stderr(&auto));
        let doc: Value = serde_json::from_slice(&auto.stdout).unwrap();
        assert_eq!(doc["tracer"], "bpf", "{doc}");
    }
    assert!(counts[0].0 >= 200, "{counts:?}");

    let text = env.iolab(&args(
        &["trace", "bio", "--hist", "--tracer", "bpf", "-d", &name],
        &cmd,
    ));
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("counted by BPF in the kernel (tp_btf), 0 lost"),
        "{text}"
    );
    assert!(text.contains("percentiles counted in the kernel"), "{text}");

    // Anything but --hist alone: a record per request from the programs'
    // ring buffer, the same requests with the same owner as tracefs.
    let mut lines = Vec::new();
    for tracer in ["bpf", "tracefs"] {
        let out = env.iolab(&args(
            &["trace", "bio", "--json", "--tracer", tracer, "-d", &name],
            &cmd,
        ));
        assert!(out.status.success(), "{tracer}: {}", stderr(&out));
        let docs: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let (end, reqs) = docs.split_last().unwrap();
        assert_eq!(end["tracer"], tracer, "{end}");
        assert_eq!(end["lost_events"], 0, "{end}");
        let mut dd: Vec<(u64, u64, String)> = reqs
            .iter()
            .filter(|r| r["comm"] == "dd" && r["t"] == "R")
            .map(|r| {
                (
                    r["sector"].as_u64().unwrap(),
                    r["bytes"].as_u64().unwrap(),
                    r["rwbs"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        dd.sort();
        lines.push(dd);
    }
    assert!(lines[0].len() >= 200, "{}", lines[0].len());
    assert_eq!(lines[0], lines[1], "dd's reads: bpf records vs tracefs");

    // SIGKILLed while counting, it leaves none of the programs it held:
    // a loop device is request-based, so at least the four request
    // programs (insert, issue, requeue, complete; io_start and the merges
    // too on kernels >= 6.5).
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .env("IOLAB_RUN_DIR", env.run.path())
        .args([
            "trace",
            "bio",
            "--hist",
            "--tracer",
            "bpf",
            "-d",
            &name,
            "--duration",
            "60s",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    if let Err(why) = iolab_testkit::kill_leaves_no_bpf_program(&mut child, 4) {
        panic!("{why}");
    }
    // The next command undoes what the killed run changed (its tracefs
    // mount, where there was none).
    if let Err(why) = iolab_testkit::restore_after_kill(
        std::path::Path::new(env!("CARGO_BIN_EXE_iolab")),
        env.run.path(),
    ) {
        panic!("{why}");
    }
}
