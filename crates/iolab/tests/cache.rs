//! `iolab cache` through the real binary on the real kernel: JSON fields,
//! eviction to ~0 %, ranges of a known read pattern, notes said once, bad
//! input and exit codes.
//!
//! Files live in /var/tmp (on the host disk): tmpfs pages cannot be
//! evicted, so tests that evict skip (saying why) when /var/tmp is tmpfs.
#![allow(clippy::unwrap_used)]

mod cache_env;

use std::os::unix::fs::FileExt;
use std::path::Path;

use cache_env::{evictable_dir, iolab, json, PAGE};

/// A file of `pages` pages of non-zero data, written and synced.
fn data_file(dir: &Path, name: &str, pages: u64) -> std::path::PathBuf {
    cache_env::data_file(dir, name, pages, 0x5a)
}

#[test]
fn json_has_fincore_fields_and_totals() {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = data_file(d.path(), "a", 16);
    let v = json(iolab().args(["cache", "--json"]).arg(&f));
    let file = &v["files"][0];
    assert_eq!(file["file"], f.to_str().unwrap());
    assert_eq!(file["size"], 16 * PAGE);
    assert_eq!(file["total_pages"], 16);
    let pages = file["pages"].as_u64().unwrap();
    assert_eq!(file["res"].as_u64().unwrap(), pages * PAGE);
    assert!(file["percent"].as_f64().unwrap() <= 100.0);
    assert_eq!(v["totals"]["files"], 1);
    assert_eq!(v["totals"]["pages"], pages);
    if v["cachestat"] == true {
        for k in [
            "dirty_pages",
            "writeback_pages",
            "evicted_pages",
            "recently_evicted_pages",
        ] {
            assert!(file[k].is_u64(), "{k} missing: {file}");
        }
    }
    assert!(file.get("ranges").is_none());
    // -r adds ranges, -v the map.
    let v = json(iolab().args(["cache", "--json", "-r", "-v"]).arg(&f));
    assert_eq!(v["files"][0]["map"].as_str().unwrap().len(), 16);
    assert!(v["files"][0]["ranges"].is_array());
}

#[test]
fn evict_leaves_about_nothing_cached() {
    let Some(d) = evictable_dir("evict_leaves_about_nothing_cached") else {
        return;
    };
    let f = data_file(d.path(), "big", 256);
    // Read it in, so there is something to evict.
    let v = json(iolab().args(["cache", "--touch", "--json"]).arg(&f));
    assert_eq!(v["files"][0]["pages"], 256, "{v}");
    let v = json(
        iolab()
            .args(["cache", "--evict", "--sync", "--json"])
            .arg(&f),
    );
    assert_eq!(v["files"][0]["before_pages"], 256);
    assert!(v["files"][0]["pages"].as_u64().unwrap() <= 1, "{v}");
    let v = json(iolab().args(["cache", "--json"]).arg(&f));
    assert!(v["files"][0]["percent"].as_f64().unwrap() < 1.0, "{v}");
}

#[test]
fn ranges_are_exactly_the_pages_read() {
    let Some(d) = evictable_dir("ranges_are_exactly_the_pages_read") else {
        return;
    };
    let f = data_file(d.path(), "pattern", 64);
    json(
        iolab()
            .args(["cache", "--evict", "--sync", "--json"])
            .arg(&f),
    );
    let file = std::fs::File::open(&f).unwrap();
    // POSIX_FADV_RANDOM turns readahead off for this file: each pread
    // brings in just its page.
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random).unwrap();
    let mut buf = vec![0u8; iolab_sys::cast::usize_of(PAGE)];
    for page in [0, 1, 2, 10, 40, 41, 42, 43, 63] {
        file.read_exact_at(&mut buf, page * PAGE).unwrap();
    }
    let out = iolab().args(["cache", "-r"]).arg(&f).output().unwrap();
    assert!(out.status.success());
    let want = format!(
        "{} 0:{},{}:{},{}:{},{}:{}\n",
        f.display(),
        3 * PAGE,
        10 * PAGE,
        PAGE,
        40 * PAGE,
        4 * PAGE,
        63 * PAGE,
        PAGE
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

#[test]
fn recursive_walk_says_symlinks_once_and_counts_files() {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::create_dir_all(d.path().join("sub/deeper")).unwrap();
    for f in ["x", "sub/y", "sub/deeper/z"] {
        std::fs::write(d.path().join(f), "hello").unwrap();
    }
    for l in ["l1", "sub/l2", "sub/deeper/l3"] {
        std::os::unix::fs::symlink("/usr/bin", d.path().join(l)).unwrap();
    }
    let out = iolab()
        .args(["cache", "-R", "--summary"])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("symbolic link").count(), 1, "{err}");
    assert!(err.contains("3 symbolic links not followed"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("total: 3 files"));
    // Without -R: the top level only, and the subdirectory is mentioned.
    let v = json(iolab().args(["cache", "--json"]).arg(d.path()));
    assert_eq!(v["totals"]["files"], 1);
    assert_eq!(v["skipped"]["subdirs_not_walked"], 1);
}

#[test]
fn table_has_a_bar_per_file() {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = data_file(d.path(), "t", 4);
    let out = iolab().args(["cache"]).arg(&f).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().nth(1).unwrap();
    assert!(line.contains('[') && line.contains(']'), "{text}");
    assert!(line.ends_with(f.to_str().unwrap()), "{text}");
    assert!(text.lines().last().unwrap().starts_with("total: 1 files"));
}

#[test]
fn foreign_files_are_explained_not_zeroed() {
    if !iolab_sys::is_root() {
        iolab_testkit::skip_line(
            "skip foreign_files_are_explained_not_zeroed: needs root to run as nobody".to_string(),
        );
        return;
    }
    let have_setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok();
    if !have_setpriv {
        iolab_testkit::skip_line(
            "skip foreign_files_are_explained_not_zeroed: setpriv not installed".to_string(),
        );
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    // /usr/bin/ls is root's and read-only for nobody: cachestat says EPERM,
    // mincore would claim every page cached.
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["cache", "/usr/bin/ls"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Permission denied") && err.contains(bin.to_str().unwrap()) {
        iolab_testkit::skip_line(format!(
            "skip foreign_files_are_explained_not_zeroed: nobody cannot run {bin:?}"
        ));
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot be inspected"), "{err}");
    assert!(err.contains("run as root"), "{err}");
}

#[test]
fn bad_path_and_bad_options_exit_2() {
    let out = iolab()
        .args(["cache", "/nonexistent/iolab-cache-test"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/iolab-cache-test"), "{err}");
    assert!(err.contains("expected existing files"), "{err}");

    let out = iolab()
        .args(["cache", "--frobnicate", "/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = iolab().args(["cache", "--sync", "/"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--sync without --evict");
    let out = iolab().args(["cache"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no path");
}
