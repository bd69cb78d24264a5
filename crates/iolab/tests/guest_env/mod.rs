//! The qemu guest of scripts/guest/ for the integration tests: built from
//! Debian's kernel with this build's iolab, booted on one scenario, its
//! results read back.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the guest in `work/guest` (with `env` for build.sh, e.g.
/// IOLAB_GUEST_FIO=1), boots it on `scenario` and returns the directory
/// its /results went to (`work/out`); panics with the console on failure.
pub fn run_scenario(work: &Path, scenario: &str, env: &[(&str, &str)]) -> PathBuf {
    run_scenario_with(work, scenario, env, &[])
}

/// As [`run_scenario`], with `run_env` for run.sh (e.g. IOLAB_GUEST_ARGS).
pub fn run_scenario_with(
    work: &Path,
    scenario: &str,
    env: &[(&str, &str)],
    run_env: &[(&str, &str)],
) -> PathBuf {
    let guest = work.join("guest");
    let out = work.join("out");
    let t0 = std::time::Instant::now();
    let build = Command::new("bash")
        .arg(repo().join("scripts/guest/build.sh"))
        .env("IOLAB_BIN", assert_cmd::cargo::cargo_bin("iolab"))
        .env("IOLAB_GUEST_DIR", &guest)
        .env("IOLAB_GUEST_DEBS", "/var/cache/iolab-guest")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let t1 = std::time::Instant::now();
    let run = Command::new("bash")
        .arg(repo().join("scripts/guest/run.sh"))
        .arg(scenario)
        .arg(&out)
        .env("IOLAB_GUEST_DIR", &guest)
        .envs(run_env.iter().copied())
        .output()
        .unwrap();
    // Where a guest test's time went (the scenario's own phases, if it
    // marks them): shown with --nocapture, and beside a failure.
    eprintln!(
        "guest {scenario}: build {:.0} s, boot and scenario {:.0} s; phases (guest uptime): {}",
        (t1 - t0).as_secs_f64(),
        t1.elapsed().as_secs_f64(),
        std::fs::read_to_string(out.join("phases"))
            .unwrap_or_default()
            .replace('\n', "; ")
    );
    let console = std::fs::read_to_string(out.join("console.log")).unwrap_or_default();
    assert!(
        run.status.success(),
        "{}\n{console}",
        String::from_utf8_lossy(&run.stderr)
    );
    out
}

/// A result file of the scenario.
pub fn read(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))
}
