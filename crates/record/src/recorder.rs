//! The recording itself: a trace session of the page-cache insertions (and
//! exec events, for names) of the chosen tasks, read by a thread that also
//! samples the tasks' `/proc` entries for the paths they use.
//!
//! Following a command from its first instruction: [`PausedChild`] forks
//! it stopped just before exec (blocked on a pipe), the session starts with
//! its pid in `set_event_pid` and `event-fork` on (so every task it forks
//! later is followed), then the child is released. Tasks the command does
//! not fork are not followed: a daemon it asks to do work (Android's
//! `am start` asks system_server, which asks zygote to fork the app),
//! io_uring's io-wq workers (created by `create_io_thread`, which bypasses
//! the fork tracepoint event-fork hooks; rarely the ones adding pages:
//! buffered io_uring reads insert them from the submitting task, and a
//! 16 MiB fio `ioengine=io_uring` random read was recorded in full here),
//! and kernel threads (khugepaged collapsing file pages into huge pages, a
//! loop device's worker reading its backing file). For those, record every
//! task with a device filter.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use iolab_guard::Guard;
use iolab_trace::{EventRequest, Record, SessionConfig, TraceSession, TraceStats};

use crate::candidates::{exec_path, Candidates};
use crate::event::{DevNo, PageDecoder, EVENT};
use crate::pages::PageLog;
use crate::RecordError;

/// How often the reader thread drains the trace buffers and samples the
/// tasks' `/proc` entries.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(25);

/// Most exec'd filenames kept as candidate names (a busy system recorded
/// with every task execs a lot).
const MAX_NAMED: usize = 10_000;

/// Which tasks and devices to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOptions {
    /// Follow these tasks and every task they fork from now on; `None`:
    /// every task on the machine.
    pub pids: Option<Vec<i32>>,
    /// Only pages of files on these filesystems (kernel filter on
    /// `s_dev`); empty: every filesystem.
    pub devices: Vec<DevNo>,
    /// Ring buffer per CPU, KiB.
    pub buffer_kib_per_cpu: u32,
    /// Where `/proc` is (tests point it at fixtures).
    pub proc_root: PathBuf,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            pids: None,
            devices: Vec::new(),
            buffer_kib_per_cpu: 8 * 1024,
            proc_root: PathBuf::from("/proc"),
        }
    }
}

/// What a finished recording gathered, before names are resolved.
#[derive(Debug)]
pub struct Raw {
    /// Pages per file.
    pub log: PageLog,
    /// Paths seen.
    pub candidates: Candidates,
    /// Trace counters (lost events!).
    pub stats: TraceStats,
    /// CLOCK_MONOTONIC ns when tracing started and stopped.
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
}

/// A running recording; [`Recorder::finish`] stops it.
pub struct Recorder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Raw, RecordError>>>,
    start_ns: u64,
}

impl Recorder {
    /// Starts tracing (the session is set up when this returns: events of
    /// the chosen tasks from now on are recorded). `candidates` may already
    /// hold names (the command's arguments).
    pub fn start(
        guard: &Guard,
        opts: &RecordOptions,
        candidates: Candidates,
    ) -> Result<Recorder, RecordError> {
        let mut page_event = EventRequest::new(EVENT.0, EVENT.1);
        if !opts.devices.is_empty() {
            let f: Vec<String> = opts
                .devices
                .iter()
                .map(|d| format!("s_dev == {}", d.to_kernel()))
                .collect();
            page_event = page_event.filter(&f.join(" || "));
        }
        let config = SessionConfig {
            events: vec![
                page_event,
                EventRequest::new("sched", "sched_process_exec").optional(),
            ],
            buffer_kib_per_cpu: opts.buffer_kib_per_cpu,
            pids: opts.pids.clone(),
            read_interval: SAMPLE_INTERVAL,
        };
        let session = TraceSession::start(guard, config)?;
        let decoder = session
            .format(EVENT.0, EVENT.1)
            .and_then(PageDecoder::new)
            .ok_or_else(|| {
                RecordError::Unsupported(format!(
                    "this kernel's {}/{} event lacks i_ino, index or s_dev",
                    EVENT.0, EVENT.1
                ))
            })?;
        let start_ns = session.start_ns();
        let stop = Arc::new(AtomicBool::new(false));
        let mut worker = Worker {
            decoder,
            log: PageLog::new(),
            candidates,
            live: opts.pids.iter().flatten().copied().collect(),
            dead: BTreeSet::new(),
            proc_root: opts.proc_root.clone(),
        };
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("iolab-record".into())
            .spawn(move || worker.run(session, &flag, start_ns))
            .map_err(|e| RecordError::Io {
                path: PathBuf::from("(thread)"),
                source: e,
            })?;
        Ok(Recorder {
            stop,
            thread: Some(thread),
            start_ns,
        })
    }

