//! `iolab boot-init` as PID 1 (of a pid namespace: `unshare --pid --fork
//! --mount-proc`, so the test's "init" is a shell whose `$$` is 1): it
//! starts its helper and execs init, and nothing that goes wrong with the
//! prefetch stops or holds init beyond its own reads. Outside truths: the
//! wall clock (when init ran), fincore (util-linux: what the prefetch put
//! in the page cache), a throttled lab (a prefetch slow enough to be
//! killed or to outlast its budget).
#![allow(clippy::unwrap_used)]

mod lab_env;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lab_env::have;

fn iolab() -> PathBuf {
    assert_cmd::cargo::cargo_bin("iolab")
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Files of `mib` MiB each, written back (so drop_caches can drop them).
fn files(dir: &Path, n: usize, mib: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let p = dir.join(format!("f{i}"));
            let mut f = std::fs::File::create(&p).unwrap();
            #[allow(
                clippy::cast_possible_truncation,
                reason = "the low byte on purpose: a pattern that differs per file"
            )]
            let block: Vec<u8> = (0..1 << 20).map(|b| (b * 7 + i) as u8).collect();
            for _ in 0..mib {
                std::io::Write::write_all(&mut f, &block).unwrap();
            }
            f.sync_all().unwrap();
            p
        })
        .collect()
}

/// A prefetch list naming every file whole.
fn list(dir: &Path, files: &[PathBuf]) -> PathBuf {
    let text: String = files
        .iter()
        .map(|f| {
            format!(
                "{} 0:{}\n",
                f.display(),
                std::fs::metadata(f).unwrap().len()
            )
        })
        .collect();
    let p = dir.join("boot.list");
    std::fs::write(&p, text).unwrap();
    p
}

fn evict(files: &[PathBuf]) {
    for f in files {
        let file = std::fs::File::open(f).unwrap();
        rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    }
}

/// Pages of `f` in the page cache, by fincore (bytes).
fn cached(f: &Path) -> u64 {
    let out = Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "RES"])
        .arg(f)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// What init saw: its pid, when it ran (ns since the epoch), the helper's
/// pid, and the test's clock when the wrapper was started.
struct Boot {
    init_pid: String,
    init_ns: u128,
    helper: Option<String>,
    started_ns: u128,
    out: Output,
}

impl Boot {
    /// Delay from starting the wrapper to init running, ms.
    fn delay_ms(&self) -> f64 {
        (self.init_ns - self.started_ns) as f64 / 1e6
    }
}

/// Boots `init_script` under `iolab boot-init ARGS` as PID 1 of a new pid
/// namespace; init records what it saw in `dir/init`, then waits for the
/// helper to end (or `wait_helper` false: not at all) so the namespace
/// does not kill it.
fn boot(dir: &Path, args: &[&str], init_script: &str, env: &[(&str, &Path)]) -> Boot {
    boot_after(dir, &[], args, init_script, env)
}

