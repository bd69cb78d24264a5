//! `iolab lab` on the real kernel, through the real binary: round trips for
//! each filesystem and zram, status read-back, `down` removing only what
//! iolab made, recovery after SIGKILL and SIGTERM, and bad input. The
//! throttle's accuracy and placement are in `lab_throttle.rs`.
//!
//! Each test uses its own run directory (`IOLAB_RUN_DIR`), image directory
//! and lab name, so tests (and other iolab runs on the machine) never
//! touch each other's labs; the fixture takes its labs down even when the
//! test fails.
#![allow(clippy::unwrap_used)]

mod lab_env;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use lab_env::{assert_gone, have, is_mounted, kname, s, Env};
use serde_json::Value;

fn round_trip(test: &str, fs: &str, size: &str, extra: &[&str]) {
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return;
    }
    let mkfs = format!("mkfs.{fs}");
    if fs != "none" && !have(&mkfs) {
        iolab_testkit::skip_line(format!("skip {test}: {mkfs} is not installed"));
        return;
    }
    let env = Env::new(test);
    let mut args = vec!["--fs", fs, "--size", size];
    args.extend_from_slice(extra);
    let up = env.up(&args);
    let dev = kname(s(&up, "device"));
    assert!(Path::new("/sys/block").join(&dev).exists());
    let mp = PathBuf::from(s(&up, "mountpoint"));
    assert_eq!(s(&up, "fstype"), fs);
    assert!(is_mounted(&mp), "{} not mounted", mp.display());
    assert!(up["fs_size_bytes"].as_u64().unwrap() > 0);
    let image = up["image"].as_str().map(PathBuf::from);
    if let Some(img) = &image {
        let want = iolab_sys::units::parse_size(size).unwrap();
        assert_eq!(std::fs::metadata(img).unwrap().len(), want);
        // Fully allocated, not sparse.
        use std::os::unix::fs::MetadataExt;
        assert!(std::fs::metadata(img).unwrap().blocks() * 512 >= want);
    }

    // The lab is usable, and status/list agree with what up printed.
    std::fs::write(mp.join("hello"), "lab").unwrap();
    let st = env
        .cmd()
        .args(["lab", "status", &env.name, "--json"])
        .output()
        .unwrap();
    let st: Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["device"], up["device"]);
    assert_eq!(st["problems"].as_array().unwrap().len(), 0, "{st}");
    assert!(st["mount_options"].as_str().unwrap().contains("rw"));
    let list = env.cmd().args(["lab", "list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list["labs"][0]["name"], env.name.as_str());

    let report = env.down();
    assert!(report.contains("unmounted"), "{report}");
    assert_gone(&env, image.as_deref(), Some(&mp));
    if up["kind"] == "zram" {
        assert!(!Path::new("/sys/block").join(&dev).exists(), "{dev} left");
    }
}

#[test]
fn ext4_throttled_lab_round_trip() {
    round_trip(
        "ext4_rt",
        "ext4",
        "256MiB",
        &["--bw", "200MiB/s", "--scheduler", "bfq"],
    );
}

#[test]
fn xfs_lab_round_trip() {
    round_trip("xfs_rt", "xfs", "320MiB", &["--scheduler", "kyber"]);
}

#[test]
fn btrfs_lab_round_trip() {
    round_trip("btrfs_rt", "btrfs", "256MiB", &[]);
}

#[test]
fn zram_lab_round_trip() {
    round_trip("zram_rt", "ext4", "256MiB", &["--zram"]);
}

#[test]
fn status_reads_back_scheduler_depth_and_throttle() {
    if !iolab_testkit::root_or_skip("status_reads_back", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("status_rb");
    let up = env.up(&[
        "--fs",
        "none",
        "--size",
        "64MiB",
        "--bw",
        "30MiB/s",
        "--iops",
        "500",
        "--scheduler",
        "mq-deadline",
    ]);
    assert_eq!(s(&up, "sched"), "mq-deadline");
    assert_eq!(s(&up, "lower_sched"), "none");
    assert_eq!(up["queue_depth"], 4);
    assert_eq!(up["direct_io"], true);
    assert!(up["iosched"]["read_expire"].is_string(), "{up}");
    let t = &up["throttle"];
    assert_eq!(t["read_bps"], 30 << 20);
    assert_eq!(t["write_bps"], 30 << 20);
    assert_eq!(t["read_iops"], 500);
    assert_eq!(t["write_iops"], 500);
    // Default dirty cache of a throttled lab: 2 s of its bandwidth. The
    // kernel keeps it as a ratio of the global limit, so it reads back
    // approximately.
    let dirty = up["dirty_limit_bytes"].as_f64().unwrap();
    let want = (60u64 << 20) as f64;
    assert!(
        (dirty - want).abs() / want < 0.05,
        "dirty limit {dirty}, want ~{want}"
    );
    let human = env
        .cmd()
        .args(["lab", "status", &env.name])
        .output()
        .unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("read 30MiB/s write 30MiB/s"), "{human}");
    assert!(human.contains("driver depth 4"), "{human}");
    assert!(human.contains("dirty limit"), "{human}");
    // The depth is read from the kernel (debugfs, mounted privately for
    // the read and unmounted), not from iolab's metadata: shrunk behind
    // iolab's back to 8 under `none`, where sysfs shows it too, it reads 8
    // with the difference named.
    let status = |env: &Env| {
        let out = env
            .cmd()
            .args(["lab", "status", &env.name, "--json"])
            .output()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(status(&env)["queue_depth_kernel"], 4);
    let queue = std::path::Path::new("/sys/block")
        .join(s(&up, "device").trim_start_matches("/dev/"))
        .join("queue");
    std::fs::write(queue.join("scheduler"), "none").unwrap();
    std::fs::write(queue.join("nr_requests"), "8").unwrap();
    let sysfs = std::fs::read_to_string(queue.join("nr_requests")).unwrap();
    std::fs::write(queue.join("scheduler"), "mq-deadline").unwrap();
    let now = status(&env);
    assert_eq!(now["queue_depth_kernel"].to_string(), sysfs.trim(), "{now}");
    assert!(
        now["problems"]
            .to_string()
            .contains("driver depth 8 in the kernel, not the 4"),
        "{now}"
    );
    std::fs::write(queue.join("scheduler"), "none").unwrap();
    std::fs::write(queue.join("nr_requests"), "4").unwrap();
    std::fs::write(queue.join("scheduler"), "mq-deadline").unwrap();
}
/// A lab's device presents flash whatever the disk under its image: the
/// read-ahead asked for (or 128), not rotational, a write cache, and a
/// throttle lab's lower device write-through. Its write cache is put back
/// as the bind gave it: the kernel keeps a "write through" written to a
/// loop device through every later bind of the number, so a rebind after
/// `down` (losetup, the outside view) shows what the bind showed before
/// iolab changed it, which the journal recorded.
#[test]
fn a_labs_device_presents_flash_and_its_write_cache_is_left_as_the_bind_gave_it() {
    let test = "a_labs_device_presents_flash_and_its_write_cache_is_left_as_the_bind_gave_it";
    if !iolab_testkit::root_or_skip(test, "it makes loop devices") {
        return;
    }
    let env = Env::new("presents");
    let up = env.up(&[
        "--fs",
        "none",
        "--size",
        "64MiB",
        "--bw",
        "30MiB/s",
        "--read-ahead-kb",
        "256",
    ]);
    let top = kname(s(&up, "device"));
    let queue = |dev: &str, a: &str| {
        std::fs::read_to_string(format!("/sys/block/{dev}/queue/{a}"))
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(queue(&top, "read_ahead_kb"), "256");
    assert_eq!(queue(&top, "rotational"), "0");
    assert_eq!(queue(&top, "write_cache"), "write back");
    assert_eq!(up["write_cache"], "write back", "{up}");
    // The throttle's lower device (a host without cgroup v1 gets the
    // model, whose image is a file).
    let backing = std::fs::read_to_string(format!("/sys/block/{top}/loop/backing_file")).unwrap();
    if backing.starts_with("/dev/") {
        assert_eq!(
            queue(&kname(backing.trim()), "write_cache"),
            "write through"
        );
    }
    // What the bind gave the top device, as the guard journaled it.
    let journal =
        std::fs::read_to_string(env.labs_dir().join(format!("{}.jsonl", env.name))).unwrap();
    let wc_path = format!("/sys/block/{top}/queue/write_cache");
    let bound: String = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["change"]["path"] == wc_path.as_str())
        .and_then(|v| v["change"]["old"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no write_cache of {top} journaled:\n{journal}"));
    env.down();
    // Rebind the number to a scratch file and read what the kernel gives.
    let scratch = env.img.path().join("rebind.img");
    std::fs::File::create(&scratch)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let (ra, rot) = (queue(&top, "read_ahead_kb"), queue(&top, "rotational"));
    let dev = format!("/dev/{top}");
    let bound_again = std::process::Command::new("losetup")
        .arg(&dev)
        .arg(&scratch)
        .status()
        .unwrap()
        .success();
    if !bound_again {
        // Taken by a test beside this one: its write cache is its own.
        eprintln!("{test}: {top} was taken again before the rebind; not checked");
        return;
    }
    let rebound = queue(&top, "write_cache");
    std::fs::write(format!("/sys/block/{top}/queue/read_ahead_kb"), &ra).unwrap();
    std::fs::write(format!("/sys/block/{top}/queue/rotational"), &rot).unwrap();
    let detached = std::process::Command::new("losetup")
        .args(["-d", &dev])
        .status()
        .unwrap();
    assert!(detached.success());
    assert_eq!(
        rebound, bound,
        "{top} binds {rebound:?} after the lab, {bound:?} before it"
    );
}

/// `down` removes only what iolab created: a directory it made stays when
/// the user put a file in it, the user's own directory and files stay.
#[test]
fn down_removes_only_what_iolab_created() {
    if !iolab_testkit::root_or_skip("down_only_ours", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("only_ours");
    let mine = env.img.path().join("mine.txt");
    std::fs::write(&mine, "user data").unwrap();
    let made = env.img.path().join("made-by-iolab/deeper");
    let up = env
        .cmd()
        .args([
            "lab", "up", "--json", "--name", &env.name, "--size", "64MiB", "--dir",
        ])
        .arg(&made)
        .output()
        .unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let up: Value = serde_json::from_slice(&up.stdout).unwrap();
    let image = PathBuf::from(s(&up, "image"));
    assert!(image.starts_with(&made));
    let notes = made.join("notes.txt");
    std::fs::write(&notes, "next to the image").unwrap();

    let report = env.down();
    assert!(report.contains("kept directory"), "{report}");
    assert!(!image.exists());
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "next to the image"
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "user data");
    assert!(env.img.path().is_dir());
    assert_gone(&env, Some(&image), None);
}

/// SIGKILL `iolab lab up` at a known step (test seam), then any iolab
/// subcommand restores the half-made lab and says what it restored.
fn killed_mid_up(test: &str, step: &str, extra: &[&str]) {
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new(test);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .env("IOLAB_RUN_DIR", env.run.path())
        .env("IOLAB_TEST_PAUSE_AFTER", step)
        .args(["lab", "up", "--name", &env.name, "--size", "64MiB", "--dir"])
        .arg(env.img.path())
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("test pause after") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "up ended early");
    }
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(env.labs_dir().join(format!("{}.json", env.name))).unwrap(),
    )
    .unwrap();
    let dev = meta["device"].as_str().unwrap().to_string();
    let image = meta["image"].as_str().map(PathBuf::from);
    let mountpoint = env.labs_dir().join(&env.name);
    if step == "mount" {
        assert!(is_mounted(&mountpoint));
    }
    child.kill().unwrap(); // SIGKILL, by pid
    child.wait().unwrap();

    let out = env.cmd().args(["lab", "list"]).output().unwrap();
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("restoring"), "nothing restored: {said}");
    if extra.contains(&"--zram") {
        assert!(said.contains(&format!("reset {dev}")), "{said}");
        assert!(!Path::new("/sys/block").join(&dev).exists(), "{dev} left");
    } else {
        assert!(said.contains(&format!("detached {dev}")), "{said}");
    }
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no labs"),
        "the half-made lab is still listed"
    );
    assert_gone(&env, image.as_deref(), Some(&mountpoint));
}

