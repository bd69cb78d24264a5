//! The one way iolab starts a command it measures, records or traces.
//!
//! An observer of a start-up (a trace session following a pid, the
//! page-cache recorder, the stall explainer) must be attached before the
//! command runs its first instruction, or the earliest I/O of a cold start
//! goes unseen. `std::process::Command::spawn` returns only once the child
//! has exec'd (to report exec errors), so it cannot hold a child before
//! exec. Here the fork is made by hand: the child sets up what must hold
//! from its first instruction (process group, standard streams, default
//! signal mask and SIGPIPE, I/O priority, nice) and blocks on a pipe;
//! [`Held::release`] writes the byte that lets it exec. A failed step or
//! exec sends its errno back on a close-on-exec pipe, so a missing program
//! is an error at release, not a silent exit 127.
//!
//! The child is made by `clone(CLONE_VM)`, as posix_spawn makes its own
//! (but not suspending us, since it is held): it runs in iolab's address
//! space on a stack of its own until it execs. With a fork it would get a
//! copy of every page table of iolab, and its exec would tear that copy
//! down inside the measured window: a launch of `true` cost 0.57 ms from a
//! small parent and 1.6-2.1 ms from one with 64 MiB of heap (measured;
//! docs/PERFORMANCE.md, issue 49). Between clone and exec the child makes
//! only async-signal-safe calls on memory prepared before the clone, kept
//! alive by its [`Held`] until it has exec'd or exited, never allocates,
//! never returns, and runs no handler of ours (every signal is blocked
//! across the clone and set back to its default in the child before it is
//! unblocked).

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;

/// Where the child's standard input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Input {
    /// Ours.
    #[default]
    Inherit,
    /// `/dev/null`: a measured target must not wait for a terminal.
    Null,
}

/// Where one of the child's output streams goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// Ours.
    #[default]
    Inherit,
    /// The child's stderr (for stdout: keeps a JSON report on our stdout
    /// clean).
    ToStderr,
    /// A pipe we read ([`Running::stdout`], [`Running::stderr`]).
    Piped,
    /// `/dev/null`.
    Null,
}

/// What to start and how.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// Program and arguments (the program is looked up on PATH unless it
    /// holds a `/`).
    pub argv: Vec<String>,
    /// Standard input.
    pub stdin: Input,
    /// Standard output.
    pub stdout: Output,
    /// Standard error (`ToStderr` is `Inherit` here).
    pub stderr: Output,
    /// In a process group of its own (pgid = its pid), so it and
    /// everything it forks can be killed by pgid, never by name.
    pub process_group: bool,
    /// I/O priority, set before exec (the thesis lost early requests to a
    /// late `ionice`).
    pub ioprio: Option<IoPrio>,
    /// Nice value, set before exec.
    pub nice: Option<i32>,
}

impl Spec {
    /// `argv` with every stream inherited, in our process group.
    pub fn new(argv: &[String]) -> Spec {
        Spec {
            argv: argv.to_vec(),
            ..Spec::default()
        }
    }
}

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The command given was at fault (exit code 2), not the machine: it
    /// is empty, not found on PATH, holds a NUL byte, or a step in the
    /// child (exec, or what comes before it) failed.
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// A call of ours (pipe, fork, open) failed.
    #[error("cannot start {program:?}: {call}: {error}")]
    Os {
        /// The program.
        program: String,
        /// The failing call.
        call: &'static str,
        /// The error.
        error: std::io::Error,
    },
}

fn hint(step: &str) -> &'static str {
    match step {
        "exec" => ": expected an executable on PATH or a path to one",
        "ioprio_set" => ": the realtime class needs root (CAP_SYS_ADMIN); be:N and idle do not",
        "setpriority" => ": a negative nice value needs root (CAP_SYS_NICE)",
        _ => "",
    }
}

impl SpawnError {
    /// No command.
    fn empty() -> SpawnError {
        UsageError::new("nothing to start: the command is empty").into()
    }

    /// `program` is not on PATH (or not executable there).
    fn not_found(program: &str) -> SpawnError {
        UsageError::new(format!(
            "cannot start {program:?}: not found or not executable: expected an executable on PATH or a path to one"
        ))
        .into()
    }

