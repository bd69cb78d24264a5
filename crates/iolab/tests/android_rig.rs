//! iolab in the Android-shaped rig (scripts/android/rig.sh), as strict as
//! a GKI phone with a user build: toybox and mksh only, block nodes under
//! /dev/block only, a read-only /, no /run, /tmp or HOME, no
//! /proc/sys/kernel/ns_last_pid, debugfs refused by the rig's seccomp
//! supervisor, tracefs at /sys/kernel/tracing; zygote64 specialising apps
//! as Android's does (two renames, never an exec), optionally from its
//! USAP pool; ActivityMetricsLogger's logging rules; Magisk's su. Driven
//! from the host as a phone is, through the rig's adb stand-in
//! (scripts/android/adb), whose disconnect does what adbd does: SIGHUP to
//! the shell's one pid and its streams closed.
//!
//! Outside truths: the host's kernel (each app thread's I/O priority by
//! ioprio_get, its nice in /proc/TID/stat), the host's sysfs (the data
//! disk's scheduler during and after the run), the host's
//! /sys/block/*/stat (bytes the kernel read from the EROFS image), the
//! supervisor's log of refused mounts.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use bench_env::text;

use serde_json::Value;

const APP: &str = "/system_ext/priv-app/RigApp";
const COMPONENT: &str = "com.example.iolab.rigapp/.Main";

/// Two schedulers, idle and 1r1w, 3 reps (a small load file: the rig's
/// /data is 1 GiB).
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

/// What every activity run asks for the app's own process: held as
/// Android resets it (the rig's zygote, ART and ActivityManager do as a
/// phone's do).
const APP_OPTIONS: [&str; 7] = [
    "--target-ioprio",
    "idle",
    "--target-nice",
    "5",
    "--target-hold",
    "--explain",
    "--sched",
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
            "gcc",
        ] {
            if !lab_env::have(tool) {
                iolab_testkit::skip(
                    "android_rig",
                    &format!("{tool} is not installed (apt install toybox mksh e2fsprogs erofs-utils util-linux gcc)"),
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

    /// `iolab remote --adb rig`, through the rig's adb stand-in; `magisk`
    /// makes the device a production build rooted with Magisk.
    fn adb(&self, magisk: bool) -> Command {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("iolab"));
        c.arg("remote")
            .args(["--adb", "rig", "--adb-program"])
            .arg(scripts().join("adb"))
            .env("IOLAB_RIG_DIR", self.dir.path())
            .env("IOLAB_RIG_ADBD", if magisk { "magisk" } else { "root" });
        c
    }

    /// Runs `startup --am-start` over adb with `args` into `db` and
    /// returns the device's experiment, exported.
    fn activity_run(&self, db: &Path, args: &[&str]) -> Value {
        self.activity_run_exiting(db, args, 0)
    }

    /// As [`Rig::activity_run`], the run exiting with `code`.
    fn activity_run_exiting(&self, db: &Path, args: &[&str], code: i32) -> Value {
        let (got, e) = self.activity_run_code(db, args);
        assert_eq!(got, code, "{args:?}: {}", e["experiment"]);
        e
    }

    /// As [`Rig::activity_run`]: the run's exit code and its experiment.
    fn activity_run_code(&self, db: &Path, args: &[&str]) -> (i32, Value) {
        let out = self
            .adb(false)
            .arg("--db")
            .arg(db)
            .args(["--", "startup", "--am-start", COMPONENT])
            .args(["--in", "/data/local/tmp/app"])
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        assert!(
            code == 0 || code == 1,
            "{args:?}: exit {code}: {}",
            text(&out.stderr)
        );
        let id = match serde_json::from_slice::<Value>(&out.stdout) {
            Ok(v) => v["experiment"]["id"].as_u64().unwrap(),
            // A run that exits 1 prints its table, not JSON: the newest.
            Err(_) => export_list(db).last().unwrap()["id"].as_u64().unwrap(),
        };
        (code, export(db, id))
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.dir.path().join("unplug"));
        // A lab a failed test left up holds a loop device over a file on
        // /data, which keeps /data's own loop device busy: down first.
        let _ = self.sh("./iolab-bin lab down");
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
        if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
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

fn export_list(db: &Path) -> Vec<Value> {
    let out = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .args(["results", "--db"])
        .arg(db)
        .args(["list", "--json"])
        .output()
        .unwrap();
    let mut v: Vec<Value> = serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    v.sort_by_key(|e| e["id"].as_u64());
    v
}

fn scheduler(dev: &str) -> String {
    let s = std::fs::read_to_string(format!("/sys/block/{dev}/queue/scheduler")).unwrap();
    iolab_sys::block::parse_schedulers(s.trim())
        .unwrap()
        .current
}

/// The kernel's own view of every thread of a live process: its I/O
/// priority class and its nice.
fn kernel_view(pid: i64) -> Vec<(i64, i64, i64)> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|e| {
            let tid: i64 = e.unwrap().file_name().to_str().unwrap().parse().unwrap();
            let (class, nice) = lab_env::kernel_priorities(tid);
            (tid, class, nice)
        })
        .collect()
}

