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

/// Both tests run experiments and the dispatch compares the machine's
/// loop devices and mounts before and after its job: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Debian's python3 modules `names` lacks, or a skip saying which packages
/// bring them.
fn python_has(test: &str, names: &[(&str, &str)]) -> bool {
    let has = |m: &str| {
        std::process::Command::new(PYTHON)
            .args(["-c", &format!("import {m}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let missing: Vec<&str> = names
        .iter()
        .filter(|(m, _)| !has(m))
        .map(|(_, pkg)| *pkg)
        .collect();
    if missing.is_empty() {
        return true;
    }
    iolab_testkit::skip(
        test,
        &format!(
            "Debian's python3 lacks LAVA's dependencies (apt-get install {})",
            missing.join(" ")
        ),
    );
    false
}

/// LAVA's Python: Debian's, whose dist-packages hold the dispatcher's
/// dependencies (.ci/run installs them).
const PYTHON: &str = "/usr/bin/python3";

/// Debian's lava-run executes lava/iolab-startup.yaml from this repository
/// on an `ssh` device (an sshd on 127.0.0.1), with this iolab served over
/// HTTP: the job completes, LAVA records one case per cell and metric in
/// a test set per workload, each equal to `results show --json` on the
/// database the job hands back, and nothing is left behind. Then a
/// definition whose experiment fails: a failed case with the reason, the
/// job still Complete.
#[test]
fn lavas_dispatcher_runs_the_definition_and_records_every_case() {
    let name = "lavas_dispatcher_runs_the_definition_and_records_every_case";
    if !iolab_testkit::root_or_skip(name, "it makes loop devices and mounts")
        || !python_has(name, LAVA_RUN_DEPS)
    {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/lava_dispatch.py");
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let dispatch = |params: &[&str], extra: &[&str]| -> serde_json::Value {
        let mut c = std::process::Command::new(PYTHON);
        c.arg(&script).arg("--iolab").arg(&bin).arg("--json");
        for p in params {
            c.args(["--param", p]);
        }
        let out = c.args(extra).output().unwrap();
        let said = text(&out.stdout);
        eprintln!("{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&said)
            .unwrap_or_else(|e| panic!("lava_dispatch.py printed no JSON ({e}): {said}"));
        assert!(out.status.success(), "{v}");
        v
    };
    let v = dispatch(&["REPS=1", "WARMUP=1", "SCALE=0.25"], &[]);
    eprintln!(
        "LAVA job {}: lava-run {} s, {} cases for {} cells",
        v["job"], v["lava_run_s"], v["result_cases"], v["cells"]
    );
    assert_eq!(v["job"], "pass", "{v}");
    assert_eq!(v["problems"], serde_json::json!([]), "{v}");
    // demo: 4 schedulers x 4 workloads, each with mean/min/median/max, a
    // ratio to idle for the loaded ones and a prefetch mean for idle. A
    // loaded cell whose start hit the demo's 5 s timeout is censored: its
    // statistics fail and it has no ratio (a writer can starve a start
    // that long under mq-deadline or kyber, on this machine and on a
    // stranger's), so the ratios are counted, not fixed at 12.
    let cases = v["cases"].as_array().expect("cases");
    let named = |suffix: &str| {
        cases
            .iter()
            .filter(|c| c["case"].as_str().is_some_and(|n| n.ends_with(suffix)))
            .collect::<Vec<_>>()
    };
    for stat in [".mean", ".min", ".median", ".max"] {
        let plain = named(stat)
            .into_iter()
            .filter(|c| !c["case"].as_str().unwrap_or("").contains(".prefetch_"))
            .count();
        assert_eq!(plain, 16, "{stat}: {v}");
    }
    assert_eq!(named(".prefetch_before.mean").len(), 4, "{v}");
    // Every idle cell passes: nothing there can starve a start.
    let idle = named(".mean")
        .into_iter()
        .filter(|c| c["set"] == "idle")
        .collect::<Vec<_>>();
    assert!(idle.iter().all(|c| c["result"] == "pass"), "{v}");
    // A ratio for each loaded cell whose starts all ended, and only those.
    let loaded_done = named(".mean")
        .into_iter()
        .filter(|c| c["set"] != "idle" && c["result"] == "pass")
        .count();
    let ratios = named(".ratio_to_idle").len();
    assert!(
        loaded_done <= ratios && ratios <= 12,
        "{loaded_done} {ratios}: {v}"
    );
    assert_eq!(v["result_cases"], 68 + ratios, "{v}");
    assert_eq!(v["compared_with_results_show"], 68 + ratios, "{v}");
    assert_eq!(v["left_behind"], serde_json::json!({}), "{v}");
    let f = dispatch(&["BW=1B/s"], &["--expect-fail"]);
    assert_eq!(f["job"], "pass", "{f}");
    assert!(
        f["reason"]
            .as_str()
            .is_some_and(|r| r.contains("below iolab's floor of 1MiB/s")),
        "{f}"
    );
}

/// What `import lava_dispatcher` and lava-run need from Debian.
const LAVA_RUN_DEPS: &[(&str, &str)] = &[
    ("yaml", "python3-yaml"),
    ("requests", "python3-requests"),
    ("pexpect", "python3-pexpect"),
    ("jinja2", "python3-jinja2"),
    ("setproctitle", "python3-setproctitle"),
    ("configobj", "python3-configobj"),
    ("netifaces", "python3-netifaces"),
    ("magic", "python3-magic"),
    ("pyudev", "python3-pyudev"),
    ("pytz", "python3-tz"),
    ("voluptuous", "python3-voluptuous"),
    ("aiohttp", "python3-aiohttp"),
];

#[test]
fn lava_lines_parse_with_lavas_own_pattern() {
    if !iolab_testkit::root_or_skip(
        "lava_lines_parse_with_lavas_own_pattern",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !python_has(
        "lava_lines_parse_with_lavas_own_pattern",
        &[
            ("yaml", "python3-yaml"),
            ("requests", "python3-requests"),
            ("pexpect", "python3-pexpect"),
        ],
    ) {
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
    let out = std::process::Command::new(PYTHON)
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