    /// A NUL byte cannot be passed to exec.
    fn nul(program: &str) -> SpawnError {
        UsageError::new(format!(
            "cannot start {program:?}: an argument holds a NUL byte"
        ))
        .into()
    }

    /// `step` in the child failed with `error` (its errno): `exec`,
    /// `ioprio_set`, `setpriority`, `setpgid`, `dup2`.
    fn child(program: &str, step: &str, error: &std::io::Error) -> SpawnError {
        UsageError::new(format!(
            "cannot start {program:?}: {step}: {error}{}",
            hint(step)
        ))
        .into()
    }
}

// The child's failing step, sent with its errno.
const STEPS: [&str; 5] = ["setpgid", "dup2", "ioprio_set", "setpriority", "exec"];
const STEP_SETPGID: i32 = 0;
const STEP_DUP2: i32 = 1;
const STEP_IOPRIO: i32 = 2;
const STEP_NICE: i32 = 3;
const STEP_EXEC: i32 = 4;

/// A forked child waiting to exec its command. Dropped without
/// [`Held::release`], the child exits (127) without running it, and is
/// reaped.
#[derive(Debug)]
pub struct Held {
    pid: i32,
    program: String,
    go: Option<OwnedFd>,
    errors: Option<OwnedFd>,
    stdout: Option<File>,
    stderr: Option<File>,
    /// What the child reads until it execs: dropped after `Drop::drop`
    /// has reaped a child that never exec'd (fields drop after it).
    _shared: Box<Shared>,
    /// Not `Send`: until it execs, the child runs on the TLS of the
    /// thread that made it (its errno), which must outlive it; the `Held`
    /// stays on that thread until released or dropped.
    _thread_bound: std::marker::PhantomData<*const ()>,
}

/// The memory a held child runs on, in our address space: its program
/// and arguments, its plan, and its stack. Heap allocations, so their
/// addresses do not move with the `Held`.
struct Shared {
    _cpath: CString,
    _cargs: Vec<CString>,
    _cargv: Vec<*const libc::c_char>,
    plan: ChildPlan,
    stack: *mut libc::c_void,
}

/// The child's stack: its calls are a few syscalls deep.
const STACK_BYTES: usize = 64 * 1024;

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared")
    }
}

// SAFETY: the raw pointers point into this struct's own heap buffers and
// stack mapping, which only it frees; the child only reads them.
unsafe impl Send for Shared {}

impl Drop for Shared {
    fn drop(&mut self) {
        if !self.stack.is_null() {
            // SAFETY: our own mapping, no longer used: the child has
            // exec'd (its old address space is gone) or been reaped.
            unsafe { libc::munmap(self.stack, STACK_BYTES) };
        }
    }
}

/// A released child: its command runs.
#[derive(Debug)]
pub struct Running {
    /// Its pid (and pgid, with `process_group`).
    pub pid: i32,
    /// Its stdout, when piped.
    pub stdout: Option<File>,
    /// Its stderr, when piped.
    pub stderr: Option<File>,
}

/// What a child used, from wait4(2)'s rusage (the children it waited for
/// included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Bytes it caused to be read from storage (`ru_inblock` × 512, the
    /// kernel's per-task I/O accounting).
    pub read_bytes: u64,
    /// Bytes it caused to be written (`ru_oublock` × 512: pages it dirtied).
    pub write_bytes: u64,
    /// User CPU time, ns.
    pub user_ns: u64,
    /// System CPU time, ns.
    pub sys_ns: u64,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exited {
    /// Its status.
    pub status: ExitStatus,
    /// Its resource use.
    pub usage: Usage,
}

impl Exited {
    /// User + system CPU time, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.usage.user_ns + self.usage.sys_ns
    }
}

/// The executable `program` names: itself when it holds a `/` (exec then
/// reports what is wrong with it), else the first executable file of that
/// name on PATH.
pub fn resolve(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    let exec = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| exec(p))
}

fn pipe(program: &str) -> Result<(OwnedFd, OwnedFd), SpawnError> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| SpawnError::Os {
        program: program.to_string(),
        call: "pipe",
        error: e.into(),
    })
}