/// What iolab stored as every thread of the app's processes at the end
/// of a start's window is what the kernel gives each live one now (the
/// app outlives the run, and nothing touched it since).
fn assert_kernel_is_what_was_stored(r: &Value) {
    let stored = r["extra"]["app_process"]["threads_end"].as_array().unwrap();
    assert!(stored.len() >= 6, "{r}");
    for t in stored {
        let tid = t["tid"].as_i64().unwrap();
        let (class, nice) = lab_env::kernel_priorities(tid);
        let class_name = match class {
            1 => "rt",
            2 => "be",
            3 => "idle",
            _ => "none",
        };
        assert_eq!(nice, t["nice"].as_i64().unwrap(), "thread {t}");
        assert!(
            t["ioprio"].as_str().unwrap().starts_with(class_name),
            "thread {t}: the kernel says class {class}"
        );
    }
}

/// The live app's threads all at idle I/O priority (class 3) and nice 5,
/// read from the kernel.
fn assert_kernel_has_the_settings(pid: i64) {
    let view = kernel_view(pid);
    assert!(view.len() >= 5, "the app's threads: {view:?}");
    for (tid, class, nice) in &view {
        assert_eq!(
            (*class, *nice),
            (3, 5),
            "thread {tid} of the app {pid}: {view:?}"
        );
    }
}

/// The `kind` artifact of run `r` in an export (by its cell and rep).
fn artifact<'a>(export: &'a Value, r: &Value, kind: &str) -> &'a Value {
    export["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| {
            a["kind"] == kind
                && ["scheduler", "workload", "rep", "target"]
                    .iter()
                    .all(|k| a[k] == r[k])
        })
        .map(|a| &a["json"])
        .unwrap_or_else(|| panic!("no {kind} artifact for run {r}"))
}

