//! Start a command held just before `exec`, so tracing can be switched on
//! for its pid before it runs its first instruction, then release it.
//!
//! `std::process::Command::spawn` waits for the child's `exec` to succeed,
//! so a `pre_exec` hook that blocks would deadlock it; this is a small
//! fork/exec of its own. Between `fork` and `exec` the child only makes
//! async-signal-safe calls (read, dup2, execv, write, _exit): the program
//! path and argv are prepared before the fork.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Not found on PATH, or not executable.
    #[error("cannot start {program:?}: {why}: expected an executable on PATH or a path to one")]
    Spawn {
        /// The program as given.
        program: String,
        /// What failed.
        why: String,
    },
    /// A syscall of the gate itself failed.
    #[error("cannot start {program:?}: {call}: {source}")]
    Os {
        /// The program.
        program: String,
        /// The failing call.
        call: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

/// A forked child waiting to `exec` its command.
#[derive(Debug)]
pub struct HeldChild {
    pid: i32,
    program: String,
    go: OwnedFd,
    exec_error: OwnedFd,
}

/// A released child: its command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    /// Its pid.
    pub pid: i32,
}

/// How a released child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exited {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal that killed it, if any.
    pub signal: Option<i32>,
    /// User + system CPU time of it and its reaped descendants (wait4
    /// rusage), ns.
    pub cpu_ns: u64,
}

fn os(program: &str, call: &'static str) -> GateError {
    GateError::Os {
        program: program.to_string(),
        call,
        source: std::io::Error::last_os_error(),
    }
}

fn pipe(program: &str) -> Result<(OwnedFd, OwnedFd), GateError> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os(program, "pipe2"));
    }
    // SAFETY: pipe2 returned two fresh descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The executable `program` names: a path when it has a `/`, else the
/// first executable match on `PATH`.
pub fn resolve(program: &str) -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_exec(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_exec(p))
}

/// Forks a child that waits for [`HeldChild::release`] and then execs
/// `argv`. With `stdout_to_stderr` its stdout goes to our stderr (so a
/// JSON report on our stdout stays clean).
pub fn spawn_held(argv: &[String], stdout_to_stderr: bool) -> Result<HeldChild, GateError> {
    let program = argv.first().cloned().unwrap_or_default();
    let spawn_err = |why: &str| GateError::Spawn {
        program: program.clone(),
        why: why.to_string(),
    };
    let path = resolve(&program).ok_or_else(|| spawn_err("not found or not executable"))?;
    let cpath = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| spawn_err("path contains a NUL byte"))?;
    let cargs: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| spawn_err("an argument contains a NUL byte"))?;
    let mut cargv: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    cargv.push(std::ptr::null());

    let (go_r, go_w) = pipe(&program)?;
    let (err_r, err_w) = pipe(&program)?;
    // SAFETY: fork has no memory-safety preconditions; the child branch
    // below only makes async-signal-safe calls on data prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os(&program, "fork"));
    }
    if pid == 0 {
        // SAFETY: child after fork: raw syscalls on fds and pointers that
        // stay valid (the parent's memory image), then exec or _exit.
        unsafe {
            // Our copy of the write end would keep the read below from
            // seeing EOF if the parent died.
            libc::close(go_w.as_raw_fd());
            libc::close(err_r.as_raw_fd());
            let mut b = [0u8; 1];
            let n = loop {
                let n = libc::read(go_r.as_raw_fd(), b.as_mut_ptr().cast(), 1);
                if n >= 0 || *libc::__errno_location() != libc::EINTR {
                    break n;
                }
            };
            if n != 1 {
                // The parent went away without releasing: do not run.
                libc::_exit(127);
            }
            if stdout_to_stderr {
                libc::dup2(2, 1);
            }
            libc::execv(cpath.as_ptr(), cargv.as_ptr());
            let errno = (*libc::__errno_location()).to_ne_bytes();
            libc::write(err_w.as_raw_fd(), errno.as_ptr().cast(), errno.len());
            libc::_exit(127);
        }
    }
    drop(go_r);
    drop(err_w);
    Ok(HeldChild {
        pid,
        program,
        go: go_w,
        exec_error: err_r,
    })
}

impl HeldChild {
    /// The child's pid (the command keeps it across exec).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets the child exec its command; fails (and reaps the child) when
    /// exec fails.
    pub fn release(self) -> Result<Running, GateError> {
        // SAFETY: writing one byte from a valid buffer to our own fd.
        let n = unsafe { libc::write(self.go.as_raw_fd(), b"g".as_ptr().cast(), 1) };
        if n != 1 {
            return Err(os(&self.program, "write"));
        }
        drop(self.go);
        let mut buf = [0u8; 4];
        // SAFETY: reading into a valid 4-byte buffer from our own fd; EOF
        // (exec closed the CLOEXEC end) means success.
        let n = loop {
            let n = unsafe { libc::read(self.exec_error.as_raw_fd(), buf.as_mut_ptr().cast(), 4) };
            if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break n;
            }
        };
        if n == 4 {
            let _ = wait(self.pid);
            return Err(GateError::Spawn {
                program: self.program,
                why: std::io::Error::from_raw_os_error(i32::from_ne_bytes(buf)).to_string(),
            });
        }
        Ok(Running { pid: self.pid })
    }
}

impl Running {
    /// Waits for the command to exit (retrying on EINTR).
    pub fn wait(self) -> std::io::Result<Exited> {
        wait(self.pid)
    }
}

fn wait(pid: i32) -> std::io::Result<Exited> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals; pid is our child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    let exited = libc::WIFEXITED(status);
    Ok(Exited {
        code: exited.then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        cpu_ns: ns(ru.ru_utime) + ns(ru.ru_stime),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn held_child_runs_only_after_release() {
        let dir = std::env::temp_dir().join(format!("iolab-gate-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let argv = vec!["touch".to_string(), dir.display().to_string()];
        let held = spawn_held(&argv, false).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!dir.exists(), "the command ran before release");
        let done = held.release().unwrap().wait().unwrap();
        assert_eq!(done.code, Some(0));
        assert!(dir.exists());
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let e = spawn_held(&["no-such-program-iolab".to_string()], false).unwrap_err();
        assert!(e.to_string().contains("not found"), "{e}");
    }

    #[test]
    fn exit_code_and_signal() {
        let done = spawn_held(&["sh".into(), "-c".into(), "exit 3".into()], false)
            .unwrap()
            .release()
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(done.code, Some(3));
        assert_eq!(done.signal, None);
    }
}
