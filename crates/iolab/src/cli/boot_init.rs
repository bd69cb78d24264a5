//! `iolab boot-init` — seed 001's treadahead at boot: started first (by
//! the kernel as PID 1, by init as its first service, or by a unit before
//! sysinit), it starts a prefetch of a recorded list (`iolab prefetch`) or
//! a recording of the boot (`iolab record --all-pids --until-file`), then
//! execs the real init, at once or once the prefetch is done.
//!
//! It must never break a boot, nor delay it beyond its own reads: its
//! only work before the exec is to split its arguments, start one helper
//! process (a re-exec of this binary, in a session of its own, so init's
//! job control never signals it) and, with `--before`, wait for it at most
//! `--budget`. Everything that can fail (a missing, corrupt or stale list,
//! a deleted file, a full disk, a helper that crashes or is killed) fails
//! in the helper, never here; a bad option here is reported and init runs.
//! The run goes through [`main`] before the rest of the command line is
//! parsed: no state recovery, no signal thread, no exit code, only an
//! exec of init (or the kernel's fallbacks: /sbin/init, /etc/init,
//! /bin/init, /bin/sh).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;

/// Boot prefetch started first (as PID 1, or by init before anything
/// else): starts `iolab prefetch LIST` or `iolab record` of the boot, then
/// execs INIT, at once or once the list is read; nothing that goes wrong
/// with the prefetch stops or holds init.
#[derive(Debug, Parser)]
#[command(name = "iolab boot-init", after_help = AFTER_HELP)]
pub struct BootInitArgs {
    /// Prefetch this list (`FILE off:len,...` lines, as `iolab record`
    /// writes them) while the system boots.
    #[arg(long, value_name = "LIST", conflicts_with = "record")]
    pub prefetch: Option<PathBuf>,
    /// Record what the boot brings into the page cache, as a prefetch list
    /// written to LIST when --until-file appears (or --max passes).
    #[arg(long, value_name = "LIST", requires = "until_file")]
    pub record: Option<PathBuf>,
    /// With --record: the file whose appearance marks the end of the boot.
    #[arg(long, value_name = "PATH")]
    pub until_file: Option<PathBuf>,
    /// With --record: stop after this long whatever happens.
    #[arg(long, value_name = "S", default_value = "300s", value_parser = super::values::duration)]
    pub max: Duration,
    /// Start init only when the prefetch is done (its reads finished), or
    /// after --budget, whichever comes first; without it init starts at
    /// once and the prefetch runs beside it (treadahead -e).
    #[arg(long)]
    pub before: bool,
    /// With --before: the longest init waits. With --record: the longest
    /// init waits for the recording's trace to be on (it always waits for
    /// that, so the list misses nothing init reads).
    #[arg(long, value_name = "S", default_value = "30s", value_parser = super::values::duration)]
    pub budget: Duration,
    /// I/O priority of the prefetch: idle, be:N or rt:N (treadahead -i is
    /// idle, -j be:7).
    #[arg(long, value_name = "CLASS[:LEVEL]")]
    pub ioprio: Option<String>,
    /// Nice value of the prefetch, -20..19 (treadahead -p is 19).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub nice: Option<i32>,
    /// I/O scheduler of the list's disks while the prefetch runs, restored
    /// after it (treadahead -n); needs a writable /run (or Android's
    /// /data/local/tmp) for the guard's journal.
    #[arg(long, value_name = "SCHED")]
    pub scheduler: Option<String>,
    /// Reader threads of the prefetch.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub threads: u16,
    /// The order the prefetch reads the list in: listed or disk.
    #[arg(long, value_name = "ORDER", value_parser = ["listed", "disk"])]
    pub order: Option<String>,
    /// The prefetch starts reading only once FILE exists (at most 60 s):
    /// `iolab boot --explain` makes it when its tracer follows the boot's
    /// processes, so the prefetch does not run ahead of a boot the tracer
    /// holds back.
    #[arg(long, value_name = "FILE", conflicts_with = "record")]
    pub hold_until: Option<PathBuf>,
    /// Where the helper writes its report (prefetch, JSON) or its list's
    /// summary (record); nothing by default.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// The init to run, with its arguments (default /sbin/init).
    #[arg(last = true, value_name = "INIT")]
    pub init: Vec<OsString>,
}

const AFTER_HELP: &str = "\
Started by the kernel (init=/path/to/iolab -- boot-init --prefetch LIST -- /sbin/init:
the kernel passes what follows `--` on its command line to init), by
Android's init as an early-init service, or by a systemd unit before
sysinit.target (docs/boot.md has each).

