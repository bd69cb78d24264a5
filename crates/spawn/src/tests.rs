#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::time::Duration;

use super::*;

fn sh(script: &str) -> Spec {
    Spec::new(&["sh".into(), "-c".into(), script.into()])
}

fn piped(mut spec: Spec) -> Spec {
    spec.stdout = Output::Piped;
    spec
}

fn read_all(f: Option<File>) -> String {
    let mut out = String::new();
    f.unwrap().read_to_string(&mut out).unwrap();
    out
}

fn output(spec: &Spec) -> (String, Exited) {
    let mut running = hold(spec).unwrap().release().unwrap();
    let out = read_all(running.stdout.take());
    (out, running.wait().unwrap())
}

#[test]
fn held_child_runs_only_after_release() {
    let d = tempfile::tempdir().unwrap();
    let mark = d.path().join("ran");
    let held = hold(&Spec::new(&["touch".into(), mark.display().to_string()])).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!mark.exists(), "the command ran before release");
    let done = held.release().unwrap().wait().unwrap();
    assert_eq!(done.status.code(), Some(0));
    assert!(mark.exists());
}

#[test]
fn a_dropped_child_never_runs_and_is_reaped() {
    let d = tempfile::tempdir().unwrap();
    let mark = d.path().join("ran");
    let held = hold(&Spec::new(&["touch".into(), mark.display().to_string()])).unwrap();
    let pid = held.pid();
    drop(held);
    assert!(!mark.exists());
    // Reaped: no zombie left under that pid.
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn exec_failures_are_errors_at_release_with_the_os_reason() {
    let e = hold(&Spec::new(&["no-such-program-iolab".into()])).unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
    assert!(iolab_sys::is_usage(&e));
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("not-exec");
    std::fs::write(&f, "x").unwrap();
    let e = hold(&Spec::new(&[f.display().to_string()]))
        .unwrap()
        .release()
        .unwrap_err();
    assert!(e.to_string().contains("exec: Permission denied"), "{e}");
    assert!(iolab_sys::is_usage(&e));
    let e = hold(&Spec::default()).unwrap_err();
    assert!(e.to_string().contains("the command is empty"), "{e}");
}

/// The child takes its nice before it waits; refused (no CAP_SYS_NICE),
/// it is gone before the release, whose write then meets a closed pipe:
/// the error is still the step's, from the error pipe.
#[test]
fn a_step_refused_while_held_is_the_error_at_release() {
    if !iolab_testkit::unprivileged("tests::a_step_refused_while_held_is_the_error_at_release") {
        return;
    }
    let mut spec = Spec::new(&["true".into()]);
    spec.nice = Some(-5);
    let held = hold(&spec).unwrap();
    // Long enough for the child to have failed and exited.
    std::thread::sleep(Duration::from_millis(200));
    let e = held.release().unwrap_err();
    assert!(
        e.to_string().contains("setpriority") && e.to_string().contains("CAP_SYS_NICE"),
        "{e}"
    );
    assert!(iolab_sys::is_usage(&e));
}

#[test]
fn the_process_group_exists_before_release() {
    let mut spec = sh("ps -o pgid= -p $$");
    spec.process_group = true;
    let held = hold(&piped(spec)).unwrap();
    // Before release: what the guard records must already be true.
    assert_eq!(unsafe { libc::getpgid(held.pid()) }, held.pid());
    let pid = held.pid();
    let mut running = held.release().unwrap();
    let out = read_all(running.stdout.take());
    running.wait().unwrap();
    assert_eq!(out.trim(), pid.to_string());
}

#[test]
fn ioprio_and_nice_hold_from_the_first_instruction() {
    // Read back by the command itself, through tools that ask the kernel.
    let mut spec = sh("ionice -p $$; cut -d' ' -f19 /proc/$$/stat");
    spec.ioprio = Some("be:6".parse().unwrap());
    spec.nice = Some(7);
    let (out, done) = output(&piped(spec));
    assert!(done.status.success());
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["best-effort: prio 6", "7"], "{out}");
}

#[test]
fn streams_go_where_asked() {
    let mut spec = sh("echo out; echo err >&2; cat");
    spec.stdin = Input::Null;
    spec.stdout = Output::Piped;
    spec.stderr = Output::Piped;
    let mut running = hold(&spec).unwrap().release().unwrap();
    let out = read_all(running.stdout.take());
    let err = read_all(running.stderr.take());
    // `cat` read /dev/null: it ended at once instead of waiting on ours.
    assert!(running.wait().unwrap().status.success());
    assert_eq!((out.as_str(), err.as_str()), ("out\n", "err\n"));

    let mut spec = sh("echo to-stderr");
    spec.stdout = Output::ToStderr;
    spec.stderr = Output::Piped;
    let mut running = hold(&spec).unwrap().release().unwrap();
    let err = read_all(running.stderr.take());
    running.wait().unwrap();
    assert_eq!(err, "to-stderr\n");
}

#[test]
fn sigpipe_is_back_to_default() {
    // Rust ignores SIGPIPE in its own processes; a shell that inherits an
    // ignored signal cannot un-ignore it, so `kill -PIPE $$` would be
    // survived.
    let (out, done) = output(&piped(sh("kill -PIPE $$; echo survived")));
    assert_eq!(done.status.signal(), Some(libc::SIGPIPE), "{out}");
}

#[test]
fn wait4_reports_cpu_time_spent() {
    // A busy loop of about 0.2 s: the rusage must show it (the wall clock
    // is the outside bound).
    let t0 = std::time::Instant::now();
    let (_, done) = output(&piped(sh(
        "end=$(($(date +%s%N) + 200000000)); while [ $(date +%s%N) -lt $end ]; do :; done",
    )));
    let wall = iolab_sys::cast::duration_ns(t0.elapsed());
    assert!(done.cpu_ns() > 20_000_000, "{done:?}");
    assert!(done.cpu_ns() <= wall * 2, "{done:?} wall {wall}");
}