/// The child's end of one stream, and our end of its pipe.
fn stream(
    program: &str,
    out: Output,
    child_writes: bool,
) -> Result<(Option<OwnedFd>, Option<File>), SpawnError> {
    match out {
        Output::Inherit | Output::ToStderr => Ok((None, None)),
        Output::Null => {
            let f = std::fs::OpenOptions::new()
                .read(!child_writes)
                .write(child_writes)
                .open("/dev/null")
                .map_err(|error| SpawnError::Os {
                    program: program.to_string(),
                    call: "open /dev/null",
                    error,
                })?;
            Ok((Some(f.into()), None))
        }
        Output::Piped => {
            let (r, w) = pipe(program)?;
            Ok((Some(w), Some(File::from(r))))
        }
    }
}

/// Forks a child for `spec` that waits for [`Held::release`] before it
/// execs. With `process_group` the group exists when this returns, so it
/// can be recorded (e.g. with the guard) before the command runs.
pub fn hold(spec: &Spec) -> Result<Held, SpawnError> {
    let program = spec.argv.first().ok_or_else(SpawnError::empty)?.clone();
    let path = resolve(&program).ok_or_else(|| SpawnError::not_found(&program))?;
    let nul = || SpawnError::nul(&program);
    let cpath = CString::new(path.into_os_string().into_encoded_bytes()).map_err(|_| nul())?;
    let cargs: Vec<CString> = spec
        .argv
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| nul())?;
    let mut cargv: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    cargv.push(std::ptr::null());

    let stdin_out = match spec.stdin {
        Input::Inherit => Output::Inherit,
        Input::Null => Output::Null,
    };
    let (in_fd, _) = stream(&program, stdin_out, false)?;
    let (out_fd, out_ours) = stream(&program, spec.stdout, true)?;
    let (err_fd, err_ours) = stream(&program, spec.stderr, true)?;
    let (go_r, go_w) = pipe(&program)?;
    let (err_r, err_w) = pipe(&program)?;
    let plan = ChildPlan {
        path: cpath.as_ptr(),
        argv: cargv.as_ptr(),
        go_r: go_r.as_raw_fd(),
        go_w: go_w.as_raw_fd(),
        err_r: err_r.as_raw_fd(),
        err_w: err_w.as_raw_fd(),
        stdin: in_fd.as_ref().map(AsRawFd::as_raw_fd),
        stdout: out_fd.as_ref().map(AsRawFd::as_raw_fd),
        stdout_to_stderr: spec.stdout == Output::ToStderr,
        stderr: err_fd.as_ref().map(AsRawFd::as_raw_fd),
        process_group: spec.process_group,
        ioprio: spec.ioprio.map(IoPrio::raw),
        nice: spec.nice,
        rt_signals: (libc::SIGRTMIN(), libc::SIGRTMAX()),
    };
    let os = |call: &'static str| SpawnError::Os {
        program: program.clone(),
        call,
        error: std::io::Error::last_os_error(),
    };
    // SAFETY: a fresh private mapping, checked below.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(os("mmap"));
    }
    let shared = Box::new(Shared {
        _cpath: cpath,
        _cargs: cargs,
        _cargv: cargv,
        plan,
        stack,
    });
    // Every signal blocked across the clone: the child starts with them
    // blocked and sets each handler back to its default before it
    // unblocks them, so no handler of ours ever runs in it (it would
    // write our memory).
    // SAFETY: sigset_t is plain data; the calls only read and write it.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        // SAFETY: CLONE_VM without CLONE_VFORK: the child runs
        // `child_main` on its own stack (its top passed: stacks grow
        // down), in our memory, reading only `shared`, which outlives it
        // (see `Held::_shared`); SIGCHLD makes it a child we wait4 for.
        let mut pid = libc::clone(
            child_main,
            stack.cast::<u8>().add(STACK_BYTES).cast(),
            libc::CLONE_VM | libc::SIGCHLD,
            std::ptr::from_ref(&shared.plan).cast_mut().cast(),
        );
        // qemu-user (the Android rig, a phone's tools run under
        // emulation) refuses CLONE_VM without the thread flags (EINVAL),
        // and a seccomp policy may refuse clone's form: then a fork, whose
        // child runs the same plan on its own copy of our memory (the
        // window then holds its teardown again; the child knows nothing
        // of either).
        if pid < 0 {
            pid = libc::fork();
            if pid == 0 {
                child_main(std::ptr::from_ref(&shared.plan).cast_mut().cast());
            }
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        pid
    };
    if pid < 0 {
        return Err(os("fork"));
    }
    if spec.process_group {
        // The child makes its group too; doing it here as well means the
        // group exists when we return, whichever of us runs first.
        // SAFETY: setpgid on our own child, which has not exec'd.
        unsafe { libc::setpgid(pid, pid) };
    }
    drop((go_r, err_w, in_fd, out_fd, err_fd));
    Ok(Held {
        pid,
        program,
        go: Some(go_w),
        errors: Some(err_r),
        stdout: out_ours,
        stderr: err_ours,
        _shared: shared,
        _thread_bound: std::marker::PhantomData,
    })
}

