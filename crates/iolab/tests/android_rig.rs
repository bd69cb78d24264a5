//! iolab in the Android-shaped rig (scripts/android/rig.sh): a mount
//! namespace with toybox and mksh only, block nodes under /dev/block only,
//! /data as ext4 on a loop "disk", /system_ext an EROFS image holding an
//! app, no /run, /tmp or HOME. Driven from the host as a phone is, through
//! the rig's adb stand-in (scripts/android/adb), whose disconnect does
//! what adbd does: every pipe of the shell closed and SIGHUP to it.
//!
//! Outside truths: the host's sysfs (the data disk's scheduler during and
//! after the run), the host's /sys/block/*/stat (bytes the kernel read
//! from the EROFS image), the host's loop and mount tables after.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use bench_env::text;
use lab_env::root_or_skip;
use serde_json::Value;

const APP: &str = "/system_ext/priv-app/RigApp";

/// The matrix: two schedulers, idle and 1r1w, 3 reps (a small
/// load file: the rig's /data is 1 GiB).
const MATRIX: [&str; 10] = [
    "--schedulers",
    "mq-deadline,bfq",
    "--workloads",
    "idle,1r1w",
    "--load-option",
    "size=64M",
    "--reps",
    "3",
    "--timeout",
    "20",
];

/// One rig at a time: each adds loop devices and reads their stats.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/android")
}

/// A rig, taken down however the test ends.
struct Rig {
    dir: tempfile::TempDir,
}

impl Rig {
    fn up() -> Option<Rig> {
        for tool in [
            "toybox",
            "mksh",
            "mke2fs",
            "mkfs.erofs",
            "unshare",
            "nsenter",
        ] {
            if !lab_env::have(tool) {
                iolab_testkit::skip(
                    "android_rig",
                    &format!("{tool} is not installed (apt install toybox mksh e2fsprogs erofs-utils util-linux)"),
                );
                return None;
            }
        }
        let rig = Rig {
            dir: tempfile::tempdir_in("/var/tmp").unwrap(),
        };
        let out = rig.script("up", &[]);
        assert!(out.status.success(), "rig up: {}", text(&out.stderr));
        let bin = assert_cmd::cargo::cargo_bin("iolab");
        let out = rig.script(
            "push",
            &[bin.to_str().unwrap(), "/data/local/tmp/iolab-bin"],
        );
        assert!(out.status.success(), "push: {}", text(&out.stderr));
        Some(rig)
    }

