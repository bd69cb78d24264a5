//! Helpers shared by iolab's tests (a dev-dependency only; nothing here
//! reaches the product binary).
//!
//! - [`skip`]: a test that cannot run here (not root, a kernel feature or
//!   tool missing) says why and returns, except when
//!   `IOLAB_REQUIRE_ALL_TESTS=1` (set by `.ci/run`): there a skip fails
//!   the test, so what CI reports as passed really ran.
//! - [`within`]: runs a parser on hostile input in a thread and fails the
//!   test if it does not return in time (a hang is a finding too).
//! - [`mutated`]: a proptest strategy of damaged copies of a valid input
//!   (bytes flipped, runs overwritten, cut short, spliced), the inputs a
//!   crashed writer, a bad disk or a crafted file produce.
#![deny(missing_docs)]

use std::time::Duration;

use proptest::prelude::*;

/// The variable under which a skip fails the test.
pub const REQUIRE_ALL: &str = "IOLAB_REQUIRE_ALL_TESTS";

/// Reports that `test` cannot run here because of `why`, and returns; or,
/// under `IOLAB_REQUIRE_ALL_TESTS=1`, panics so the run fails.
///
/// ```no_run
/// if !is_root() { return iolab_testkit::skip("my_test", "needs root"); }
/// # fn is_root() -> bool { true }
/// ```
pub fn skip(test: &str, why: &str) {
    if required() {
        panic!(
            "{test} would skip ({why}), but {REQUIRE_ALL}=1 requires every test to run: \
             install what it needs or run as root"
        );
    }
    eprintln!("skip {test}: {why}");
}

/// [`skip`] for a whole message already formatted as `skip TEST: WHY`.
pub fn skip_line(line: String) {
    if required() {
        panic!("{line} — but {REQUIRE_ALL}=1 requires every test to run: install what it needs or run as root");
    }
    eprintln!("{line}");
}

/// True when the test may run as root; otherwise prints why it skips
/// (`skip TEST: needs root (NEEDS); CI runs as root`) and returns false.
/// `needs` says what the test does with root (loop devices, tracefs).
pub fn root_or_skip(test: &str, needs: &str) -> bool {
    if is_root() {
        return true;
    }
    skip_line(format!(
        "skip {test}: needs root ({needs}); CI runs as root"
    ));
    false
}

/// For a test that must run without privileges: returns true when this
/// process should run the test's body (it is not root). As root, it runs
/// the same test of the same test binary again as `nobody` (setpriv),
/// checks that it ran and passed there, and returns false. So a test
/// about what an unprivileged user sees runs in CI (root) too, instead of
/// skipping there.
pub fn unprivileged(test: &str) -> bool {
    if !is_root() {
        return true;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            skip(test, &format!("cannot find the test binary: {e}"));
            return false;
        }
    };
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(runner())
        .arg(&exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .current_dir("/")
        .output();
    match out {
        Err(e) => skip(
            test,
            &format!("cannot run setpriv (util-linux) to drop root: {e}"),
        ),
        Ok(o) => {
            let stdout = String::from_utf8_lossy(&o.stdout);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(
                o.status.success() && stdout.contains("1 passed"),
                "{test} as nobody (exit {:?}):\n{stdout}\n{stderr}",
                o.status.code()
            );
        }
    }
    false
}

/// The command that runs this test binary again: `IOLAB_TEST_RUNNER`
/// (set by scripts/build-aarch64.sh to cargo's runner,
/// qemu-aarch64-static) before the binary. A foreign test binary run by a
/// runner without binfmt registration cannot be exec'd by itself: execvp
/// then hands it to /bin/sh, which fails on its bytes.
pub fn self_command() -> std::io::Result<std::process::Command> {
    let exe = std::env::current_exe()?;
    let mut argv = runner();
    argv.push(exe.display().to_string());
    let mut c = std::process::Command::new(&argv[0]);
    c.args(&argv[1..]);
    Ok(c)
}

/// The runner's words (`IOLAB_TEST_RUNNER`, split at spaces), or none.
fn runner() -> Vec<String> {
    match std::env::var("IOLAB_TEST_RUNNER") {
        Ok(r) => r.split_whitespace().map(String::from).collect(),
        Err(_) => Vec::new(),
    }
}

/// True when skips are not allowed (CI).
pub fn required() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1")
}

/// True when running as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `f` on its own thread and returns its result; panics when it
/// takes longer than `limit` (the thread is left behind: the test process
/// ends soon after) or when it panics.
pub fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("{what} did not return within {limit:?} (hang or unbounded work)"),
    }
}

/// One way to damage an input.
#[derive(Debug, Clone)]
pub enum Damage {
    /// Set the byte at (position mod len) to the value.
    Set(usize, u8),
    /// Overwrite a run of bytes from (position mod len) with `0xff`s or
    /// `0x00`s: lengths and counts become huge or zero.
    Fill(usize, usize, bool),
    /// Cut the input at (position mod len).
    Truncate(usize),
    /// Copy a run from one place to another (a plausible but wrong field).
    Splice(usize, usize, usize),
}

/// Applies `damage` to a copy of `input`.
pub fn apply(input: &[u8], damage: &[Damage]) -> Vec<u8> {
    let mut v = input.to_vec();
    for d in damage {
        if v.is_empty() {
            break;
        }
        let n = v.len();
        match *d {
            Damage::Set(at, b) => v[at % n] = b,
            Damage::Fill(at, len, ones) => {
                let at = at % n;
                let end = (at + len).min(n);
                v[at..end].fill(if ones { 0xff } else { 0 });
            }
            Damage::Truncate(at) => v.truncate(at % n),
            Damage::Splice(from, to, len) => {
                let (from, to) = (from % n, to % n);
                let len = len.min(n - from).min(n - to);
                let run = v[from..from + len].to_vec();
                v[to..to + len].copy_from_slice(&run);
            }
        }
    }
    v
}

