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

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iolab_guard::Guard;
use iolab_sys::ioprio::IoPrio;
use iolab_trace::{EventRequest, Record, SessionConfig, TraceSession};
use serde::Serialize;

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
            Vec::new()
        };
        let (s, p, l) = (stop.clone(), pid.clone(), launched.clone());
        let handle = std::thread::Builder::new()
            .name("iolab-appwatch".into())
            .spawn(move || {
                let asked = hold::Asked {
                    ioprio: spec.ioprio,
                    nice: spec.nice,
                    hold: spec.hold,
                };
                let owner = spec.uid.map(|uid| family::Owner {
                    package: spec.name.split(':').next().unwrap_or_default().to_string(),
                    uid,
                });
                let mut w = Watcher {
                    spec,
                    asked,
                    owner,
                    threads: hold::Threads::default(),
                    family: {
                        let mut f = family::Family::default();
                        f.pool(iolab_trace::monotonic_ns());
                        f
                    },
                    not_the_app: Vec::new(),
                    forms,
                    stop: s,
                    found_pid: p,
                    launched: l,
                    births: HashMap::new(),
                    birth_order: VecDeque::new(),
                    found: None,
                    on_found: Some(on_found),
                    set_at: None,
                    wakeups: 0,
                    events: 0,
                };
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

enum Source {
    Trace(Box<TraceSession>),
    /// tracefs could not be used, and why.
    Scan(String),
}

/// The task events in iolab's own instance, waking the reader on each.
fn trace_session(guard: &Guard, forms: &[String]) -> Result<TraceSession, iolab_trace::TraceError> {
    let renames: Vec<String> = forms
        .iter()
        .map(|f| format!("newcomm == \"{}\"", f.replace('"', "")))
        .collect();
    let config = SessionConfig {
        // Rare events: a small buffer, woken per event.
        buffer_kib_per_cpu: 256,
        read_interval: Duration::from_millis(250),
        wake_on_event: true,
        ..SessionConfig::new(vec![
            // Processes only (threads are not what is looked for).
            EventRequest::new("task", "task_newtask").filter("!(clone_flags & 65536)"),
            // Only the app's names: the watcher wakes for nothing else.
            EventRequest::new("task", "task_rename").filter(&renames.join(" || ")),
            EventRequest::new("sched", "sched_process_exec").optional(),
        ])
    };
    TraceSession::start(guard, config)
}

struct Watcher {
    spec: WatchSpec,
    asked: hold::Asked,
    /// The package and its uid, when known: who the app's processes are.
    owner: Option<family::Owner>,
    threads: hold::Threads,
    family: family::Family,
    not_the_app: Vec<String>,
    forms: Vec<String>,
    stop: Arc<AtomicBool>,
    found_pid: Arc<AtomicI32>,
    launched: Arc<std::sync::atomic::AtomicU64>,
    /// Processes forked while watching: pid → CLOCK_MONOTONIC ns.
    births: HashMap<i32, (u64, ())>,
    birth_order: VecDeque<i32>,
    found: Option<AppProcess>,
    on_found: Option<OnFound>,
    /// When the found app was set, the event that named it, and its
    /// fork, CLOCK_MONOTONIC ns: made relative to the launch at the end
    /// (a running app is set before the launch time is known).
    set_at: Option<(u64, Option<u64>, Option<u64>)>,
    wakeups: u64,
    events: u64,
}

/// A candidate seen in an event: pid, how, and the event's time.
type Hit = (i32, FoundBy, Option<u64>);

impl Watcher {
    fn run(&mut self, source: Source, running: Vec<i32>) -> AppSearch {
        if let Some(&pid) = running.first() {
            self.take(pid, FoundBy::Running, None);
            // A warm or hot start: the app's other processes alive already
            // (its `:service`) are the app's too.
            if let Some(owner) = &self.owner {
                let others: Vec<i32> = pids()
                    .into_iter()
                    .filter(|&p| p != pid && family::uid_of(p) == Some(owner.uid))
                    .collect();
                let now = iolab_trace::monotonic_ns();
                for p in others {
                    let threads_set = self.threads.set_new(p, &self.asked);
                    self.family.members.push(family::Member {
                        pid: p,
                        name: argv0(p).unwrap_or_default(),
                        uid: owner.uid,
                        found_by: "uid, running already".into(),
                        set_after_ms: 0.0,
                        threads_set,
                        io: None,
                        set_ns: now,
                    });
                }
            }
        }
        let thread_cpu_us = || {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1000
        };
        // The watch's own cost is what it spent until told to stop (the
        // start's window); removing the instance afterwards is not.
        let (report_source, fallback, lost, cpu_us) = match source {
            Source::Trace(mut session) => {
                let (lost, failed) = self.traced(&mut session);
                // A trace that could no longer be read: /proc from then
                // on, said in the record.
                let fallback = failed.map(|e| {
                    self.scanned();
                    format!("tracefs could not be read any more mid-start ({e}): /proc scanned from then on, the app's other processes no longer looked for")
                });
                let cpu = thread_cpu_us();
                let lost = session.finish(&mut |_| {}).map(|s| s.lost).unwrap_or(lost);
                ("tracefs", fallback, lost, cpu)
            }
            Source::Scan(why) => {
                self.scanned();
                (
                    "proc-scan",
                    Some(format!(
                        "{why} (without task events the app's other processes are not looked for)"
                    )),
                    0,
                    thread_cpu_us(),
                )
            }
        };
        let launched = self.launched.load(Ordering::Relaxed);
        let set_at = self.set_at;
        // The end of the start's window: one last look (drifts, and the
        // values held), then what every thread ran at.
        self.look();
        let threads = std::mem::take(&mut self.threads);
        let mut members = std::mem::take(&mut self.family.members);
        let not_the_app = std::mem::take(&mut self.not_the_app);
        let held = self.asked.hold;
        let app = self.found.take().map(|mut a| {
            let rel = |ns: u64| {
                if launched > 0 {
                    (ns as f64 - launched as f64) / 1e6
                } else {
                    0.0
                }
            };
            a.io = iolab_sys::process::io_counters(Path::new("/proc"), a.pid);
            let mut pids = vec![a.pid];
            for m in &mut members {
                m.io = iolab_sys::process::io_counters(Path::new("/proc"), m.pid);
                // Named by then (a USAP is still `usap64` when its uid
                // makes it the app's).
                if let Some(n) = argv0(m.pid) {
                    m.name = n;
                }
                m.set_after_ms = rel(m.set_ns);
                pids.push(m.pid);
            }
            a.io_total = sum_io(
                a.io.iter()
                    .chain(members.iter().filter_map(|m| m.io.as_ref())),
            );
            a.threads_end = pids.iter().flat_map(|&p| hold::read(p)).collect();
            a.drifts = threads
                .drifts
                .iter()
                .cloned()
                .map(|mut d| {
                    d.at_ms = rel(d.at_ns);
                    d
                })
                .collect();
            a.drifts_not_stored = threads.drifts_not_stored;
            a.reapplied = threads.reapplied;
            a.polls = threads.polls;
            a.held = held;
            a.errors.extend(threads.errors.iter().cloned());
            a.processes = members;
            a.not_the_app = not_the_app;
            if let Some((set_ns, event_ns, birth_ns)) = set_at {
                let ms = |from: u64| (set_ns as f64 - from as f64) / 1e6;
                a.set_after_ms = if launched > 0 { ms(launched) } else { 0.0 };
                a.set_after_rename_ms = event_ns.map(ms);
                if let Some(b) = birth_ns {
                    a.set_after_birth_ms = Some(ms(b));
                }
                a.born_before_launch = match birth_ns {
                    Some(b) => launched > 0 && b < launched,
                    None => true,
                };
            }
            a
        });
        AppSearch {
            app,
            report: WatchReport {
                source: report_source,
                fallback,
                wakeups: self.wakeups,
                cpu_us,
                events: self.events,
                lost_events: lost,
            },
        }
    }

    /// Reads task events until told to stop; returns the events lost, and
    /// why the trace could not be read any more when it could not.
    fn traced(&mut self, session: &mut TraceSession) -> (u64, Option<String>) {
        let mut hits: Vec<Hit> = Vec::new();
        // Woken by the reader as soon as an event is read; otherwise every
        // POLL while the app's threads are watched for drifts, or every
        // quarter second to look at the stop flag.
        let interval = if self.asked.any() {
            hold::POLL
        } else {
            Duration::from_millis(250)
        };
        while !self.stop.load(Ordering::Relaxed) {
            session.wait(interval);
            self.wakeups += 1;
            let forms = &self.forms;
            let name = &self.spec.name;
            let births = &mut self.births;
            let order = &mut self.birth_order;
            let family = &mut self.family;
            let mut events = 0;
            let polled = session.poll_unordered(&mut |r: &Record| {
                events += 1;
                if let Some(hit) = classify(r, forms, name, births, order, family) {
                    hits.push(hit);
                }
            });
            self.events += events;
            if let Err(e) = polled {
                return (
                    session.stats().map(|s| s.lost).unwrap_or(0),
                    Some(e.to_string()),
                );
            }
            // In the order they happened (the per-CPU buffers are read
            // one after the other): every process that took the app's
            // name is judged, the first of the package's uid is the app.
            hits.sort_by_key(|h| h.2);
            for &(pid, by, ts) in &hits {
                let found = self.found.as_ref().map(|a| a.pid);
                if found == Some(pid) {
                    continue;
                }
                if self.is_the_apps(pid) && found.is_none() {
                    self.take(pid, by, ts);
                }
            }
            hits.clear();
            self.look();
        }
        (session.stats().map(|s| s.lost).unwrap_or(0), None)
    }

    /// The last resort: /proc every [`SCAN_INTERVAL`].
    fn scanned(&mut self) {
        while !self.stop.load(Ordering::Relaxed) {
            self.wakeups += 1;
            if self.found.is_none() {
                if let Some(pid) = scan(&self.forms, &self.spec.name, self.spec.uid) {
                    self.take(pid, FoundBy::ProcScan, None);
                }
            }
            self.look();
            std::thread::sleep(SCAN_INTERVAL);
        }
    }

    /// Whether a process that took the app's name is the app: its uid is
    /// the package's (when that is known). One that is not is noted.
    fn is_the_apps(&mut self, pid: i32) -> bool {
        let Some(want) = self.spec.uid else {
            return true;
        };
        let uid = family::uid_of(pid);
        if uid == Some(want) {
            return true;
        }
        if self.not_the_app.len() < 16 {
            self.not_the_app.push(format!(
                "pid {pid} ({:?}) took the app's name with uid {}, not the package's {want}",
                comm(pid).unwrap_or_default(),
                uid.map_or("unknown (gone)".to_string(), |u| u.to_string())
            ));
        }
        false
    }

    /// Once the app is found: its other processes born meanwhile get the
    /// same settings, and every thread of all of them is read (drifts
    /// noted, set back when holding).
    fn look(&mut self) {
        let Some(main) = self.found.as_ref().map(|a| a.pid) else {
            return;
        };
        let now = iolab_trace::monotonic_ns();
        if let Some(owner) = &self.owner {
            for (pid, uid, how) in self.family.classify(owner, Some(main), now) {
                let threads_set = self.threads.set_new(pid, &self.asked);
                self.family.members.push(family::Member {
                    pid,
                    name: argv0(pid).unwrap_or_default(),
                    uid,
                    found_by: how,
                    set_after_ms: 0.0,
                    threads_set,
                    io: None,
                    set_ns: iolab_trace::monotonic_ns(),
                });
            }
        }
        let pids: Vec<i32> = std::iter::once(main)
            .chain(self.family.members.iter().map(|m| m.pid))
            .collect();
        self.threads.check(&pids, &self.asked, now);
    }

    /// The app is `pid`: every thread of it gets the settings, now.
    fn take(&mut self, pid: i32, by: FoundBy, event_ns: Option<u64>) {
        let mut app = AppProcess {
            pid,
            found_by: by,
            set_after_ms: 0.0,
            set_after_birth_ms: None,
            set_after_rename_ms: None,
            born_before_launch: false,
            uid: family::uid_of(pid),
            threads_set: 0,
            ioprio: None,
            nice: None,
            io: None,
            errors: Vec::new(),
            processes: Vec::new(),
            io_total: None,
            threads_end: Vec::new(),
            drifts: Vec::new(),
            drifts_not_stored: 0,
            held: false,
            reapplied: 0,
            polls: 0,
            not_the_app: Vec::new(),
        };
        app.threads_set = self.threads.set_new(pid, &self.asked);
        let set_ns = iolab_trace::monotonic_ns();
        self.set_at = Some((set_ns, event_ns, self.births.get(&pid).map(|b| b.0)));
        // Without a traced fork, its age from /proc now (10 ms ticks).
        app.set_after_birth_ms = age_ms(pid);
        app.ioprio = IoPrio::get_for(pid).ok().map(|p| p.to_string());
        app.nice = nice_of(pid);
        // Android may have set it again already (zygote's reset follows
        // the rename iolab acts on): a drift like any later one.
        self.threads.check(&[pid], &self.asked, set_ns);
        self.found_pid.store(pid, Ordering::Relaxed);
        self.found = Some(app);
        if let Some(f) = self.on_found.take() {
            f(pid);
        }
    }
}

/// What a task event says about the app, remembering forks on the way.
fn classify(
    r: &Record,
    forms: &[String],
    name: &str,
    births: &mut HashMap<i32, (u64, ())>,
    order: &mut VecDeque<i32>,
    family: &mut family::Family,
) -> Option<Hit> {
    match r.name() {
        "task_newtask" => {
            const CLONE_THREAD: u64 = 0x0001_0000;
            let thread = r.u64("clone_flags").is_some_and(|f| f & CLONE_THREAD != 0);
            // pid_t is an i32; a value outside it is no task of ours.
            let pid = i32::try_from(r.i64("pid")?).ok()?;
            if !thread {
                births.insert(pid, (r.ts_ns, ()));
                // Its maker: zygote64, webview_zygote, an app zygote...
                family.birth(
                    pid,
                    r.ts_ns,
                    argv0(r.pid).unwrap_or_default(),
                    family::uid_of(r.pid),
                );
                order.push_back(pid);
                if order.len() > MAX_BIRTHS {
                    if let Some(old) = order.pop_front() {
                        births.remove(&old);
                    }
                }
            }
            None
        }
        "task_rename" => {
            // Kernels that dropped the `pid` field rename current.
            let pid = pid_field(r)?;
            let new = r.str("newcomm")?;
            (forms.iter().any(|f| f == new) && is_process(pid)).then_some((
                pid,
                FoundBy::TaskRename,
                Some(r.ts_ns),
            ))
        }
        "sched_process_exec" => {
            let pid = pid_field(r)?;
            (argv0(pid).as_deref() == Some(name)).then_some((pid, FoundBy::Exec, Some(r.ts_ns)))
        }
        _ => None,
    }
}

/// The event's `pid` field, or the current task's on kernels without
/// one. `None` for a value outside `pid_t` (not a task).
fn pid_field(r: &Record) -> Option<i32> {
    match r.i64("pid") {
        Some(p) => i32::try_from(p).ok(),
        None => Some(r.pid),
    }
}

/// True when `tid` is a process's main thread (a thread renamed to the
/// app's name is not the app).
fn is_process(tid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .and_then(|v| v.trim().parse::<i32>().ok())
        })
        == Some(tid)
}