/// Every start of an activity run: ok, of the kind asked for, the app's
/// own process found as `found_by` and given the settings, and the
/// collectors on its own task.
fn assert_app_runs(export: &Value, state: &str, found_by: &str) -> i64 {
    let runs = export["runs"].as_array().unwrap();
    let (mut last, mut reapplied) = (0, 0);
    for r in runs {
        assert_eq!(r["outcome"], "ok", "{r}");
        let am = &r["extra"]["am_start"]["result"];
        assert_eq!(am["launch_state"], state, "{r}");
        assert!(am["total_ms"].as_u64().unwrap() > 0, "{r}");
        let app = &r["extra"]["app_process"];
        let pid = app["pid"].as_i64().unwrap_or_else(|| panic!("no app: {r}"));
        assert_eq!(app["found_by"], found_by, "{r}");
        // Read back right after it was set: the I/O class (the nice may
        // be Android's already, when zygote's reset came first: a drift).
        assert_eq!(app["ioprio"], "idle", "{r}");
        // The package's uid: the rig's zygote specialises it so.
        assert_eq!(app["uid"], 10123, "{r}");
        // Held: at the window's end every thread ran at what was asked.
        // What Android set again was set back; in a start where iolab
        // first found the app after Android's last reset (520 ms after
        // the launch, in a CI run on a busy host) there was nothing to set
        // back, so that is asserted over the starts (below).
        assert_eq!(app["held"], true, "{r}");
        reapplied += app["reapplied"].as_u64().unwrap();
        for t in app["threads_end"].as_array().unwrap() {
            assert_eq!(
                (&t["nice"], &t["ioprio"]),
                (&Value::from(5), &Value::from("idle")),
                "{r}"
            );
        }
        // The watcher ran on tracefs, not /proc scans.
        assert_eq!(r["extra"]["app_watch"]["source"], "tracefs", "{r}");
        // explain's main thread is the app's; sched measured its task.
        let main = &r["extra"]["observed"]["explain"]["main_thread"];
        assert_eq!(main["tid"].as_i64(), Some(pid), "{r}");
        let sched = artifact(export, r, "sched");
        assert!(
            sched["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["tid"].as_i64() == Some(pid)),
            "sched has no task {pid}: {sched}"
        );
        last = pid;
    }
    assert!(
        reapplied >= 1,
        "Android's resets were never set back in {} starts: {runs:?}",
        runs.len()
    );
    last
}

/// Warm and hot starts of the live app, 3 each, with the app's options:
/// each of its kind, the app running already, and the kernel's view of it.
fn warm_and_hot(rig: &Rig, db: &Path) {
    for (mode, state) in [("warm", "WARM"), ("hot", "HOT")] {
        let e = rig.activity_run(
            db,
            &[
                ["--schedulers", "none", "--workloads", "idle", "--reps", "3"].as_slice(),
                &["--start-mode", mode, "--timeout", "20"],
                APP_OPTIONS.as_slice(),
            ]
            .concat(),
        );
        assert_eq!(e["runs"].as_array().unwrap().len(), 3, "{mode}");
        let pid = assert_app_runs(&e, state, "running");
        assert_kernel_has_the_settings(pid);
        assert_kernel_is_what_was_stored(e["runs"].as_array().unwrap().last().unwrap());
    }
}

#[test]
fn the_rig_is_a_gki_phone_and_lab_status_and_trace_bio_work_without_debugfs() {
    if !iolab_testkit::root_or_skip(
        "the_rig_is_a_gki_phone_and_lab_status_and_trace_bio_work_without_debugfs",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(rig) = Rig::up() else { return };
    // What the rig's shell has: toybox's tools, no util-linux, no /tmp.
    assert_eq!(rig.ok("readlink /system/bin/losetup").trim(), "toybox");
    assert_eq!(rig.ok("readlink /system/bin/blkid").trim(), "toybox");
    assert!(!rig.sh("ls /usr/bin /tmp /run").status.success());
    // What a GKI kernel and a user build lack: ns_last_pid, a writable /,
    // debugfs (refused, as SELinux refuses it, and logged as refused).
    let gki = rig.sh(
        "ls /proc/sys/kernel/ns_last_pid; touch /x; mkdir -p d && mount -t debugfs none d; ls /sys/kernel/debug | wc -l",
    );
    let err = text(&gki.stderr);
    assert!(err.contains("ns_last_pid: No such file"), "{err}");
    assert!(err.contains("Read-only file system"), "{err}");
    assert!(err.contains("Operation not permitted"), "{err}");
    assert_eq!(text(&gki.stdout).trim(), "0", "{err}");
    let denied = std::fs::read_to_string(rig.dir.path().join("denied.log")).unwrap();
    assert!(denied.contains("refused mount of debugfs"), "{denied}");
    assert!(rig
        .ok("ls /sys/kernel/tracing/events/task")
        .contains("task_rename"));

    // A lab: loop by ioctl, mke2fs, its node found under /dev/block; its
    // status without debugfs says what is unknown and why, exit 0.
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
    assert!(status["queue_depth_kernel"].is_null(), "{status}");
    assert!(
        status["queue_depth_kernel_unknown"]
            .as_str()
            .unwrap_or_default()
            .starts_with("debugfs unavailable: mount -t debugfs failed"),
        "{status}"
    );
    let shown = rig.ok("./iolab-bin lab status R");
    assert!(shown.contains("unknown: debugfs unavailable"), "{shown}");

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
    // Nothing iolab wrote went outside /data (the root is read-only, and
    // the only other writable places are /dev and /proc, /sys knobs).
    assert_eq!(
        rig.ok("ls -d /data/local/tmp/iolab").trim(),
        "/data/local/tmp/iolab"
    );
}

/// An activity started cold (the matrix), warm and hot, over adb, in
/// place on /data, with every option that needs the app's own process:
/// found on a kernel without ns_last_pid by its rename, given its
/// priorities within the watcher's latency, followed by --explain and
/// --sched; each start of the kind asked for, by am's own LaunchState.
#[test]
fn an_activity_cold_warm_and_hot_gets_its_priorities_and_is_followed() {
    let Some(d) = OnData::up("an_activity_cold_warm_and_hot_gets_its_priorities_and_is_followed")
    else {
        return;
    };
    let (rig, data, original, db, watch) = (d.rig, d.data, d.original, d.db, d.watch);
    let cold = rig.activity_run(
        &db,
        &[
            MATRIX.as_slice(),
            APP_OPTIONS.as_slice(),
            &[
                "--compile",
                "speed",
                "--ready-logcat",
                "Fully drawn com\\.example\\.iolab\\.rigapp",
            ],
        ]
        .concat(),
    );
    let seen = watch.finish();
    assert!(seen.contains(&"mq-deadline".to_string()), "{seen:?}");
    assert!(seen.contains(&"bfq".to_string()), "{seen:?}");
    assert_eq!(scheduler(&data), original, "{seen:?}");
    assert_eq!(cold["experiment"]["status"], "done");
    let runs = cold["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    let last = assert_app_runs(&cold, "COLD", "task_rename");
    for r in runs {
        // Timed to the app's reportFullyDrawn line, read by the rig's logcat.
        let line = r["extra"]["am_start"]["logcat"]["line"]
            .as_str()
            .unwrap_or_default();
        assert!(line.contains("I ActivityTaskManager: Fully drawn"), "{r}");
        let app = &r["extra"]["app_process"];
        // Forked by zygote after the launch, set at its first rename:
        // before the app's own reads (which begin 20 ms later in the rig).
        assert_eq!(app["born_before_launch"], false, "{r}");
        assert!(app["set_after_rename_ms"].as_f64().unwrap() < 20.0, "{r}");
        // Cold: of the app's files (APK, odex, vdex, .so, the compiled
        // code in dalvik-cache, its data), at most 1 % cached after the
        // cold step.
        let c = &r["extra"]["cold"];
        assert!(c["files"].as_u64().unwrap() >= 6, "{c}");
        let kept = c["cached_bytes"].as_u64().unwrap() - c["mapped_before_bytes"].as_u64().unwrap();
        assert!(kept as f64 <= 0.01 * c["bytes"].as_f64().unwrap(), "{c}");
    }
    // The last start's app is still up (as on a phone): the kernel says
    // every thread of it is at idle I/O priority and nice 5.
    assert_kernel_has_the_settings(last);
    // --compile verified in dumpsys and stored: compiled into dalvik-cache.
    let dexopt = &cold["experiment"]["config"]["dexopt"];
    assert_eq!(dexopt["dexopt"][0]["status"], "speed", "{dexopt}");
    assert_eq!(dexopt["compiled_code_located_by"], "dumpsys", "{dexopt}");
    assert!(cold.to_string().contains("RIGSERIAL01"));

    // Warm: the live process, its activity made again (am: WARM); hot: the
    // stopped activity brought back (am: HOT, TotalTime above 0).
    warm_and_hot(&rig, &db);
    // A trampoline: the launched .Splash finished itself and started
    // .Main (the rig's dumpsys lists .Main on top, .Splash finishing):
    // a hot start waits on the task's live top, not on the finished one.
    rig.ok("touch /data/system/com.example.iolab.rigapp.trampoline");
    rig.ok(
        "./iolab-bin startup --am-start com.example.iolab.rigapp/.Splash --in /data/local/tmp/app \
         --schedulers none --workloads idle --reps 2 --start-mode hot --timeout 20 --db tramp.db",
    );
    let tramp: Value =
        serde_json::from_str(&rig.ok("./iolab-bin results --db tramp.db export 1")).unwrap();
    for r in tramp["runs"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert_eq!(
            r["extra"]["am_start"]["result"]["launch_state"], "HOT",
            "{r}"
        );
    }
    rig.ok("rm /data/system/com.example.iolab.rigapp.trampoline");
    // Without --target-hold, Android's own settings make a start invalid,
    // with what it changed named, and what iolab stored is what the
    // kernel gives the live app's threads afterwards. Cold: the top-app
    // boost follows bindApplication, before the first frame, so every
    // cold start is invalid, naming it on the main and render threads
    // (and zygote's and ART's resets to 0 when iolab's setting came before
    // them, as it does unless the machine is loaded). Warm and hot: the
    // boost races the frame (a hot frame is 5 ms from memory); a start it
    // missed ran at what was asked, and is ok with no drift.
    let mut warm_hot_invalid = 0;
    for mode in ["cold", "warm", "hot"] {
        let (code, e) = rig.activity_run_code(
            &db,
            &[
                "--schedulers",
                "none",
                "--workloads",
                "idle",
                "--reps",
                "2",
                "--start-mode",
                mode,
                "--timeout",
                "20",
                "--target-ioprio",
                "idle",
                "--target-nice",
                "5",
            ],
        );
        let runs = e["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{mode}");
        let mut invalid = 0;
        for r in runs {
            let app = &r["extra"]["app_process"];
            assert_eq!(app["held"], false, "{r}");
            assert_eq!(app["reapplied"], 0, "{r}");
            // The I/O class survives: no Android path resets it.
            for t in app["threads_end"].as_array().unwrap() {
                assert_eq!(t["ioprio"], "idle", "{t}");
            }
            let why = r["reason"].as_str().unwrap_or_default();
            if r["outcome"] == "invalid" {
                invalid += 1;
                assert!(
                    why.contains("not held: Android changed the app's threads")
                        && why.contains("THREAD_PRIORITY_"),
                    "{mode}: {why}"
                );
                if mode == "cold" {
                    for w in [
                        "THREAD_PRIORITY_TOP_APP_BOOST",
                        "main thread",
                        "RenderThread",
                    ] {
                        assert!(why.contains(w), "{mode}: no {w} in {why}");
                    }
                }
            } else {
                assert_eq!(r["outcome"], "ok", "{mode}: {r}");
                assert_ne!(mode, "cold", "{r}");
                assert_eq!(app["drifts"], Value::Array(vec![]), "{r}");
            }
        }
        if mode != "cold" {
            warm_hot_invalid += invalid;
        }
        // A cell none of whose starts counts ends the run with exit 1.
        assert_eq!(code, i32::from(invalid == runs.len()), "{mode}");
        assert_kernel_is_what_was_stored(runs.last().unwrap());
    }
    eprintln!(
        "warm and hot starts Android's boost reached in their window: {warm_hot_invalid} of 4"
    );
    // A hot start waits for no logcat line: refused with the reason.
    let out = rig.ok(&format!(
        "./iolab-bin startup --am-start {COMPONENT} --in /data/local/tmp/app --schedulers none \
         --workloads idle --reps 1 --start-mode hot --ready-logcat 'Fully drawn' 2>&1; echo rc=$?"
    ));
    assert!(
        out.contains("only for cold and warm launches") && out.contains("rc=2"),
        "{out}"
    );
    // A compile that prints Success but does not take is refused there.
    rig.ok("touch /data/local/tmp/dexopt.skip && rm -f /data/system/dexopt.state");
    let out = rig.ok(&format!(
        "./iolab-bin startup --am-start {COMPONENT} --in /data/local/tmp/app \
         --schedulers none --workloads idle --reps 1 --compile speed-profile 2>&1; echo rc=$?"
    ));
    assert!(
        out.contains("did not take") && out.contains("rc=2"),
        "{out}"
    );
}

/// With the USAP pool, the app's process was forked before the launch and
/// is only specialised by it: found by its rename all the same, and set.
/// An early ART-service dumpsys (no locations) still leads to the
/// compiled code, by ART's own naming.
#[test]
fn from_the_usap_pool_the_app_is_found_and_set_and_early_dumpsys_still_finds_its_code() {
    let Some(d) = OnData::up(
        "from_the_usap_pool_the_app_is_found_and_set_and_early_dumpsys_still_finds_its_code",
    ) else {
        return;
    };
    let (rig, db) = (d.rig, d.db);
    rig.ok("setprop persist.device_config.runtime_native.usap_pool_enabled true && setprop debug.rig.artdump early");
    // The app starts a `:service` process and a WebView renderer, and
    // another package whose names share its last 15 characters starts
    // just before it each time.
    rig.ok("setprop debug.rig.service 1 && setprop debug.rig.webview 1 && setprop debug.rig.decoy org.example.iolab.rigapp");
    // The pool is up before any launch: processes named usap64.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !rig.ok("ps -A -o args").contains("usap64") {
        assert!(Instant::now() < deadline, "no USAP process");
        std::thread::sleep(Duration::from_millis(50));
    }
    let e = rig.activity_run(
        &db,
        &[
            ["--schedulers", "none", "--workloads", "idle", "--reps", "3"].as_slice(),
            &["--timeout", "20", "--compile", "speed"],
            APP_OPTIONS.as_slice(),
        ]
        .concat(),
    );
    let last = assert_app_runs(&e, "COLD", "task_rename");
    for r in e["runs"].as_array().unwrap() {
        let app = &r["extra"]["app_process"];
        // A USAP: its fork is before the launch, not in the trace.
        assert_eq!(app["born_before_launch"], true, "{r}");
        // The other package took the app's names first, and was not it.
        let not = app["not_the_app"].to_string();
        assert!(not.contains("uid 10124, not the package's 10123"), "{r}");
        // Its other processes: the service (the package's uid, from the
        // USAP pool too) and the renderer (an isolated uid, forked by
        // webview_zygote), each set, their I/O the app's.
        let procs = app["processes"].as_array().unwrap();
        let service = procs
            .iter()
            .find(|p| p["found_by"] == "uid")
            .unwrap_or_else(|| panic!("no service: {r}"));
        assert_eq!(service["uid"], 10123, "{r}");
        assert!(
            service["name"].as_str().unwrap().ends_with(":service"),
            "{r}"
        );
        let renderer = procs
            .iter()
            .find(|p| p["found_by"] == "isolated uid, forked by webview_zygote")
            .unwrap_or_else(|| panic!("no renderer: {r}"));
        assert!(
            (99_000..100_000).contains(&renderer["uid"].as_u64().unwrap()),
            "{r}"
        );
        // Cold: the renderer read some of the WebView APK from the disk
        // by the window's end (all 2 MiB unless the machine is loaded).
        assert!(renderer["io"]["read_bytes"].as_u64().unwrap() > 0, "{r}");
        let sum: u64 = std::iter::once(&app["io"])
            .chain(procs.iter().map(|p| &p["io"]))
            .map(|io| io["read_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(app["io_total"]["read_bytes"].as_u64(), Some(sum), "{r}");
        for p in [service, renderer] {
            assert!(p["threads_set"].as_u64().unwrap() >= 1, "{r}");
        }
    }
    assert_kernel_has_the_settings(last);
    // Every thread of the last start's three processes, by the kernel.
    assert_kernel_is_what_was_stored(e["runs"].as_array().unwrap().last().unwrap());
    let dexopt = &e["experiment"]["config"]["dexopt"];
    assert_eq!(
        dexopt["compiled_code_located_by"], "dalvik-cache naming",
        "{dexopt}"
    );
    assert!(
        dexopt["compiled_code"]
            .to_string()
            .contains("RigApp.apk@classes.odex"),
        "{dexopt}"
    );
    for r in e["runs"].as_array().unwrap() {
        // ... and the cold check covers it.
        assert!(r["extra"]["cold"]["files"].as_u64().unwrap() >= 6, "{r}");
    }
    warm_and_hot(&rig, &db);
}

/// An app whose process is not named as its package (android:process)
/// cannot be found by iolab: every start that asked for its priorities is
/// invalid with the reason, and the run exits 1, never 0.
#[test]
fn an_app_never_found_invalidates_its_starts_and_the_run_fails() {
    let Some(d) = OnData::up("an_app_never_found_invalidates_its_starts_and_the_run_fails") else {
        return;
    };
    let rig = d.rig;
    rig.ok("setprop debug.rig.process_name com.example.iolab.elsewhere");
    let out = rig.sh(&format!(
        "./iolab-bin startup --am-start {COMPONENT} --in /data/local/tmp/app --schedulers none \
         --workloads idle --reps 2 --timeout 20 --target-ioprio idle --db lost.db"
    ));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e: Value =
        serde_json::from_str(&rig.ok("./iolab-bin results --db lost.db export 1")).unwrap();
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["outcome"], "invalid", "{r}");
        let why = r["reason"].as_str().unwrap_or_default();
        assert!(
            why.contains("--target-ioprio idle not applied") && why.contains("never found"),
            "{r}"
        );
    }
    assert!(
        text(&out.stderr).contains("none of its 2 start(s) counts"),
        "{}",
        text(&out.stderr)
    );
}

/// What a phone does around the starts. On battery (where stayon keeps
/// nothing on) the screen times out in less than the matrix takes: the
/// device is woken and its keyguard dismissed before each start that
/// finds it asleep, outside the window, and every start is ok. stayon is
/// set for the run and put back after. A background dexopt between two
/// cells is stored with the cell after it and flagged in the report.
#[test]
fn a_sleeping_screen_is_woken_and_a_dexopt_between_cells_is_flagged() {
    let Some(d) = OnData::up("a_sleeping_screen_is_woken_and_a_dexopt_between_cells_is_flagged")
    else {
        return;
    };
    let (rig, db) = (d.rig, d.db);
    rig.ok(
        "setprop debug.rig.plugged none && settings put system screen_off_timeout 3000 && \
         setprop debug.rig.bg_dexopt_after_launches 2",
    );
    assert_eq!(
        rig.ok("settings get global stay_on_while_plugged_in")
            .trim(),
        "null"
    );
    let e = rig.activity_run(
        &db,
        &[
            "--schedulers",
            "none,mq-deadline",
            "--workloads",
            "idle",
            "--reps",
            "2",
            "--timeout",
            "20",
            "--pause",
            "4",
        ],
    );
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let mut woken = 0;
    for r in runs {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert_eq!(
            r["extra"]["am_start"]["result"]["launch_state"], "COLD",
            "{r}"
        );
        if r["extra"]["screen"].is_object() {
            assert_eq!(r["extra"]["screen"]["was"], "Asleep", "{r}");
            assert_eq!(r["extra"]["screen"]["now"], "Awake", "{r}");
            woken += 1;
        }
    }
    // 4 s of pause against a 3 s timeout: every start found it asleep.
    assert_eq!(woken, 4, "{e}");
    // The first cell ran on what was installed, the second after the
    // background dexopt that followed the second launch.
    let first = runs[0]["scheduler"].clone();
    for r in runs {
        if r["scheduler"] == first {
            assert_eq!(r["config"]["dexopt"], "arm64 verify (install)", "{r}");
            assert!(r["extra"]["dexopt_changed"].is_null(), "{r}");
        } else {
            assert_eq!(
                r["config"]["dexopt"], "arm64 speed-profile (bg-dexopt)",
                "{r}"
            );
            let changed = r["extra"]["dexopt_changed"].as_str().unwrap_or_default();
            assert!(changed.contains("(a background dexopt)"), "{r}");
        }
    }
    let id = e["experiment"]["id"].as_u64().unwrap().to_string();
    let shown = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .args(["results", "--db"])
        .arg(&db)
        .args(["show", &id])
        .output()
        .unwrap();
    let shown = text(&shown.stdout);
    assert!(
        shown.contains("! dexopt changed during this experiment"),
        "{shown}"
    );
    assert!(shown.contains("asleep before 4 start(s)"), "{shown}");
    // stayon was on for the run and is put back (unset) after it.
    assert_eq!(
        rig.ok("settings get global stay_on_while_plugged_in")
            .trim(),
        "null"
    );
    assert!(
        rig.ok("cat /data/system/settings_global.history")
            .contains("stay_on_while_plugged_in=7"),
        "svc power stayon true was never run"
    );
}

/// Over adb as root (adbd's hang-up: SIGHUP to the shell's one pid, its
/// streams closed) and over Magisk (the root command in magiskd's
/// session: no signal, only end-of-file on stdin), a dropped link leaves
/// the device restored by itself, and `--resume` completes the plan.
fn disconnect_restores_and_resume_completes(test: &str, magisk: bool) {
    // The Magisk run is the shorter plan (idle only): the hang-up test
    // already covers a loaded cell interrupted.
    let (plan, total): (&[&str], u64) = if magisk {
        (
            &[
                &MATRIX[..2],
                &["--workloads", "idle", "--reps", "3", "--timeout", "20"],
            ]
            .concat(),
            6,
        )
    } else {
        (&MATRIX, 12)
    };
    let unplug_at = format!("{}/{total} starts", total / 2 - 1);
    let Some(d) = OnData::up(test) else {
        return;
    };
    let (rig, data, original, db, watch) = (d.rig, d.data, d.original, d.db, d.watch);
    let target = format!(
        "cat {APP}/RigApp.apk {APP}/oat/arm64/RigApp.odex {APP}/lib/arm64/librigapp.so > /dev/null"
    );
    let mut child = rig
        .adb(magisk)
        .arg("--db")
        .arg(&db)
        .args(["--", "startup", "--in", "/data/local/tmp/app"])
        .args(plan)
        .args(["--target-ioprio", "idle", "--", "sh", "-c", &target])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Unplugged once the device has made some starts, not all (the
    // progress lines come over adb).
    let err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    let mut device: Option<(String, bool)> = None;
    for line in err.lines() {
        let line = line.unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.contains(&unplug_at) && device.is_none() {
            device = Some(device_iolab());
            std::fs::write(rig.dir.path().join("unplug"), "").unwrap();
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains(&unplug_at), "{log}");
    assert!(log.contains("connection ended"), "{log}");
    // Who the device's iolab was: adb's shell itself (root login), or a
    // child of magiskd in a session of its own (su -c), whom adbd's
    // hang-up of the shell's pid cannot reach.
    let (parent, in_own_session) = device.unwrap();
    if magisk {
        assert!(log.contains(", su -c)"), "{log}");
        assert_eq!((parent.as_str(), in_own_session), ("rig", true), "{log}");
    } else {
        assert!(log.contains(", root login)"), "{log}");
        assert_ne!(parent, "rig", "{log}");
    }
    // The device's iolab, hung up or only at end-of-file, restores the
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
    // Plugged back in: the device's record says interrupted.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list: Value = serde_json::from_str(
            &rig.ok("./iolab-bin results --db /data/local/tmp/iolab/data/results.db list --json"),
        )
        .unwrap();
        if list[0]["status"] == "interrupted" {
            assert!(
                (total / 2 - 1..total).contains(&list[0]["runs"].as_u64().unwrap()),
                "{list}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{list}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Resumed over adb: the matrix completes and comes home.
    let out = rig
        .adb(magisk)
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
    assert_eq!(runs.len() as u64, total, "{}", export["experiment"]);
    assert_eq!(export["experiment"]["status"], "done");
    let place = export["experiment"]["config"]["place"].as_str().unwrap();
    assert!(place.contains(&data), "{place}");
    assert!(
        export.to_string().contains("RIGSERIAL01"),
        "the device's serial (getprop ro.serialno) is not with its results"
    );
    assert_eq!(
        rig.ok("./iolab-bin restore").trim_end(),
        "nothing to restore: no iolab run left system state behind"
    );
}

/// The device's iolab running `startup` (found on the host by its
/// command line): its parent's comm, and whether it leads its session.
fn device_iolab() -> (String, bool) {
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.starts_with("/data/local/tmp/iolab/bin/iolab-") && cmd.contains(" startup ") {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let f: Vec<&str> = stat
                .rsplit_once(')')
                .unwrap()
                .1
                .split_whitespace()
                .collect();
            let (ppid, sid) = (f[1], f[3]);
            let parent = std::fs::read_to_string(format!("/proc/{ppid}/comm")).unwrap();
            return (parent.trim().to_string(), sid == pid.to_string());
        }
    }
    panic!("no device iolab running");
}

#[test]
fn over_adb_a_hang_up_restores_the_disk_and_resume_completes() {
    disconnect_restores_and_resume_completes(
        "over_adb_a_hang_up_restores_the_disk_and_resume_completes",
        false,
    );
}

#[test]
fn over_magisk_su_end_of_file_alone_restores_the_disk_and_resume_completes() {
    disconnect_restores_and_resume_completes(
        "over_magisk_su_end_of_file_alone_restores_the_disk_and_resume_completes",
        true,
    );
}

#[test]
fn closed_output_pipes_do_not_stop_a_run_or_lose_it() {
    if !iolab_testkit::root_or_skip(
        "closed_output_pipes_do_not_stop_a_run_or_lose_it",
        "it makes loop devices and mounts",
    ) {
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
    assert_eq!(list[0]["status"], "done", "{list}");
    assert_eq!(list[0]["runs"], 2, "{list}");
}
