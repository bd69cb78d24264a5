//! Settings as plan axes on this host's cgroup v1 blkio (`iolab startup
//! --vary`): the weights reach the groups iolab makes (seen from outside
//! while the plan runs), the groups' own byte counters agree with
//! /proc/diskstats, a controller the kernel lacks is refused in one line
//! naming what it has, a plan over `--max-runs` is refused with its size,
//! and the groups are gone after the run, after Ctrl-C (and the plan then
//! resumes to its end), and after a SIGKILL plus the next run. And on
//! cgroup v2, in the qemu guest (Debian's 6.1 kernel: io.weight through
//! io.cost, io.bfq.weight, io.max; no io.latency nor io.prio.class, which
//! Debian does not build): BFQ's group weight on the target with writeback
//! throttling off, in place on the guest's disk; it runs beside the host
//! tests (one vCPU), which is why it lives in this binary.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod guest_env;
mod lab_env;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bench_env::{ok, text, Bench};
use guest_env::{read, run_scenario_with};
use serde_json::Value;

static MACHINE: Mutex<()> = Mutex::new(());

fn machine() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

const BLKIO: &str = "/sys/fs/cgroup/blkio";
const PREPARE: &str = "dd if=/dev/urandom of={dir}/f bs=1M count=8 status=none";

/// True when this host is what these tests are about: cgroup v1 blkio
/// mounted with BFQ's group weights (a child group has blkio.bfq.weight).
/// Probed once: the tests run in parallel, and two probes of one name
/// would race.
fn v1_blkio_with_bfq() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        let probe = Path::new(BLKIO).join(format!("iolab-test-probe-{}", std::process::id()));
        if std::fs::create_dir(&probe).is_err() {
            return false;
        }
        let has = probe.join("blkio.bfq.weight").exists();
        let _ = std::fs::remove_dir(&probe);
        has
    })
}

/// The machine lock and a bench for `test`, or `None` (said why) when this
/// host cannot run it.
fn bench(test: &str, name: &str) -> Option<(MutexGuard<'static, ()>, Bench)> {
    if !ready(test) {
        return None;
    }
    Some((machine(), Bench::new(name)))
}

fn ready(test: &str) -> bool {
    if !iolab_testkit::root_or_skip(test, "it makes loop devices, mounts and cgroups") {
        return false;
    }
    if !v1_blkio_with_bfq() {
        iolab_testkit::skip_line(format!(
            "skip {test}: no cgroup v1 blkio with blkio.bfq.weight at {BLKIO} (this host's kind of cgroups)"
        ));
        return false;
    }
    true
}

/// iolab's groups now (`iolab-PID` under the blkio root).
fn iolab_groups() -> Vec<PathBuf> {
    std::fs::read_dir(BLKIO)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with("iolab-") && !n.to_string_lossy().contains("probe")
            })
        })
        .collect()
}

/// `startup` on a small lab with BFQ, then `args`, then the database.
fn startup_args(b: &Bench, args: &[&str]) -> Vec<String> {
    let common = [
        "startup",
        "--lab-size",
        "256MiB",
        "--warmup",
        "0.5",
        "--schedulers",
        "bfq",
        "--load-option",
        "size=32M",
        "--prepare",
        PREPARE,
    ];
    let mut v: Vec<String> = common.iter().chain(args).map(|s| s.to_string()).collect();
    v.push("--db".into());
    v.push(b.db.to_string_lossy().into_owned());
    v
}

fn startup(b: &Bench, args: &[&str]) -> assert_cmd::Command {
    let mut c = b.cmd();
    c.args(startup_args(b, args));
    c
}