/// The cloned child's entry: its plan, run to exec (or exit).
extern "C" fn child_main(plan: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `hold` passes its `Shared::plan`, alive until we exec or
    // are reaped; we are the cloned child.
    unsafe { (*plan.cast::<ChildPlan>()).run() }
}

/// What the child needs, as raw values (no allocation after fork).
struct ChildPlan {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    go_r: RawFd,
    go_w: RawFd,
    err_r: RawFd,
    err_w: RawFd,
    stdin: Option<RawFd>,
    stdout: Option<RawFd>,
    stdout_to_stderr: bool,
    stderr: Option<RawFd>,
    process_group: bool,
    ioprio: Option<i32>,
    nice: Option<i32>,
    /// SIGRTMIN..=SIGRTMAX as libc gives them to programs (read here:
    /// the child calls nothing that is not a plain syscall wrapper).
    rt_signals: (libc::c_int, libc::c_int),
}

impl ChildPlan {
    /// The child between fork and exec.
    ///
    /// # Safety
    /// Only in the child of a fork, with the pointers of `self` valid.
    unsafe fn run(&self) -> ! {
        // SAFETY: raw syscalls on our descriptors and on pointers that
        // stay valid; the caller guarantees we are the forked child.
        unsafe {
            // Our copy of the write end would keep the read below from
            // seeing EOF if the parent died.
            libc::close(self.go_w);
            libc::close(self.err_r);
            if self.process_group && libc::setpgid(0, 0) != 0 {
                self.fail(STEP_SETPGID);
            }
            for (fd, to) in [(self.stdin, 0), (self.stderr, 2), (self.stdout, 1)] {
                if let Some(fd) = fd {
                    if libc::dup2(fd, to) < 0 {
                        self.fail(STEP_DUP2);
                    }
                }
            }
            if self.stdout_to_stderr && libc::dup2(2, 1) < 0 {
                self.fail(STEP_DUP2);
            }
            // Every handler of ours back to its default while all is
            // still blocked (a handler would run in our memory), as
            // posix_spawn does; then what std::process does for its
            // children: no blocked signals, SIGPIPE back to default (Rust
            // ignores it).
            // The standard signals and the real-time ones libc leaves to
            // programs (its own, 32 and 33 under glibc, would refuse the
            // query and write errno, which is our caller's: see `fail`).
            for sig in (1..32).chain(self.rt_signals.0..=self.rt_signals.1) {
                let mut act: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut act) == 0
                    && act.sa_sigaction != libc::SIG_DFL
                    && act.sa_sigaction != libc::SIG_IGN
                {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            if let Some(raw) = self.ioprio {
                // IOPRIO_WHO_PROCESS, 0: this process.
                if libc::syscall(libc::SYS_ioprio_set, 1, 0, raw as libc::c_long) < 0 {
                    self.fail(STEP_IOPRIO);
                }
            }
            if let Some(n) = self.nice {
                if libc::setpriority(libc::PRIO_PROCESS, 0, n) != 0 {
                    self.fail(STEP_NICE);
                }
            }
            // Everything above is done while held, so the release starts
            // only the exec: what is timed from it is the command's.
            // errno is our caller's thread's here (we share its memory
            // and its TLS): not read. A pipe's read fails only on EINTR,
            // so a failure is retried, boundedly.
            let mut b = 0u8;
            let mut n = -1;
            for _ in 0..1000 {
                n = libc::read(self.go_r, (&mut b as *mut u8).cast(), 1);
                if n >= 0 {
                    break;
                }
            }
            if n != 1 {
                // The parent went away or gave up without releasing.
                libc::_exit(127);
            }
            libc::execv(self.path, self.argv);
            self.fail(STEP_EXEC)
        }
    }

    /// Sends the step and errno to the parent and exits.
    unsafe fn fail(&self, step: i32) -> ! {
        // SAFETY: as in `run`.
        unsafe {
            // Read right after the failing call. It is our caller's
            // thread's errno (shared TLS): a failure of its own at that
            // very instant could be reported instead; both are failures.
            let errno = *libc::__errno_location();
            let mut buf = [0u8; 8];
            buf[..4].copy_from_slice(&step.to_ne_bytes());
            buf[4..].copy_from_slice(&errno.to_ne_bytes());
            libc::write(self.err_w, buf.as_ptr().cast(), buf.len());
            libc::_exit(127)
        }
    }
}

impl Held {
    /// The child's pid (the command keeps it across exec).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Its piped stdout and stderr, taken while it is held: their readers
    /// (and a thread already in `wait4` on [`Held::pid`]) can be running
    /// before the release, so none of them starts inside a measured
    /// window, and an exit is seen when it happens rather than when a
    /// thread started late gets to wait for it. Whoever waits for it then
    /// reaps it; `release` and `Drop` reap only what is left.
    pub fn take_output(&mut self) -> (Option<File>, Option<File>) {
        (self.stdout.take(), self.stderr.take())
    }