/// argv[0] of `pid`, None when it is gone.
fn argv0(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let first = raw.split(|&b| b == 0).next()?;
    Some(String::from_utf8_lossy(first).into_owned())
}

fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|c| c.trim_end_matches('\n').to_string())
}

fn pids() -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// Processes alive now whose argv[0] is `name` (and uid `uid`, when
/// known), oldest (lowest pid) first.
fn running_named(name: &str, uid: Option<u32>) -> Vec<i32> {
    pids()
        .into_iter()
        .filter(|&p| argv0(p).as_deref() == Some(name))
        .filter(|&p| uid.is_none() || family::uid_of(p) == uid)
        .collect()
}

/// One scan of /proc: a process named as the app (its comm in one of the
/// forms, or its argv[0]), of the package's uid when known.
fn scan(forms: &[String], name: &str, uid: Option<u32>) -> Option<i32> {
    pids().into_iter().find(|&p| {
        (comm(p).is_some_and(|c| forms.contains(&c)) || argv0(p).as_deref() == Some(name))
            && (uid.is_none() || family::uid_of(p) == uid)
    })
}

/// I/O counters summed.
fn sum_io<'a>(
    it: impl Iterator<Item = &'a iolab_sys::process::IoCounters>,
) -> Option<iolab_sys::process::IoCounters> {
    let mut total: Option<iolab_sys::process::IoCounters> = None;
    for c in it {
        let t = total.get_or_insert_with(Default::default);
        t.rchar += c.rchar;
        t.wchar += c.wchar;
        t.read_bytes += c.read_bytes;
        t.write_bytes += c.write_bytes;
    }
    total
}

/// How long `pid` has lived, ms: now (`/proc/uptime`, boot time) less
/// its start time (clock ticks since boot).
fn age_ms(pid: i32) -> Option<f64> {
    let ticks = iolab_sys::process::start_time(pid)? as f64;
    let up: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (hz > 0.0).then(|| ((up - ticks / hz) * 1e3).max(0.0))
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