    /// CLOCK_MONOTONIC ns when tracing started.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Stops tracing and returns what was gathered.
    pub fn finish(mut self) -> Result<Raw, RecordError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => Err(RecordError::Unsupported(
                "the recording thread panicked".into(),
            )),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // Dropped without finish (an error elsewhere): stop the thread so
        // the session (and its tracefs instance) goes away now.
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Worker {
    decoder: PageDecoder,
    log: PageLog,
    candidates: Candidates,
    /// Tasks to sample.
    live: BTreeSet<i32>,
    /// Tasks found gone.
    dead: BTreeSet<i32>,
    proc_root: PathBuf,
}

impl Worker {
    fn run(
        &mut self,
        mut session: TraceSession,
        stop: &AtomicBool,
        start_ns: u64,
    ) -> Result<Raw, RecordError> {
        while !stop.load(Ordering::Relaxed) {
            session.poll(&mut |r| self.record(r))?;
            self.sample();
            std::thread::sleep(SAMPLE_INTERVAL);
        }
        let stats = session.finish(&mut |r| self.record(r))?;
        self.sample();
        Ok(Raw {
            log: std::mem::take(&mut self.log),
            candidates: std::mem::take(&mut self.candidates),
            stats,
            start_ns,
            end_ns: iolab_trace::monotonic_ns(),
        })
    }

    fn record(&mut self, r: &Record<'_>) {
        if let Some(e) = self.decoder.decode(r) {
            if !self.dead.contains(&e.pid) {
                self.live.insert(e.pid);
            }
            self.log.add(&e);
        } else if r.is("sched", "sched_process_exec") {
            if self.candidates.named.len() < MAX_NAMED {
                if let Some(p) = r
                    .str("filename")
                    .and_then(|f| exec_path(&self.proc_root, r.pid, f))
                {
                    self.candidates.add_named(p);
                }
            }
            self.live.insert(r.pid);
        }
    }