#[test]
fn bfq_weights_through_v1_blkio_are_applied_and_group_bytes_match_diskstats() {
    let Some((_m, b)) = bench(
        "bfq_weights_through_v1_blkio_are_applied_and_group_bytes_match_diskstats",
        "control-weights",
    ) else {
        return;
    };
    // From outside, while the plan runs: every weight the load's group had.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, done) = (seen.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                for g in iolab_groups() {
                    if let Ok(w) = std::fs::read_to_string(g.join("load/blkio.bfq.weight")) {
                        let mut s = seen.lock().unwrap();
                        if !s.contains(&w.trim().to_string()) {
                            s.push(w.trim().to_string());
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let out: Output = startup(&b, &["--workloads", "1r1w", "--reps", "2"])
        .args(["--vary", "cg.load.blkio.bfq.weight=-,10", "--json"])
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    ok(&out);
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(&"10".to_string()), "weights seen: {seen:?}");
    assert!(
        seen.contains(&"100".to_string()),
        "the baseline keeps BFQ's default: {seen:?}"
    );
    assert!(iolab_groups().is_empty(), "left: {:?}", iolab_groups());

    let report = b.export(1);
    let arts: Vec<&Value> = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "cell_io")
        .collect();
    assert_eq!(
        arts.len(),
        4,
        "one per loaded cell per round (2 rounds): {arts:?}"
    );
    for a in &arts {
        let j = &a["json"];
        let g = &j["groups"];
        assert!(g["hierarchy"].as_str().unwrap().contains("v1 blkio"), "{g}");
        // Reads are charged to the group that issued them: the target's and
        // the load's together are what the device read (diskstats), less
        // what other processes read meanwhile.
        let dev_r = j["device_read_bytes"].as_u64().unwrap() as f64;
        let grp_r = (g["target"]["read_bytes"].as_u64().unwrap()
            + g["load"]["read_bytes"].as_u64().unwrap()) as f64;
        assert!(dev_r > 32e6, "the load read: {j}");
        assert!(
            grp_r <= dev_r * 1.001 + 1e6 && grp_r >= dev_r * 0.97,
            "groups read {grp_r}, the device {dev_r}: {j}"
        );
        assert!(
            g["target"]["read_bytes"].as_u64().unwrap() >= 4 << 20,
            "the cold cat: {g}"
        );
        // v1 cannot charge buffered writeback to a group (the flusher
        // writes it from the root): never more than the device wrote.
        let dev_w = j["device_write_bytes"].as_u64().unwrap() as f64;
        let grp_w = (g["target"]["write_bytes"].as_u64().unwrap()
            + g["load"]["write_bytes"].as_u64().unwrap()) as f64;
        assert!(
            grp_w <= dev_w * 1.001 + 1e6,
            "groups wrote {grp_w}, the device {dev_w}"
        );
        let variant = a["variant"].as_str().unwrap();
        let settings = j["settings"].as_array().unwrap();
        if variant.ends_with("=10") {
            assert_eq!(settings.len(), 1, "{j}");
            assert_eq!(settings[0]["read"], "10");
            assert_eq!(settings[0]["applied"], true);
        } else {
            assert!(settings.is_empty(), "the baseline sets nothing: {j}");
        }
    }
    // Every start ran at its point, and the verdict names both.
    for r in report["runs"].as_array().unwrap() {
        assert!(
            r["variant"]
                .as_str()
                .unwrap()
                .starts_with("cg.load.blkio.bfq.weight="),
            "{r}"
        );
        assert_eq!(r["outcome"], "ok", "{r}");
    }
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = shown["verdict"]["tables"][0]["rows"]
        .as_array()
        .unwrap_or_else(|| {
            panic!(
                "no verdict in {}",
                &text(&out.stdout)[..2000.min(out.stdout.len())]
            )
        });
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r["baseline"] == true).count(), 1);
}