/// [`boot`] with `words` before `boot-init`, where the kernel puts the
/// bare words of its command line it does not know (`splash`) when it
/// starts `init=iolab -- boot-init ...`.
fn boot_after(
    dir: &Path,
    words: &[&str],
    args: &[&str],
    init_script: &str,
    env: &[(&str, &Path)],
) -> Boot {
    let seen = dir.join("init");
    let _ = std::fs::remove_file(&seen);
    let script = format!(
        "echo \"$$ $(date +%s%N) ${{IOLAB_BOOT_HELPER_PID:-none}}\" > {seen}; {init_script}; \
         h=${{IOLAB_BOOT_SUPERVISOR_PID:-$IOLAB_BOOT_HELPER_PID}}; \
         while [ -n \"$h\" ] && [ -d /proc/$h ] && ! grep -q '^State:.*Z' /proc/$h/status; do sleep 0.02; done",
        seen = seen.display()
    );
    let started_ns = now_ns();
    let mut c = Command::new("timeout");
    c.args(["60", "unshare", "--pid", "--fork", "--mount-proc"])
        .arg(iolab())
        .args(words)
        .arg("boot-init")
        .args(args)
        .args(["--", "/bin/sh", "-c", &script])
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let text = std::fs::read_to_string(&seen).unwrap_or_else(|_| {
        panic!(
            "init never ran: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let f: Vec<&str> = text.split_whitespace().collect();
    Boot {
        init_pid: f[0].to_string(),
        init_ns: f[1].parse().unwrap(),
        helper: (f[2] != "none").then(|| f[2].to_string()),
        started_ns,
        out,
    }
}

fn stderr(b: &Boot) -> String {
    String::from_utf8_lossy(&b.out.stderr).into_owned()
}

fn ready(test: &str) -> Option<tempfile::TempDir> {
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return None;
    }
    for t in ["unshare", "fincore", "timeout"] {
        if !have(t) {
            iolab_testkit::skip(
                test,
                &format!("{t} is not installed (util-linux, coreutils)"),
            );
            return None;
        }
    }
    Some(tempfile::tempdir_in("/var/tmp").unwrap())
}

/// --before: init runs once the list is read (every page cached when it
/// starts, by fincore), and the prefetch's report is written.
#[test]
fn before_init_the_list_is_read_and_init_runs_as_pid_1() {
    let Some(d) = ready("before_init_the_list_is_read_and_init_runs_as_pid_1") else {
        return;
    };
    let fs = files(d.path(), 3, 8);
    let l = list(d.path(), &fs);
    evict(&fs);
    let report = d.path().join("report.json");
    let check = fs
        .iter()
        .map(|f| {
            format!(
                "fincore --bytes --noheadings --output RES {} >> {}/at-init",
                f.display(),
                d.path().display()
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let b = boot(
        d.path(),
        &[
            "--prefetch",
            l.to_str().unwrap(),
            "--before",
            "--report",
            report.to_str().unwrap(),
        ],
        &check,
        &[],
    );
    assert_eq!(b.init_pid, "1", "{}", stderr(&b));
    assert!(b.helper.is_some(), "{}", stderr(&b));
    let at_init = std::fs::read_to_string(d.path().join("at-init")).unwrap();
    for line in at_init.lines() {
        assert_eq!(line.trim(), (8u64 << 20).to_string(), "{at_init}");
    }
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["bytes_requested"], 24u64 << 20, "{r}");
    assert_eq!(r["wait"], "complete", "{r}");
    eprintln!("--before: init after {:.1} ms", b.delay_ms());
}

/// In the background (the default): init runs at once, the prefetch beside
/// it, and the files end up cached.
#[test]
fn in_the_background_init_runs_at_once_and_the_files_get_cached() {
    let Some(d) = ready("in_the_background_init_runs_at_once_and_the_files_get_cached") else {
        return;
    };
    let fs = files(d.path(), 2, 8);
    let l = list(d.path(), &fs);
    evict(&fs);
    // Else the check below would pass without a prefetch.
    assert!(fs.iter().all(|f| cached(f) == 0), "the files stayed cached");
    let b = boot(
        d.path(),
        &[
            "--prefetch",
            l.to_str().unwrap(),
            "--ioprio",
            "idle",
            "--nice",
            "19",
        ],
        "true",
        &[],
    );
    assert_eq!(b.init_pid, "1", "{}", stderr(&b));
    // In the background the helper still waits for its reads to finish
    // (--wait=300s) and init's script waits for the helper, so the reads
    // are over when boot() returns; its log line says how they ended
    // (complete, or settled with pages missing) and is in the message
    // below. The poll is for a page cache slow to show them (a CI run once
    // found f0 missing for 60 s after a 19 ms prefetch, with no cause kept:
    // the log line is there so the next one says).
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while fs.iter().any(|f| cached(f) < 8 << 20) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let seen: Vec<u64> = fs.iter().map(|f| cached(f)).collect();
    assert!(
        seen.iter().all(|&c| c >= 8 << 20),
        "not all cached after 60 s: fincore says {seen:?} bytes of {} each: {}",
        8u64 << 20,
        stderr(&b)
    );
    eprintln!("background: init after {:.1} ms", b.delay_ms());
}

/// One failure case: its name, boot-init's options, the environment.
type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a Path)>);

/// Whatever is wrong with the prefetch, init runs, as PID 1, within
/// milliseconds: a missing list, a corrupt one, one naming deleted files,
/// a bad option, a full disk under the guard's journal (--scheduler).
#[test]
fn a_bad_list_a_bad_option_or_a_full_disk_never_stops_init() {
    let Some(d) = ready("a_bad_list_a_bad_option_or_a_full_disk_never_stops_init") else {
        return;
    };
    let p = d.path();
    let corrupt = p.join("corrupt.list");
    std::fs::write(
        &corrupt,
        (0..4096u32)
            .map(|i| (i * 31 % 251) as u8)
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let fs = files(p, 2, 1);
    let stale = list(p, &fs);
    std::fs::remove_file(&fs[0]).unwrap();
    // A full filesystem for the guard's journal (--scheduler is guarded).
    let full = p.join("full");
    std::fs::create_dir(&full).unwrap();
    assert!(Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&full)
        .status()
        .unwrap()
        .success());
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=4k", "count=64"])
        .arg(format!("of={}", full.join("fill").display()))
        .stderr(Stdio::null())
        .status();
    let missing = p.join("missing.list");
    let mut delays = Vec::new();
    let cases: Vec<Case> = vec![
        (
            "missing list",
            vec!["--prefetch", missing.to_str().unwrap(), "--before"],
            vec![],
        ),
        (
            "corrupt list",
            vec!["--prefetch", corrupt.to_str().unwrap(), "--before"],
            vec![],
        ),
        (
            "deleted file",
            vec!["--prefetch", stale.to_str().unwrap(), "--before"],
            vec![],
        ),
        (
            "bad option",
            vec!["--prefetch", stale.to_str().unwrap(), "--bogus"],
            vec![],
        ),
        (
            "full disk",
            vec![
                "--prefetch",
                stale.to_str().unwrap(),
                "--before",
                "--scheduler",
                "none",
            ],
            vec![("IOLAB_RUN_DIR", full.as_path())],
        ),
    ];
    for (what, args, env) in &cases {
        let b = boot(p, args, "true", env);
        assert_eq!(b.init_pid, "1", "{what}: {}", stderr(&b));
        delays.push((what, b.delay_ms()));
        // Generous: a debug build, a busy host. The delays are printed.
        assert!(
            b.delay_ms() < 2000.0,
            "{what}: init after {} ms: {}",
            b.delay_ms(),
            stderr(&b)
        );
    }
    let _ = Command::new("umount").arg(&full).status();
    for (what, ms) in delays {
        eprintln!("{what}: init after {ms:.1} ms");
    }
}

/// As PID 1, the kernel's unknown bare words (Ubuntu's `splash`) come
/// before `boot-init`: it is found there, the prefetch runs and init runs;
/// run by hand, the same words are a usage error (exit 2), as any unknown
/// subcommand.
#[test]
fn the_kernels_bare_words_before_boot_init_do_not_stop_it() {
    let Some(d) = ready("the_kernels_bare_words_before_boot_init_do_not_stop_it") else {
        return;
    };
    let fs = files(d.path(), 2, 1);
    let l = list(d.path(), &fs);
    evict(&fs);
    let b = boot_after(
        d.path(),
        &["splash", "nomodeset"],
        &["--prefetch", l.to_str().unwrap(), "--before"],
        "true",
        &[],
    );
    assert_eq!(b.init_pid, "1", "{}", stderr(&b));
    assert!(b.helper.is_some(), "{}", stderr(&b));
    for f in &fs {
        assert_eq!(cached(f), 1 << 20, "{}", stderr(&b));
    }
    let out = Command::new(iolab())
        .args(["splash", "boot-init", "--prefetch"])
        .arg(&l)
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// A prefetch slow enough to outlast the budget (a lab throttled to 4
/// MiB/s): init starts at the budget; SIGKILLed, it starts at once.
#[test]
fn a_slow_prefetch_ends_at_its_budget_and_a_killed_one_at_once() {
    let Some(d) = ready("a_slow_prefetch_ends_at_its_budget_and_a_killed_one_at_once") else {
        return;
    };
    let env = lab_env::Env::new("boot-init");
    let lab = env.up(&["--size", "256MiB", "--bw", "4MiB/s"]);
    let mnt = PathBuf::from(lab["mountpoint"].as_str().unwrap());
    let fs = files(&mnt, 2, 8);
    let l = list(&mnt, &fs);
    // Budget: 16 MiB at 4 MiB/s take 4 s; init starts after 1.5 s.
    evict(&fs);
    let b = boot(
        d.path(),
        &[
            "--prefetch",
            l.to_str().unwrap(),
            "--before",
            "--budget",
            "1.5s",
        ],
        "exit 0",
        &[],
    );
    let ms = b.delay_ms();
    assert!(
        (1400.0..4000.0).contains(&ms),
        "init after {ms} ms: {}",
        stderr(&b)
    );
    assert!(
        stderr(&b).contains("still running after the"),
        "{}",
        stderr(&b)
    );
    // Killed: the test SIGKILLs the helper 0.5 s in; init runs right after,
    // and the scheduler the helper switched (`--scheduler`, treadahead -n)
    // is back: the helper's supervisor restored it, as no later iolab
    // run would during the boot.
    let sched = PathBuf::from(format!(
        "/sys/block/{}/queue/scheduler",
        lab["device"].as_str().unwrap().trim_start_matches("/dev/")
    ));
    let sched_before = std::fs::read_to_string(&sched).unwrap();
    let other = if sched_before.contains("[none]") {
        "mq-deadline"
    } else {
        "none"
    };
    evict(&fs);
    let killer_list = l.clone();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        let at = Instant::now();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(" prefetch ") && cmd.contains(killer_list.to_str().unwrap()) {
                let pid: i32 = e.file_name().to_str().unwrap().parse().unwrap();
                // SAFETY: kill(2) of the helper this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return Some((now_ns(), at));
            }
        }
        None
    });
    let b = boot(
        d.path(),
        &[
            "--prefetch",
            l.to_str().unwrap(),
            "--before",
            "--budget",
            "30s",
            "--scheduler",
            other,
        ],
        "true",
        &[],
    );
    let (killed_ns, _) = killer.join().unwrap().expect("the helper was running");
    assert_eq!(
        std::fs::read_to_string(&sched).unwrap(),
        sched_before,
        "{}",
        stderr(&b)
    );
    assert!(stderr(&b).contains("after the helper:"), "{}", stderr(&b));
    let after_kill = (b.init_ns as f64 - killed_ns as f64) / 1e6;
    // Init waited for the helper's death, not its list nor the restore: the
    // scheduler's switch back waits for the disk's queue to drain, with
    // the dead helper's reads still queued behind the 4 MiB/s throttle
    // (up to the 4 s the list takes); the supervisor does it beside init.
    assert!(stderr(&b).contains("ended (signal: 9"), "{}", stderr(&b));
    assert!(
        after_kill < 2000.0,
        "init {after_kill} ms after the kill: {}",
        stderr(&b)
    );
    assert!(b.delay_ms() < 3000.0, "{}", stderr(&b));
    eprintln!(
        "killed helper: init {after_kill:.1} ms after the kill:\n{}",
        stderr(&b)
    );
    drop(env);
}

