//! `iolab sched record|report|compare` through the real binary, seed 004's
//! fio job run by `iolab load`, and the EROFS lab with its guarded
//! `sync_decompress` knob. Recording needs root (a tracefs instance); those
//! tests print why they skip without it.
#![allow(clippy::unwrap_used)]

mod lab_env;

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

fn iolab(run_dir: &Path) -> Command {
    let mut c = Command::cargo_bin("iolab").unwrap();
    c.env("IOLAB_RUN_DIR", run_dir);
    c
}

fn ok(out: &Output) -> &Output {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&ok(out).stdout).unwrap()
}

fn seed_job() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/experiments/seed004.fio")
}

#[test]
fn seed_004_job_file_runs_with_iolab_load() {
    let text = std::fs::read_to_string(seed_job()).unwrap();
    for line in [
        "time_based",
        "runtime=120",
        "[randread]",
        "ioengine=sync",
        "filename=/data/testing",
        "rw=randread",
        "direct=1",
        "size=500m",
        "[burn_8x90%_qsort]",
        "ioengine=cpuio",
        "cpuload=90",
        "numjobs=8",
        "cpumode=qsort",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing");
    }
    let run = tempfile::tempdir().unwrap();
    // As written, it reads /data/testing; where /data does not exist the
    // file still parses and the error names the directory.
    if !Path::new("/data").exists() {
        let out = iolab(run.path())
            .args(["load"])
            .arg(seed_job())
            .args(["--runtime", "1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("/data"));
    }
    // The seed's job with its file in a temp dir (on the host disk: direct
    // I/O) and a 2 s runtime instead of 120 s; nothing else changed.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("testing");
    let job = dir.path().join("seed004.fio");
    std::fs::write(
        &job,
        text.replace("/data/testing", file.to_str().unwrap())
            .replace("runtime=120", "runtime=2"),
    )
    .unwrap();
    let v = json(
        &iolab(run.path())
            .args(["load", "--json"])
            .arg(&job)
            .output()
            .unwrap(),
    );
    let jobs = v["jobs"].as_array().unwrap();
    let find = |name: &str| jobs.iter().find(|j| j["jobname"] == name).unwrap();
    let rr = find("randread");
    assert_eq!(rr["error"], 0);
    assert!(rr["read"]["io_bytes"].as_u64().unwrap() > 0);
    assert!(rr["read"]["clat_ns"]["mean"].as_f64().unwrap() > 0.0);
    let burn = find("burn_8x90%_qsort");
    assert!(burn["usr_cpu"].as_f64().unwrap() > 0.0, "{burn}");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 500 << 20);
}

/// Records `sh` running 40 short sleeps: every sleep is forked, woken
/// (sched_wakeup_new), runs, sleeps 10 ms and is woken again. The sleep
/// binary gets a name of its own, so that other `sleep`s on the machine
/// (recording is system-wide) are not mistaken for these. Returns the
/// recording's JSON and the name.
fn record_sleeps(run: &Path, out: &Path) -> (Value, String) {
    record_sleeps_with(run, out, "tracefs")
}

fn record_sleeps_with(run: &Path, out: &Path, tracer: &str) -> (Value, String) {
    // One letter per tracer: the kernel keeps 15 characters of a name,
    // and a pid can have 7 digits.
    let name = format!("slp{}{}", std::process::id(), &tracer[..1]);
    let bin = run.join(&name);
    std::fs::copy("/bin/sleep", &bin).unwrap();
    let script = format!("for i in $(seq 40); do {} 0.01; done", bin.display());
    let v = json(
        &iolab(run)
            .args(["sched", "record", "--json", "--tracer", tracer, "-o"])
            .arg(out)
            // On CPU 0: this VM's kernel does not trace switches out of
            // the idle task on CPU 1 (perf sees the same gaps).
            .args(["--", "taskset", "-c", "0", "sh", "-c", &script])
            .output()
            .unwrap(),
    );
    (v, name)
}

#[test]
fn record_and_report_a_known_workload() {
    if !iolab_testkit::root_or_skip("record_and_report_a_known_workload", "a tracefs instance") {
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let trace = run.path().join("sleeps.trace");
    let (rec, name) = record_sleeps(run.path(), &trace);
    let only = format!("^{name}$");
    assert!(rec["events"].as_u64().unwrap() > 100, "{rec}");
    assert!(rec["lost_events"].is_u64());
    assert_eq!(rec["command_exit"], 0);

    let v = json(
        &iolab(run.path())
            .args([
                "sched",
                "report",
                "--json",
                "--summary",
                "--hist",
                "--comm",
                &only,
            ])
            .arg(&trace)
            .output()
            .unwrap(),
    );
    assert!(v["trace"]["lost_events"].is_u64());
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 40, "one task per sleep");
    let mut total = 0;
    let mut both_wakeups = 0;
    assert!(!tasks.is_empty());
    for t in tasks {
        assert_eq!(t["comm"], name.as_str());
        let w = &t["wakeup"];
        // The wakeup_new and the wakeup after the 10 ms sleep; a switch
        // the kernel did not trace (counted as untraced) can cost one.
        assert!(w["count"].as_u64().unwrap() >= 1, "{t}");
        both_wakeups += usize::from(w["count"].as_u64().unwrap() >= 2);
        let (min, avg, max) = (
            w["min_ns"].as_u64().unwrap() as f64,
            w["avg_ns"].as_f64().unwrap(),
            w["max_ns"].as_u64().unwrap() as f64,
        );
        assert!(min <= avg && avg <= max, "{t}");
        assert!(t["switches"].as_u64().unwrap() >= w["count"].as_u64().unwrap());
        assert!(t["max_delay_ms"].as_f64().unwrap() * 1e6 >= max - 1.0);
        assert!(t["runtime_ns"].as_u64().unwrap() > 0);
        total += t["delay"]["count"].as_u64().unwrap();
    }
    assert!(
        both_wakeups * 10 >= tasks.len() * 9,
        "{both_wakeups} of {}",
        tasks.len()
    );
    assert_eq!(v["summary"]["samples"].as_u64().unwrap(), total);
    let hist_total: u64 = v["hist"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(hist_total, total);

    // Grouped: the 40 sleeps are one row.
    let g = json(
        &iolab(run.path())
            .args(["sched", "report", "--json", "--by-comm", "--comm", &only])
            .arg(&trace)
            .output()
            .unwrap(),
    );
    assert_eq!(g["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(g["tasks"][0]["tasks"].as_u64(), Some(40));
    assert!(g["tasks"][0]["task"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{name}:(")));

    // The text table has perf's columns and says what was lost.
    let out = iolab(run.path())
        .args(["sched", "report", "--sort", "max"])
        .arg(&trace)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&ok(&out).stdout).into_owned();
    for col in [
        "Task",
        "Runtime ms",
        "Switches",
        "Avg delay ms",
        "Max delay ms",
        "Max delay start",
        "Max delay end",
    ] {
        assert!(text.contains(col), "{col} missing:\n{text}");
    }
    assert!(text.lines().next().unwrap().contains(" lost"), "{text}");

    // A recording compared with itself: no difference.
    let c = json(
        &iolab(run.path())
            .args(["sched", "compare", "--json", "--comm", &only])
            .args([&trace, &trace])
            .output()
            .unwrap(),
    );
    assert_eq!(c["diff_pct"]["average"].as_f64(), Some(0.0));
    assert_eq!(c["a"]["samples"].as_u64().unwrap(), total);
    assert!(c["a_lost_events"].is_u64());
    let out = iolab(run.path())
        .args(["sched", "compare", "--comm", &only])
        .args([&trace, &trace])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&ok(&out).stdout).into_owned();
    for line in [
        "Average (us)",
        "Median (us)",
        "Minimum (us)",
        "Maximum (us)",
        "Standard deviation (us)",
        "Lost events",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
}

/// `--tracer bpf`: the same sleeps counted in the kernel give the same
/// table (one row per sleep, each woken at fork and after its sleep), the
/// summary and histogram pool the same delays, compare reads it beside a
/// trace, and what only raw samples can answer is a usage error.
#[test]
fn record_and_report_counted_in_the_kernel() {
    if !iolab_testkit::root_or_skip("record_and_report_counted_in_the_kernel", "BPF") {
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let file = run.path().join("sleeps.json");
    let (rec, name) = record_sleeps_with(run.path(), &file, "bpf");
    assert_eq!(rec["command_exit"], 0, "{rec}");
    assert_eq!(rec["lost_events"], 0, "{rec}");
    let only = format!("^{name}$");
    let v = json(
        &iolab(run.path())
            .args([
                "sched",
                "report",
                "--json",
                "--summary",
                "--hist",
                "--comm",
                &only,
            ])
            .arg(&file)
            .output()
            .unwrap(),
    );
    assert_eq!(v["trace"]["tracer"], "bpf", "{v}");
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 40, "one task per sleep: {v}");
    let mut total = 0;
    let mut both_wakeups = 0;
    for t in tasks {
        let w = &t["wakeup"];
        assert!(w["count"].as_u64().unwrap() >= 1, "{t}");
        both_wakeups += usize::from(w["count"].as_u64().unwrap() >= 2);
        let (min, med, avg, max) = (
            w["min_ns"].as_u64().unwrap() as f64,
            w["median_ns"].as_f64().unwrap(),
            w["avg_ns"].as_f64().unwrap(),
            w["max_ns"].as_u64().unwrap() as f64,
        );
        assert!(min <= avg && avg <= max && min <= med && med <= max, "{t}");
        assert!(t["runtime_ns"].as_u64().unwrap() > 0, "{t}");
        total += t["delay"]["count"].as_u64().unwrap();
    }
    assert!(both_wakeups * 10 >= tasks.len() * 9, "{both_wakeups} of 40");
    assert_eq!(v["summary"]["samples"].as_u64().unwrap(), total);
    let hist_total: u64 = v["hist"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(hist_total, total);
    // Beside a trace of other sleeps: both read, both counted.
    let trace = run.path().join("sleeps.trace");
    record_sleeps(run.path(), &trace);
    let c = json(
        &iolab(run.path())
            .args(["sched", "compare", "--json", "--comm", "^slp"])
            .args([&file, &trace])
            .output()
            .unwrap(),
    );
    // At least these sleeps' delays (recording is system-wide: another
    // test's sleeps may run meanwhile).
    assert!(c["a"]["samples"].as_u64().unwrap() >= total, "{c}");
    assert!(c["b"]["samples"].as_u64().unwrap() >= 40, "{c}");
    for args in [
        vec!["sched", "report", "--json", "--samples"],
        vec!["sched", "report", "--work", "z_erofs"],
        vec!["sched", "report", "--from", "waking"],
    ] {
        let out = iolab(run.path()).args(&args).arg(&file).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--tracer tracefs"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    for args in [
        vec!["sched", "record", "--tracer", "ebpf", "--duration", "1"],
        vec![
            "sched",
            "record",
            "--tracer",
            "bpf",
            "--workqueue",
            "--duration",
            "1",
        ],
    ] {
        let out = iolab(run.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// The fault campaign's case for `--tracer bpf`: SIGKILLed while counting,
/// it leaves no program loaded (each is held by a file of the process,
/// which the kernel closes), and its output file is not half written (it
/// is written once, at the end). The programs are the killed process's
/// own (by its fds), so another test's recording running meanwhile cannot
/// stand in for them; bpftool's list of every loaded program says when
/// they are gone.
#[test]
fn a_killed_bpf_recording_leaves_no_program() {
    if !iolab_testkit::root_or_skip("a_killed_bpf_recording_leaves_no_program", "BPF") {
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let file = run.path().join("killed.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .env("IOLAB_RUN_DIR", run.path())
        .args([
            "sched",
            "record",
            "--tracer",
            "bpf",
            "--duration",
            "60",
            "-o",
        ])
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    if let Err(why) = iolab_testkit::kill_leaves_no_bpf_program(&mut child, 3) {
        panic!("{why}");
    }
    // The next command undoes what the killed run changed (its tracefs
    // mount, where there was none).
    if let Err(why) = iolab_testkit::restore_after_kill(
        std::path::Path::new(env!("CARGO_BIN_EXE_iolab")),
        run.path(),
    ) {
        panic!("{why}");
    }
    assert!(
        !file.exists(),
        "a killed recording wrote {}",
        file.display()
    );
}

#[test]
fn bad_input_is_a_usage_error() {
    let run = tempfile::tempdir().unwrap();
    let junk = run.path().join("junk.trace");
    std::fs::write(&junk, "not a trace").unwrap();
    for args in [
        vec!["sched", "report", "--sort", "bogus"],
        vec!["sched", "report", "--delay", "sometimes"],
        vec!["sched", "report", "--comm", "("],
        vec!["sched", "report"],
    ] {
        let out = iolab(run.path()).args(&args).arg(&junk).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    let out = iolab(run.path())
        .args(["sched", "record", "--duration", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Compressible data (text-like: an EROFS image of random bytes would be
/// stored uncompressed and never decompress).
fn compressible(path: &Path, bytes: usize) {
    let line = b"the quick brown fox jumps over the lazy dog 0123456789\n";
    let mut data = Vec::with_capacity(bytes);
    let mut i = 0u64;
    while data.len() < bytes {
        data.extend_from_slice(line);
        data.extend_from_slice(format!("{i:016x}\n").as_bytes());
        i += 1;
    }
    data.truncate(bytes);
    std::fs::write(path, data).unwrap();
}

#[test]
fn erofs_lab_decompression_workers_are_recorded_and_the_knob_restored() {
    if !iolab_testkit::root_or_skip(
        "erofs_lab_decompression_workers",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    if !lab_env::have("mkfs.erofs") {
        iolab_testkit::skip_line(
            "skip erofs_lab_decompression_workers: mkfs.erofs missing (erofs-utils)".to_string(),
        );
        return;
    }
    let env = lab_env::Env::new("sched-erofs");
    let src = tempfile::tempdir_in("/var/tmp").unwrap();
    // 64 MiB: hundreds of decompression work items. A worker that was
    // already running when an item was queued has no wakeup delay to
    // attribute to it; with 16 MiB, CI once saw no attributed item at all.
    const DATA: u64 = 64 << 20;
    compressible(&src.path().join("data"), iolab_sys::cast::usize_of(DATA));
    let lab = env.up(&[
        "--fs",
        "erofs",
        "--compress",
        "lz4hc",
        "--from",
        src.path().to_str().unwrap(),
    ]);
    let mp = PathBuf::from(lab_env::s(&lab, "mountpoint"));
    let dev = lab_env::kname(lab_env::s(&lab, "device"));
    let knob = PathBuf::from(format!("/sys/fs/erofs/{dev}/sync_decompress"));
    let before = std::fs::read_to_string(&knob).unwrap();
    // The image is compressed: under half its data.
    let img_size = std::fs::metadata(lab_env::s(&lab, "image")).unwrap().len();
    assert!(
        img_size < DATA / 2,
        "image of {img_size} bytes: not compressed"
    );

    let trace = env.run.path().join("erofs.trace");
    let file = mp.join("data");
    let cat = format!("cat {} > /dev/null; cat {}", file.display(), knob.display());
    let out = env
        .cmd()
        .args([
            "sched",
            "record",
            "--workqueue",
            "--drop-caches",
            "--lab",
            &env.name,
        ])
        .args(["--sync-decompress", "off", "-o"])
        .arg(&trace)
        .args(["--", "sh", "-c", &cat])
        .output()
        .unwrap();
    ok(&out);
    // The knob was "off" (2) during the recording and is restored after.
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), before);

    let v = json(
        &env.cmd()
            .args(["sched", "report", "--json", "--work", "erofs", "--by-comm"])
            .arg(&trace)
            .output()
            .unwrap(),
    );
    let works = v["works"].as_array().unwrap();
    let decompress = works
        .iter()
        .find(|w| w["work"].as_str().unwrap().ends_with("@erofs_worker"))
        .unwrap_or_else(|| panic!("no erofs_worker work items: {works:?}"));
    assert!(decompress["items"].as_u64().unwrap() > 0);
    // The workers that ran it are workqueue kworkers, with delays.
    let tasks = v["tasks"].as_array().unwrap();
    assert!(!tasks.is_empty());
    assert!(
        tasks
            .iter()
            .all(|t| t["comm"].as_str().unwrap().starts_with("kworker/")),
        "{tasks:?}"
    );
    assert!(
        tasks
            .iter()
            .map(|t| t["wakeup"]["count"].as_u64().unwrap())
            .sum::<u64>()
            > 0
    );

    // Not an EROFS lab: --sync-decompress says what would be right.
    let out = env
        .cmd()
        .args([
            "sched",
            "record",
            "--lab",
            "no-such-lab",
            "--sync-decompress",
            "sideways",
            "--duration",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    env.down();
    lab_env::assert_gone(&env, None, Some(&mp));
}
