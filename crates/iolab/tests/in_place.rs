//! `startup --in DIR` on stacks this kernel can build natively: a loop
//! device over a file on a filesystem on another loop device (iolab goes
//! through the upper loop to the disk under its file), and btrfs over two
//! loop devices (both disks switched). The scheduler of each disk is read
//! from sysfs while the experiment runs and after; the scratch directory
//! is gone afterwards. tmpfs and overlay are refused with exit 2. (The
//! dm-crypt and f2fs stacks this kernel lacks: tests/vm/stacks.rs.)
#![allow(clippy::unwrap_used)]

mod lab_env;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lab_env::have;

/// What a test made by hand, undone in reverse order when dropped.
struct Made {
    dir: tempfile::TempDir,
    undo: Vec<Vec<String>>,
}

impl Made {
    fn new() -> Made {
        Made {
            dir: tempfile::tempdir_in("/var/tmp").unwrap(),
            undo: Vec::new(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn sh(&self, cmd: &str) -> String {
        let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn mount_tmpfs(&mut self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(&p).unwrap();
        self.sh(&format!("mount -t tmpfs -o size=1500M t {}", p.display()));
        self.undo
            .push(vec!["umount".into(), p.display().to_string()]);
        p
    }

    /// A loop device over a new sparse file of `mib` MiB at `file`. The
    /// kernel sets a loop device's queue attributes from its backing file
    /// and keeps them after the detach: they are written back after it
    /// (undo runs last first), so the machine's free loop devices stay as
    /// they were.
    fn loop_over(&mut self, file: &Path, mib: u64) -> String {
        self.sh(&format!("truncate -s {mib}M {}", file.display()));
        // Another test may take the device found free before this one
        // attaches it: find again.
        let (dev, attrs) = (0..50)
            .find_map(|_| {
                let dev = self.sh("losetup --find");
                let queue = format!("/sys/block/{}/queue", dev.trim_start_matches("/dev/"));
                let attrs: Vec<(String, String)> = ["read_ahead_kb", "rotational"]
                    .iter()
                    .filter_map(|a| {
                        let path = format!("{queue}/{a}");
                        Some((
                            std::fs::read_to_string(&path).ok()?.trim().to_string(),
                            path,
                        ))
                    })
                    .collect();
                let ok = Command::new("losetup")
                    .arg(&dev)
                    .arg(file)
                    .status()
                    .is_ok_and(|s| s.success());
                ok.then_some((dev, attrs))
            })
            .expect("no loop device could be attached in 50 tries");
        // Undo runs last first: the detach, then before it the queue
        // written back while the device is still this test's (the kernel
        // keeps it through the detach; a free device with the backing
        // file's values would be read as "how it was" by another test).
        self.undo
            .push(vec!["losetup".into(), "-d".into(), dev.clone()]);
        for (v, path) in attrs {
            self.undo
                .push(vec!["sh".into(), "-c".into(), format!("echo {v} > {path}")]);
        }
        dev
    }

    fn mount(&mut self, dev: &str, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(&p).unwrap();
        self.sh(&format!("mount {dev} {}", p.display()));
        self.undo
            .push(vec!["umount".into(), p.display().to_string()]);
        p
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        for c in self.undo.iter().rev() {
            let _ = Command::new(&c[0]).args(&c[1..]).status();
        }
    }
}

fn kname(dev: &str) -> String {
    dev.trim_start_matches("/dev/").to_string()
}

fn scheduler(dev: &str) -> String {
    std::fs::read_to_string(format!("/sys/block/{}/queue/scheduler", kname(dev)))
        .unwrap()
        .trim()
        .to_string()
}

/// The app: 16 MiB of data in `dir/app`.
fn app_in(dir: &Path) {
    std::fs::create_dir_all(dir.join("app")).unwrap();
    std::fs::write(dir.join("app/data"), vec![3u8; 16 << 20]).unwrap();
}

/// `startup --in dir`, every device of `watch`'s scheduler sampled while
/// it runs; returns (stderr, the schedulers seen per device).
fn run_in(made: &Made, dir: &Path, watch: &[String]) -> (String, Vec<Vec<String>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (stop, watch) = (stop.clone(), watch.to_vec());
        std::thread::spawn(move || {
            let mut seen = vec![Vec::new(); watch.len()];
            while !stop.load(Ordering::Relaxed) {
                for (i, d) in watch.iter().enumerate() {
                    let s = scheduler(d);
                    if !seen[i].contains(&s) {
                        seen[i].push(s);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            seen
        })
    };
    let out = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .env("IOLAB_RUN_DIR", made.path("run"))
        .arg("startup")
        .arg("--in")
        .arg(dir)
        .args(["--schedulers", "mq-deadline,bfq", "--workloads", "idle,1r"])
        .args(["--reps", "1", "--warmup", "1", "--timeout", "30"])
        .args(["--load-option", "size=32M", "--progress", "plain", "--db"])
        .arg(made.path("r.db"))
        .args(["--", "sh", "-c"])
        .arg(format!("cat {}/app/data > /dev/null", dir.display()))
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let seen = sampler.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    (err, seen)
}

fn current(s: &str) -> &str {
    s.split('[').nth(1).unwrap().split(']').next().unwrap()
}

#[test]
fn a_loop_over_a_file_on_another_loop_is_measured_on_the_lower_disk() {
    if !iolab_testkit::root_or_skip(
        "a_loop_over_a_file_on_another_loop_is_measured_on_the_lower_disk",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let mut m = Made::new();
    // The lower "disk": a loop device over a file on tmpfs (nothing
    // further down, so it is the bottom), ext4 on it; a file there backs
    // the upper loop device, ext4 on that, the app in it.
    let ram = m.mount_tmpfs("ram");
    let lower = m.loop_over(&ram.join("disk.img"), 600);
    m.sh(&format!("mkfs.ext4 -q {lower}"));
    let fs1 = m.mount(&lower, "fs1");
    let upper = m.loop_over(&fs1.join("inner.img"), 300);
    m.sh(&format!("mkfs.ext4 -q {upper}"));
    let fs2 = m.mount(&upper, "fs2");
    app_in(&fs2);
    let (lower_before, upper_before) = (scheduler(&lower), scheduler(&upper));

    let (err, seen) = run_in(&m, &fs2, &[lower.clone(), upper.clone()]);
    let want = format!(
        "iolab: in place: {} (ext4) → {} (file {}) [{}] → {} (file {}) [{}]",
        fs2.display(),
        kname(&upper),
        fs1.join("inner.img").display(),
        current(&upper_before),
        kname(&lower),
        ram.join("disk.img").display(),
        current(&lower_before)
    );
    assert_eq!(err.lines().next().unwrap(), want, "{err}");
    // The schedulers under test were on the lower disk, in turn; the
    // upper loop's own queue was left alone; both as before after.
    for s in ["[mq-deadline]", "[bfq]"] {
        assert!(
            seen[0].iter().any(|x| x.contains(s)),
            "{s} not seen: {seen:?}"
        );
    }
    assert_eq!(seen[1], std::slice::from_ref(&upper_before), "{seen:?}");
    assert_eq!(
        (scheduler(&lower), scheduler(&upper)),
        (lower_before, upper_before)
    );
    assert_eq!(
        std::fs::read_dir(&fs2)
            .unwrap()
            .filter(|e| e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("iolab"))
            .count(),
        0,
        "scratch directory left"
    );
}

#[test]
fn btrfs_over_two_loop_devices_switches_both() {
    if !iolab_testkit::root_or_skip(
        "btrfs_over_two_loop_devices_switches_both",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    if !have("mkfs.btrfs") {
        iolab_testkit::skip(
            "btrfs_over_two_loop_devices_switches_both",
            "needs mkfs.btrfs (apt-get install btrfs-progs)",
        );
        return;
    }
    let mut m = Made::new();
    let ram = m.mount_tmpfs("ram");
    let a = m.loop_over(&ram.join("a.img"), 400);
    let b = m.loop_over(&ram.join("b.img"), 400);
    m.sh(&format!("mkfs.btrfs -q -f -d raid0 -m raid1 {a} {b}"));
    let fs = m.mount(&a, "fs");
    app_in(&fs);
    let before = (scheduler(&a), scheduler(&b));
    let (err, seen) = run_in(&m, &fs, &[a.clone(), b.clone()]);
    let first = err.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("iolab: in place: {} (btrfs) → {{", fs.display())),
        "{err}"
    );
    for d in [&a, &b] {
        assert!(first.contains(&kname(d)), "{first}");
    }
    for (i, d) in [&a, &b].iter().enumerate() {
        for s in ["[mq-deadline]", "[bfq]"] {
            assert!(
                seen[i].iter().any(|x| x.contains(s)),
                "{d}: {s} not seen: {seen:?}"
            );
        }
    }
    assert_eq!((scheduler(&a), scheduler(&b)), before);
}

#[test]
fn tmpfs_and_overlay_are_refused() {
    if !iolab_testkit::root_or_skip(
        "tmpfs_and_overlay_are_refused",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let mut m = Made::new();
    let ram = m.mount_tmpfs("ram");
    for d in ["lower", "upper", "work", "ov"] {
        std::fs::create_dir_all(ram.join(d)).unwrap();
    }
    let ov = ram.join("ov");
    m.sh(&format!(
        "mount -t overlay ov -o lowerdir={r}/lower,upperdir={r}/upper,workdir={r}/work {o}",
        r = ram.display(),
        o = ov.display()
    ));
    m.undo.push(vec!["umount".into(), ov.display().to_string()]);
    for (dir, fs) in [(&ram, "tmpfs"), (&ov, "overlay")] {
        let out = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
            .env("IOLAB_RUN_DIR", m.path("run"))
            .arg("startup")
            .arg("--in")
            .arg(dir)
            .arg("--db")
            .arg(m.path("r.db"))
            .args(["--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{fs}: {err}");
        assert!(err.contains(&format!("is on {fs}")), "{err}");
        assert!(err.contains("which no block device holds"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        // Nothing written there.
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            if fs == "tmpfs" { 4 } else { 0 }
        );
    }
}