    fn script(&self, cmd: &str, args: &[&str]) -> Output {
        Command::new("bash")
            .arg(scripts().join("rig.sh"))
            .arg(cmd)
            .arg(self.dir.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Runs `script` with the rig's sh, in /data/local/tmp.
    fn sh(&self, script: &str) -> Output {
        self.script(
            "exec",
            &[
                "/system/bin/sh",
                "-c",
                &format!("cd /data/local/tmp && {script}"),
            ],
        )
    }

    fn ok(&self, script: &str) -> String {
        let out = self.sh(script);
        assert!(
            out.status.success(),
            "{script}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// The host's loop device under the rig's image `name`.
    fn loop_of(&self, name: &str) -> String {
        let img = self.dir.path().join("img").join(name);
        iolab_guard::loops_backed_by(&img.canonicalize().unwrap())
            .pop()
            .unwrap()
    }

    fn adb(&self) -> Command {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("iolab"));
        c.arg("remote")
            .args(["--adb", "rig", "--adb-program"])
            .arg(scripts().join("adb"))
            .env("IOLAB_RIG_DIR", self.dir.path());
        c
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.dir.path().join("unplug"));
        let _ = self.sh("./iolab-bin restore");
        let _ = self.script("down", &[]);
    }
}

/// Sectors read from `/sys/block/DEV/stat`, in bytes.
fn read_bytes(dev: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/sys/block/{dev}/stat")).unwrap();
    s.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap() * 512
}

/// The host's view of a device's scheduler, every 50 ms until finished.
struct SchedWatch {
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl SchedWatch {
    fn start(dev: &str) -> SchedWatch {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s, st, dev) = (seen.clone(), stop.clone(), dev.to_string());
        let thread = std::thread::spawn(move || {
            while !st.load(std::sync::atomic::Ordering::Relaxed) {
                let now = scheduler(&dev);
                let mut v = s.lock().unwrap();
                if v.last() != Some(&now) {
                    v.push(now);
                }
                drop(v);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        SchedWatch { seen, stop, thread }
    }

    fn finish(self) -> Vec<String> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap();
        let v = self.seen.lock().unwrap().clone();
        v
    }
}

/// A rig with a directory on /data for in-place runs, and the host
/// watching the scheduler of /data's disk for the whole test.
struct OnData {
    _one: std::sync::MutexGuard<'static, ()>,
    rig: Rig,
    /// /data's loop device on the host.
    data: String,
    /// Its scheduler before the test.
    original: String,
    /// The host's results database.
    db: PathBuf,
    watch: SchedWatch,
}

impl OnData {
    fn up(test: &str) -> Option<OnData> {
        if !root_or_skip(test) {
            return None;
        }
        let one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let rig = Rig::up()?;
        rig.ok("mkdir -p /data/local/tmp/app");
        let data = rig.loop_of("userdata.img");
        let original = scheduler(&data);
        let db = rig.dir.path().join("host.db");
        let watch = SchedWatch::start(&data);
        Some(OnData {
            _one: one,
            rig,
            data,
            original,
            db,
            watch,
        })
    }
}

fn export(db: &Path, id: u64) -> Value {
    let out = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .args(["results", "--db"])
        .arg(db)
        .args(["export", &id.to_string()])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn scheduler(dev: &str) -> String {
    let s = std::fs::read_to_string(format!("/sys/block/{dev}/queue/scheduler")).unwrap();
    iolab_sys::block::parse_schedulers(s.trim())
        .unwrap()
        .current
}

#[test]
fn with_toybox_only_a_lab_comes_up_bio_is_traced_by_dev_block_and_erofs_is_evicted() {
    if !root_or_skip(
        "with_toybox_only_a_lab_comes_up_bio_is_traced_by_dev_block_and_erofs_is_evicted",
    ) {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(rig) = Rig::up() else { return };
    // What the rig's shell has: toybox's tools, no util-linux, no /tmp.
    assert_eq!(rig.ok("readlink /system/bin/losetup").trim(), "toybox");
    assert_eq!(rig.ok("readlink /system/bin/blkid").trim(), "toybox");
    assert!(!rig.sh("ls /usr/bin /tmp /run").status.success());

    // A lab: loop by ioctl, mke2fs, its node found under /dev/block.
    let up = rig.ok("./iolab-bin lab up --name R --size 200MiB --json");
    let up: Value = serde_json::from_str(&up).unwrap();
    let status: Value = serde_json::from_str(&rig.ok("./iolab-bin lab status R --json")).unwrap();
    let dev = status["device"].as_str().unwrap_or_default().to_string();
    assert!(dev.starts_with("/dev/block/loop"), "{status} {up}");
    assert!(
        status["image"]
            .as_str()
            .unwrap()
            .starts_with("/data/local/tmp/iolab/images/"),
        "{status}"
    );

    // trace bio by an Android path: what it saw read from the EROFS image
    // is what the kernel counted for that device.
    let ext = rig.loop_of("system_ext.img");
    rig.ok("echo 3 > /proc/sys/vm/drop_caches");
    let before = read_bytes(&ext);
    let out = rig.ok(&format!(
        "./iolab-bin trace bio -d /dev/block/by-name/system_ext --json -- sh -c 'cat {APP}/RigApp.apk > /dev/null'"
    ));
    let traced: u64 = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["t"] == "R")
        .map(|v| v["bytes"].as_u64().unwrap())
        .sum();
    let counted = read_bytes(&ext) - before;
    assert!(traced >= 3 << 20, "traced {traced} bytes: {out}");
    assert_eq!(traced, counted, "traced vs /sys/block/{ext}/stat");

    // --cold evict on the EROFS app (no fsync there): each start cold.
    rig.ok(&format!(
        "./iolab-bin startup --lab R --cold evict --evict {APP} --workloads idle --reps 3 \
         --schedulers none --timeout 20 -- sh -c 'cat {APP}/RigApp.apk {APP}/oat/arm64/RigApp.odex > /dev/null'"
    ));
    let export: Value = serde_json::from_str(&rig.ok("./iolab-bin results export 1")).unwrap();
    for r in export["runs"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        let cold = &r["extra"]["cold"];
        let kept =
            cold["cached_bytes"].as_u64().unwrap() - cold["mapped_before_bytes"].as_u64().unwrap();
        assert!(
            kept as f64 <= 0.01 * cold["bytes"].as_f64().unwrap(),
            "{cold}"
        );
    }
    rig.ok("./iolab-bin lab down R");
    assert_eq!(
        rig.ok("./iolab-bin restore").trim_end(),
        "nothing to restore: no iolab run left system state behind"
    );
}

#[test]
fn over_adb_in_place_on_data_a_disconnect_restores_the_disk_and_resume_completes() {
    let Some(d) =
        OnData::up("over_adb_in_place_on_data_a_disconnect_restores_the_disk_and_resume_completes")
    else {
        return;
    };
    let (rig, data, original, db, watch) = (d.rig, d.data, d.original, d.db, d.watch);
    let target = format!(
        "cat {APP}/RigApp.apk {APP}/oat/arm64/RigApp.odex {APP}/lib/arm64/librigapp.so > /dev/null"
    );
    let mut child = rig
        .adb()
        .arg("--db")
        .arg(&db)
        .args(["--", "startup", "--in", "/data/local/tmp/app"])
        .args(MATRIX)
        .args(["--target-ioprio", "idle", "--", "sh", "-c", &target])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Unplugged once the device has made five starts (the progress lines
    // come over adb).
    let err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    for line in err.lines() {
        let line = line.unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.contains("5/12 starts") {
            std::fs::write(rig.dir.path().join("unplug"), "").unwrap();
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("5/12 starts"), "{log}");
    assert!(log.contains("connection ended"), "{log}");
    // The device's iolab, hung up with its pipes closed, restores the
    // disk by itself (no one is left to tell it to).
    let deadline = Instant::now() + Duration::from_secs(30);
    while scheduler(&data) != original {
        assert!(
            Instant::now() < deadline,
            "{data} left at {}",
            scheduler(&data)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::remove_file(rig.dir.path().join("unplug")).unwrap();
    // Plugged back in: the device's record says interrupted, and nothing
    // is left to restore there.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list: Value = serde_json::from_str(
            &rig.ok("./iolab-bin results --db /data/local/tmp/iolab/data/results.db list --json"),
        )
        .unwrap();
        if list[0]["status"] == "interrupted" {
            assert!(
                (5..12).contains(&list[0]["runs"].as_u64().unwrap()),
                "{list}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{list}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Resumed over adb: the matrix completes and comes home.
    let out = rig
        .adb()
        .arg("--db")
        .arg(&db)
        .args(["--", "startup", "--resume", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = watch.finish();
    assert!(seen.contains(&"mq-deadline".to_string()), "{seen:?}");
    assert!(seen.contains(&"bfq".to_string()), "{seen:?}");
    assert_eq!(scheduler(&data), original, "{seen:?}");
    let export = export(&db, 1);
    let runs = export["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12, "{}", export["experiment"]);
    assert_eq!(export["experiment"]["status"], "done");
    // In place: the device's place is /data's disk, the device's identity
    // kept with the results.
    let place = export["experiment"]["config"]["place"].as_str().unwrap();
    assert!(place.contains(&data), "{place}");
    assert!(
        export.to_string().contains("RIGSERIAL01"),
        "the device's serial (getprop ro.serialno) is not with its results"
    );
}

/// The issue's own run: an activity (the rig's app, forked by its zygote),
/// in place on /data, two schedulers, idle and 1r1w, 3 reps, driven from
/// the host over adb.
#[test]
fn over_adb_an_activity_in_place_is_cold_its_app_gets_the_ioprio_and_compile_is_verified() {
    let Some(d) = OnData::up(
        "over_adb_an_activity_in_place_is_cold_its_app_gets_the_ioprio_and_compile_is_verified",
    ) else {
        return;
    };
    let (rig, data, original, db, watch) = (d.rig, d.data, d.original, d.db, d.watch);
    let out = rig
        .adb()
        .arg("--db")
        .arg(&db)
        .args([
            "--",
            "startup",
            "--am-start",
            "com.example.iolab.rigapp/.Main",
        ])
        .args(["--in", "/data/local/tmp/app"])
        .args(MATRIX)
        .args(["--target-ioprio", "idle", "--compile", "speed"])
        .args([
            "--ready-logcat",
            "Fully drawn com\\.example\\.iolab\\.rigapp",
        ])
        .output()
        .unwrap();
    let seen = watch.finish();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(seen.contains(&"mq-deadline".to_string()), "{seen:?}");
    assert!(seen.contains(&"bfq".to_string()), "{seen:?}");
    assert_eq!(scheduler(&data), original, "{seen:?}");
    let export = export(&db, 1);
    assert_eq!(export["experiment"]["status"], "done");
    let runs = export["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for r in runs {
        assert_eq!(r["outcome"], "ok", "{r}");
        // Timed to the app's reportFullyDrawn line, read by the rig's logcat.
        let line = r["extra"]["am_start"]["logcat"]["line"]
            .as_str()
            .unwrap_or_default();
        assert!(line.contains("I ActivityTaskManager: Fully drawn"), "{r}");
        // The app, not am, got the I/O priority.
        assert_eq!(r["extra"]["app_process"]["ioprio"], "idle", "{r}");
        // Cold: of the app's files (APK, odex, vdex, .so, the compiled
        // code in dalvik-cache, its data), at most 1 % cached after the
        // cold step.
        let cold = &r["extra"]["cold"];
        assert!(cold["files"].as_u64().unwrap() >= 6, "{cold}");
        let kept =
            cold["cached_bytes"].as_u64().unwrap() - cold["mapped_before_bytes"].as_u64().unwrap();
        assert!(
            kept as f64 <= 0.01 * cold["bytes"].as_f64().unwrap(),
            "{cold}"
        );
    }
    // The last start's app is still up (as on a phone): the kernel says
    // its I/O priority class is idle (3).
    let pid = runs[11]["extra"]["app_process"]["pid"].as_i64().unwrap();
    // SAFETY: ioprio_get(IOPRIO_WHO_PROCESS, pid) reads a number.
    let raw = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, pid) };
    assert_eq!(raw >> 13, 3, "ioprio of the app {pid}");
    // --compile verified in dumpsys and stored: compiled into dalvik-cache.
    let dexopt = &export["experiment"]["config"]["dexopt"]["dexopt"][0];
    assert_eq!(dexopt["status"], "speed", "{dexopt}");
    assert!(
        dexopt["location"]
            .as_str()
            .unwrap()
            .starts_with("/data/dalvik-cache/"),
        "{dexopt}"
    );
    assert!(export.to_string().contains("RIGSERIAL01"));
    // A compile that prints Success but does not take is refused there.
    rig.ok("touch /data/local/tmp/dexopt.skip && rm -f /data/system/dexopt.state");
    let out = rig.ok(
        "./iolab-bin startup --am-start com.example.iolab.rigapp/.Main --in /data/local/tmp/app \
         --schedulers none --workloads idle --reps 1 --compile speed-profile 2>&1; echo rc=$?",
    );
    assert!(
        out.contains("did not take") && out.contains("rc=2"),
        "{out}"
    );
    // Warm against hot starts of the same app: warm is a new process
    // (force-stopped, zygote forks it, am says COLD), hot only brings the
    // live one back from home (am says HOT, nothing forked): faster, by
    // am's own TotalTime.
    let modes = |mode: &str| -> Vec<Value> {
        let out = rig.ok(&format!(
            "./iolab-bin startup --am-start com.example.iolab.rigapp/.Main --in /data/local/tmp/app \
             --schedulers none --workloads idle --reps 3 --start-mode {mode} --db {mode}.db --json"
        ));
        let id = serde_json::from_str::<Value>(&out).unwrap()["experiment"]["id"]
            .as_u64()
            .unwrap();
        let e: Value = serde_json::from_str(
            &rig.ok(&format!("./iolab-bin results --db {mode}.db export {id}")),
        )
        .unwrap();
        e["runs"].as_array().unwrap().clone()
    };
    let warm = modes("warm");
    let hot = modes("hot");
    let ms = |r: &Value| r["duration_ns"].as_f64().unwrap() / 1e6;
    for (runs, state) in [(&warm, "COLD"), (&hot, "HOT")] {
        assert_eq!(runs.len(), 3);
        for r in runs {
            assert_eq!(r["outcome"], "ok", "{r}");
            assert_eq!(
                r["extra"]["am_start"]["result"]["launch_state"], state,
                "{r}"
            );
            // The app's process was found: forked (warm) or alive (hot).
            assert!(r["extra"]["app_process"]["pid"].as_i64().is_some(), "{r}");
        }
    }
    let slowest_hot = hot.iter().map(ms).fold(0.0, f64::max);
    let fastest_warm = warm.iter().map(ms).fold(f64::MAX, f64::min);
    eprintln!("hot ≤ {slowest_hot} ms, warm ≥ {fastest_warm} ms");
    assert!(
        slowest_hot < fastest_warm,
        "hot {slowest_hot} ms, warm {fastest_warm} ms"
    );
}

#[test]
fn closed_output_pipes_do_not_stop_a_run_or_lose_it() {
    if !root_or_skip("closed_output_pipes_do_not_stop_a_run_or_lose_it") {
        return;
    }
    let b = bench_env::Bench::new("closed-pipes");
    // Both ends read by no one: every progress line and the table meet
    // EPIPE, as after adbd closed the shell's pipes.
    let (r_out, w_out) = rustix::pipe::pipe().unwrap();
    let (r_err, w_err) = rustix::pipe::pipe().unwrap();
    drop(r_out);
    drop(r_err);
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("iolab"));
    c.env("IOLAB_RUN_DIR", b.env.run.path())
        .args(["startup", "--lab-size", "128MiB", "--schedulers", "none"])
        .args(["--workloads", "idle", "--reps", "2", "--timeout", "20"])
        .arg("--db")
        .arg(&b.db)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(w_out))
        .stderr(Stdio::from(w_err));
    let out = c.status().unwrap();
    assert_eq!(out.code(), Some(0));
    let list = b.list();
    assert_eq!(list[0]["runs"], 2, "{list}");
    assert_eq!(list[0]["status"], "done", "{list}");
}
