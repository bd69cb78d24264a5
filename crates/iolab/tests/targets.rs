//! The built-in targets driven as the startup matrix drives them: as
//! separate `iolab probe` / `iolab app` processes.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn iolab(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("iolab").unwrap();
    c.current_dir(dir);
    c
}

fn json_of(out: &[u8]) -> Value {
    serde_json::from_slice(out).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(out));
    })
}

/// A temp dir on a filesystem whose page cache fadvise can evict, or `None`
/// (reason printed) when it is tmpfs.
fn evictable_tempdir() -> Option<tempfile::TempDir> {
    let d = tempfile::tempdir().unwrap();
    let fs = iolab_sys::mounts::containing(d.path()).map(|m| m.fstype);
    if fs.as_deref() == Some("tmpfs") {
        iolab_testkit::skip_line(
            "skip: temp dir is on tmpfs, whose pages fadvise cannot evict".to_string(),
        );
        return None;
    }
    Some(d)
}

#[test]
fn probe_counts_reads_and_writes() {
    let d = tempfile::tempdir().unwrap();
    let out = iolab(d.path())
        .args([
            "probe",
            "--count",
            "200",
            "--prepare",
            "8M",
            "--json",
            "--evict",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json_of(&out);
    assert_eq!(v["iterations"], 200);
    assert_eq!(v["read"]["total_ios"], 200);
    assert_eq!(v["read"]["io_bytes"], 200 * 4096);
    assert_eq!(v["write"]["total_ios"], 20);
    assert_eq!(v["lat_ns"]["N"], 220);
    assert_eq!(v["threshold_ns"], 300_000_000u64);
    assert_eq!(v["wraps"], 0);
    assert!(
        v["lat_ns"]["percentile"]["99.000000"].as_u64().unwrap()
            <= v["lat_ns"]["max"].as_u64().unwrap()
    );
    assert_eq!(
        std::fs::metadata(d.path().join("probe.in")).unwrap().len(),
        8 << 20
    );
    assert_eq!(
        std::fs::metadata(d.path().join("probe.in.out"))
            .unwrap()
            .len(),
        20 * 4096
    );
}

#[test]
fn zero_threshold_logs_every_operation() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "probe",
        "--count",
        "50",
        "--prepare",
        "1M",
        "--threshold",
        "0ms",
    ];
    let out = iolab(d.path())
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let slow = text
        .lines()
        .filter(|l| l.starts_with("slow read") || l.starts_with("slow write"))
        .count();
    assert_eq!(slow, 55, "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("slow write")).count(),
        5
    );
    let out = iolab(d.path())
        .args(args)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json_of(&out);
    assert_eq!(v["slow_count"], 55);
    assert_eq!(v["slow_ops"].as_array().unwrap().len(), 55);
    assert_eq!(v["slow_ops"][1]["op"], "write");
}

#[test]
fn probe_bad_input_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["probe", "--threshold", "300"], "e.g. 300ms"),
        (&["probe", "--file", "missing.bin"], "--prepare"),
        (
            &["probe", "--block-size", "huge", "--prepare", "1M"],
            "invalid size",
        ),
        (&["probe", "--count", "0", "--prepare", "1M"], "--count 0"),
    ];
    for (args, want) in cases {
        let out = iolab(d.path())
            .args(args)
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8(out).unwrap();
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn app_prepares_once_and_launch_does_what_the_profile_promises() {
    let Some(d) = evictable_tempdir() else { return };
    let dir = d.path().join("app");
    let dir_s = dir.to_str().unwrap();
    let prep = [
        "app",
        "--prepare",
        "--dir",
        dir_s,
        "--scale",
        "0.5",
        "--json",
    ];
    let out = iolab(d.path())
        .args(prep)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let prepared = json_of(&out);
    let files = prepared["manifest"]["files"].as_array().unwrap().len();
    assert!(files > 100, "{files} files");
    let out = iolab(d.path())
        .args(&prep[..6])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8(out)
        .unwrap()
        .starts_with("already prepared"));

    let launch = ["app", "--dir", dir_s, "--json", "--evict", "--ready"];
    let a = iolab(d.path()).args(launch).assert().success();
    let out = a.get_output();
    assert!(String::from_utf8_lossy(&out.stderr).contains("ready"));
    let r = json_of(&out.stdout);
    assert_eq!(r["done"], prepared["profile"]);
    assert_eq!(r["done"], r["profile"]);
    assert_eq!(r["interrupted"], false);
    assert_eq!(r["phases"].as_array().unwrap().len(), 6);
    let io = &r["proc_io"];
    let read = r["done"]["read_bytes"].as_u64().unwrap();
    let touched = r["done"]["touched_pages"].as_u64().unwrap() * 4096;
    assert!(io["rchar"].as_u64().unwrap() >= read, "{r}");
    // Evicted first, so everything read or touched came from storage.
    let storage = io["read_bytes"].as_u64().unwrap();
    assert!(
        storage >= (read + touched) / 2,
        "only {storage} bytes from storage: {r}"
    );
    assert!(!dir.join("databases/app.db-journal").exists());
}

#[test]
fn app_eviction_agrees_with_fincore() {
    let Some(d) = evictable_tempdir() else { return };
    let dir = d.path().join("app");
    let dir_s = dir.to_str().unwrap();
    iolab(d.path())
        .args(["app", "--prepare", "--dir", dir_s, "--scale", "0.25"])
        .assert()
        .success();
    iolab(d.path())
        .args(["app", "--dir", dir_s])
        .assert()
        .success();
    let files = iolab_experiment::targets::app::manifest_files(&dir).unwrap();
    let fincore = |p: &Path| -> Option<u64> {
        let out = std::process::Command::new("fincore")
            .args(["--noheadings", "--raw", "--output", "PAGES"])
            .arg(p)
            .output()
            .ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    let apk = dir.join("base.apk");
    let ours = iolab_sys::pagecache::residency(&apk).unwrap();
    let Some(theirs) = fincore(&apk) else {
        iolab_testkit::skip_line("skip: util-linux fincore is not installed".to_string());
        return;
    };
    assert!(
        ours.cached_pages > 0,
        "warm launch left nothing cached: {ours:?}"
    );
    assert_eq!(ours.cached_pages, theirs);
    iolab_sys::pagecache::evict(&files).unwrap();
    for f in &files {
        assert_eq!(fincore(f), Some(0), "{f:?} still cached");
        assert_eq!(iolab_sys::pagecache::residency(f).unwrap().cached_pages, 0);
    }
}

#[test]
fn app_bad_input_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("none");
    let dir_s = dir.to_str().unwrap();
    let out = iolab(d.path())
        .args(["app", "--dir", dir_s])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("iolab app --prepare"));
    let out = iolab(d.path())
        .args(["app", "--prepare", "--dir", dir_s, "--scale", "9"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8(out).unwrap().contains("0.25 to 4"));
    iolab(d.path())
        .args(["app", "--prepare", "--dir", dir_s, "--scale", "0.25"])
        .assert()
        .success();
    let out = iolab(d.path())
        .args(["app", "--dir", dir_s, "--scale", "2"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("prepared with --scale 0.25"));
}
