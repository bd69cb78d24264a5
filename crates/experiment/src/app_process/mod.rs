//! The app's own process, when iolab does not start it: on Android `am
//! start` asks ActivityManager, and zygote forks the app (or hands the
//! launch to a process it forked earlier, from the USAP pool), outside
//! iolab's process group and after `am` (itself a script running `cmd
//! activity`) was launched. Per-process options (`--target-ioprio`,
//! `--target-nice`) must land on that process, not on `am`, and the
//! collectors must follow it.
//!
//! Found with what a GKI phone has: the task events of iolab's own
//! tracefs instance, as Perfetto's process tracking uses them
//! (`task/task_newtask` for forks, `task/task_rename` for names,
//! `sched/sched_process_exec` for a program that execs under the name).
//! Zygote's child names itself twice while it specialises
//! (frameworks/base core/jni/com_android_internal_os_Zygote.cpp
//! `SetThreadName`: 14 characters of the name's last 15, then
//! AndroidRuntime::setArgv0 at bindApplication: its last 15), and a USAP
//! process, forked long before the launch, does the same when it is
//! specialised: a rename to either form, by a process's main thread, is
//! the app. Nothing here needs `/proc/sys/kernel/ns_last_pid`
//! (CONFIG_CHECKPOINT_RESTORE, absent from GKI kernels) or a pid
//! namespace. Where tracefs cannot be used, /proc is scanned every
//! [`SCAN_INTERVAL`] as the last resort, and the record says so.
//!
//! A process is the app only when its uid is the package's (given by
//! the caller, from `cmd package list packages -U`): the 15-character
//! names collide (every `com.google.android.*` package's first 15
//! characters are the same, and two packages may share their last 15).
//!
//! Once found, every thread it has gets the settings (ioprio and nice are
//! per thread in Linux), listed again until no new one appears. Android
//! then sets some of them again itself ([`hold`]): every thread of the
//! app is read while the start runs, what changed is stored, and with
//! `--target-hold` set back. The app's other processes born during the
//! start (a `:service`, WebView's renderer: [`family`]) get the same
//! settings, and their I/O is the app's.

pub mod family;
pub mod hold;
mod watcher;

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iolab_guard::Guard;

use iolab_sys::ioprio::IoPrio;
use serde::Serialize;
use watcher::{comm, pids, running_named, trace_session, Source, Watcher};

/// How often /proc is scanned when tracefs cannot be used.
pub const SCAN_INTERVAL: Duration = Duration::from_millis(5);

/// Forks remembered for dating the app's birth (bounded: a fork storm
/// must not grow the watcher).
const MAX_BIRTHS: usize = 4096;

/// How the app was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    /// A `task_rename` to the app's name (zygote's specialisation, or a
    /// USAP process taking the launch).
    TaskRename,
    /// A `sched_process_exec` whose argv[0] is the app's name.
    Exec,
    /// Running already when the start began (a warm or hot start).
    Running,
    /// A scan of /proc (tracefs unavailable).
    ProcScan,
}

/// The app's process as found during one start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppProcess {
    /// Its pid.
    pub pid: i32,
    /// How it was recognised.
    pub found_by: FoundBy,
    /// Time from the launch to the moment its first threads were set, ms
    /// (≤ 0: set before the launch, a running app): how long it ran with
    /// the default priorities.
    pub set_after_ms: f64,
    /// Time from the process's fork to that moment, ms: from its
    /// `task_newtask` when the trace saw it, else from `/proc/PID/stat`'s
    /// start time (10 ms ticks).
    pub set_after_birth_ms: Option<f64>,
    /// Time from the event that named it (its specialisation) to that
    /// moment, ms: the watcher's own latency.
    pub set_after_rename_ms: Option<f64>,
    /// Forked before the launch began: a USAP process (or a running app).
    pub born_before_launch: bool,
    /// Its uid (`/proc/PID/status`), the package's when that was known.
    pub uid: Option<u32>,
    /// Threads set when it was found (those it had then, and any it made
    /// meanwhile).
    pub threads_set: usize,
    /// Its main thread's I/O priority read back right after setting it
    /// (Android may have changed it already: see `drifts`).
    pub ioprio: Option<String>,
    /// Its main thread's nice value read back then (`/proc/PID/stat`).
    pub nice: Option<i32>,
    /// Its own I/O (`/proc/PID/io` at the end of the start; born after
    /// the launch, all of it is this start's, except in a warm or hot
    /// start, where it is the app's life so far): the app's, where wait4
    /// gives only am's.
    pub io: Option<iolab_sys::process::IoCounters>,
    /// Settings that failed (a thread gone meanwhile is not one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The app's other processes born during the start, each with how it
    /// was found; they got the same settings.
    pub processes: Vec<family::Member>,
    /// The app's I/O: its own and its other processes', summed.
    pub io_total: Option<iolab_sys::process::IoCounters>,
    /// Every thread of every process of the app at the end of the start's
    /// window, as the kernel gave it: what the start ran at.
    pub threads_end: Vec<hold::ThreadState>,
    /// Values iolab did not set, seen on the app's threads while the
    /// start ran (Android's own settings), first sight of each.
    pub drifts: Vec<hold::Drift>,
    /// Drifts beyond those stored.
    pub drifts_not_stored: u64,
    /// `--target-hold`: the settings were set back whenever they drifted.
    pub held: bool,
    /// Values set back.
    pub reapplied: u64,
    /// Looks at every thread during the start.
    pub polls: u64,
    /// Processes that took the app's name but are not its package's uid.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_the_app: Vec<String>,
}

