//! `startup --script FILE -- ARGS`: a launch script as the target, run by
//! the interpreter its `#!` line names, its text stored with the
//! experiment.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::time::Duration;

use bench_env::{ok, text, Bench};

fn startup(b: &Bench, script: &std::path::Path, args: &[&str]) -> std::process::Output {
    b.cmd()
        .arg("startup")
        .args([
            "--lab-size",
            "256MiB",
            "--schedulers",
            "none",
            "--workloads",
            "idle",
        ])
        .args([
            "--reps",
            "2",
            "--timeout",
            "20",
            "--cold",
            "evict",
            "--script",
        ])
        .arg(script)
        .arg("--db")
        .arg(&b.db)
        .arg("--")
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

#[test]
fn a_launch_script_runs_with_its_arguments_and_is_stored() {
    if !iolab_testkit::root_or_skip(
        "a_launch_script_runs_with_its_arguments_and_is_stored",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("script-target");
    let dir = b.env.run.path();
    let script = dir.join("launch.sh");
    let marker = dir.join("args.txt");
    let body = format!(
        "#!/bin/sh\nsleep 0.3\necho \"$0 $*\" >> {}\n",
        marker.display()
    );
    std::fs::write(&script, &body).unwrap();
    let out = startup(&b, &script, &["--warm", "x y"]);
    ok(&out);
    // Both starts ran the script with its arguments, under sh.
    let lines = std::fs::read_to_string(&marker).unwrap();
    let want = format!("{} --warm x y", script.display());
    assert_eq!(lines.lines().collect::<Vec<_>>(), [want.as_str(); 2]);
    let report = b.export(1);
    let target = &report["experiment"]["config"]["startup"]["target"];
    assert_eq!(target["kind"], "script");
    assert_eq!(target["text"], body.as_str());
    assert_eq!(target["args"][1], "x y");
    for r in report["runs"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        // The wall clock: each start slept 0.3 s.
        assert!(r["duration_ns"].as_u64().unwrap() >= 300_000_000, "{r}");
        assert_eq!(
            r["target"],
            format!("/bin/sh {} --warm x y", script.display())
        );
    }
}

#[test]
fn the_shebangs_argument_reaches_the_interpreter() {
    if !iolab_testkit::root_or_skip(
        "the_shebangs_argument_reaches_the_interpreter",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("script-shebang");
    let dir = b.env.run.path();
    let script = dir.join("strict.sh");
    let marker = dir.join("reached");
    // With `sh -e` (as the kernel would run it) `false` ends the script:
    // the first idle start fails, and the marker is never made.
    std::fs::write(
        &script,
        format!("#!/bin/sh -e\nfalse\ntouch {}\n", marker.display()),
    )
    .unwrap();
    let out = startup(&b, &script, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("first idle start"),
        "{}",
        text(&out.stderr)
    );
    assert!(!marker.exists());
    // A script that does not exist is refused before anything runs.
    let out = startup(&b, &dir.join("missing.sh"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--script"),
        "{}",
        text(&out.stderr)
    );
}
