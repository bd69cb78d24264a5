//! `startup --sched`: how long the target's tasks waited for a CPU, per
//! start, checked against the kernel's own account of the same waits
//! (`/proc/PID/schedstat`'s run_delay, which each task of the target reads
//! for itself just before it exits).
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::collections::BTreeMap;
use std::time::Duration;

use bench_env::{ok, text, Bench};

/// A parent and four children, each burning 0.6 s of CPU on this 2-CPU
/// machine (so each waits for a CPU a good part of it), each writing
/// `pid run_delay_ns` to FILE just before it exits.
const TARGET: &str = r#"
import os, sys, time
out = sys.argv[1]
def burn(s):
    end = time.process_time() + s
    while time.process_time() < end:
        pass
def report():
    with open("/proc/self/schedstat") as f:
        delay = f.read().split()[1]
    with open(out, "a") as f:
        f.write(f"{os.getpid()} {delay}\n")
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        burn(0.6)
        report()
        os._exit(0)
    kids.append(pid)
burn(0.2)
for k in kids:
    os.waitpid(k, 0)
report()
"#;

#[test]
fn sched_delays_agree_with_the_kernels_run_delay() {
    if !iolab_testkit::root_or_skip(
        "sched_delays_agree_with_the_kernels_run_delay",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("sched-collector");
    let file = b.env.run.path().join("run_delay.txt");
    let file_s = file.to_string_lossy().into_owned();
    let out = b
        .cmd()
        .arg("startup")
        .args([
            "--lab-size",
            "256MiB",
            "--schedulers",
            "none",
            "--workloads",
            "idle",
        ])
        .args([
            "--reps",
            "1",
            "--timeout",
            "30",
            "--cold",
            "none",
            "--sched",
        ])
        .arg("--db")
        .arg(&b.db)
        .args(["--", "python3", "-c", TARGET, &file_s])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    ok(&out);
    // The headline shows in the table.
    let stdout = text(&out.stdout);
    assert!(stdout.contains("sched delay_avg_us"), "{stdout}");
    let report = b.export(1);
    let run = &report["runs"][0];
    assert_eq!(run["outcome"], "ok", "{run}");
    // The parent and its four children at least (a `python3` that is a
    // wrapper script, as pyenv's, adds its own tasks to the tree).
    let headline = &run["extra"]["observed"]["sched"]["headline"];
    assert!(headline["tasks"].as_u64().unwrap() >= 5, "{headline}");
    let doc = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "sched")
        .expect("a sched artifact");
    assert_eq!(doc["json"]["lost_events"], 0);
    // Per task: the wakeup and preemption delays iolab traced against the
    // run_delay the kernel accumulated for it (before its last read; the
    // tracing started with the held target, before its exec).
    let kernel: BTreeMap<i64, u64> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| {
            let (pid, d) = l.split_once(' ').unwrap();
            (pid.parse().unwrap(), d.parse().unwrap())
        })
        .collect();
    assert_eq!(kernel.len(), 5);
    let (mut total_kernel, mut total_traced, mut matched) = (0, 0, 0);
    for task in doc["json"]["tasks"].as_array().unwrap() {
        let tid = task["tid"].as_i64().unwrap();
        let Some(&want) = kernel.get(&tid) else {
            continue;
        };
        let traced: u64 = task["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["start_ns"].as_u64().unwrap() - s["ready_ns"].as_u64().unwrap())
            .sum();
        let diff = traced.abs_diff(want) as f64;
        assert!(
            diff <= want as f64 * 0.1 + 5e6,
            "task {tid}: traced {traced} ns of waiting, the kernel says {want} ns"
        );
        total_kernel += want;
        total_traced += traced;
        matched += 1;
    }
    assert_eq!(matched, 5, "every task that reported was traced");
    // The children really waited: 2.6 s of CPU wanted on two CPUs.
    assert!(
        total_kernel > 200_000_000,
        "only {total_kernel} ns of run delay"
    );
    assert!(
        total_traced.abs_diff(total_kernel) as f64 <= total_kernel as f64 * 0.05 + 10e6,
        "traced {total_traced} ns in all, the kernel {total_kernel} ns"
    );
    eprintln!(
        "sched: {} tasks traced; the 5 that reported waited {total_traced} ns by the trace, {total_kernel} ns by the kernel",
        headline["tasks"]
    );
}

#[test]
fn sched_needs_a_target_and_sweeps_have_none() {
    if !iolab_testkit::root_or_skip(
        "sched_needs_a_target_and_sweeps_have_none",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("sched-sweep");
    let out = b
        .cmd()
        .args(["sweep", "--sched", "--db"])
        .arg(&b.db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("--sched") && err.lines().count() == 1, "{err}");
}
