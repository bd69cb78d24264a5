//! Labs served by the device model (`--backend model`), through the real
//! binary: up, I/O that reaches the image and comes back intact, status
//! with the model and what it observed, down with nothing left (no FUSE
//! mount, no loop device, no server process); a SIGKILLed server makes the
//! lab's I/O fail at once (no hang, no task in D state) and the next run
//! cleans up; a SIGKILLed owner is restored; the host without cgroup v1
//! (`IOLAB_NO_CGROUP_V1=1`) gets the model by itself; bad input is one
//! line, exit 2, nothing left.
#![allow(clippy::unwrap_used)]

mod lab_env;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use lab_env::{assert_gone, is_mounted, s, Env};
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The lab's FUSE mount point (`<labs dir>/<name>.model`).
fn fuse_mnt(env: &Env) -> PathBuf {
    env.labs_dir().join(format!("{}.model", env.name))
}

fn status(env: &Env) -> Value {
    let out = env
        .cmd()
        .args(["lab", "status", "--json", &env.name])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn alive(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

/// Tasks in uninterruptible sleep (a hung FUSE request would show here).
fn d_state() -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if let Some(rest) = stat.rsplit_once(") ") {
            if rest.1.starts_with("D ") {
                v.push(stat.chars().take(60).collect());
            }
        }
    }
    v
}

/// The binary as a std Command (for spawning in the background).
fn spawnable(env: &Env) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"));
    c.env("IOLAB_RUN_DIR", env.run.path());
    c
}

fn fuse_available() -> bool {
    Path::new("/dev/fuse").exists()
}

