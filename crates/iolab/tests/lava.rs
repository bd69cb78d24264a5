//! `results export --format lava` read by LAVA's own code: Debian's
//! lava-dispatcher (downloaded, not installed, by bench/lava_check.py)
//! matches each line with its test shell's `signal` pattern and turns it
//! into a test case as a LAVA job would. The check also asserts one `.mean`
//! case per cell, equal to the cell mean `results show` gives.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::path::Path;
use std::time::Duration;

use bench_env::{ok, text, Bench};
use lab_env::root_or_skip;

#[test]
fn lava_lines_parse_with_lavas_own_pattern() {
    if !root_or_skip("lava_lines_parse_with_lavas_own_pattern") {
        return;
    }
    // LAVA's Python: Debian's, whose dist-packages hold its yaml, requests
    // and pexpect (.ci/run installs them).
    let python = Path::new("/usr/bin/python3");
    let has = |m: &str| {
        std::process::Command::new(python)
            .args(["-c", &format!("import {m}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let missing: Vec<&str> = ["yaml", "requests", "pexpect"]
        .into_iter()
        .filter(|m| !has(m))
        .collect();
    if !missing.is_empty() {
        iolab_testkit::skip(
            "lava_lines_parse_with_lavas_own_pattern",
            &format!("Debian's python3 lacks {missing:?} (apt-get install python3-yaml python3-requests python3-pexpect)"),
        );
        return;
    }
    let b = Bench::new("lava");
    ok(&b
        .cmd()
        .args(["startup", "--lab-size", "64MiB", "--reps", "2"])
        .args(["--schedulers", "none,mq-deadline", "--workloads", "idle"])
        .args(["--timeout", "10", "--db"])
        .arg(&b.db)
        .args(["--", "true"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap());
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/lava_check.py");
    let out = std::process::Command::new(python)
        .arg(&script)
        .args(["--id", "1", "--db"])
        .arg(&b.db)
        .arg("--iolab")
        .arg(&bin)
        .output()
        .unwrap();
    ok(&out);
    let said = text(&out.stdout);
    // Two cells, three metrics' worth of lines at most; the means checked.
    assert!(said.contains("one .mean case per cell (2)"), "{said}");
    assert!(
        said.contains("LAVA test cases parsed by lava-dispatcher's own code"),
        "{said}"
    );
}