/// Damaged copies of `input`: 1 to 8 damages each.
pub fn mutated(input: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let damage = prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Damage::Set(a, b)),
        2 => (any::<usize>(), 1usize..16, any::<bool>()).prop_map(|(a, l, o)| Damage::Fill(a, l, o)),
        1 => any::<usize>().prop_map(Damage::Truncate),
        1 => (any::<usize>(), any::<usize>(), 1usize..64).prop_map(|(f, t, l)| Damage::Splice(f, t, l)),
    ];
    proptest::collection::vec(damage, 1..8).prop_map(move |d| apply(&input, &d))
}

/// The ids of the BPF programs `pid` holds open (its fds' `prog_id` in
/// /proc/PID/fdinfo: Debian's bpftool cannot name a program's holders).
pub fn bpf_programs_of(pid: u32) -> Vec<u64> {
    let mut ids = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return ids;
    };
    for e in dir.flatten() {
        // An fd closed since the listing holds no program.
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("prog_id:") {
                if let Ok(id) = v.trim().parse::<u64>() {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
        }
    }
    ids
}

/// Every BPF program id loaded now, as bpftool lists them. A list that
/// cannot be had panics: read as empty, it would pass any check that
/// programs are gone.
pub fn loaded_bpf_programs() -> Vec<u64> {
    let out = std::process::Command::new("bpftool")
        .args(["prog", "show", "--json"])
        .output()
        .expect("bpftool (Debian's bpftool package) lists the loaded programs");
    assert!(
        out.status.success(),
        "bpftool prog show: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let progs: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("bpftool's --json is JSON");
    progs
        .as_array()
        .expect("bpftool lists programs as an array")
        .iter()
        .filter_map(|p| p["id"].as_u64())
        .collect()
}

/// The fault campaign's BPF case: once `child` holds at least `at_least`
/// programs (within 10 s), SIGKILL it; every program it held must be gone
/// within 5 s (the kernel frees them a moment after their last file).
/// The programs are the killed process's own (by its fds), so another
/// test's tracer running meanwhile cannot stand in for them. Returns the
/// ids it held.
pub fn kill_leaves_no_bpf_program(
    child: &mut std::process::Child,
    at_least: usize,
) -> Result<Vec<u64>, String> {
    use std::time::{Duration, Instant};
    let until = Instant::now() + Duration::from_secs(10);
    let mut ids = bpf_programs_of(child.id());
    while ids.len() < at_least && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        ids = bpf_programs_of(child.id());
    }
    let _ = child.kill();
    let _ = child.wait();
    if ids.len() < at_least {
        return Err(format!("the {at_least} programs never showed: {ids:?}"));
    }
    let until = Instant::now() + Duration::from_secs(5);
    let mut left = ids.clone();
    while !left.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        let now = loaded_bpf_programs();
        left.retain(|id| now.contains(id));
    }
    if left.is_empty() {
        Ok(ids)
    } else {
        Err(format!(
            "programs {left:?} of {ids:?} still loaded after SIGKILL"
        ))
    }
}

/// What a user's next command does after a SIGKILL: `iolab restore` with
/// the killed run's `IOLAB_RUN_DIR` (`bin`: the iolab binary), which
/// undoes what its journal holds, e.g. the tracefs mount its guard made
/// where tracefs was absent (without it that mount outlives the test).
/// Its output, or why it failed or could not undo something.
pub fn restore_after_kill(
    bin: &std::path::Path,
    run_dir: &std::path::Path,
) -> Result<String, String> {
    let out = std::process::Command::new(bin)
        .env("IOLAB_RUN_DIR", run_dir)
        .arg("restore")
        .output()
        .map_err(|e| format!("running {} restore: {e}", bin.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() || text.contains("FAILED") {
        return Err(format!("iolab restore after the kill: {text}"));
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn damage_changes_or_cuts_the_input() {
        let input: Vec<u8> = (0..100).collect();
        assert_eq!(apply(&input, &[Damage::Truncate(10)]).len(), 10);
        assert_eq!(apply(&input, &[Damage::Set(205, 7)])[5], 7);
        assert_eq!(
            &apply(&input, &[Damage::Fill(98, 10, true)])[98..],
            &[0xff, 0xff]
        );
        assert_eq!(
            &apply(&input, &[Damage::Splice(0, 50, 3)])[50..53],
            &[0, 1, 2]
        );
    }

    /// Run only by [`a_skip_fails_under_the_ci_variable`], in a child.
    #[test]
    #[ignore]
    fn helper_that_skips() {
        skip("helper_that_skips", "a reason");
    }

    #[test]
    fn a_skip_fails_under_the_ci_variable() {
        let run = |strict: bool| {
            let mut c = self_command().unwrap();
            c.args(["tests::helper_that_skips", "--exact", "--ignored"]);
            if strict {
                c.env(REQUIRE_ALL, "1");
            } else {
                c.env_remove(REQUIRE_ALL);
            }
            c.output().unwrap()
        };
        assert!(run(false).status.success(), "a plain skip passes");
        let strict = run(true);
        assert!(
            !strict.status.success(),
            "under {REQUIRE_ALL}=1 a skip fails"
        );
        assert!(String::from_utf8_lossy(&strict.stdout).contains("would skip"));
    }

    #[test]
    fn within_returns_or_reports_a_hang() {
        assert_eq!(within(Duration::from_secs(5), "quick", || 7), 7);
        let hung = std::panic::catch_unwind(|| {
            within(Duration::from_millis(50), "slow", || {
                std::thread::sleep(Duration::from_secs(2));
            })
        });
        assert!(hung.is_err());
    }
}
