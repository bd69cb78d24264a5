//! `iolab record` and `iolab startup --prefetch` through the real binary:
//! a command that reads known ranges of known files (with POSIX_FADV_RANDOM,
//! so readahead adds nothing) is recorded as exactly those ranges, files in
//! order of first access; pages another process reads in the same window
//! are left out (and seen by an `--all-pids` recording of the same
//! window); a startup matrix with `--prefetch record` stores a prefetch
//! artifact per start with prefetch and shows both columns; bad input
//! exits 2.
#![allow(clippy::unwrap_used)]

mod lab_env;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lab_env::Env;
use serde_json::Value;

const PAGE: u64 = 4096;

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("iolab").display().to_string()
}

/// A directory whose files can be evicted (not tmpfs), or `None` with the
/// reason printed.
fn evictable_dir(test: &str) -> Option<tempfile::TempDir> {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let fs = iolab_sys::mounts::containing(d.path()).map(|m| m.fstype);
    if matches!(fs.as_deref(), Some("tmpfs" | "ramfs")) {
        iolab_testkit::skip_line(format!("skip {test}: /var/tmp is on tmpfs, whose pages never enter the page cache through the traced path"));
        return None;
    }
    Some(d)
}

fn file(dir: &Path, name: &str, pages: u64) -> PathBuf {
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(&vec![0x5a; iolab_sys::cast::usize_of(pages * PAGE)])
        .unwrap();
    f.sync_all().unwrap();
    std::fs::canonicalize(p).unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn record(args: &[&str], command: &[&str]) -> Value {
    let out = assert_cmd::Command::cargo_bin("iolab")
        .unwrap()
        .arg("record")
        .arg("--json")
        .args(args)
        .arg("--")
        .args(command)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    ok(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The recorded files as (path, [(offset, len)]), in the order given.
fn files(rec: &Value) -> Vec<(String, Vec<(u64, u64)>)> {
    rec["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| {
            let ranges = f["ranges"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| (r["offset"].as_u64().unwrap(), r["len"].as_u64().unwrap()))
                .collect();
            Some((f["file"].as_str()?.to_string(), ranges))
        })
        .collect()
}

fn ranges_of<'a>(files: &'a [(String, Vec<(u64, u64)>)], p: &Path) -> Option<&'a [(u64, u64)]> {
    let p = p.to_str().unwrap();
    files.iter().find(|f| f.0 == p).map(|f| f.1.as_slice())
}

#[test]
fn a_command_reading_known_ranges_is_recorded_as_exactly_those_ranges() {
    let test = "a_command_reading_known_ranges_is_recorded_as_exactly_those_ranges";
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return;
    }
    let Some(d) = evictable_dir(test) else { return };
    let a = file(d.path(), "a.apk", 64);
    let b = file(d.path(), "b.so", 32);
    let list = d.path().join("out.list");
    let script = format!(
        "{0} read-ranges {b} 12288:8192,4096:4096 && {0} read-ranges {a} 65536:16384,0:8192,40960:4096",
        bin(),
        a = a.display(),
        b = b.display()
    );
    let rec = record(
        &[
            "--evict",
            d.path().to_str().unwrap(),
            "-o",
            list.to_str().unwrap(),
        ],
        &["sh", "-c", &script],
    );
    let got = files(&rec);
    // Pages merge into ranges sorted by offset; b was read first.
    assert_eq!(
        ranges_of(&got, &b),
        Some(&[(4096, 4096), (12288, 8192)][..]),
        "{rec:#}"
    );
    assert_eq!(
        ranges_of(&got, &a),
        Some(&[(0, 8192), (40960, 4096), (65536, 16384)][..]),
        "{rec:#}"
    );
    let pos = |p: &Path| got.iter().position(|f| f.0 == p.to_str().unwrap()).unwrap();
    assert!(
        pos(&b) < pos(&a),
        "files not in first-access order: {got:?}"
    );
    assert_eq!(rec["lost"], 0);
    assert_eq!(rec["exit_code"], 0);
    // The list file is the same in seed 001's format.
    let written = std::fs::read_to_string(&list).unwrap();
    assert!(
        written.contains(&format!("{} 4096:4096,12288:8192\n", b.display())),
        "{written}"
    );
    assert!(
        written.contains(&format!("{} 0:8192,40960:4096,65536:16384\n", a.display())),
        "{written}"
    );
}

