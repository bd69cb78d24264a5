//! `startup --memory-pressure auto`: before the start a helper fills
//! memory and is killed; reclaim takes a measured share of the target's
//! files, and what the run stores as left is what `iolab cache` (mincore /
//! cachestat, an independent reader) finds afterwards.
//!
//! The experiment runs inside a memory cgroup of 512 MiB made by the test
//! (v1 or v2, whichever this kernel mounts), with the file read from
//! inside it, so its pages are charged there: `auto` then fills the
//! cgroup's room (half a second) instead of the machine's (a minute on a
//! large VM), which also checks that `auto` honours a container's limit.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_env::{json_of, ok, text, Bench};

const LIMIT: u64 = 512 << 20;

/// A memory cgroup below this process's own, removed on drop.
struct MemCgroup {
    dir: PathBuf,
}

impl MemCgroup {
    fn make(name: &str) -> Option<MemCgroup> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let (base, path, v2) = own.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (id, ctrls, path) = (f.next()?, f.next()?, f.next()?);
            if ctrls.split(',').any(|c| c == "memory") {
                Some(("/sys/fs/cgroup/memory", path.to_string(), false))
            } else if id == "0" && Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
                Some(("/sys/fs/cgroup", path.to_string(), true))
            } else {
                None
            }
        })?;
        let parent = Path::new(base).join(path.trim_start_matches('/'));
        if v2 {
            let sub = std::fs::read_to_string(parent.join("cgroup.subtree_control")).ok()?;
            if !sub.split_whitespace().any(|c| c == "memory") {
                return None;
            }
        }
        let dir = parent.join(name);
        std::fs::create_dir(&dir).ok()?;
        let cg = MemCgroup { dir };
        let limit_file = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        std::fs::write(cg.dir.join(limit_file), LIMIT.to_string()).ok()?;
        Some(cg)
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // Its processes have exited; a cgroup directory goes with rmdir.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove {}", self.dir.display());
    }
}

fn cached_bytes(b: &Bench, f: &Path) -> u64 {
    let out = b.cmd().arg("cache").arg("--json").arg(f).output().unwrap();
    ok(&out);
    let v = json_of(&out.stdout);
    v["files"][0]["pages"].as_u64().unwrap() * 4096
}

#[test]
fn memory_pressure_evicts_a_measured_share_that_iolab_cache_confirms() {
    let test = "memory_pressure_evicts_a_measured_share_that_iolab_cache_confirms";
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return;
    }
    let b = Bench::new("mempress");
    let lab = b.env.up(&["--size", "256MiB"]);
    let mnt = PathBuf::from(lab["mountpoint"].as_str().unwrap());
    let file = mnt.join("app.bin");
    let st = std::process::Command::new("dd")
        .args([
            "if=/dev/urandom",
            "bs=1M",
            "count=32",
            "status=none",
            "conv=fsync",
        ])
        .arg(format!("of={}", file.display()))
        .status()
        .unwrap();
    assert!(st.success());
    let Some(cg) = MemCgroup::make(&format!("iolab-test-{}", std::process::id())) else {
        iolab_testkit::skip(
            test,
            "no memory cgroup could be made here (cgroup v2 without the memory controller delegated)",
        );
        return;
    };
    let iolab = assert_cmd::cargo::cargo_bin("iolab");
    // Inside the cgroup: evict the file (its pages were charged where dd
    // ran), read it back so they are charged here, then the experiment.
    let script = format!(
        "echo $$ > {procs} && {iolab} cache --evict {f} >/dev/null && cat {f} > /dev/null && \
         exec {iolab} startup --lab {lab} --reps 1 --workloads idle --schedulers none \
         --cold none --memory-pressure auto --evict {f} --json --db {db} -- true",
        procs = cg.dir.join("cgroup.procs").display(),
        iolab = iolab.display(),
        f = file.display(),
        lab = b.env.name,
        db = b.db.display()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("IOLAB_RUN_DIR", b.env.run.path())
        .output()
        .unwrap();
    ok(&out);
    let after = cached_bytes(&b, &file);
    drop(cg);
    let show = b.results(&["show", "1", "--json"]);
    ok(&show);
    let report = json_of(&show.stdout);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{report}");
    let mp = &runs[0]["extra"]["memory_pressure"];
    eprintln!("memory pressure: {mp}");
    // Before the fill the file was cached (the test read it): all of it
    // but a few pages the kernel may reclaim meanwhile (CI once saw 64
    // go, in a limited cgroup on a machine building in the background;
    // the cause was not traced).
    let before = mp["cached_before_bytes"].as_u64().unwrap();
    assert!((31u64 << 20..=32u64 << 20).contains(&before), "{mp}");
    // What the run stored as left is what iolab cache finds now (the
    // target, `true`, never touched the file).
    assert_eq!(mp["cached_after_bytes"].as_u64().unwrap(), after, "{mp}");
    // auto honoured the cgroup: less than its limit, most of its room.
    let filled = mp["filled_bytes"].as_u64().unwrap();
    assert!(filled < LIMIT && filled > LIMIT / 2, "{mp}");
    assert!(mp["helper_rss_bytes"].as_u64().unwrap() >= filled, "{mp}");
    // And it took a real share of the file (about half here: reclaim
    // leaves the cgroup's headroom, and which pages go is the kernel's LRU).
    assert!(after <= (24 << 20), "{after} of 32 MiB still cached: {mp}");
    assert!(
        text(&out.stdout).contains("\"cells\""),
        "{}",
        text(&out.stdout)
    );
    b.env.down();
}