/// What the search cost and how it ran (stored with every start that
/// looked for an app).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WatchReport {
    /// `tracefs` (task events in iolab's own instance) or `proc-scan`.
    pub source: &'static str,
    /// Why tracefs was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Times the watcher thread woke up.
    pub wakeups: u64,
    /// Its CPU time, µs (`CLOCK_THREAD_CPUTIME_ID`).
    pub cpu_us: u64,
    /// Task events it read (tracefs only).
    pub events: u64,
    /// Events the kernel dropped from its buffer: a rename among them
    /// would be missed.
    pub lost_events: u64,
}

/// What the watcher returns.
#[derive(Debug, Clone, PartialEq)]
pub struct AppSearch {
    /// The app, when found.
    pub app: Option<AppProcess>,
    /// How the search ran.
    pub report: WatchReport,
}

/// A watcher thread looking for the app during one start.
pub struct AppWatch {
    stop: Arc<AtomicBool>,
    /// The app's pid once found (0 until then).
    pid: Arc<AtomicI32>,
    /// CLOCK_MONOTONIC ns of the launch (0 until it is known).
    launched: Arc<std::sync::atomic::AtomicU64>,
    handle: std::thread::JoinHandle<AppSearch>,
}

/// The comm (`/proc/PID/comm`, at most 15 bytes) forms an Android process
/// named `name` takes: zygote's `SetThreadName` (the last 15 characters
/// of a dotted name without `@`, or the name, then cut to 14 by its
/// `strlcpy(buf, s, sizeof(buf) - 1)`) and AndroidRuntime::setArgv0 (the
/// last 15 characters). Not the first 15: no Android path names an app
/// so, and every `com.google.android.*` package shares them.
pub fn comm_forms(name: &str) -> Vec<String> {
    let b = name.as_bytes();
    let tail = |n: usize| &b[b.len().saturating_sub(n)..];
    let dotted = name.contains('.') && !name.contains('@');
    let zygote_start = if b.len() >= 15 && dotted { tail(15) } else { b };
    let forms = [&zygote_start[..zygote_start.len().min(14)], tail(15)];
    let mut out: Vec<String> = Vec::new();
    for f in forms {
        let s = String::from_utf8_lossy(f).into_owned();
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Called once with the app's pid when it is found.
pub type OnFound = Box<dyn FnOnce(i32) + Send>;

/// What one start asks of the watcher.
#[derive(Debug, Clone)]
pub struct WatchSpec {
    /// The app's process name (its package).
    pub name: String,
    /// The app runs already (a warm or hot start): the process of that
    /// name alive now is the app.
    pub live: bool,
    /// I/O priority to give it.
    pub ioprio: Option<IoPrio>,
    /// Nice value to give it.
    pub nice: Option<i32>,
    /// The package's uid: a process is the app (and its other processes
    /// are) only with it. None: by name alone (not Android).
    pub uid: Option<u32>,
    /// Set the values back whenever Android changes them.
    pub hold: bool,
}

impl AppWatch {
    /// Starts looking, before the launch (the trace is on when this
    /// returns, so a process forked right after counts); `on_found` is
    /// called once, from the watcher's thread, as soon as the app's
    /// threads are set.
    pub fn start(guard: &Guard, spec: WatchSpec, on_found: OnFound) -> AppWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let pid = Arc::new(AtomicI32::new(0));
        let launched = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let forms = comm_forms(&spec.name);
        let source = match trace_session(guard, &forms) {
            Ok(s) => Source::Trace(Box::new(s)),
            Err(e) => Source::Scan(e.to_string()),
        };
        let running = if spec.live {
            running_named(&spec.name, spec.uid)
        } else {
            Ok(Vec::new())
        };
        let (s, p, l) = (stop.clone(), pid.clone(), launched.clone());
        let handle = std::thread::Builder::new()
            .name("iolab-appwatch".into())
            .spawn(move || {
                let mut w = Watcher::new(spec, forms, (s, p, l), on_found);
                w.run(source, running)
            });
        let handle = match handle {
            Ok(h) => h,
            // No thread: nothing can be found; said so in the report.
            Err(e) => std::thread::spawn(move || AppSearch {
                app: None,
                report: WatchReport {
                    source: "none",
                    fallback: Some(format!("the watcher thread could not start: {e}")),
                    wakeups: 0,
                    cpu_us: 0,
                    events: 0,
                    lost_events: 0,
                },
            }),
        };
        AppWatch {
            stop,
            pid,
            launched,
            handle,
        }
    }

    /// Tells the watcher when the launch began (CLOCK_MONOTONIC ns): the
    /// times it reports are from there.
    pub fn launched(&self, mono_ns: u64) {
        self.launched.store(mono_ns, Ordering::Relaxed);
    }

    /// The app's pid, once found: the process whose memory
    /// `--ready-rss-stable` watches and the collectors follow.
    pub fn pid(&self) -> Option<i32> {
        Some(self.pid.load(Ordering::Relaxed)).filter(|&p| p > 0)
    }

    /// The start's window ended (its ready point): the watcher takes its
    /// last look and the values every thread ran at now, and stops holding
    /// them; [`AppWatch::finish`] collects what it found.
    pub fn end_window(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Stops looking; what was found, and what the search cost.
    pub fn finish(self) -> AppSearch {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_else(|_| AppSearch {
            app: None,
            report: WatchReport {
                source: "none",
                fallback: Some("the watcher thread panicked".into()),
                wakeups: 0,
                cpu_us: 0,
                events: 0,
                lost_events: 0,
            },
        })
    }
}

/// Field 19 of `/proc/PID/stat`.
pub fn nice_of(pid: i32) -> Option<i32> {
    hold::nice_in(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_zygotes_and_arts() {
        // com.android.settings: SetThreadName keeps "ndroid.settings",
        // then strlcpy cuts it to 14; setArgv0 keeps the last 15.
        assert_eq!(
            comm_forms("com.android.settings"),
            ["ndroid.setting", "ndroid.settings"]
        );
        // Short names: the name itself (cut to 14 by SetThreadName).
        assert_eq!(comm_forms("com.x"), ["com.x"]);
        assert_eq!(
            comm_forms("com.example.abc"),
            ["com.example.ab", "com.example.abc"]
        );
        // A name with '@' or no dot keeps its start.
        assert_eq!(
            comm_forms("system_server_long"),
            ["system_server_", "tem_server_long"]
        );
    }

    /// A process that someone else forks and that renames itself (by
    /// prctl, as zygote's child does) is found by the rename event, and
    /// it and its threads get the settings; the kernel's own view
    /// (ioprio_get, /proc/PID/stat) is the judge. No ns_last_pid is read.
    #[test]
    fn a_process_renamed_later_is_found_by_its_rename_and_set() {
        if !rustix::process::geteuid().is_root() {
            iolab_testkit::skip(
                "a_process_renamed_later_is_found_by_its_rename_and_set",
                "needs root (tracefs)",
            );
            return;
        }
        let guard = Guard::new();
        let w = AppWatch::start(
            &guard,
            WatchSpec {
                name: "com.example.iolab.watch".into(),
                live: false,
                ioprio: Some(IoPrio::Idle),
                nice: Some(7),
                uid: Some(0),
                hold: false,
            },
            Box::new(|_| {}),
        );
        w.launched(iolab_trace::monotonic_ns());
        // bash writes its own comm after 0.2 s (zygote's specialisation
        // time), then waits: a rename without an exec.
        let mut child = std::process::Command::new("bash")
            .args([
                "-c",
                "sleep 0.2; printf %s ple.iolab.watc > /proc/$$/comm; sleep 2",
            ])
            .spawn()
            .unwrap();
        let pid = rustix::process::Pid::from_child(&child)
            .as_raw_nonzero()
            .get();
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while w.pid().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let kernel_ioprio = IoPrio::get_for(pid).unwrap();
        let kernel_nice = nice_of(pid);
        let search = w.finish();
        let _ = child.kill();
        let _ = child.wait();
        let app = search.app.clone().expect("found");
        eprintln!("{app:?}\n{:?}", search.report);
        assert_eq!(search.report.source, "tracefs", "{search:?}");
        assert_eq!(app.pid, pid);
        assert_eq!(app.found_by, FoundBy::TaskRename);
        assert_eq!(kernel_ioprio, IoPrio::Idle);
        assert_eq!(kernel_nice, Some(7));
        assert!(app.set_after_ms >= 150.0, "{app:?}");
        // Forked by us after the watch began: its birth is in the trace.
        assert!(!app.born_before_launch, "{app:?}");
        let birth = app.set_after_birth_ms.unwrap();
        assert!((150.0..2000.0).contains(&birth), "{app:?}");
        // Set within the watcher's latency of the rename.
        assert!(app.set_after_rename_ms.unwrap() < 100.0, "{app:?}");
        assert!(app.threads_set >= 1 && app.errors.is_empty(), "{app:?}");
        guard.restore();
    }
}