#[test]
fn a_model_lab_serves_io_reports_and_goes_away() {
    if !iolab_testkit::root_or_skip(
        "a_model_lab_serves_io_reports_and_goes_away",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    if !fuse_available() {
        return iolab_testkit::skip(
            "a_model_lab_serves_io_reports_and_goes_away",
            "no /dev/fuse",
        );
    }
    let env = Env::new("lm-basic");
    let st = env.up(&["--size", "128MiB", "--device-model", "sd"]);
    assert_eq!(st["backend"], "model", "{st}");
    assert_eq!(st["model"]["profile"], "sd");
    assert_eq!(st["model"]["queue_depth"], 1);
    assert_eq!(st["direct_io"], true);
    let mnt = PathBuf::from(s(&st, "mountpoint"));
    let image = PathBuf::from(s(&st, "image"));
    // Data written through the lab reaches the image and reads back.
    let data: Vec<u8> = (0..(4 << 20)).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(mnt.join("f"), &data).unwrap();
    let dd = std::process::Command::new("sh")
        .args(["-c", &format!("sync; echo 3 > /proc/sys/vm/drop_caches; cat {}/f | md5sum; cat /proc/self/io >/dev/null", mnt.display())])
        .output()
        .unwrap();
    let expect = std::process::Command::new("sh")
        .arg("-c")
        .arg("md5sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(&data)?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(
        text(&dd.stdout).split_whitespace().next(),
        text(&expect.stdout).split_whitespace().next()
    );
    // The server counted that traffic (it is the device: an outside view
    // of the same requests is /proc/diskstats of the loop device).
    let st = status(&env);
    let obs = &st["model_stats"];
    assert!(obs["write_bytes"].as_u64().unwrap() >= 4 << 20, "{obs}");
    assert!(obs["read_bytes"].as_u64().unwrap() >= 4 << 20, "{obs}");
    assert!(obs["busy_s"].as_f64().unwrap() > 0.0, "{obs}");
    let pid = obs["pid"].as_u64().unwrap();
    assert!(alive(pid));
    // The device presents flash, not whatever the bind inherited: and
    // fsync's flushes reach the model (the server's own count of FUSE
    // FSYNCs), which a loop device showing "write through" never sends.
    assert_eq!(st["read_ahead_kb"], 128, "{st}");
    assert_eq!(st["rotational"], false, "{st}");
    assert_eq!(st["write_cache"], "write back", "{st}");
    let flushes = obs["flushes"].as_u64().unwrap();
    for i in 0..10 {
        let f = std::fs::File::create(mnt.join(format!("sync{i}"))).unwrap();
        use std::io::Write;
        (&f).write_all(&[1u8; 4096]).unwrap();
        f.sync_all().unwrap();
    }
    let after = status(&env)["model_stats"]["flushes"].as_u64().unwrap();
    assert!(
        after >= flushes + 10,
        "10 fsyncs, the model saw {} flushes",
        after - flushes
    );
    let fuse = fuse_mnt(&env);
    assert!(is_mounted(&fuse));
    env.down();
    assert!(!is_mounted(&fuse), "FUSE mount left");
    assert!(!alive(pid), "server {pid} left running");
    assert_gone(&env, Some(&image), Some(&mnt));
}

#[test]
fn killing_the_server_fails_io_without_hanging_and_the_next_run_cleans_up() {
    if !iolab_testkit::root_or_skip(
        "killing_the_server_fails_io_without_hanging_and_the_next_run_cleans_up",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    if !fuse_available() {
        return iolab_testkit::skip("killing_the_server_fails_io", "no /dev/fuse");
    }
    let env = Env::new("lm-kill");
    let st = env.up(&["--size", "128MiB", "--device-model", "emmc"]);
    let mnt = PathBuf::from(s(&st, "mountpoint"));
    let image = PathBuf::from(s(&st, "image"));
    let pid = st["model_stats"]["pid"].as_u64().unwrap();
    // A load that would run for a minute.
    let mut load = spawnable(&env)
        .args([
            "load", "--rw", "randrw", "--bs", "4k", "--size", "16m", "--direct",
        ])
        .args(["--runtime", "60", "--time-based", "--directory"])
        .arg(&mnt)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let pid = i32::try_from(pid).unwrap();
    // SAFETY: kill(2) of the server's pid, read from its own stats.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = load.try_wait().unwrap() {
            break st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the load still runs 20 s after its device died; D state: {:?}",
            d_state()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    use std::io::Read;
    load.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!status.success(), "the load did not fail: {err}");
    assert!(
        err.contains("error") || err.contains("Input/output") || err.contains("not connected"),
        "{err}"
    );
    let st = status_or_problem(&env);
    assert!(st.contains("not running"), "{st}");
    env.down();
    assert!(!is_mounted(&fuse_mnt(&env)));
    assert_gone(&env, Some(&image), Some(&mnt));
    let d = d_state();
    assert!(d.iter().all(|t| !t.contains("iolab")), "D state: {d:?}");
}

fn status_or_problem(env: &Env) -> String {
    let out = env
        .cmd()
        .args(["lab", "status", &env.name])
        .output()
        .unwrap();
    text(&out.stdout) + &text(&out.stderr)
}

#[test]
fn a_killed_owner_of_a_model_lab_is_restored() {
    if !iolab_testkit::root_or_skip(
        "a_killed_owner_of_a_model_lab_is_restored",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    if !fuse_available() {
        return iolab_testkit::skip("a_killed_owner_of_a_model_lab_is_restored", "no /dev/fuse");
    }
    let env = Env::new("lm-owner");
    let db = env.run.path().join("r.db");
    let mut child = spawnable(&env)
        .args(["startup", "--device-model", "emmc", "--lab-size", "128MiB"])
        .args(["--schedulers", "none", "--workloads", "1r", "--reps", "50"])
        .args(["--load-option", "size=16M", "--warmup", "0.5", "--db"])
        .arg(&db)
        .args(["--", "sh", "-c", "cat /usr/bin/ls > /dev/null"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until its lab is up and served.
    let labs = env.labs_dir();
    let t0 = Instant::now();
    let fuse = loop {
        let found = std::fs::read_dir(&labs).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(".model") && is_mounted(p))
        });
        if let Some(f) = found {
            break f;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no model lab came up"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let stats: Value =
        serde_json::from_slice(&std::fs::read(fuse.join("stats.json")).unwrap()).unwrap();
    let pid = stats["pid"].as_u64().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        is_mounted(&fuse),
        "the lab should outlive a SIGKILL until the next run"
    );
    let out = env.cmd().arg("restore").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!is_mounted(&fuse), "FUSE mount left after restore");
    for _ in 0..50 {
        if !alive(pid) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!alive(pid), "server left after restore");
    assert_gone(&env, None, None);
}

#[test]
fn without_cgroup_v1_a_bw_lab_is_served_by_the_model() {
    if !iolab_testkit::root_or_skip(
        "without_cgroup_v1_a_bw_lab_is_served_by_the_model",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let env = Env::new("lm-v2");
    let out = env
        .cmd()
        .env("IOLAB_NO_CGROUP_V1", "1")
        .args([
            "lab", "up", "--json", "--name", &env.name, "--size", "64MiB", "--bw", "20MiB/s",
            "--dir",
        ])
        .arg(env.img.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["backend"], "model", "{st}");
    assert!(
        s(&st, "backend_reason").contains("IOLAB_NO_CGROUP_V1"),
        "{st}"
    );
    assert_eq!(st["model"]["read_bw"], 20 << 20);
    assert!(st["lower"].is_null(), "no throttled lower device: {st}");
    // Asking for the throttle there is refused, naming the way out.
    let out = env
        .cmd()
        .env("IOLAB_NO_CGROUP_V1", "1")
        .args([
            "lab",
            "up",
            "--name",
            "lm-v2-t",
            "--size",
            "64MiB",
            "--bw",
            "20MiB/s",
            "--backend",
            "throttle",
            "--dir",
        ])
        .arg(env.img.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--backend model"),
        "{}",
        text(&out.stderr)
    );
    env.down();
}

#[test]
fn bad_model_input_is_one_line_exit_2_and_leaves_nothing() {
    if !iolab_testkit::root_or_skip(
        "bad_model_input_is_one_line_exit_2_and_leaves_nothing",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let env = Env::new("lm-bad");
    for (args, says) in [
        (vec!["--device-model", "nvme"], "emmc, sd, ufs or hdd"),
        (
            vec!["--device-model", "emmc", "--model-read-bw", "0"],
            "bandwidth of 0",
        ),
        (
            vec!["--device-model", "emmc", "--model-queue-depth", "0"],
            "queue depth 0",
        ),
        (
            vec!["--device-model", "emmc", "--model-read-latency", "3"],
            "--model-read-latency",
        ),
        (vec!["--backend", "fast"], "model"),
        (vec!["--model-flush", "1ms"], "--device-model"),
    ] {
        let out = env
            .cmd()
            .args(["lab", "up", "--name", &env.name, "--size", "64MiB", "--dir"])
            .arg(env.img.path())
            .args(&args)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_gone(&env, None, None);
    }
    // No /dev/fuse (a private mount namespace whose /dev has only null).
    let exe = assert_cmd::cargo::cargo_bin("iolab");
    let script = format!(
        "mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 && exec {} lab up --name {} --size 64MiB --device-model emmc --dir {}",
        exe.display(),
        env.name,
        env.img.path().display()
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .env("IOLAB_RUN_DIR", env.run.path())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/dev/fuse") && err.contains("--backend throttle"),
        "{err}"
    );
    assert_gone(&env, None, None);
    let img = env.img.path().join(format!("{}.img", env.name));
    assert!(!img.exists());
}

/// An image a reboot orphaned (its journal and metadata lived in /run):
/// `lab list` shows it, `lab down NAME` removes it, nothing else.
#[test]
fn orphaned_images_are_listed_and_removed() {
    if !iolab_testkit::root_or_skip(
        "orphaned_images_are_listed_and_removed",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let env = Env::new("lm-orphan");
    std::fs::create_dir_all("/var/tmp/iolab").unwrap();
    let img = PathBuf::from(format!("/var/tmp/iolab/{}.img", env.name));
    std::fs::write(&img, vec![0u8; 4096]).unwrap();
    let out = env.cmd().args(["lab", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let me = v["labs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == env.name.as_str())
        .unwrap_or_else(|| panic!("orphan not listed: {v}"));
    assert!(
        me["problems"][0].as_str().unwrap().contains("orphaned"),
        "{me}"
    );
    let out = env.cmd().args(["lab", "down", &env.name]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!img.exists());
    // A second time there is nothing of that name.
    let out = env.cmd().args(["lab", "down", &env.name]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