/// `--recipe android-profiles` on this v1 host, and a weight that does
/// nothing under mq-deadline: the plan names each value's AOSP source and
/// what it left out; the top app runs in the blkio root (its group's own
/// counters, outside iolab, read nothing of it while the baseline's read
/// its file); BFQ's weight under mq-deadline is said inert and not run.
#[test]
fn android_profiles_put_the_app_in_the_root_and_inert_settings_collapse() {
    let Some((_m, b)) = bench(
        "android_profiles_put_the_app_in_the_root_and_inert_settings_collapse",
        "control-android",
    ) else {
        return;
    };
    let out: Output = startup(&b, &["--workloads", "1r", "--reps", "1"])
        .args(["--recipe", "android-profiles"])
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("android-12.0.0_r1") && err.contains("android-15.0.0_r30"),
        "the sources: {err}"
    );
    assert!(err.contains("blkio.weight 200"), "what is left out: {err}");
    let report = b.export(1);
    let sources = report["experiment"]["config"]["recipe_sources"].to_string();
    assert!(sources.contains("android-14.0.0_r50"), "{sources}");
    let cell_io: Vec<&Value> = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "cell_io")
        .collect();
    assert!(
        report["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["variant"].as_str().unwrap().contains("promote-to-rt")),
        "never promote-to-rt"
    );
    // Baseline, Android's topology, its values (12–15 alike here).
    assert_eq!(cell_io.len(), 3, "{cell_io:?}");
    for a in &cell_io {
        let v = a["variant"].as_str().unwrap();
        let target_read = a["json"]["groups"]["target"]["read_bytes"]
            .as_u64()
            .unwrap();
        if v.contains("target.cgroup=root") {
            assert_eq!(target_read, 0, "the app ran in the root: {a}");
        } else {
            assert!(target_read >= 4 << 20, "the app ran in iolab's group: {a}");
        }
    }
    assert!(iolab_groups().is_empty(), "left: {:?}", iolab_groups());

    let mut args = startup_args(&b, &["--workloads", "1r", "--reps", "1"]);
    let at = args.iter().position(|a| a == "--schedulers").unwrap();
    args[at + 1] = "mq-deadline,bfq".into();
    let out: Output = b
        .cmd()
        .args(args)
        .args(["--vary", "cg.load.blkio.bfq.weight=-,10"])
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("inert under mq-deadline: cg.load.blkio.bfq.weight=10"),
        "{err}"
    );
    let report = b.export(2);
    let variants: Vec<(String, String)> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["scheduler"].as_str().unwrap().to_string(),
                r["variant"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        !variants
            .iter()
            .any(|(s, v)| s == "mq-deadline" && v.ends_with("=10")),
        "{variants:?}"
    );
    assert!(variants
        .iter()
        .any(|(s, v)| s == "bfq" && v.ends_with("=10")));
    assert_eq!(
        report["experiment"]["config"]["inert"][0]["scheduler"],
        "mq-deadline"
    );
}

/// `--recipe device`: a phone's settings as `iolab settings --json` prints
/// them (AOSP 15's groups on a v1 kernel with BFQ, a UFS queue) become the
/// lab's points, each read back there; this host's own settings, which
/// have no background group, are refused in one line.
#[test]
fn a_devices_own_settings_become_the_lab_s_points() {
    let Some((_m, b)) = bench(
        "a_devices_own_settings_become_the_lab_s_points",
        "control-device",
    ) else {
        return;
    };
    let own = b.cmd().args(["settings", "--json"]).output().unwrap();
    ok(&own);
    let own_file = b.db.with_file_name("own.json");
    std::fs::write(&own_file, &own.stdout).unwrap();
    let mine: Value = serde_json::from_slice(&own.stdout).unwrap();
    assert_eq!(mine["version"], "v1", "{mine}");
    let refused = startup(&b, &["--workloads", "1r", "--reps", "1"])
        .args(["--recipe", "device", "--device-settings"])
        .arg(&own_file)
        .args(["--", "cat", "{dir}/f"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("no child group"),
        "{}",
        text(&refused.stderr)
    );

    let phone = serde_json::json!({
        "kernel": "6.1.75-android14-11", "version": "v1",
        "hierarchy": "cgroup v1 blkio at /dev/blkio", "dir": "/data",
        "groups": [
            {"path": "/", "values": {"blkio.weight": "1000", "blkio.group_idle": "0"}},
            {"path": "/background", "values": {"blkio.weight": "200",
                "blkio.bfq.weight": "10", "blkio.group_idle": "0"}}],
        "disks": [{"name": "sda", "scheduler": "bfq",
            "queue": {"read_ahead_kb": "512", "nr_requests": "64", "wbt_lat_usec": "0"},
            "iosched": {"slice_idle": "0", "low_latency": "1"}}]
    });
    let phone_file = b.db.with_file_name("phone.json");
    std::fs::write(&phone_file, phone.to_string()).unwrap();
    let out = startup(&b, &["--workloads", "1r", "--reps", "1"])
        .args(["--recipe", "device", "--device-settings"])
        .arg(&phone_file)
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("/background/blkio.bfq.weight reads \"10\""),
        "{err}"
    );
    assert!(
        err.contains("blkio.weight = \"200\""),
        "left out, said: {err}"
    );
    // The refused run stored nothing: this is the first experiment.
    let report = b.export(1);
    assert_eq!(
        report["experiment"]["config"]["startup"]["device_settings"]["kernel"],
        "6.1.75-android14-11"
    );
    let cells: Vec<&Value> = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "cell_io")
        .collect();
    // Baseline, the phone's groups, its groups with its queue.
    assert_eq!(cells.len(), 3, "{cells:?}");
    let queue = cells
        .iter()
        .find(|a| a["variant"].as_str().unwrap().contains("nr_requests=64"))
        .unwrap();
    let settings = queue["json"]["settings"].as_array().unwrap();
    for (name, read) in [
        ("cg.load.blkio.bfq.weight", "10"),
        ("nr_requests", "64"),
        ("read_ahead_kb", "512"),
        ("iosched.slice_idle", "0"),
    ] {
        let s = settings.iter().find(|s| s["name"] == name).unwrap();
        assert_eq!(s["read"].as_str().unwrap(), read, "{s}");
        assert_eq!(s["applied"], true, "{s}");
    }
    assert!(iolab_groups().is_empty(), "left: {:?}", iolab_groups());
}

