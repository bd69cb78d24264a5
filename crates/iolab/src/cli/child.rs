//! A command run beside an observer of the whole machine (`iolab cpu --
//! CMD`, `iolab trace bio -- CMD`): started, waited for, ended after a
//! Ctrl-C, and its exit turned into ours. Nothing holds it before exec:
//! what observes it watches everything anyway.

use std::os::fd::AsFd;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use iolab_sys::UsageError;

/// Starts `prog args`; with `stdout_to_stderr` its output goes to stderr,
/// so our stdout stays one parseable document.
pub fn spawn(prog: &str, args: &[String], stdout_to_stderr: bool) -> anyhow::Result<Child> {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    if stdout_to_stderr {
        let err = std::io::stderr().as_fd().try_clone_to_owned()?;
        cmd.stdout(Stdio::from(err));
    }
    cmd.spawn().map_err(|e| {
        UsageError::new(format!(
            "cannot run {prog}: {e}; give a program on PATH or its path"
        ))
        .into()
    })
}

/// After Ctrl-C (the terminal sent the command the signal too): gives it
/// `grace` to end, then SIGTERMs it and reaps it.
pub fn finish(c: &mut Child, grace: Duration) -> anyhow::Result<ExitStatus> {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Some(s) = c.try_wait()? {
            return Ok(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_child(c);
    // The child is ours and not yet reaped, so the pid is still its own.
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    Ok(c.wait()?)
}

/// The shell's convention: the exit code, or 128 + the signal.
pub fn exit_code(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code()
        .or_else(|| s.signal().map(|n| 128 + n))
        .unwrap_or(1)
}