    /// Lets the child exec its command. Fails, and reaps the child, when
    /// exec or a step before it fails.
    pub fn release(mut self) -> Result<Running, SpawnError> {
        let os = |call, error| SpawnError::Os {
            program: self.program.clone(),
            call,
            error,
        };
        if let Some(go) = self.go.take() {
            loop {
                match rustix::io::write(&go, &[1]) {
                    Ok(_) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    // The child is gone before the release: a step before
                    // its wait failed (a nice it may not take), and why is
                    // in the error pipe, read below.
                    Err(rustix::io::Errno::PIPE) => break,
                    Err(e) => return Err(os("write", e.into())),
                }
            }
        }
        let mut buf = [0u8; 8];
        let mut got = 0;
        if let Some(errors) = self.errors.take() {
            // EOF (exec closed the close-on-exec end) means it runs.
            while got < buf.len() {
                match rustix::io::read(&errors, &mut buf[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(os("read", e.into())),
                }
            }
        }
        if got == buf.len() {
            let step = i32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
            let errno = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
            let _ = wait4(self.pid);
            self.pid = 0;
            let step = usize::try_from(step)
                .ok()
                .and_then(|i| STEPS.get(i))
                .copied()
                .unwrap_or("exec");
            return Err(SpawnError::child(
                &self.program,
                step,
                &std::io::Error::from_raw_os_error(errno),
            ));
        }
        let running = Running {
            pid: self.pid,
            stdout: self.stdout.take(),
            stderr: self.stderr.take(),
        };
        // Released: ours to wait for now, not the drop's.
        self.pid = 0;
        Ok(running)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Never released: closing the gate makes the child exit without
        // running the command; reap it so no zombie is left.
        self.go.take();
        if self.pid > 0 {
            let _ = wait4(self.pid);
        }
    }
}

impl Running {
    /// Waits for the command to exit.
    pub fn wait(self) -> std::io::Result<Exited> {
        wait4(self.pid)
    }
}

/// Reaps `pid` (retrying on EINTR), with its status and resource use.
pub fn wait4(pid: i32) -> std::io::Result<Exited> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; zeroed is a valid value for it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals.
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
    Ok(Exited {
        status: ExitStatus::from_raw(status),
        usage: Usage {
            read_bytes: ru.ru_inblock as u64 * 512,
            write_bytes: ru.ru_oublock as u64 * 512,
            user_ns: ns(ru.ru_utime),
            sys_ns: ns(ru.ru_stime),
        },
    })
}

#[cfg(test)]
mod tests;