The helper is this binary again (`iolab prefetch` or `iolab record`), in a
session of its own, with stdin from /dev/null and the console as its output;
init gets its pid in IOLAB_BOOT_HELPER_PID, and its supervisor's (which ends
once what a failed helper left is undone) in IOLAB_BOOT_SUPERVISOR_PID;
as PID 1 of a real boot, the helper's also in /run/iolab-boot-helper.pid
where /run is writable. Init starts whatever happens to the helper.

Examples:
  iolab boot-init --record /var/lib/iolab/boot.list --until-file /run/boot-done -- /sbin/init
  iolab boot-init --prefetch /var/lib/iolab/boot.list --ioprio idle -- /sbin/init
  iolab boot-init --prefetch /var/lib/iolab/boot.list --before --budget 10s -- /sbin/init";

/// Where `boot-init` is among this process's arguments: right after the
/// program's name, as a user types it; or, as PID 1, anywhere before the
/// last `--`, because the kernel hands init the bare words of its command
/// line it does not know (Ubuntu's `splash`) before the words after `--`:
/// `init=/usr/bin/iolab -- boot-init ... -- /sbin/init` with `splash`
/// runs `iolab splash boot-init ...`, and a PID 1 that exits on a usage
/// error panics the kernel.
pub fn position(args: &[OsString]) -> Option<usize> {
    if args.get(1).is_some_and(|a| a == "boot-init") {
        return Some(1);
    }
    if std::process::id() != 1 {
        return None;
    }
    let end = args.iter().rposition(|a| a == "--").unwrap_or(args.len());
    args[..end]
        .iter()
        .position(|a| a == "boot-init")
        .filter(|&i| i > 0)
}

/// Runs `iolab boot-init ARGS`: starts the helper, then execs init. Never
/// returns: it becomes init, or, when it is not PID 1 and no init could
/// be run, exits 1.
pub fn main(args: Vec<OsString>) -> ! {
    let t0 = Instant::now();
    // Init is what follows the last `--`, found before anything else is
    // parsed: whatever is wrong with the options, init runs.
    let split = args.iter().rposition(|a| a == "--");
    let init: Vec<OsString> = match split {
        Some(i) if i + 1 < args.len() => args[i + 1..].to_vec(),
        _ => vec!["/sbin/init".into()],
    };
    let own = &args[..split.unwrap_or(args.len())];
    if std::process::id() != 1 {
        // Run by hand, not booting: help is only printed, and without an
        // init named after `--` the system's /sbin/init is never started.
        if own
            .iter()
            .any(|a| a == "--help" || a == "-h" || a == "--version" || a == "-V")
        {
            if let Err(e) = BootInitArgs::try_parse_from(own) {
                let _ = e.print();
            }
            std::process::exit(0);
        }
        if split.is_none_or(|i| i + 1 >= args.len()) {
            note("boot-init: name the init to run after --, e.g. `iolab boot-init --prefetch LIST -- /sbin/init` (without one, /sbin/init is assumed only as PID 1)");
            std::process::exit(2);
        }
    }
    let helper = std::panic::catch_unwind(|| start_helper(&args, &init, t0)).unwrap_or_else(|_| {
        note("boot-init: panicked before starting the helper; starting init");
        None
    });
    if let Some((pid, supervisor)) = helper {
        // For init (and the tests): the helper to wait for or stop, and
        // its supervisor, which ends once what a failed helper left is
        // undone.
        std::env::set_var("IOLAB_BOOT_HELPER_PID", pid.to_string());
        std::env::set_var("IOLAB_BOOT_SUPERVISOR_PID", supervisor.to_string());
        // And, on a real boot, in /run for services, which an init like
        // systemd does not hand its environment: best effort, never in
        // init's way.
        if real_boot() {
            let _ = std::fs::write("/run/iolab-boot-helper.pid", format!("{pid}\n"));
        }
    }
    note(&format!(
        "boot-init: exec {} after {:.1} ms",
        init[0].to_string_lossy(),
        t0.elapsed().as_secs_f64() * 1e3
    ));
    exec_init(&init)
}