/// Evicts `f` and reads it whole, again and again, until `stop`.
fn reader_loop(f: PathBuf, stop: Arc<AtomicBool>, rounds: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        let h = std::fs::File::open(&f).unwrap();
        rustix::fs::fadvise(&h, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        let _ = std::fs::read(&f).unwrap();
        rounds.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn pages_another_process_reads_in_the_same_window_are_excluded() {
    let test = "pages_another_process_reads_in_the_same_window_are_excluded";
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return;
    }
    let Some(d) = evictable_dir(test) else { return };
    let mine = file(d.path(), "mine", 16);
    let other = file(d.path(), "other", 64);
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let reader = {
        let (o, s, r) = (other.clone(), stop.clone(), rounds.clone());
        std::thread::spawn(move || reader_loop(o, s, r))
    };
    let script = format!(
        "{0} read-ranges {1} 0:4096 && sleep 0.4 && {0} read-ranges {1} 32768:4096",
        bin(),
        mine.display()
    );
    let before = rounds.load(Ordering::Relaxed);
    let rec = record(&["--evict", mine.to_str().unwrap()], &["sh", "-c", &script]);
    let during = rounds.load(Ordering::Relaxed) - before;
    // Control: the same kind of window recorded for every task does see
    // the other process's pages.
    let dev = d.path().to_str().unwrap();
    let all = record(&["--all-pids", "--dev", dev, "--duration", "0.4"], &[]);
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();

    let got = files(&rec);
    assert_eq!(
        ranges_of(&got, &mine),
        Some(&[(0, 4096), (32768, 4096)][..]),
        "{rec:#}"
    );
    assert!(
        during > 0,
        "the other reader did not run during the recording"
    );
    assert!(
        ranges_of(&got, &other).is_none(),
        "another process's pages were recorded: {got:?}"
    );
    assert_eq!(
        ranges_of(&files(&all), &other),
        Some(&[(0, 64 * PAGE)][..]),
        "{all:#}"
    );
}

#[test]
fn startup_with_prefetch_stores_prefetch_artifacts_and_shows_both_columns() {
    let test = "startup_with_prefetch_stores_prefetch_artifacts_and_shows_both_columns";
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return;
    }
    let env = Env::new("recpf");
    let db = env.run.path().join("results.db");
    let out = env
        .cmd()
        .arg("startup")
        .args([
            "--lab-size",
            "256MiB",
            "--schedulers",
            "none",
            "--workloads",
            "idle",
        ])
        .args(["--reps", "2", "--cold", "evict", "--evict", "{dir}/f"])
        .args([
            "--prepare",
            "dd if=/dev/urandom of={dir}/f bs=1M count=4 status=none",
        ])
        .args(["--prefetch", "record", "--prefetch-mode", "before,parallel"])
        .arg("--db")
        .arg(&db)
        .args(["--", "sh", "-c", "cat {dir}/f > /dev/null"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let _ = env.cmd().arg("restore").output();
    ok(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("prefetch: start-up [s] without → with"),
        "{stdout}"
    );
    for mode in ["before", "parallel"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with("idle") && l.contains(mode))
            .unwrap_or_else(|| panic!("no {mode} row:\n{stdout}"));
        assert!(row.contains('→') && row.contains("(×"), "{row}");
    }
    let id: String = stdout
        .split("stored as experiment ")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let out = env
        .cmd()
        .args(["results", "export", &id, "--format", "json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    ok(&out);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = report["experiment"]["config"]["prefetch_list"]
        .as_str()
        .unwrap();
    assert!(list.contains("{dir}/f 0:"), "{list}");
    let runs = report["runs"].as_array().unwrap();
    // Every run times the same target; the prefetch runs say so in their
    // own field, two of each variant.
    for r in runs {
        assert_eq!(r["target"], "sh -c cat {dir}/f > /dev/null", "{r}");
    }
    let variants: Vec<&Value> = runs.iter().map(|r| &r["variant"]).collect();
    for v in [
        Value::Null,
        "prefetch:before".into(),
        "prefetch:parallel".into(),
    ] {
        assert_eq!(
            variants.iter().filter(|x| ***x == v).count(),
            2,
            "{variants:?}"
        );
    }
    let arts: Vec<&Value> = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "prefetch")
        .collect();
    assert_eq!(arts.len(), 4, "{arts:#?}");
    for a in arts {
        let j = &a["json"];
        assert_eq!(
            a["variant"].as_str().unwrap(),
            format!("prefetch:{}", j["mode"].as_str().unwrap())
        );
        assert_eq!(j["report"]["pages_requested"], 1024, "{j:#}");
        assert_eq!(j["report"]["files_failed"], 0, "{j:#}");
    }
}

#[test]
fn bad_prefetch_and_record_input_exits_2() {
    let run = |args: &[&str]| {
        let out = assert_cmd::Command::cargo_bin("iolab")
            .unwrap()
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let (code, err) = run(&[
        "startup",
        "--prefetch",
        "x.list",
        "--prefetch-mode",
        "sideways",
        "--",
        "true",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("sideways") && err.contains("parallel"),
        "{err}"
    );
    let (code, err) = run(&["startup", "--prefetch-mode", "before", "--", "true"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, err) = run(&["record"]);
    assert_eq!(code, Some(2), "{err}");
    if iolab_sys::is_root() {
        assert!(err.contains("nothing to record"), "{err}");
        let (code, err) = run(&["record", "--all-pids", "--duration", "-1"]);
        assert_eq!(code, Some(2), "{err}");
        let (code, err) = run(&["record", "--dev", "/no/such/dir", "--", "true"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("MAJ:MIN"), "{err}");
        let (code, err) = run(&["record", "--", "/no/such/program"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("cannot start"), "{err}");
    }
}
