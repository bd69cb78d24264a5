//! `iolab load` on block devices and small filesystems of the test's own
//! (root): writes to a block device need --force, a full disk stops the
//! job and keeps its results, the reported bytes agree with
//! /proc/diskstats (how iolab validates its measurements), and
//! `ioscheduler` is switched through the guard and restored.
#![allow(clippy::unwrap_used)]

mod load_env;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use load_env::{json, stderr, Env};

/// A loop device over a file in the test's directory, made by the test's
/// guard and detached when the guard drops.
fn loop_dev(env: &Env, guard: &Guard, size: u64) -> BlockDev {
    loop_dev_named(env, guard, size, "dev.img")
}

fn loop_dev_named(env: &Env, guard: &Guard, size: u64, name: &str) -> BlockDev {
    let img = env.dir().join(name);
    let f = guard.create_file(&img).unwrap();
    f.set_len(size).unwrap();
    drop(f);
    let dev = guard.attach_loop(&img, true).unwrap();
    // udev probes new devices; let it finish before counting sectors.
    let _ = Command::new("udevadm").arg("settle").status();
    dev
}

#[test]
fn block_devices_are_written_only_with_force() {
    if !iolab_testkit::root_or_skip(
        "block_devices_are_written_only_with_force",
        "loop devices, mounts",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let dev = loop_dev(&env, &guard, 16 << 20);
    let path = dev.dev_path();
    let p = path.to_str().unwrap();
    let out = env.run(&["--filename", p, "--rw", "write", "--size", "1m"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    // Reads need no --force; size defaults to the device's.
    let out = env.run(&["--filename", p, "--rw", "read", "--bs", "1m", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["jobs"][0]["read"]["io_bytes"], 16 << 20);
    let out = env.run(&[
        "--filename",
        p,
        "--rw",
        "write",
        "--size",
        "1m",
        "--force",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["jobs"][0]["write"]["io_bytes"], 1 << 20);
}

/// A tmpfs of `size` mounted by the test's guard.
fn small_tmpfs(env: &Env, guard: &Guard, size: &str) -> PathBuf {
    let mnt = env.dir().join("mnt");
    guard.mkdir_all(&mnt).unwrap();
    guard
        .mount("tmpfs", &mnt, "tmpfs", &format!("size={size}"))
        .unwrap();
    mnt
}

#[test]
fn a_full_disk_stops_the_job_and_keeps_its_results() {
    if !iolab_testkit::root_or_skip(
        "a_full_disk_stops_the_job_and_keeps_its_results",
        "loop devices, mounts",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let mnt = small_tmpfs(&env, &guard, "4m");
    // A sparse 16 MiB file passes the free-space check (it does not grow)
    // but cannot be filled: ENOSPC arrives mid-run.
    std::fs::File::create(mnt.join("sparse"))
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let m = mnt.to_str().unwrap();
    let out = env.run(&[
        "--directory",
        m,
        "--filename",
        "sparse",
        "--rw",
        "write",
        "--bs",
        "64k",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("disk full (ENOSPC)"),
        "{}",
        stderr(&out)
    );
    let v = json(&out);
    let job = &v["jobs"][0];
    assert_eq!(job["error"], libc::ENOSPC);
    let written = job["write"]["io_bytes"].as_u64().unwrap();
    assert!(written > 0 && written <= 4 << 20, "{written}");
    // Files that cannot fit are refused before anything is written.
    let out = env.run(&["--directory", m, "--rw", "read", "--size", "8m"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("free"), "{}", stderr(&out));
    assert!(!mnt.join("job.0.0").exists());
    // Named workloads shrink their files to fit, down to 16 MiB each.
    let out = env.run(&["10r-seq", "--directory", m, "--runtime", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("at least 16MiB"), "{}", stderr(&out));
}

#[test]
fn reported_bytes_match_the_devices_diskstats() {
    if !iolab_testkit::root_or_skip(
        "reported_bytes_match_the_devices_diskstats",
        "loop devices, mounts",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let dev = loop_dev(&env, &guard, 64 << 20);
    let path = dev.dev_path();
    let p = path.to_str().unwrap();
    let proc = Path::new("/proc");
    for (rw, dir, extra) in [
        ("randread", "read", None),
        ("randwrite", "write", Some("--force")),
    ] {
        let before = iolab_sys::diskstats::read_device(proc, &dev.name)
            .unwrap()
            .unwrap();
        let mut args = vec![
            "--filename",
            p,
            "--rw",
            rw,
            "--bs",
            "16k",
            "--size",
            "32m",
            "--direct",
            "--ioengine",
            "io_uring",
            "--iodepth",
            "8",
            "--json",
        ];
        args.extend(extra);
        let out = env.run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let after = iolab_sys::diskstats::read_device(proc, &dev.name)
            .unwrap()
            .unwrap();
        let delta = after.since(&before);
        let disk = if dir == "read" {
            delta.read_bytes()
        } else {
            delta.write_bytes()
        };
        let v = json(&out);
        let reported = v["jobs"][0][dir]["io_bytes"].as_u64().unwrap();
        assert_eq!(reported, 32 << 20);
        let diff = (disk as f64 - reported as f64).abs() / reported as f64;
        eprintln!("{dir}: iolab {reported} B, {} diskstats {disk} B", dev.name);
        assert!(
            diff <= 0.05,
            "{dir}: iolab {reported} B, diskstats {disk} B"
        );
        // The report's own disk_util saw the same device.
        let du = v["disk_util"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == dev.name.as_str())
            .unwrap();
        let du_bytes = du[&format!("{dir}_bytes")].as_u64().unwrap();
        assert!(
            (du_bytes as f64 - reported as f64).abs() / reported as f64 <= 0.05,
            "disk_util {du_bytes}"
        );
    }
}

#[test]
fn ioscheduler_is_switched_through_the_guard_and_restored() {
    if !iolab_testkit::root_or_skip(
        "ioscheduler_is_switched_through_the_guard_and_restored",
        "loop devices, mounts",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let dev = loop_dev(&env, &guard, 16 << 20);
    let before = dev.schedulers().unwrap();
    let want = ["bfq", "kyber", "mq-deadline", "none"]
        .into_iter()
        .find(|s| *s != before.current && before.available.iter().any(|a| a == s))
        .unwrap();
    let job = env.dir().join("sched.fio");
    std::fs::write(
        &job,
        format!(
            "[s]\nfilename={}\nrw=read\nbs=64k\ntime_based\nruntime=3\nioscheduler={want}\n",
            dev.dev_path().display()
        ),
    )
    .unwrap();
    let child = env
        .cmd(&[job.to_str().unwrap(), "--ioprio", "idle", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = false;
    for _ in 0..100 {
        if dev.schedulers().unwrap().current == want {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        seen,
        "{} never switched to {want} during the load",
        dev.name
    );
    assert_eq!(
        dev.schedulers().unwrap().current,
        before.current,
        "restored after the load"
    );
    assert!(json(&out)["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() > 0);
}

/// One job on two devices (`filename=/dev/loopA:/dev/loopB`): both get
/// the job's `ioscheduler` during the load and their own back after, and
/// each device's /proc/diskstats shows half of the bytes the job reports
/// (roundrobin: one I/O to each in turn).
#[test]
fn one_job_on_two_devices_splits_its_io_and_switches_both_schedulers() {
    if !iolab_testkit::root_or_skip(
        "one_job_on_two_devices_splits_its_io_and_switches_both_schedulers",
        "loop devices, mounts",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let devs = [
        loop_dev_named(&env, &guard, 32 << 20, "a.img"),
        loop_dev_named(&env, &guard, 32 << 20, "b.img"),
    ];
    let before: Vec<_> = devs.iter().map(|d| d.schedulers().unwrap()).collect();
    let want = ["kyber", "bfq", "mq-deadline", "none"]
        .into_iter()
        .find(|s| {
            before
                .iter()
                .all(|b| *s != b.current && b.available.iter().any(|a| a == s))
        })
        .unwrap();
    let proc = Path::new("/proc");
    let stats = || {
        devs.iter()
            .map(|d| {
                iolab_sys::diskstats::read_device(proc, &d.name)
                    .unwrap()
                    .unwrap()
            })
            .collect::<Vec<_>>()
    };
    let start = stats();
    let list = format!(
        "{}:{}",
        devs[0].dev_path().display(),
        devs[1].dev_path().display()
    );
    let child = env
        .cmd(&[
            "--name=two",
            &format!("--filename={list}"),
            "--rw=randread",
            "--bs=16k",
            "--size=64m",
            "--direct=1",
            "--ioengine=io_uring",
            "--iodepth=8",
            "--time_based",
            "--runtime=2",
            &format!("--ioscheduler={want}"),
            "--output-format=json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = [false; 2];
    for _ in 0..100 {
        for (i, d) in devs.iter().enumerate() {
            seen[i] |= d.schedulers().unwrap().current == want;
        }
        if seen == [true; 2] {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        seen, [true; 2],
        "both devices switch to {want} during the load"
    );
    for (d, b) in devs.iter().zip(&before) {
        assert_eq!(
            d.schedulers().unwrap().current,
            b.current,
            "{} restored",
            d.name
        );
    }
    let end = stats();
    let reported = json(&out)["jobs"][0]["read"]["io_bytes"].as_u64().unwrap();
    assert!(reported > 0);
    for (i, d) in devs.iter().enumerate() {
        let disk = end[i].since(&start[i]).read_bytes() as f64;
        let half = reported as f64 / 2.0;
        eprintln!(
            "{}: diskstats {disk} B, half of the job's {reported} B",
            d.name
        );
        // Ramp-free, but the I/O in flight at the end is read and not
        // reported: 8 × 16 KiB at most per device.
        assert!(
            (disk - half).abs() <= half * 0.05 + ((8 * 16) << 10) as f64,
            "{}: diskstats {disk} B, half of the job's {reported} B",
            d.name
        );
    }
}

/// The discard counters of a block device (/sys/block/NAME/stat fields
/// 12-14: discards completed, merged, sectors).
fn discard_sectors(dev: &BlockDev) -> u64 {
    let stat = std::fs::read_to_string(format!("/sys/block/{}/stat", dev.name)).unwrap();
    stat.split_whitespace().nth(13).unwrap().parse().unwrap()
}

#[test]
fn trims_on_a_block_device_need_force_and_reach_it_as_discards() {
    if !iolab_testkit::root_or_skip(
        "trims_on_a_block_device_need_force_and_reach_it_as_discards",
        "loop devices, mounts",
    ) {
        return;
    }
    let env = Env::new();
    let guard = env.guard();
    let dev = loop_dev(&env, &guard, 16 << 20);
    let path = dev.dev_path();
    let p = path.to_str().unwrap();
    let args = [
        "--filename",
        p,
        "--rw",
        "randtrim",
        "--bs",
        "1m",
        "--size",
        "8m",
    ];
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    let before = discard_sectors(&dev);
    let mut forced = args.to_vec();
    forced.extend(["--force", "--json"]);
    let out = env.run(&forced);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["jobs"][0]["trim"]["io_bytes"], 8 << 20);
    assert_eq!(v["jobs"][0]["trim"]["total_ios"], 8);
    // The device counted every trimmed sector as discarded.
    assert_eq!(discard_sectors(&dev) - before, (8 << 20) / 512);
}