/// Parses the options and starts the helper; with --before, waits for it.
/// Its pid, when it started.
fn start_helper(args: &[OsString], init: &[OsString], t0: Instant) -> Option<(u32, libc::pid_t)> {
    let a = match BootInitArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => {
            // --help / --version: printed, then init as always.
            let _ = e.print();
            return None;
        }
        Err(e) => {
            note(&format!(
                "boot-init: {}; starting {} without a prefetch",
                super::clap_one_line(&e),
                init[0].to_string_lossy()
            ));
            return None;
        }
    };
    let mut helper_args = helper_args(&a)?;
    // Without /proc (iolab as the kernel's init, nothing mounted yet)
    // there is no /proc/self/exe: argv[0] is the path the kernel ran
    // (`init=/path/to/iolab`).
    let exe = std::env::current_exe()
        .ok()
        .or_else(|| std::env::args_os().next().map(PathBuf::from))?;
    // A recording holds init until its trace is on (a pipe the helper
    // writes one byte to), or --budget: what init read before would be
    // missing from the list.
    let ready = if a.record.is_some() {
        ready_pipe()
    } else {
        None
    };
    if let Some((_, w)) = &ready {
        helper_args.splice(1..1, ["--ready-fd".to_string(), w.to_string()]);
    }
    let ready_w = ready.map_or(-1, |p| p.1);
    let mut cmd = Command::new(exe);
    // Stdin from /dev/null, or, before /dev exists (the kernel's init with
    // no devtmpfs mounted), an empty pipe whose writer the supervisor
    // closes: the helper reads nothing from the console either way.
    let no_dev = !std::path::Path::new("/dev/null").exists();
    cmd.args(&helper_args).stdin(if no_dev {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    // SAFETY: setsid(2) and fcntl(2) between fork and exec touch no memory.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            if ready_w >= 0 {
                libc::fcntl(ready_w, libc::F_SETFD, 0);
            }
            Ok(())
        });
    }
    let sup = supervise(cmd, t0)?;
    let pid = sup.helper;
    note(&format!(
        "boot-init: helper {pid}: iolab {}",
        helper_args.join(" ")
    ));
    if let Some((r, w)) = ready {
        // SAFETY: both ends are this function's own descriptors.
        unsafe { libc::close(w) };
        let left = a.budget.saturating_sub(t0.elapsed());
        let mut p = libc::pollfd {
            fd: r,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack; read into a one-byte buffer.
        let got = unsafe {
            libc::poll(
                &mut p,
                1,
                i32::try_from(left.as_millis()).unwrap_or(i32::MAX),
            ) == 1
                && libc::read(r, [0u8; 1].as_mut_ptr().cast(), 1) == 1
        };
        unsafe { libc::close(r) };
        note(&format!(
            "boot-init: {} after {:.1} ms",
            if got {
                "recording"
            } else {
                "the recording did not start (budget spent or helper gone): init starts anyway"
            },
            t0.elapsed().as_secs_f64() * 1e3
        ));
    }
    if a.before {
        // Until the helper is done (its reads finished: --wait) and what it
        // changed is restored, it died, or the budget is spent; never
        // longer. (The supervisor ends right after the helper.) A helper
        // that died does not hold init while the supervisor undoes what it
        // left: switching a scheduler back waits for the disk's queue to
        // drain, and a dead helper's queued reads (behind a throttle: its
        // whole list) may take seconds.
        let until = t0 + a.budget;
        loop {
            let mut status = 0;
            // SAFETY: waitpid on this process's own child, WNOHANG.
            let r = unsafe { libc::waitpid(sup.pid, &mut status, libc::WNOHANG) };
            if r == sup.pid || r < 0 {
                break;
            }
            if sup.helper_failed(Duration::from_millis(2)) {
                note(&format!(
                    "boot-init: helper {pid} failed: init starts while its supervisor {} undoes what it left",
                    sup.pid
                ));
                break;
            }
            if Instant::now() >= until {
                note(&format!(
                    "boot-init: helper {pid} still running after the {:?} budget: init starts beside it",
                    a.budget
                ));
                break;
            }
        }
    }
    sup.close();
    // Not waited for otherwise: once init runs, it reaps the supervisor.
    Some((pid, sup.pid))
}

/// The supervisor boot-init started, and the pipe on which it says that
/// the helper failed.
struct Supervisor {
    pid: libc::pid_t,
    helper: u32,
    /// Read end: one byte when the helper failed, EOF when the supervisor
    /// ends.
    events: i32,
}

