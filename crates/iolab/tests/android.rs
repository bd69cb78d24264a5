//! `startup --am-start` with a stand-in `am` that prints what Android 14's
//! `am start -W -S` printed for a cold start of Settings (recorded): the
//! run's time is am's TotalTime, not the command's wall time, and the
//! launch state is stored. No phone here: what this leaves untested is the
//! real am and the phone's storage, said in docs/remote.md.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::time::Duration;

use bench_env::{json_of, ok, Bench};
use lab_env::root_or_skip;

const RECORDED: &str = "Stopping: com.android.settings
Starting: Intent { cmp=com.android.settings/.Settings }
Status: ok
LaunchState: COLD
Activity: com.android.settings/.Settings
TotalTime: 1131
WaitTime: 1134
Complete";

#[test]
fn an_activitys_start_is_ams_total_time() {
    if !root_or_skip("an_activitys_start_is_ams_total_time") {
        return;
    }
    let b = Bench::new("android");
    let bin = tempfile::tempdir().unwrap();
    let am = bin.path().join("am");
    // The stand-in checks it was called as iolab must call it.
    std::fs::write(
        &am,
        format!(
            "#!/bin/sh\n[ \"$*\" = 'start -W -S -n com.android.settings/.Settings' ] || \
             {{ echo \"Error: unexpected $*\"; exit 1; }}\nsleep 0.2\ncat <<'EOF'\n{RECORDED}\nEOF\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&am, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = b
        .cmd()
        .env("PATH", path)
        .args([
            "startup",
            "--lab-size",
            "64MiB",
            "--reps",
            "2",
            "--schedulers",
            "none",
        ])
        .args([
            "--workloads",
            "idle",
            "--am-start",
            "com.android.settings/.Settings",
        ])
        .args(["--json", "--db"])
        .arg(&b.db)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    ok(&out);
    let report = b.export(1);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["duration_ns"], 1_131_000_000u64, "{r}");
        assert_eq!(r["outcome"], "ok");
        let am = &r["extra"]["am_start"];
        assert_eq!(am["result"]["launch_state"], "COLD");
        assert_eq!(am["result"]["wait_ms"], 1134);
        // The command itself took its 0.2 s sleep and more.
        assert!(am["am_wall_ns"].as_u64().unwrap() >= 200_000_000, "{am}");
    }
    let cfg = &report["experiment"]["config"]["startup"]["am_start"];
    assert_eq!(cfg["component"], "com.android.settings/.Settings");
    let _ = json_of(&out.stdout);
}
