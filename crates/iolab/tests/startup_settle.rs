//! What runs between two starts, as S does it: a plain progress line per
//! start when stderr is not a terminal, the previous start's dirty data
//! written back before the next begins, and `--pause`.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::process::{Command, Stdio};

use bench_env::{ok, text, Bench};

use serde_json::Value;

/// `iolab startup` with stderr sent to `log` (a file, as under nohup).
fn startup(b: &Bench, log: &std::path::Path, args: &[&str], target: &str) -> std::process::Output {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("iolab"));
    c.env("IOLAB_RUN_DIR", b.env.run.path())
        .arg("startup")
        .args([
            "--lab-size",
            "512MiB",
            "--schedulers",
            "none",
            "--workloads",
            "idle",
        ])
        .args(args)
        .arg("--db")
        .arg(&b.db)
        .args(["--", "sh", "-c", target])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap());
    c.output().unwrap()
}

fn runs(b: &Bench) -> Vec<Value> {
    b.export(1)["runs"].as_array().unwrap().clone()
}

#[test]
fn a_plain_line_per_start_when_stderr_is_a_file_and_pauses_between() {
    if !iolab_testkit::root_or_skip(
        "a_plain_line_per_start_when_stderr_is_a_file_and_pauses_between",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("settle-progress");
    let log = b.env.run.path().join("stderr.log");
    let out = startup(
        &b,
        &log,
        &["--reps", "3", "--pause", "0.5", "--cold", "none"],
        "sleep 0.2",
    );
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(" starts: none / idle rep "))
        .collect();
    assert_eq!(lines.len(), 3, "{err}");
    let runs = runs(&b);
    for (i, (line, run)) in lines.iter().zip(&runs).enumerate() {
        // `iolab: 2/3 starts: none / idle rep 2: 0.21s (elapsed …)`: the
        // count, the cell, the rep and the time the store holds.
        let rep = i + 1;
        assert!(
            line.starts_with(&format!("iolab: {rep}/3 starts: none / idle rep {rep}: ")),
            "{line}"
        );
        let secs = run["duration_ns"].as_u64().unwrap() as f64 / 1e9;
        assert!(line.contains(&format!(": {secs:.2}s")), "{line} vs {secs}");
        assert!(!line.contains('\r') && !line.contains('\u{1b}'), "{line:?}");
        assert_eq!(run["extra"]["settle"]["pause_s"], 0.5, "{run}");
    }
    // The pause, by the wall clock: consecutive starts began at least
    // 0.5 s plus the 0.2 s start apart.
    let at: Vec<i64> = runs
        .iter()
        .map(|r| ms_of_day(r["started_at"].as_str().unwrap()))
        .collect();
    for w in at.windows(2) {
        let gap = (w[1] - w[0]).rem_euclid(86_400_000);
        assert!(gap >= 700, "starts {gap} ms apart");
    }
    ok(&out);
}

/// Milliseconds since midnight of an RFC 3339 time as the store writes
/// it, `2026-11-26T18:28:48.123Z`.
fn ms_of_day(t: &str) -> i64 {
    let clock = t.split('T').nth(1).unwrap().trim_end_matches('Z');
    let (hms, ms) = clock.split_once('.').unwrap();
    let f: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    ((f[0] * 60 + f[1]) * 60 + f[2]) * 1000 + ms.parse::<i64>().unwrap()
}

/// The kernel's count of dirty page-cache bytes, /proc/meminfo `Dirty:`.
fn dirty_kib() -> u64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    m.lines()
        .find_map(|l| l.strip_prefix("Dirty:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn the_previous_starts_dirty_data_is_written_back_before_the_next() {
    if !iolab_testkit::root_or_skip(
        "the_previous_starts_dirty_data_is_written_back_before_the_next",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("settle-dirty");
    let seen = b.env.run.path().join("dirty.txt");
    let log = b.env.run.path().join("stderr.log");
    // Each start first notes the machine's dirty bytes, then dirties 96
    // MiB on the lab and exits without syncing (as a killed start's
    // writes would be left). No cold step: it would write back itself.
    let target = format!(
        "grep ^Dirty: /proc/meminfo >> {}; head -c 96M /dev/zero > {{dir}}/dirty.$$",
        seen.display()
    );
    let out = startup(&b, &log, &["--reps", "2", "--cold", "none"], &target);
    assert!(
        out.status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    let kib: Vec<u64> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| {
            l.trim_start_matches("Dirty:")
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(kib.len(), 2);
    // The second start began with the first's 96 MiB written back: at
    // most half of it above what was dirty before the first start (the
    // count is the machine's, so other writers' pages are in both).
    assert!(
        kib[1] < kib[0] + (48 << 10),
        "second start began with {} KiB dirty, the first with {}",
        kib[1],
        kib[0]
    );
    let runs = runs(&b);
    assert_eq!(
        runs[1]["extra"]["settle"]["written_back"], true,
        "{}",
        runs[1]
    );
    // The premise, checked: without a sync, 96 MiB written stays dirty
    // for a while here (the kernel writes it back only after 30 s).
    let f = b.env.run.path().join("premise");
    std::fs::write(&f, vec![0u8; 96 << 20]).unwrap();
    let premise = dirty_kib();
    std::fs::remove_file(&f).unwrap();
    assert!(
        premise >= 48 << 10,
        "only {premise} KiB dirty just after writing 96 MiB"
    );
    let _ = text(&out.stdout);
}
