//! What the page-cache tests (`cache.rs`, `prefetch.rs`) share: the
//! binary, a directory whose pages can be evicted, data files, JSON output.
//!
//! Files live in /var/tmp (on the host disk): tmpfs pages cannot be
//! evicted, so tests that evict skip (saying why) when /var/tmp is tmpfs.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

pub const PAGE: u64 = 4096;

pub fn iolab() -> Command {
    Command::cargo_bin("iolab").unwrap()
}

/// A directory on a filesystem that can evict, or `None` (printed why).
pub fn evictable_dir(test: &str) -> Option<tempfile::TempDir> {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let fs = iolab_sys::mounts::containing(d.path()).map(|m| m.fstype);
    if matches!(fs.as_deref(), Some("tmpfs" | "ramfs")) {
        iolab_testkit::skip_line(format!(
            "skip {test}: /var/tmp is on tmpfs, whose pages cannot be evicted"
        ));
        return None;
    }
    Some(d)
}

/// A file of `pages` pages of `byte`, written and synced.
pub fn data_file(dir: &Path, name: &str, pages: u64, byte: u8) -> PathBuf {
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(&vec![byte; iolab_sys::cast::usize_of(pages * PAGE)])
        .unwrap();
    f.sync_all().unwrap();
    p
}

/// The JSON a successful command printed.
pub fn json(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
