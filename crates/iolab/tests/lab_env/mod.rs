//! Shared fixtures of the `iolab lab` integration tests: a private run
//! directory and image directory per test, and readers of the kernel state
//! a lab leaves (or must not leave) behind.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// A task's I/O priority class and nice value as the kernel reports them
/// (ioprio_get, /proc/TID/stat field 19): the outside truth of what iolab
/// set on a process it did not start.
pub fn kernel_priorities(tid: i64) -> (i64, i64) {
    // SAFETY: ioprio_get(IOPRIO_WHO_PROCESS, tid) reads a number.
    let raw = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, tid) };
    let stat = std::fs::read_to_string(format!("/proc/{tid}/stat")).unwrap();
    let nice = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(16)
        .unwrap();
    (raw >> 13, nice.parse().unwrap())
}

pub fn have(prog: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Private run and image directories; takes every lab down when dropped,
/// before the directories go.
pub struct Env {
    pub run: tempfile::TempDir,
    pub img: tempfile::TempDir,
    pub name: String,
}

impl Env {
    pub fn new(test: &str) -> Env {
        Env {
            run: tempfile::tempdir().unwrap(),
            // Images on the host disk: /tmp may be a tmpfs.
            img: tempfile::tempdir_in("/var/tmp").unwrap(),
            name: format!("{test}-{}", std::process::id()),
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("iolab").unwrap();
        c.env("IOLAB_RUN_DIR", self.run.path());
        c
    }

    pub fn labs_dir(&self) -> PathBuf {
        self.run.path().join("labs")
    }

    /// `iolab lab up --json` with the lab's name and image dir.
    pub fn up(&self, extra: &[&str]) -> Value {
        let out = self
            .cmd()
            .args(["lab", "up", "--json", "--name", &self.name, "--dir"])
            .arg(self.img.path())
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "lab up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    pub fn down(&self) -> String {
        let out = self
            .cmd()
            .args(["lab", "down", &self.name])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "lab down failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self.cmd().args(["lab", "down", "--all"]).output();
    }
}

pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("no {key} in {v}"))
}

pub fn kname(dev_path: &str) -> String {
    dev_path.trim_start_matches("/dev/").to_string()
}

pub fn devno(name: &str) -> String {
    std::fs::read_to_string(format!("/sys/block/{name}/dev"))
        .unwrap()
        .trim()
        .to_string()
}

pub fn is_mounted(target: &Path) -> bool {
    iolab_sys::mounts::read().iter().any(|m| m.target == target)
}

/// Asserts nothing of a lab remains: no loop device over its image, no
/// mount, no image, no metadata or journal.
pub fn assert_gone(env: &Env, image: Option<&Path>, mountpoint: Option<&Path>) {
    if let Some(img) = image {
        assert!(!img.exists(), "{} left behind", img.display());
        let loops = iolab_guard::loops_backed_by(img);
        assert!(
            loops.is_empty(),
            "loop devices left over the image: {loops:?}"
        );
    }
    if let Some(mp) = mountpoint {
        assert!(!is_mounted(mp), "{} still mounted", mp.display());
        assert!(!mp.exists(), "mount point {} left behind", mp.display());
    }
    let left: Vec<_> = std::fs::read_dir(env.labs_dir())
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "files left in the labs dir: {left:?}");
}