    fn sample(&mut self) {
        let pids: Vec<i32> = self.live.iter().copied().collect();
        for pid in pids {
            if !self.proc_root.join(pid.to_string()).exists() {
                self.live.remove(&pid);
                self.dead.insert(pid);
                continue;
            }
            self.candidates.sample(&self.proc_root, pid);
        }
    }
}

/// A forked child held just before exec until [`PausedChild::release`],
/// so tracing can start with its pid before it runs a single instruction
/// of the command.
///
/// Forked by hand: `std::process::Command::spawn` returns only once the
/// child has exec'd (to report exec errors), so it cannot hold a child
/// before exec.
pub struct PausedChild {
    pid: i32,
    gate: Option<OwnedFd>,
    /// Read end of the pipe the child writes its exec errno to.
    errors: Option<OwnedFd>,
    program: String,
    reaped: bool,
}

impl PausedChild {
    /// Forks `argv` (stdin and stderr inherited; stdout inherited or sent
    /// to our stderr, so the caller's stdout can carry a list).
    pub fn spawn(argv: &[String], stdout_to_stderr: bool) -> Result<PausedChild, RecordError> {
        let program = argv
            .first()
            .ok_or_else(|| RecordError::Usage("no command to record".into()))?
            .clone();
        let exe = find_program(&program).ok_or_else(|| RecordError::Spawn {
            program: program.clone(),
            error: std::io::Error::from(std::io::ErrorKind::NotFound),
        })?;
        let cstr = |s: &[u8]| {
            CString::new(s)
                .map_err(|_| RecordError::Usage(format!("{program:?}: argument holds a NUL byte")))
        };
        let exe_c = cstr(exe.as_os_str().as_bytes())?;
        let args_c = argv
            .iter()
            .map(|a| cstr(a.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut arg_ptrs: Vec<*const libc::c_char> = args_c.iter().map(|a| a.as_ptr()).collect();
        arg_ptrs.push(std::ptr::null());
        let pipe = || {
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                .map_err(|e| RecordError::io("pipe", e.into()))
        };
        let (gate_rd, gate_wr) = pipe()?;
        let (err_rd, err_wr) = pipe()?;
        let (gate_rd_raw, gate_wr_raw, err_rd_raw, err_wr_raw) = (
            gate_rd.as_raw_fd(),
            gate_wr.as_raw_fd(),
            err_rd.as_raw_fd(),
            err_wr.as_raw_fd(),
        );
        // SAFETY: after fork the child only makes async-signal-safe calls
        // (close, read, dup2, sigprocmask, signal, execv, write, _exit) on
        // memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(RecordError::io("fork", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: see above; this branch never returns.
            unsafe {
                libc::close(gate_wr_raw);
                libc::close(err_rd_raw);
                let mut b = 0u8;
                while libc::read(gate_rd_raw, (&mut b as *mut u8).cast(), 1) < 0
                    && *libc::__errno_location() == libc::EINTR
                {}
                // 0 bytes: the parent gave up; do not run the command.
                if b != 1 {
                    libc::_exit(127);
                }
                if stdout_to_stderr {
                    libc::dup2(2, 1);
                }
                // What std::process does for its children: no blocked
                // signals, SIGPIPE back to default (Rust ignores it).
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                libc::execv(exe_c.as_ptr(), arg_ptrs.as_ptr());
                let errno = *libc::__errno_location();
                libc::write(err_wr_raw, (&errno as *const i32).cast(), 4);
                libc::_exit(127);
            }
        }
        drop((gate_rd, err_wr));
        Ok(PausedChild {
            pid,
            gate: Some(gate_wr),
            errors: Some(err_rd),
            program,
            reaped: false,
        })
    }

    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets the child exec the command; fails when the exec fails.
    pub fn release(&mut self) -> Result<(), RecordError> {
        if let Some(w) = self.gate.take() {
            rustix::io::write(&w, &[1]).map_err(|e| RecordError::io("pipe", e.into()))?;
        }
        if let Some(r) = self.errors.take() {
            // EOF when exec closed the CLOEXEC write end: it ran.
            let mut buf = [0u8; 4];
            if let Ok(4) = rustix::io::read(&r, &mut buf) {
                let errno = i32::from_ne_bytes(buf);
                let _ = self.reap();
                return Err(RecordError::Spawn {
                    program: self.program.clone(),
                    error: std::io::Error::from_raw_os_error(errno),
                });
            }
        }
        Ok(())
    }

    /// Releases the child if needed and waits for the command to exit.
    pub fn wait(mut self) -> Result<std::process::ExitStatus, RecordError> {
        self.release()?;
        self.reap()
    }

    fn reap(&mut self) -> Result<std::process::ExitStatus, RecordError> {
        use std::os::unix::process::ExitStatusExt;
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child; status is a local.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.reaped = true;
                return Ok(std::process::ExitStatus::from_raw(status));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                self.reaped = true;
                return Err(RecordError::io("waitpid", e));
            }
        }
    }
}

impl Drop for PausedChild {
    fn drop(&mut self) {
        // Never released (tracing failed to start): closing the gate makes
        // the child exit 127 without running the command. Reap it either
        // way so no zombie is left.
        self.gate.take();
        if !self.reaped {
            let _ = self.reap();
        }
    }
}

/// The executable `program` names: a path when it holds a `/`, else the
/// first executable file of that name on `$PATH` (looked up before fork,
/// so the child calls only execv).
fn find_program(program: &str) -> Option<PathBuf> {
    let exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    std::env::var_os("PATH")?
        .as_bytes()
        .split(|&b| b == b':')
        .map(|d| Path::new(std::ffi::OsStr::from_bytes(d)).join(program))
        .find(|p| exec(p))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn paused_child_runs_only_when_released() {
        let d = tempfile::tempdir().unwrap();
        let mark = d.path().join("ran");
        let argv = vec!["touch".to_string(), mark.display().to_string()];
        let mut c = PausedChild::spawn(&argv, true).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!mark.exists(), "the child ran before release");
        c.release().unwrap();
        assert!(c.wait().unwrap().success());
        assert!(mark.exists());
    }

    #[test]
    fn a_dropped_child_never_runs_and_bad_programs_fail_clearly() {
        let d = tempfile::tempdir().unwrap();
        let mark = d.path().join("ran");
        let argv = vec!["touch".to_string(), mark.display().to_string()];
        drop(PausedChild::spawn(&argv, false).unwrap());
        assert!(!mark.exists());
        let e = PausedChild::spawn(&["no-such-program-iolab".to_string()], false)
            .err()
            .unwrap();
        assert!(e.to_string().contains("no-such-program-iolab"), "{e}");
        let f = d.path().join("not-exec");
        std::fs::write(&f, "x").unwrap();
        let mut c = PausedChild::spawn(&[f.display().to_string()], false).unwrap();
        let e = c.release().unwrap_err();
        assert!(e.to_string().contains("ermission"), "{e}");
    }
}
