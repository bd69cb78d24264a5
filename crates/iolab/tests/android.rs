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

/// What Android 14's `am start -W -S` printed (also the parser's unit test input).
const RECORDED: &str = include_str!("fixtures/android/am_start_cold.txt");

/// A directory of stand-ins for Android's `am`, `pm` and (optionally)
/// `logcat`, each checking it was called as iolab must call it, and the
/// PATH that puts them first.
fn phone(logcat: Option<&str>) -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().unwrap();
    let write = |name: &str, body: String| {
        let p = bin.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    };
    write(
        "am",
        format!(
            "[ \"$*\" = 'start -W -S -n com.android.settings/.Settings' ] || \
             {{ echo \"Error: unexpected $*\"; exit 1; }}\nsleep 0.2\ncat <<'EOF'\n{RECORDED}\nEOF\n"
        ),
    );
    write(
        "pm",
        "[ \"$*\" = 'path com.android.settings' ] || exit 1\n\
         echo package:/system_ext/priv-app/Settings/Settings.apk\n"
            .to_string(),
    );
    if let Some(line) = logcat {
        // `logcat -v epoch -T SECONDS.MS`: the line is printed 0.3 s after
        // the call with the log time of that moment, then logcat runs on
        // (as the real one does) until iolab kills its group.
        write(
            "logcat",
            format!(
                "echo $$ >> {dir}/logcat.pids\n\
                 case \"$*\" in '-v epoch -T '[0-9]*.[0-9][0-9][0-9]) ;; *) echo \"bad args $*\" >&2; exit 1;; esac\n\
                 sleep 0.3\n[ -n '{line}' ] && echo \"$(date +%s.%N | cut -c1-14)  1402  1433 I ActivityTaskManager: {line}\"\n\
                 exec sleep 600\n",
                dir = bin.path().display()
            ),
        );
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    (bin, path)
}

fn startup(b: &Bench, path: &str, extra: &[&str]) -> std::process::Output {
    b.cmd()
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
        .args(extra)
        .args(["--json", "--db"])
        .arg(&b.db)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

#[test]
fn an_activitys_start_is_ams_total_time() {
    if !root_or_skip("an_activitys_start_is_ams_total_time") {
        return;
    }
    let b = Bench::new("android");
    let (_bin, path) = phone(None);
    let out = startup(&b, &path, &[]);
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
    let target = &report["experiment"]["config"]["startup"]["target"];
    assert_eq!(target["kind"], "activity");
    assert_eq!(target["am"]["component"], "com.android.settings/.Settings");
    let _ = json_of(&out.stdout);
}

fn pids_gone(bin: &std::path::Path) -> usize {
    let pids = std::fs::read_to_string(bin.join("logcat.pids")).unwrap();
    for pid in pids.split_whitespace() {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "logcat {pid} outlived its start"
        );
    }
    pids.split_whitespace().count()
}

#[test]
fn ready_logcat_times_the_fully_drawn_line() {
    if !root_or_skip("ready_logcat_times_the_fully_drawn_line") {
        return;
    }
    // With the system's own delay in the line: that is the start's time.
    let b = Bench::new("android-logcat");
    let (bin, path) = phone(Some("Fully drawn com.android.settings/.Settings: +1s500ms"));
    ok(&startup(
        &b,
        &path,
        &["--ready-logcat", "Fully drawn com\\.android\\.settings"],
    ));
    let report = b.export(1);
    for r in report["runs"].as_array().unwrap() {
        assert_eq!(r["duration_ns"], 1_500_000_000u64, "{r}");
        assert_eq!(r["outcome"], "ok");
        let seen = &r["extra"]["am_start"]["logcat"];
        assert_eq!(seen["reported_ms"], 1500, "{seen}");
        // The line was logged 0.3 s after logcat started, which was a few
        // ms before the launch began (the wall clock is the outside truth).
        let delay = seen["log_delay_ms"].as_f64().unwrap();
        assert!((250.0..5000.0).contains(&delay), "{seen}");
        assert_eq!(r["extra"]["am_start"]["result"]["total_ms"], 1131);
    }
    assert_eq!(pids_gone(bin.path()), 2);

    // Without a delay in the line: its log time after the launch began.
    let b = Bench::new("android-logcat-plain");
    let (bin, path) = phone(Some("settings: ready"));
    ok(&startup(&b, &path, &["--ready-logcat", "settings: ready$"]));
    for r in b.export(1)["runs"].as_array().unwrap() {
        let seen = &r["extra"]["am_start"]["logcat"];
        let delay = seen["log_delay_ms"].as_f64().unwrap();
        assert_eq!(
            r["duration_ns"].as_f64().unwrap(),
            (delay * 1e6).trunc(),
            "{r}"
        );
        assert!((250.0..5000.0).contains(&delay), "{seen}");
    }
    assert_eq!(pids_gone(bin.path()), 2);

    // Never logged: censored at the timeout, and logcat still ends.
    let b = Bench::new("android-logcat-never");
    let (bin, path) = phone(Some(""));
    ok(&startup(
        &b,
        &path,
        &["--ready-logcat", "Fully drawn", "--timeout", "2"],
    ));
    for r in b.export(1)["runs"].as_array().unwrap() {
        assert_eq!(r["outcome"], "censored", "{r}");
        assert_eq!(r["duration_ns"], 2_000_000_000u64);
    }
    assert_eq!(pids_gone(bin.path()), 2);
}
