//! `iolab prefetch` through the real binary: after prefetching a list,
//! `iolab cache` finds every listed range cached; plain files and stdin
//! lists; the background copy finishes and reports; `--scheduler` on a
//! private lab device is restored; bad input exits 2.
#![allow(clippy::unwrap_used)]

mod lab_env;

mod cache_env;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cache_env::{evictable_dir, iolab, json, PAGE};
use serde_json::Value;

/// A synced file of `pages` pages, evicted from the cache.
fn cold_file(dir: &Path, name: &str, pages: u64) -> PathBuf {
    let p = cache_env::data_file(dir, name, pages, 0xa5);
    let out = iolab()
        .args(["cache", "--evict", "--sync", "--json"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success());
    p
}

/// Cached byte ranges of `f`, from `iolab cache --json -r`.
fn cached_ranges(f: &Path) -> Vec<(u64, u64)> {
    let v = json(iolab().args(["cache", "--json", "-r"]).arg(f));
    v["files"][0]["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
        .collect()
}

fn covered(cached: &[(u64, u64)], off: u64, len: u64) -> bool {
    cached.iter().any(|&(o, l)| o <= off && off + len <= o + l)
}

#[test]
fn listed_ranges_are_all_cached_afterwards() {
    let Some(d) = evictable_dir("listed_ranges_are_all_cached_afterwards") else {
        return;
    };
    let a = cold_file(d.path(), "a.apk", 512);
    let b = cold_file(d.path(), "b.so", 64);
    let listed = [
        (0, 16 * PAGE),
        (100 * PAGE, 50 * PAGE),
        (400 * PAGE, 3 * PAGE),
    ];
    let list = d.path().join("boot.list");
    let ranges: Vec<String> = listed.iter().map(|(o, l)| format!("{o}:{l}")).collect();
    std::fs::write(
        &list,
        format!(
            "# test\n{} {}\n{}\n",
            a.display(),
            ranges.join(","),
            b.display()
        ),
    )
    .unwrap();
    let r = json(
        iolab()
            .args(["prefetch", "--wait=30s", "--json", "--threads", "3"])
            .arg(&list),
    );
    assert_eq!(r["files"], 2);
    assert_eq!(r["files_failed"], 0);
    assert_eq!(r["wait"], "complete", "{r}");
    assert_eq!(r["residency_percent"], 100.0, "{r}");
    assert_eq!(r["bytes_requested"], (16 + 50 + 3 + 64) * PAGE);
    assert!(r["start"]["mono_ns"].as_u64() <= r["end"]["mono_ns"].as_u64());
    // Cross-check with `iolab cache`: every listed range is cached, and the
    // plain-listed file entirely.
    let cached = cached_ranges(&a);
    for (o, l) in listed {
        assert!(covered(&cached, o, l), "{o}:{l} not in {cached:?}");
    }
    let v = json(iolab().args(["cache", "--json"]).arg(&b));
    assert_eq!(v["files"][0]["percent"], 100.0);
}

#[test]
fn cache_ranges_output_is_a_prefetch_list() {
    let Some(d) = evictable_dir("cache_ranges_output_is_a_prefetch_list") else {
        return;
    };
    let f = cold_file(d.path(), "data", 128);
    // Cache a pattern, record it with `cache -r`, evict, replay from stdin.
    let file = std::fs::File::open(&f).unwrap();
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random).unwrap();
    let mut buf = vec![0u8; iolab_sys::cast::usize_of(PAGE)];
    for p in [5, 6, 7, 90] {
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut buf, p * PAGE).unwrap();
    }
    let list = iolab()
        .args(["cache", "-r"])
        .arg(&f)
        .output()
        .unwrap()
        .stdout;
    let before = cached_ranges(&f);
    iolab()
        .args(["cache", "--evict", "--json"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(cached_ranges(&f).is_empty());
    let r = json(
        iolab()
            .args(["prefetch", "--wait", "--method", "willneed", "--json", "-"])
            .write_stdin(list),
    );
    assert_eq!(r["residency_percent"], 100.0, "{r}");
    assert_eq!(cached_ranges(&f), before);
}

#[test]
fn background_prefetch_returns_at_once_and_reports() {
    let Some(d) = evictable_dir("background_prefetch_returns_at_once_and_reports") else {
        return;
    };
    let f = cold_file(d.path(), "bg", 256);
    let report = d.path().join("report.json");
    let t = Instant::now();
    let out = iolab()
        .args([
            "prefetch",
            "--background",
            "--wait",
            "--json",
            "--log",
            "-o",
        ])
        .arg(&report)
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("background as pid"));
    assert!(out.stdout.is_empty());
    // The report file appears when the background copy is done.
    let deadline = t + Duration::from_secs(60);
    let v: Value = loop {
        if let Ok(text) = std::fs::read_to_string(&report) {
            if let Ok(v) = serde_json::from_str(&text) {
                break v;
            }
        }
        assert!(Instant::now() < deadline, "no report after 60 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(v["residency_percent"], 100.0, "{v}");
}

#[test]
fn scheduler_is_set_for_the_prefetch_and_restored() {
    if !iolab_testkit::root_or_skip(
        "scheduler_is_set_for_the_prefetch_and_restored",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let env = lab_env::Env::new("pf-sched");
    let up = env.up(&["--size", "64MiB", "--fs", "ext4"]);
    let dev = lab_env::kname(lab_env::s(&up, "device"));
    let mp = PathBuf::from(lab_env::s(&up, "mountpoint"));
    let sched =
        |d: &str| std::fs::read_to_string(format!("/sys/block/{d}/queue/scheduler")).unwrap();
    let before = sched(&dev);
    let target = if before.contains("[bfq]") {
        "none"
    } else {
        "bfq"
    };
    let f = mp.join("file");
    std::fs::write(&f, vec![1u8; 4 << 20]).unwrap();
    env.cmd()
        .args(["cache", "--evict", "--sync", "--json"])
        .arg(&f)
        .assert()
        .success();
    let out = env
        .cmd()
        .args([
            "prefetch",
            "--wait",
            "--json",
            "--diskstats",
            "--scheduler",
            target,
        ])
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sched(&dev), before, "scheduler not restored");
    let d = r["devices"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{r}");
    assert_eq!(d[0]["device"], dev.as_str());
    // The 4 MiB really came from the lab device (its own reads only).
    assert!(d[0]["read_bytes"].as_u64().unwrap() >= 4 << 20, "{r}");
    assert_eq!(r["residency_percent"], 100.0);
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    let list = d.path().join("l");
    std::fs::write(&list, "/bin/sh 0:0\n").unwrap();
    for args in [
        vec![
            "prefetch".to_string(),
            "--list".into(),
            list.display().to_string(),
        ],
        vec!["prefetch".into(), "/nonexistent/iolab-pf".into()],
        vec![
            "prefetch".into(),
            "--method".into(),
            "mmap".into(),
            "/bin/sh".into(),
        ],
        vec![
            "prefetch".into(),
            "--ioprio".into(),
            "rt:9".into(),
            "/bin/sh".into(),
        ],
        vec![
            "prefetch".into(),
            "--nice".into(),
            "40".into(),
            "/bin/sh".into(),
        ],
        vec!["prefetch".into(), "--wait=soon".into(), "/bin/sh".into()],
        vec!["prefetch".into(), "--bogus".into()],
    ] {
        let out = iolab().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        if !args.contains(&"--bogus".to_string()) && !args.contains(&"--nice".to_string()) {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
    let out = iolab()
        .args(["prefetch", "--list"])
        .arg(&list)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(":1:") && err.contains("length 0"), "{err}");
}