/// `fs.ATTR`: the lab's ext4 takes `mb_stream_req` (read back, and its
/// value before is back after), and a read-only attribute is refused before
/// anything runs, naming what the filesystem takes.
#[test]
fn a_filesystems_own_tunable_is_applied_and_a_read_only_one_refused() {
    let Some((_m, b)) = bench(
        "a_filesystems_own_tunable_is_applied_and_a_read_only_one_refused",
        "control-fs",
    ) else {
        return;
    };
    let refused = startup(&b, &["--workloads", "1r", "--reps", "1"])
        .args(["--vary", "fs.max_writeback_mb_bump=-,16"])
        .args(["--", "cat", "{dir}/f"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let err = text(&refused.stderr);
    assert!(err.contains("read-only"), "{err}");
    let out = startup(&b, &["--workloads", "1r", "--reps", "1"])
        .args(["--vary", "fs.mb_stream_req=-,64"])
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    ok(&out);
    let report = b.export(1);
    let set: Vec<&Value> = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "cell_io")
        .flat_map(|a| a["json"]["settings"].as_array().unwrap())
        .collect();
    assert_eq!(set.len(), 1, "{set:?}");
    assert_eq!(set[0]["read"], "64");
    assert!(set[0]["file"]
        .as_str()
        .unwrap()
        .starts_with("/sys/fs/ext4/loop"));
}

/// `mount.*` on a lab that outlives the plan: strictatime, lazytime and
/// commit=30 are remounted in and read back from mountinfo, and the lab's
/// mount is as it was after the plan (the guard remounted it back).
#[test]
fn mount_options_are_remounted_in_and_back() {
    let Some((_m, b)) = bench("mount_options_are_remounted_in_and_back", "control-mount") else {
        return;
    };
    let name = format!("ctl-mount-{}", std::process::id());
    let dir = b.db.with_file_name("lab");
    let up = b
        .cmd()
        .args([
            "lab", "up", "--json", "--name", &name, "--size", "256MiB", "--dir",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    ok(&up);
    let mountpoint = serde_json::from_slice::<Value>(&up.stdout).unwrap()["mountpoint"]
        .as_str()
        .unwrap()
        .to_string();
    let line = |m: &str| {
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .rfind(|l| l.split(' ').nth(4) == Some(m))
            .map(|l| l.split(' ').skip(5).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    let before = line(&mountpoint);
    let mut args = startup_args(&b, &["--workloads", "1r", "--reps", "1"]);
    let at = args.iter().position(|a| a == "--lab-size").unwrap();
    args[at] = "--lab".into();
    args[at + 1] = name.clone();
    let out = b
        .cmd()
        .args(args)
        .args(["--vary", "mount.atime=-,strictatime"])
        .args(["--point", "mount.lazytime=1;mount.commit=30"])
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let after = line(&mountpoint);
    let down = b.cmd().args(["lab", "down", &name]).output().unwrap();
    ok(&out);
    ok(&down);
    assert!(!before.is_empty());
    assert_eq!(before, after, "the lab's mount after the plan");
    let report = b.export(1);
    let set: Vec<&Value> = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "cell_io")
        .flat_map(|a| a["json"]["settings"].as_array().unwrap())
        .collect();
    assert_eq!(set.len(), 3, "{set:?}");
    assert!(set.iter().all(|s| s["applied"] == true), "{set:?}");
    let read = |n: &str| {
        set.iter().find(|s| s["name"] == n).unwrap()["read"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(read("mount.commit").contains("commit=30"));
    assert!(read("mount.lazytime").contains("lazytime"));
    assert!(!read("mount.atime").contains("relatime"));
}

#[test]
fn a_controller_this_kernel_lacks_is_refused_naming_what_it_has() {
    let Some((_m, b)) = bench(
        "a_controller_this_kernel_lacks_is_refused_naming_what_it_has",
        "control-refused",
    ) else {
        return;
    };
    let out = startup(&b, &["--workloads", "1r", "--reps", "1"])
        .args(["--vary", "cg.target.io.latency=-,10000"])
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("io.latency"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("cgroup v1 blkio"), "{line}");
    assert!(
        line.contains("blkio.bfq.weight"),
        "names what is there: {line}"
    );
    assert!(iolab_groups().is_empty(), "the probe groups are gone");
    let list = b.list();
    assert!(
        list.is_null() || list.as_array().is_some_and(Vec::is_empty),
        "nothing was stored: {list}"
    );

    // A plan bigger than --max-runs: refused with its size.
    let out = startup(&b, &["--workloads", "1r", "--reps", "50"])
        .args(["--vary", "read_ahead_kb=-,128,512", "--max-runs", "100"])
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("3 point(s) × 1 scheduler(s) × 2 workload(s)")
            && err.contains("300 starts")
            && err.contains("--max-runs 100"),
        "{err}"
    );
}

/// Starts a plan with cgroup points in the background and waits until
/// its groups exist.
fn spawn_until_groups(b: &Bench) -> (std::process::Child, PathBuf) {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.env("IOLAB_RUN_DIR", b.env.run.path())
        .args(startup_args(
            b,
            &[
                "--workloads",
                "1r",
                "--reps",
                "6",
                "--vary",
                "cg.load.blkio.bfq.weight=-,10",
            ],
        ))
        .args(["--", "sh", "-c", "cat {dir}/f; sleep 0.2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let want = PathBuf::from(BLKIO).join(format!("iolab-{}", child.id()));
    let t0 = Instant::now();
    while !want.join("load").exists() {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("no {} after 120 s", want.display());
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("iolab ended ({st}) before making its groups");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, want)
}

#[test]
fn the_groups_are_gone_after_ctrl_c_and_after_sigkill_and_the_next_run() {
    let Some((_m, b)) = bench(
        "the_groups_are_gone_after_ctrl_c_and_after_sigkill_and_the_next_run",
        "control-cleanup",
    ) else {
        return;
    };
    // Ctrl-C: the run stops cleanly and takes its groups with it.
    let (child, group) = spawn_until_groups(&b);
    std::thread::sleep(Duration::from_millis(500));
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        !group.exists(),
        "{} left after SIGINT: {}",
        group.display(),
        text(&out.stderr)
    );
    // SIGKILL: nothing can clean up in the process; the groups stay until
    // the next run restores its journal.
    let (mut child, group) = spawn_until_groups(&b);
    std::thread::sleep(Duration::from_millis(500));
    // A cell's groups are made at its start and removed at its end, so a
    // kill between two cells finds none (a fresh-clone CI run here). The
    // run is stopped where its groups exist, then killed: stopped, it can
    // remove nothing.
    let pid = rustix::process::Pid::from_child(&child);
    let t0 = Instant::now();
    loop {
        rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
        if group.join("load").exists() {
            break;
        }
        rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no groups of the run in 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        group.exists(),
        "a SIGKILLed run cannot have removed {}",
        group.display()
    );
    let out = b.cmd().arg("restore").output().unwrap();
    ok(&out);
    assert!(
        !group.exists(),
        "{} left after the next run: {}",
        group.display(),
        text(&out.stdout)
    );
    assert!(iolab_groups().is_empty(), "left: {:?}", iolab_groups());
}

/// The qemu guest's part (see the module docs).
fn guest_ready(test: &str) -> bool {
    if !iolab_testkit::root_or_skip(test, "it boots a qemu guest") {
        return false;
    }
    for tool in ["qemu-system-x86_64", "mkfs.ext4", "sfdisk", "cpio"] {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            iolab_testkit::skip_line(format!("skip {test}: {tool} is not installed"));
            return false;
        }
    }
    true
}

#[test]
fn group_weights_and_wbt_on_cgroup_v2_in_a_guest() {
    let test = "group_weights_and_wbt_on_cgroup_v2_in_a_guest";
    if !guest_ready(test) {
        return;
    }
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let out = run_scenario_with(
        work.path(),
        "control",
        &[],
        &[(
            "IOLAB_GUEST_ARGS",
            "bfq|1|1r1w|--point+cg.target.io.bfq.weight=1000~wbt_lat_usec=0",
        )],
    );
    assert_eq!(
        read(&out, "startup.rc").trim(),
        "0",
        "{}",
        read(&out, "startup.err")
    );
    assert!(read(&out, "controllers").contains("io"));
    eprintln!("{}", read(&out, "show.txt"));
    let show: Value = serde_json::from_str(&read(&out, "show.json")).unwrap();
    let runs = show["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "2 points × (idle + 1r1w) × 1 rep");
    assert!(runs.iter().all(|r| r["outcome"] == "ok"), "{runs:?}");
    let cell_io: Vec<&Value> = show["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "cell_io")
        .collect();
    assert_eq!(cell_io.len(), 2);
    for a in cell_io {
        let j = &a["json"];
        let g = &j["groups"];
        assert!(
            g["hierarchy"].as_str().unwrap().starts_with("cgroup v2"),
            "{g}"
        );
        // io.stat charges every bio to the group that issued it: reads
        // equal what the disk read, to the byte but for other readers.
        let dev_r = j["device_read_bytes"].as_u64().unwrap() as f64;
        let grp_r = (g["target"]["read_bytes"].as_u64().unwrap()
            + g["load"]["read_bytes"].as_u64().unwrap()) as f64;
        assert!(
            dev_r > 16e6 && grp_r <= dev_r * 1.001 + 1e6 && grp_r >= dev_r * 0.97,
            "{j}"
        );
        let dev_w = j["device_write_bytes"].as_u64().unwrap() as f64;
        let grp_w = (g["target"]["write_bytes"].as_u64().unwrap()
            + g["load"]["write_bytes"].as_u64().unwrap()) as f64;
        assert!(grp_w <= dev_w * 1.001 + 1e6, "{j}");
        // memory beside io: the load's buffered writes are written back
        // in its group's name (with io alone: none of them, 0 %).
        assert_eq!(g["memory"], true, "{g}");
        let load_w = g["load"]["write_bytes"].as_u64().unwrap() as f64;
        assert!(dev_w > 16e6 && load_w >= 0.9 * dev_w, "{j}");
        let settings = j["settings"].as_array().unwrap();
        if a["variant"].as_str().unwrap().contains("=1000") {
            let by = |n: &str| settings.iter().find(|s| s["name"] == n).unwrap();
            assert_eq!(by("cg.target.io.bfq.weight")["read"], "default 1000");
            // BFQ turned wbt off itself: the point's wbt_lat_usec=0 is
            // inert there, said, and not written.
            assert!(settings.iter().all(|s| s["name"] != "wbt_lat_usec"));
            assert!(
                settings.iter().all(|s| s["applied"] == true),
                "{settings:?}"
            );
        } else {
            assert!(settings.is_empty(), "the baseline sets nothing: {j}");
        }
    }
    let inert = &show["experiment"]["config"]["inert"];
    assert_eq!(inert[0]["setting"], "wbt_lat_usec=0", "{inert}");
    // Everything as it was: queues, mounts, no group of iolab's, and the
    // root's subtree_control (iolab enabled io there) back to before.
    assert_eq!(read(&out, "state-before"), read(&out, "state-after"));
    assert_eq!(read(&out, "groups-before"), read(&out, "groups-after"));
    assert!(!read(&out, "groups-after").contains("iolab-"));
}

/// A setting flag is a one-value setting of the plan: `--read-ahead-kb
/// 128` and `--vary read_ahead_kb=128` make the same cells, each applies
/// the value through the guard and reads it back, the target itself sees
/// it in force during its start (it reads the queue's file), and the lab's
/// own value is back afterwards.
#[test]
fn a_setting_flag_and_a_one_value_vary_make_the_same_cells_both_read_back() {
    let test = "a_setting_flag_and_a_one_value_vary_make_the_same_cells_both_read_back";
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return;
    }
    let _m = machine();
    let b = Bench::new("control-flag");
    let up = b.env.up(&["--size", "256MiB"]);
    let dev = lab_env::kname(lab_env::s(&up, "device"));
    let ra = Path::new("/sys/block")
        .join(&dev)
        .join("queue/read_ahead_kb");
    // The lab's own value, set by hand on our own lab: not 128, so a
    // setting that was never written would show.
    std::fs::write(&ra, "1024").unwrap();
    let seen = b.env.run.path().join("seen");
    let target = format!("cat {} >> {}", ra.display(), seen.display());
    let run = |form: &[&str]| {
        let out = b
            .cmd()
            .args(["startup", "--lab", &b.env.name, "--reps", "2"])
            .args(["--schedulers", "mq-deadline", "--workloads", "1r"])
            .args(["--warmup", "0.5", "--load-option", "size=16M"])
            .args(form)
            .arg("--db")
            .arg(&b.db)
            .args(["--", "sh", "-c", &target])
            .timeout(Duration::from_secs(300))
            .output()
            .unwrap();
        ok(&out);
        assert_eq!(std::fs::read_to_string(&ra).unwrap().trim(), "1024");
    };
    run(&["--read-ahead-kb", "128"]);
    run(&["--vary", "read_ahead_kb=128"]);
    // Every start (2 cells × 2 reps, idle included, of each form) read 128.
    let lines = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(lines.lines().collect::<Vec<_>>(), ["128"; 8], "{lines}");
    let cells = |id: u64| {
        let r = b.export(id);
        let mut cells: Vec<(String, String, Value)> = r["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["scheduler"].as_str().unwrap().to_string(),
                    x["workload"].as_str().unwrap().to_string(),
                    x["variant"].clone(),
                )
            })
            .collect();
        cells.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let read: Vec<Value> = r["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["kind"] == "cell_io")
            .flat_map(|a| a["json"]["settings"].as_array().unwrap().clone())
            .collect();
        (cells, read)
    };
    let (flag, flag_read) = cells(1);
    let (vary, vary_read) = cells(2);
    assert_eq!(flag, vary);
    assert_eq!(flag.len(), 4, "{flag:?}");
    for read in [&flag_read, &vary_read] {
        assert!(!read.is_empty());
        for s in read.iter() {
            assert_eq!(s["name"], "read_ahead_kb", "{s}");
            assert_eq!(s["read"], "128", "{s}");
            assert_eq!(s["applied"], true, "{s}");
            assert_eq!(s["file"], ra.display().to_string(), "{s}");
        }
    }
    // The setting this issue added by one line of setting.rs: nomerges,
    // varied against the lab's own value, read back from the kernel's
    // file in its cells and the lab's own value back afterwards.
    let nm = Path::new("/sys/block").join(&dev).join("queue/nomerges");
    let own = std::fs::read_to_string(&nm).unwrap();
    run(&["--vary", "nomerges=-,2"]);
    assert_eq!(std::fs::read_to_string(&nm).unwrap(), own);
    let (cells3, read3) = cells(3);
    assert_eq!(cells3.len(), 8, "{cells3:?}");
    let set: Vec<&Value> = read3.iter().filter(|s| s["name"] == "nomerges").collect();
    assert!(!set.is_empty(), "{read3:?}");
    for s in set {
        assert_eq!(
            (s["read"].as_str(), s["applied"].as_bool()),
            (Some("2"), Some(true)),
            "{s}"
        );
        assert_eq!(s["file"], nm.display().to_string(), "{s}");
    }
    b.env.down();
}