#[test]
fn kill_9_during_mkfs_leaves_nothing_after_the_next_run() {
    killed_mid_up("kill_mkfs", "mkfs", &[]);
}

#[test]
fn kill_9_after_mount_of_a_throttled_lab_leaves_nothing() {
    killed_mid_up(
        "kill_mount",
        "mount",
        &["--bw", "50MiB/s", "--scheduler", "bfq"],
    );
}

#[test]
fn kill_9_during_zram_mkfs_leaves_nothing() {
    killed_mid_up("kill_zram", "mkfs", &["--zram"]);
}

/// Bad input: one line on stderr saying what is wrong, exit code 2, and
/// nothing made.
#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    if !iolab_testkit::root_or_skip("bad_input", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("bad");
    let cases: &[(&[&str], &str)] = &[
        (&["--fs", "zfs"], "unknown filesystem \"zfs\""),
        (&["--fs", "xfs", "--size", "100MiB"], "too small for xfs"),
        (&["--size", "4 parsecs"], "--size: invalid size"),
        (&["--scheduler", "cfq"], "not offered"),
        (&["--bw", "fast"], "--bw:"),
        (
            &["--zram", "--scheduler", "bfq"],
            "--zram cannot be combined",
        ),
        (&["--zram", "--bw", "10MiB/s"], "--zram cannot be combined"),
        (&["--queue-depth", "2", "--bw", "10MiB/s"], "minimum of 4"),
        (&["--size", "64TiB"], "does not fit"),
    ];
    for (args, want) in cases {
        let out = env
            .cmd()
            .args(["lab", "up", "--name", &env.name, "--dir"])
            .arg(env.img.path())
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    assert_gone(
        &env,
        Some(&env.img.path().join(format!("{}.img", env.name))),
        None,
    );

    // An existing name.
    env.up(&["--fs", "none", "--size", "64MiB"]);
    let out = env
        .cmd()
        .args([
            "lab", "up", "--name", &env.name, "--fs", "none", "--size", "64MiB", "--dir",
        ])
        .arg(env.img.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("already exists"), "{err}");
    // ... which is still intact.
    let st = env
        .cmd()
        .args(["lab", "status", &env.name, "--json"])
        .output()
        .unwrap();
    assert!(st.status.success());

    let out = env
        .cmd()
        .args(["lab", "down", "no-such-lab"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no lab named"));
}

#[test]
fn not_root_is_refused_with_exit_2() {
    if !iolab_testkit::root_or_skip("not_root", "it makes loop devices and mounts") {
        return;
    }
    if !have("setpriv") {
        iolab_testkit::skip_line(
            "skip not_root: setpriv (util-linux) is not installed".to_string(),
        );
        return;
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(["lab", "up", "--name", "never"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root"), "{err}");
}
/// Ctrl-C/SIGTERM while `lab up` works: the run undoes its half-made lab
/// itself, before exiting (no recovery needed).
#[test]
fn sigterm_during_up_undoes_the_half_made_lab() {
    if !iolab_testkit::root_or_skip("sigterm_up", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("term_up");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .env("IOLAB_RUN_DIR", env.run.path())
        .env("IOLAB_TEST_PAUSE_AFTER", "queues")
        .args(["lab", "up", "--name", &env.name, "--size", "64MiB"])
        .args(["--bw", "40MiB/s", "--dir"])
        .arg(env.img.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("test pause after") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "up ended early");
    }
    let image = env.img.path().join(format!("{}.img", env.name));
    assert_eq!(
        iolab_guard::loops_backed_by(&image.canonicalize().unwrap()).len(),
        1
    );
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(!status.success());
    assert!(rest.contains("interrupted"), "{rest}");
    // Nothing left, and nothing for the next run to restore.
    assert_gone(&env, Some(&image), Some(&env.labs_dir().join(&env.name)));
    let out = env.cmd().args(["lab", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("restoring"));
}

/// A lab whose journal another live process holds cannot be taken down
/// under it: a clear error naming the holder, and the lab stays intact.
#[test]
fn down_refuses_a_lab_held_by_a_live_process() {
    if !iolab_testkit::root_or_skip("down_held", "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("held");
    let up = env.up(&["--fs", "none", "--size", "64MiB"]);
    let journal = env.labs_dir().join(format!("{}.jsonl", env.name));
    let held = std::fs::File::open(&journal).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let out = env.cmd().args(["lab", "down", &env.name]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("in use by iolab pid {}", std::process::id())),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(Path::new(s(&up, "device")).exists());
    drop(held);
    env.down();
}