impl Supervisor {
    /// True when the supervisor said, within `wait`, that the helper
    /// failed (it then undoes what the helper left).
    fn helper_failed(&self, wait: Duration) -> bool {
        let mut p = libc::pollfd {
            fd: self.events,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
        let mut byte = [0u8; 1];
        // SAFETY: one pollfd on the stack; one byte into a live buffer.
        unsafe {
            libc::poll(&mut p, 1, ms) == 1
                && p.revents & libc::POLLIN != 0
                && libc::read(self.events, byte.as_mut_ptr().cast(), 1) == 1
        }
    }

    fn close(&self) {
        // SAFETY: our own descriptor (close-on-exec anyway: init never
        // inherits it; the supervisor's later write gets EPIPE, and Rust's
        // runtime ignores SIGPIPE).
        unsafe { libc::close(self.events) };
    }
}

/// Starts the helper under a supervisor: a fork of this process (one
/// thread, nothing exec'd) in a session of its own, which starts the
/// helper, waits for it, and then undoes what a helper that died (a
/// SIGKILL, a crash) left changed — its journal in /run/iolab, such as
/// `--scheduler none` on the list's disks — as any later iolab run would;
/// on a boot there is no later run before the next boot. Returns the
/// supervisor with the helper's pid.
fn supervise(mut cmd: Command, t0: Instant) -> Option<Supervisor> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        note("boot-init: no pipe for the supervisor: the helper is not started");
        return None;
    }
    let (r, w) = (fds[0], fds[1]);
    // SAFETY: boot-init runs before anything else of iolab: this process
    // has one thread, so the child may run Rust code after fork.
    let forked = unsafe { libc::fork() };
    if forked < 0 {
        note("boot-init: fork failed: the helper is not started");
        // SAFETY: our own descriptors.
        unsafe {
            libc::close(r);
            libc::close(w);
        }
        return None;
    }
    if forked == 0 {
        // The supervisor. Init's job control must never signal it.
        // SAFETY: plain system calls on our own descriptors.
        unsafe {
            libc::setsid();
            libc::close(r);
        }
        let code = match cmd.spawn() {
            Ok(mut helper) => {
                drop(helper.stdin.take());
                let pid = helper.id().to_ne_bytes();
                // SAFETY: four bytes from a live buffer to our pipe.
                unsafe { libc::write(w, pid.as_ptr().cast(), pid.len()) };
                let id = helper.id();
                let st = helper.wait();
                if let Ok(st) = &st {
                    note(&format!(
                        "boot-init: helper {id} ended ({st}) after {:.1} ms",
                        t0.elapsed().as_secs_f64() * 1e3
                    ));
                }
                let failed = !st.is_ok_and(|s| s.success());
                // SAFETY: one byte from a live buffer to our pipe (EPIPE
                // once boot-init stopped listening), then our descriptor.
                unsafe {
                    if failed {
                        libc::write(w, [1u8].as_ptr().cast(), 1);
                    }
                    libc::close(w);
                }
                if failed {
                    match iolab_guard::recover_stale() {
                        Ok(lines) => {
                            for l in lines {
                                note(&format!("boot-init: after the helper: {l}"));
                            }
                            note(&format!(
                                "boot-init: after the helper: restored after {:.1} ms",
                                t0.elapsed().as_secs_f64() * 1e3
                            ));
                        }
                        Err(e) => note(&format!("boot-init: after the helper: {e}")),
                    }
                }
                0
            }
            Err(e) => {
                note(&format!("boot-init: the helper did not start: {e}"));
                1
            }
        };
        // SAFETY: ends the forked supervisor without running the parent's
        // exit handlers twice.
        unsafe { libc::_exit(code) };
    }
    // SAFETY: our own descriptor.
    unsafe { libc::close(w) };
    let mut pid = [0u8; 4];
    // SAFETY: reads at most four bytes into a live buffer.
    let n = unsafe { libc::read(r, pid.as_mut_ptr().cast(), pid.len()) };
    let sup = Supervisor {
        pid: forked,
        helper: u32::from_ne_bytes(pid),
        events: r,
    };
    if n != 4 {
        // The helper did not start (the supervisor said why).
        sup.close();
        return None;
    }
    Some(sup)
}

/// A pipe, both ends close-on-exec (so init never inherits them): (read,
/// write).
fn ready_pipe() -> Option<(i32, i32)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two-element array.
    (unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0).then_some((fds[0], fds[1]))
}