/// --record: what the boot (init and what it runs) brought into the page
/// cache, until the marker file appeared, becomes a prefetch list.
#[test]
fn record_writes_what_the_boot_read_until_its_marker() {
    let Some(d) = ready("record_writes_what_the_boot_read_until_its_marker") else {
        return;
    };
    let fs = files(d.path(), 3, 2);
    evict(&fs);
    let out = d.path().join("recorded.list");
    let marker = d.path().join("boot-done");
    let reads = fs
        .iter()
        .map(|f| format!("cat {} > /dev/null", f.display()))
        .collect::<Vec<_>>()
        .join("; ");
    let b = boot(
        d.path(),
        &[
            "--record",
            out.to_str().unwrap(),
            "--until-file",
            marker.to_str().unwrap(),
            "--max",
            "30s",
        ],
        &format!("sleep 0.3; {reads}; touch {}", marker.display()),
        &[],
    );
    assert_eq!(b.init_pid, "1", "{}", stderr(&b));
    let text = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{e}: {}", stderr(&b)));
    for f in &fs {
        let line = text
            .lines()
            .find(|l| l.starts_with(&f.display().to_string()))
            .unwrap_or_else(|| panic!("{} not recorded: {text}", f.display()));
        assert!(line.contains("0:2097152"), "{line}");
    }
}
