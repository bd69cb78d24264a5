//! The watcher's thread: finds the app's process as zygote forks and
//! renames it (by the trace's task events, else by scanning /proc), takes
//! it and its family on, and sets and holds what was asked.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

use iolab_guard::Guard;
use iolab_trace::{EventRequest, Record, SessionConfig, TraceSession};

use super::*;

pub(super) enum Source {
    Trace(Box<TraceSession>),
    /// tracefs could not be used, and why.
    Scan(String),
}

/// The task events in iolab's own instance, waking the reader on each.
pub(super) fn trace_session(
    guard: &Guard,
    forms: &[String],
) -> Result<TraceSession, iolab_trace::TraceError> {
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

pub(super) struct Watcher {
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
    /// A watcher of `spec`'s app by its comm `forms`; `shared` is the stop
    /// flag, the found pid and the launch time the [`AppWatch`] holds.
    pub(super) fn new(
        spec: WatchSpec,
        forms: Vec<String>,
        shared: (Arc<AtomicBool>, Arc<AtomicI32>, Arc<AtomicU64>),
        on_found: OnFound,
    ) -> Watcher {
        let (s, p, l) = shared;
        let asked = hold::Asked {
            ioprio: spec.ioprio,
            nice: spec.nice,
            hold: spec.hold,
        };
        let owner = spec.uid.map(|uid| family::Owner {
            // `PKG:service` is PKG's.
            package: spec
                .name
                .split_once(':')
                .map_or(spec.name.as_str(), |(p, _)| p)
                .to_string(),
            uid,
        });
        let mut threads = hold::Threads::default();
        let mut family = family::Family::default();
        if let Err(e) = family.pool(iolab_trace::monotonic_ns()) {
            threads.note(proc_error("for the USAP pool", &e));
        }
        Watcher {
            spec,
            asked,
            owner,
            threads,
            family,
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
        }
    }

    pub(super) fn run(&mut self, source: Source, running: std::io::Result<Vec<i32>>) -> AppSearch {
        let running = running.unwrap_or_else(|e| {
            self.threads
                .note(proc_error("for the app running already", &e));
            Vec::new()
        });
        if let Some(&pid) = running.first() {
            self.take(pid, FoundBy::Running, None);
            // A warm or hot start: the app's other processes alive already
            // (its `:service`) are the app's too.
            if let Some(owner) = &self.owner {
                let all = pids().unwrap_or_else(|e| {
                    self.threads
                        .note(proc_error("for the app's other processes", &e));
                    Vec::new()
                });
                let others: Vec<i32> = all
                    .into_iter()
                    .filter(|&p| p != pid && family::uid_of(p) == Some(owner.uid))
                    .collect();
                let now = iolab_trace::monotonic_ns();
                for p in others {
                    let threads_set = self.threads.set_new(p, &self.asked);
                    self.family.members.push(family::Member {
                        pid: p,
                        name: argv0(p).unwrap_or_else(|| "?".into()),
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
        let mut threads = std::mem::take(&mut self.threads);
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
            for &p in &pids {
                match hold::read(p) {
                    Ok(t) => a.threads_end.extend(t),
                    Err(e) => threads
                        .errors
                        .push(format!("threads of {p} at the end: /proc/{p}/task: {e}")),
                }
            }
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
                match scan(&self.forms, &self.spec.name, self.spec.uid) {
                    Ok(Some(pid)) => self.take(pid, FoundBy::ProcScan, None),
                    Ok(None) => {}
                    Err(e) => self.threads.note(proc_error("to find the app", &e)),
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
                comm(pid).unwrap_or_else(|| "?".into()),
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
                    name: argv0(pid).unwrap_or_else(|| "?".into()),
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
                    argv0(r.pid).unwrap_or_else(|| "?".into()),
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

pub(super) fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|c| c.trim_end_matches('\n').to_string())
}

/// The processes alive now. /proc that cannot be listed is an error the
/// start stores: the app or its processes may have been missed.
pub(super) fn pids() -> std::io::Result<Vec<i32>> {
    iolab_sys::process::pids(Path::new("/proc"))
}

/// The error stored when /proc cannot be listed while `doing`.
pub(super) fn proc_error(doing: &str, e: &std::io::Error) -> String {
    format!("cannot list /proc {doing}: {e}")
}

/// Processes alive now whose argv[0] is `name` (and uid `uid`, when
/// known), oldest (lowest pid) first.
pub(super) fn running_named(name: &str, uid: Option<u32>) -> std::io::Result<Vec<i32>> {
    Ok(pids()?
        .into_iter()
        .filter(|&p| argv0(p).as_deref() == Some(name))
        .filter(|&p| uid.is_none() || family::uid_of(p) == uid)
        .collect())
}

/// One scan of /proc: a process named as the app (its comm in one of the
/// forms, or its argv[0]), of the package's uid when known.
fn scan(forms: &[String], name: &str, uid: Option<u32>) -> std::io::Result<Option<i32>> {
    Ok(pids()?.into_iter().find(|&p| {
        (comm(p).is_some_and(|c| forms.contains(&c)) || argv0(p).as_deref() == Some(name))
            && (uid.is_none() || family::uid_of(p) == uid)
    }))
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