/// The helper's command line, or None (with a note) when there is nothing
/// to start.
fn helper_args(a: &BootInitArgs) -> Option<Vec<String>> {
    let text = |p: &PathBuf| p.to_string_lossy().into_owned();
    let mut v: Vec<String> = Vec::new();
    if let Some(list) = &a.record {
        let until = a.until_file.as_ref()?;
        v.extend(["record", "--all-pids", "--until-file"].map(String::from));
        v.push(text(until));
        v.push("--duration".into());
        v.push(format!("{}s", a.max.as_secs_f64()));
        v.push("-o".into());
        v.push(text(list));
        return Some(v);
    }
    let Some(list) = &a.prefetch else {
        note("boot-init: neither --prefetch nor --record: starting init alone");
        return None;
    };
    v.extend(["prefetch", "--list", "--log"].map(String::from));
    v.push(format!("--threads={}", a.threads));
    if let Some(p) = &a.ioprio {
        v.push(format!("--ioprio={p}"));
    }
    if let Some(n) = a.nice {
        v.push(format!("--nice={n}"));
    }
    if let Some(s) = &a.scheduler {
        v.push(format!("--scheduler={s}"));
    }
    if let Some(o) = &a.order {
        v.push(format!("--order={o}"));
    }
    if let Some(f) = &a.hold_until {
        v.push(format!("--start-when={}", text(f)));
    }
    // Done means read, not only asked for (readahead(2) returns first):
    // with --before init waits for that (at most the budget); in the
    // background the helper still waits, so its report says when its last
    // read completed, the seed's measure, beside when it was submitted.
    let wait = if a.before {
        a.budget
    } else {
        a.budget.max(BACKGROUND_WAIT)
    };
    v.push(format!("--wait={}s", wait.as_secs_f64()));
    if let Some(r) = &a.report {
        v.extend([
            "--json".to_string(),
            "--diskstats".to_string(),
            "-o".to_string(),
            text(r),
        ]);
    }
    v.push(text(list));
    Some(v)
}

/// How long a background helper waits for its reads at most.
const BACKGROUND_WAIT: Duration = Duration::from_secs(300);

/// A line for the console (PID 1's stderr), never a panic.
fn note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "iolab {line}");
}

/// True when this is a machine's boot: PID 1 of the initial pid namespace
/// (kthreadd is its pid 2, or /proc is not even mounted yet). PID 1 of a
/// container or a test's pid namespace is not: there, the system's own
/// /sbin/init must never be started by mistake.
fn real_boot() -> bool {
    std::process::id() == 1
        && (!std::path::Path::new("/proc/self").exists()
            || std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd"))
}

/// Execs `init`, then, on a real boot, the kernel's own fallbacks; only
/// returns (exit 1) when not booting: a booting PID 1 must never exit, so
/// it waits forever there.
fn exec_init(init: &[OsString]) -> ! {
    let mut tried = vec![init.to_vec()];
    if real_boot() {
        for f in ["/sbin/init", "/etc/init", "/bin/init", "/bin/sh"] {
            if init[0] != f {
                tried.push(vec![f.into()]);
            }
        }
    }
    for argv in &tried {
        let e = Command::new(&argv[0]).args(&argv[1..]).exec();
        note(&format!(
            "boot-init: cannot exec {}: {e}",
            argv[0].to_string_lossy()
        ));
    }
    if real_boot() {
        note("boot-init: no init could be run; holding PID 1");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    std::process::exit(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    /// What the registry hands the guest for a variant is a command line
    /// boot-init itself takes: a variant added by its one line in
    /// results/src/boot.rs needs nothing here.
    #[test]
    fn a_variants_init_line_is_one_boot_init_parses() {
        for v in ["rt4", "before+rt4", "idle", "nice19+disk-order"] {
            let line = iolab_results::boot::init_args(v).unwrap();
            let split = line.iter().position(|a| a == "--").unwrap();
            // line[0] is the binary, line[1] the subcommand.
            let mut argv = vec!["boot-init".to_string()];
            argv.extend(line[2..split].iter().cloned());
            let a = BootInitArgs::try_parse_from(&argv).unwrap();
            if v.contains("rt4") {
                // Handed to the prefetch helper, which takes it as a class.
                assert_eq!(a.ioprio.as_deref(), Some("rt:4"), "{v}");
                let p: iolab_sys::ioprio::IoPrio = "rt:4".parse().unwrap();
                assert_eq!(p.to_string(), "rt:4");
            }
        }
        assert!(iolab_results::boot::init_args("idle+rt4").is_err());
        assert!(iolab_results::boot::help().contains("rt4"));
    }
}
