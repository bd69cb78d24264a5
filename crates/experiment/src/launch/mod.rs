//! Launching and timing one target: the command runs in its own process
//! group with its I/O priority and nice value set between fork and exec, so
//! they apply before its first I/O (the thesis lost early requests to a
//! late `ionice`). Time runs on the monotonic clock from the release of
//! the held target to its exit, to a ready line, or to a ready file
//! (`watch.rs` reads its output and its exit). On timeout the whole group
//! is killed by pgid (never by name) and the run is censored.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iolab_guard::Guard;
use regex::Regex;

mod watch;
use watch::watch_output;

/// When a start-up counts as finished.
#[derive(Debug, Clone)]
pub enum Ready {
    /// When the command exits (default).
    Exit,
    /// When a line of its stdout or stderr matches.
    Line(Regex),
    /// When this path appears.
    File(PathBuf),
    /// When the target's process group has reached a memory size and
    /// stopped growing: the thesis's readiness heuristic (its `dumpsys
    /// meminfo` loop: 54 MB, then less than 1 MB more).
    Settled(Settle),
}

/// Readiness by memory: the group's memory (PSS, see
/// `iolab_sys::process::memory_bytes`) is at least `min_bytes` and moved by
/// at most `growth_bytes` over the last `interval`. The start counts as
/// done at the beginning of that quiet interval, when the size was reached
/// (within one sampling step); it is detected one interval later.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settle {
    /// Size to reach.
    pub min_bytes: u64,
    /// Largest change over the interval that still counts as settled.
    pub growth_bytes: u64,
    /// How long it must stay settled.
    pub interval: Duration,
}

impl Settle {
    /// How often the group's memory is read: a tenth of the interval,
    /// between 10 and 100 ms (each read walks /proc).
    pub fn step(&self) -> Duration {
        (self.interval / 10).clamp(Duration::from_millis(10), Duration::from_millis(100))
    }
}

/// The memory samples of a [`Ready::Settled`] launch.
struct SettleWatch {
    settle: Settle,
    samples: std::collections::VecDeque<(Instant, u64)>,
}

impl SettleWatch {
    /// Adds a sample; returns when the quiet interval began once settled.
    fn sample(&mut self, at: Instant, bytes: u64) -> Option<Instant> {
        self.samples.push_back((at, bytes));
        let window_start = at.checked_sub(self.settle.interval)?;
        // Keep one sample at or before the window's start: it proves the
        // window is covered.
        while self.samples.len() > 1 && self.samples[1].0 <= window_start {
            self.samples.pop_front();
        }
        let first = self.samples.front()?.0;
        if first > window_start || bytes < self.settle.min_bytes {
            return None;
        }
        let (lo, hi) = self
            .samples
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), &(_, b)| (lo.min(b), hi.max(b)));
        // Every sample since `first` is within the growth allowed: the size
        // was reached by then (and after the sample dropped before it, which
        // would otherwise have settled the window one step earlier).
        (hi - lo <= self.settle.growth_bytes).then_some(first)
    }
}

/// What to launch and how.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Readiness criterion.
    pub ready: Ready,
    /// Give up (and censor the run) after this long.
    pub timeout: Duration,
    /// I/O priority for the target, applied before exec.
    pub ioprio: Option<iolab_sys::ioprio::IoPrio>,
    /// Nice value for the target, applied before exec.
    pub nice: Option<i32>,
    /// The name of the target's real process when someone else forks it
    /// (an Android app, forked by zygote after `am start`): `ioprio` and
    /// `nice` go to that process as soon as it appears, not to the
    /// launched command (see [`crate::app_process`]).
    pub app: Option<String>,
    /// The app is already running (a hot start brings it back): the
    /// process of that name alive now is the app, not only one forked
    /// after the launch.
    pub app_live: bool,
    /// The app's package uid (Android's): a process is the app only with
    /// it; its other processes are found by it.
    pub app_uid: Option<u32>,
    /// Set the app's priorities back whenever Android changes them
    /// during the start (`--target-hold`).
    pub app_hold: bool,
    /// A second line that marks the start as fully done (time to full
    /// display, after the ready line's initial display): the launch goes
    /// on until it is printed, or the timeout.
    pub full_line: Option<Regex>,
}

impl LaunchSpec {
    /// `argv` run as it is: no priority, no nice, no app of its own, no
    /// second line.
    pub fn plain(argv: Vec<String>, ready: Ready, timeout: Duration) -> LaunchSpec {
        LaunchSpec {
            argv,
            ready,
            timeout,
            ioprio: None,
            nice: None,
            app: None,
            app_live: false,
            app_uid: None,
            app_hold: false,
            full_line: None,
        }
    }
}

/// The measured outcome of one launch.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    /// Start-up time (to exit or readiness), or the timeout when censored.
    pub duration_ns: u64,
    /// When the clock started (the target's release), CLOCK_MONOTONIC ns:
    /// the start's window in a trace is `[started_mono_ns, +duration_ns]`.
    pub started_mono_ns: u64,
    /// True when the timeout hit first: the start-up took longer than
    /// `duration_ns` (a lower bound, shown as `>T`).
    pub censored: bool,
    /// Exit code, when it exited normally before being killed.
    pub exit_code: Option<i32>,
    /// Signal that ended it, if any.
    pub signal: Option<i32>,
    /// The target's own resource use (wait4), when it was reaped.
    pub usage: Option<Usage>,
    /// Exit time, when it exited on its own within the timeout.
    pub exit_ns: Option<u64>,
    /// Ready time (line or file mode), when seen.
    pub ready_ns: Option<u64>,
    /// Time of the [`LaunchSpec::full_line`], when printed (time to full
    /// display); `None` without one or when it never came.
    pub full_ready_ns: Option<u64>,
    /// True when iolab was asked to stop (Ctrl-C) mid-launch: the run is
    /// neither complete nor censored and must not be stored as a sample.
    pub interrupted: bool,
    /// Last lines of its output, for diagnosing failures.
    pub output_tail: String,
    /// Why the start failed, when it did: a non-zero exit status (when
    /// readiness is the exit), a signal iolab did not send, an exit before
    /// the ready line or file, or a status that could not be read. A
    /// failed start is not a sample; `duration_ns` is then the time of the
    /// exit (0 if unknown).
    pub failure: Option<String>,
    /// Processes the target left outside its group (a daemon that called
    /// setsid), adopted by iolab and killed after the start: `pid comm`.
    pub left_over: Vec<String>,
    /// The app's own process ([`LaunchSpec::app`]), when one was looked
    /// for and found: what it was given, and how soon.
    pub app: Option<crate::app_process::AppProcess>,
    /// How the app was looked for and what the search cost, when it was.
    pub app_watch: Option<crate::app_process::WatchReport>,
}

impl Outcome {
    /// True when the target failed (see [`Outcome::failure`]).
    pub fn failed(&self) -> bool {
        self.failure.is_some()
    }
}

/// Words for an exit status: `status 3` or `signal 11 (SIGSEGV)`.
pub fn status_words(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("status {c}"),
        (None, Some(sig)) => format!("signal {sig} ({})", signal_name(sig)),
        _ => "an unknown status".to_string(),
    }
}

/// The usual name of a signal number (Linux numbering).
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => "signal",
    }
}

/// Why a start that ended on its own (not by iolab's kill) failed, if it
/// did. `own` is the status of an exit that came before any kill.
fn failure_of(
    ready: &Ready,
    became_ready: bool,
    own: Option<std::process::ExitStatus>,
    wait_failed: bool,
) -> Option<String> {
    if became_ready && !matches!(ready, Ready::Exit) {
        // Ready is what was measured; what it did after does not change it.
        return None;
    }
    let Some(st) = own else {
        return wait_failed.then(|| "its exit status could not be read (wait4 failed)".to_string());
    };
    match ready {
        Ready::Exit if st.success() => None,
        Ready::Exit => Some(match st.code() {
            Some(_) => format!("exited with {}", status_words(st)),
            None => format!("killed by {}, not sent by iolab", status_words(st)),
        }),
        Ready::Line(re) => Some(format!(
            "exited ({}) without printing a line matching {:?}",
            status_words(st),
            re.as_str()
        )),
        Ready::File(p) => Some(format!(
            "exited ({}) without creating {}",
            status_words(st),
            p.display()
        )),
        Ready::Settled(s) => Some(format!(
            "exited ({}) before its memory settled at {} MiB or more",
            status_words(st),
            s.min_bytes >> 20
        )),
    }
}

/// What the target itself used (wait4 rusage; stored with each run).
pub use iolab_spawn::Usage;

/// Why a launch could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The command could not be started.
    #[error(transparent)]
    Spawn(#[from] iolab_spawn::SpawnError),
    /// The guard refused to record the process group.
    #[error(transparent)]
    Guard(#[from] iolab_guard::GuardError),
    /// /proc could not be read for the launch's leftovers.
    #[error(transparent)]
    Proc(#[from] iolab_sys::SysError),
}

enum Event {
    Exited(Instant, std::process::ExitStatus, Usage),
    ReadyLine(Instant),
    /// The `full_line` (time to full display) was printed.
    FullLine(Instant),
    /// The app's process was found (its pid).
    AppFound(i32),
    WaitFailed,
}

const TAIL_BYTES: usize = 4096;

/// Launches the target, times it, and makes sure none of its process group
/// outlives the measurement.
pub fn launch(guard: &Guard, spec: &LaunchSpec) -> Result<Outcome, LaunchError> {
    launch_observed(guard, spec, None::<fn(i32) -> ()>).map(|(o, _)| o)
}

/// As [`launch`], calling `on_fork(pid)` while the child is held between
/// fork and exec, so an observer (e.g. `iolab explain`'s tracer, which
/// follows a pid and its descendants) is attached before the target runs
/// its first instruction. The time to attach is not part of the start-up:
/// the clock starts when the child is released. Returns what `on_fork`
/// returned.
pub fn launch_observed<T: Send>(
    guard: &Guard,
    spec: &LaunchSpec,
    on_fork: Option<impl FnOnce(i32) -> T + Send>,
) -> Result<(Outcome, Option<T>), LaunchError> {
    launch_with_app(guard, spec, on_fork, |_: &mut T, _| {})
}

/// As [`launch_observed`]; and when [`LaunchSpec::app`] names an app
/// someone else forks, `on_app(observed, pid)` is called once, as soon as
/// that process is found, so what observes the launch can take it on
/// (`--explain` follows it).
pub fn launch_with_app<T: Send>(
    guard: &Guard,
    spec: &LaunchSpec,
    on_fork: Option<impl FnOnce(i32) -> T + Send>,
    mut on_app: impl FnMut(&mut T, i32),
) -> Result<(Outcome, Option<T>), LaunchError> {
    // Every launch is held before exec, observed or not: the process group
    // is recorded with the guard before the target runs (a SIGKILLed iolab's
    // next run kills it), and the fork, whose cost grows with iolab's own
    // memory rather than the target's, stays out of the measured time.
    // What the target orphans is adopted and killed after it (see
    // `leftover`).
    let (mut held, launch) = crate::leftover::Launch::hold(|| {
        iolab_spawn::hold(&iolab_spawn::Spec {
            argv: spec.argv.clone(),
            stdin: iolab_spawn::Input::Null,
            stdout: iolab_spawn::Output::Piped,
            stderr: iolab_spawn::Output::Piped,
            process_group: true,
            // With an app forked elsewhere, its settings are its own.
            ioprio: spec.ioprio.filter(|_| spec.app.is_none()),
            nice: spec.nice.filter(|_| spec.app.is_none()),
        })
        .map_err(LaunchError::from)
    })?;
    let pgid = held.pid();
    let tracked = guard.track_process_group(pgid)?;
    let mut observed = on_fork.map(|f| f(pgid));
    if let Ready::File(p) = &spec.ready {
        // A file left by an earlier run would make this one "ready" at once.
        let _ = std::fs::remove_file(p);
    }
    let (tx, rx) = mpsc::channel::<Event>();
    // The output's readers and the exit's waiter start while the target is
    // held: thread starts stay out of the measured window, and the waiter
    // is in wait4 when the target exits, so its exit is dated then (a
    // waiter started after the release got there up to milliseconds late
    // for a target as short as `true`).
    let (out, err) = held.take_output();
    let (watchers, tail) = watch_output(pgid, [out, err], spec, &tx);
    // Started before the clock: its trace instance is set up outside the
    // measured window, and on when the target runs.
    let app_watch = spec.app.as_deref().map(|name| {
        let found = tx.clone();
        crate::app_process::AppWatch::start(
            guard,
            crate::app_process::WatchSpec {
                name: name.to_string(),
                live: spec.app_live,
                ioprio: spec.ioprio,
                nice: spec.nice,
                uid: spec.app_uid,
                hold: spec.app_hold,
            },
            Box::new(move |pid| {
                let _ = found.send(Event::AppFound(pid));
            }),
        )
    });
    let t0 = Instant::now();
    let started_mono_ns = iolab_trace::monotonic_ns();
    if let Some(w) = &app_watch {
        w.launched(started_mono_ns);
    }
    // What it returns is the pid and the streams, already taken.
    if let Err(e) = held.release() {
        if let Some(w) = app_watch {
            w.finish();
        }
        guard.forget(tracked)?;
        return Err(e.into());
    }
    drop(tx);
    let mut w = wait_for_start(
        spec,
        &rx,
        t0,
        pgid,
        app_watch.as_ref(),
        &mut observed,
        &mut on_app,
    );
    late_lines(spec, &rx, &mut w);
    // The window's end: what the app ran at is read now, not after the
    // group is killed and its output drained.
    if let Some(a) = &app_watch {
        a.end_window();
    }
    // Whatever happened, nothing of the target's group may keep running:
    // a leftover child would spoil the next measurement.
    kill_group(pgid);
    // The status of a target we killed: for the record, not for timing.
    let mut killed: Option<std::process::ExitStatus> = None;
    if w.exit.is_none() {
        let until = Instant::now() + Duration::from_secs(10);
        while let Ok(ev) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            if let Event::Exited(_, st, u) = ev {
                killed = Some(st);
                w.usage = Some(u);
                break;
            }
        }
    }
    // The group is gone, so its pipes are closed and the watcher reaches
    // EOF after their last lines, having reaped the target: wait for that
    // (an exit can reach us before the output it printed just before) so
    // the tail is whole. Bounded: a grandchild that left the group may
    // still hold a pipe open, and then the watcher ends when it closes.
    let drained = Instant::now() + Duration::from_millis(500);
    while watchers.iter().any(|r| !r.is_finished()) && Instant::now() < drained {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(watchers);
    let search = app_watch.map(crate::app_process::AppWatch::finish);
    let (app, app_watch) = match search {
        Some(s) => (s.app, Some(s.report)),
        None => (None, None),
    };
    let left_over = launch.kill_left_over();
    guard.forget(tracked)?;
    // A reader that panicked holding the lock left the bytes it had.
    let tail = String::from_utf8_lossy(&tail.lock().unwrap_or_else(|p| p.into_inner()).clone())
        .into_owned();
    let mut outcome = outcome_of(spec, t0, &w, killed);
    outcome.started_mono_ns = started_mono_ns;
    outcome.output_tail = tail;
    outcome.left_over = left_over;
    outcome.app = app;
    outcome.app_watch = app_watch;
    Ok((outcome, observed))
}

/// A target that prints its ready line and exits at once can have its
/// exit reach us before the reader thread's line: looks for the line
/// (time-stamped when read) before the start is called "never ready".
fn late_lines(spec: &LaunchSpec, rx: &mpsc::Receiver<Event>, w: &mut Waited) {
    let done = |full: Option<Instant>| spec.full_line.is_none() || full.is_some();
    let lines_awaited = (w.ready.is_none() && matches!(spec.ready, Ready::Line(_)))
        || (w.ready.is_some() && !done(w.full));
    if lines_awaited && w.exit.is_some() {
        let until = Instant::now() + Duration::from_millis(200);
        while let Ok(ev) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            match ev {
                Event::ReadyLine(at) => w.ready = Some(at),
                Event::FullLine(at) => w.full = w.full.or(Some(at)),
                _ => {}
            }
            if w.ready.is_some() && done(w.full) {
                break;
            }
        }
    }
}

/// What the wait for a start saw.
#[derive(Default)]
struct Waited {
    interrupted: bool,
    usage: Option<Usage>,
    exit: Option<(Instant, std::process::ExitStatus)>,
    ready: Option<Instant>,
    full: Option<Instant>,
    wait_failed: bool,
    /// The launcher (am) exited and the app is what is waited for.
    launcher_done: bool,
}

/// Waits until the start is ready (its criterion: exit, a line, a file,
/// settled memory), the deadline, or Ctrl-C; hands the app to the
/// observers as soon as it is found.
#[allow(clippy::too_many_arguments)]
fn wait_for_start<T>(
    spec: &LaunchSpec,
    rx: &mpsc::Receiver<Event>,
    t0: Instant,
    pgid: i32,
    app_watch: Option<&crate::app_process::AppWatch>,
    observed: &mut Option<T>,
    on_app: &mut impl FnMut(&mut T, i32),
) -> Waited {
    let mut w = Waited::default();
    let deadline = t0 + spec.timeout;
    // Once ready, the launch still waits for the full line, if one is asked.
    let done = |full: Option<Instant>| spec.full_line.is_none() || full.is_some();
    let poll = Duration::from_millis(1);
    // An app zygote forks settles after the command that asked for it
    // (am) is gone: its exit does not end the wait, the app's memory does.
    let app_settles = app_watch.is_some() && matches!(spec.ready, Ready::Settled(_));
    // No app to hand over: nothing awaited.
    let mut app_handed = app_watch.is_none();
    let mut settle = match &spec.ready {
        Ready::Settled(s) => Some(SettleWatch {
            settle: *s,
            samples: Default::default(),
        }),
        _ => None,
    };
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        if iolab_guard::stop_requested() {
            w.interrupted = true;
            break;
        }
        // The app, once found, is handed to the observers (once).
        if !app_handed && observed.is_some() {
            if let Some(pid) = app_watch.and_then(|a| a.pid()) {
                if let Some(o) = observed.as_mut() {
                    on_app(o, pid);
                }
                app_handed = true;
            }
        }
        let wait = match &spec.ready {
            Ready::File(_) => poll.min(deadline - now),
            Ready::Settled(s) => s.step().min(deadline - now),
            _ => deadline - now,
        };
        let event = if w.launcher_done {
            std::thread::sleep(wait);
            Err(mpsc::RecvTimeoutError::Timeout)
        } else {
            rx.recv_timeout(wait)
        };
        match event {
            Ok(Event::Exited(at, st, u)) if app_settles && st.success() => {
                w.exit = Some((at, st));
                w.usage = Some(u);
                w.launcher_done = true;
            }
            Ok(Event::Exited(at, st, u)) => {
                w.exit = Some((at, st));
                w.usage = Some(u);
                break;
            }
            Ok(Event::ReadyLine(at)) => {
                w.ready = Some(at);
                if done(w.full) {
                    break;
                }
            }
            Ok(Event::FullLine(at)) => {
                w.full = Some(at);
                if w.ready.is_some() {
                    break;
                }
            }
            Ok(Event::AppFound(pid)) => {
                // Handed over at once, not at the next look.
                if !app_handed {
                    if let Some(o) = observed.as_mut() {
                        on_app(o, pid);
                        app_handed = true;
                    }
                }
            }
            Ok(Event::WaitFailed) => {
                w.wait_failed = true;
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if let (Ready::File(p), None) = (&spec.ready, w.ready) {
            if p.exists() {
                w.ready = Some(Instant::now());
                if done(w.full) {
                    break;
                }
            }
        }
        if let (Some(sw), None) = (settle.as_mut(), w.ready) {
            let at = Instant::now();
            let bytes = match (app_watch, app_watch.and_then(|a| a.pid())) {
                (_, Some(app)) => iolab_sys::process::memory_bytes(app),
                // Not forked yet: nothing of the app to weigh.
                (Some(_), None) => None,
                // /proc unreadable: no sample, and the start is never
                // ready, rather than a size of 0.
                (None, _) => iolab_sys::process::group_memory_bytes(pgid).ok(),
            };
            if let Some(began) = bytes.and_then(|b| sw.sample(at, b)) {
                w.ready = Some(began.max(t0));
                if done(w.full) {
                    break;
                }
            }
        }
    }
    w
}

/// The start's times and verdict from what the wait saw (the caller adds
/// what it gathers after: output, leftovers, the app).
fn outcome_of(
    spec: &LaunchSpec,
    t0: Instant,
    w: &Waited,
    killed: Option<std::process::ExitStatus>,
) -> Outcome {
    let ns = |t: Instant| iolab_sys::cast::duration_ns(t.duration_since(t0));
    let exit_ns = w.exit.map(|(at, _)| ns(at));
    let ready_ns = w.ready.map(ns);
    // A full line printed before the ready one still marks full display
    // no earlier than initial display.
    let full_ready_ns = w.full.map(ns).map(|f| f.max(ready_ns.unwrap_or(0)));
    let finished = match spec.ready {
        Ready::Exit => exit_ns,
        _ => ready_ns,
    };
    let failure = if w.interrupted {
        None
    } else {
        failure_of(
            &spec.ready,
            ready_ns.is_some(),
            // The launcher's own exit, once the app is what is waited for,
            // is no failure of the start.
            w.exit.filter(|_| !w.launcher_done).map(|(_, s)| s),
            w.wait_failed,
        )
    };
    let (duration_ns, censored) = match finished {
        _ if failure.is_some() => (exit_ns.unwrap_or(0), false),
        Some(d) => (d, false),
        None if w.interrupted => (0, false),
        None => (iolab_sys::cast::duration_ns(spec.timeout), true),
    };
    use std::os::unix::process::ExitStatusExt;
    let status = w.exit.map(|(_, s)| s).or(killed);
    Outcome {
        duration_ns,
        started_mono_ns: 0,
        censored,
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        interrupted: w.interrupted,
        usage: w.usage,
        exit_ns,
        ready_ns,
        full_ready_ns,
        output_tail: String::new(),
        failure,
        left_over: Default::default(),
        app: None,
        app_watch: None,
    }
}

/// SIGKILLs every process in the group (a no-op when it is already gone).
pub fn kill_group(pgid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// The harness's own cost: the mean and spread of launching `/bin/true`
/// through the same path `runs` times, in nanoseconds.
pub fn harness_overhead(guard: &Guard, runs: usize) -> Result<Vec<u64>, LaunchError> {
    let spec = LaunchSpec::plain(vec!["true".into()], Ready::Exit, Duration::from_secs(10));
    (0..runs)
        .map(|_| launch(guard, &spec).map(|o| o.duration_ns))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn watch(min: u64, growth: u64, interval_ms: u64) -> SettleWatch {
        SettleWatch {
            settle: Settle {
                min_bytes: min,
                growth_bytes: growth,
                interval: Duration::from_millis(interval_ms),
            },
            samples: Default::default(),
        }
    }

    #[test]
    fn settles_one_interval_after_reaching_the_size_and_dates_it_back() {
        let t0 = Instant::now();
        let mut w = watch(50 * MIB, MIB, 1000);
        let ms = |m: u64| t0 + Duration::from_millis(m);
        // Grows 10 MiB per 100 ms to 60 MiB (reached at 600 ms), then idles.
        let mut settled = None;
        for step in 0..=30u64 {
            let bytes = (step.min(6)) * 10 * MIB;
            if let Some(began) = w.sample(ms(step * 100), bytes) {
                settled = Some((step * 100, began));
                break;
            }
        }
        let (detected, began) = settled.unwrap();
        assert_eq!(detected, 1600);
        assert_eq!(began, ms(600));
    }

    #[test]
    fn small_or_still_growing_never_settles() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let mut small = watch(50 * MIB, MIB, 500);
        let mut growing = watch(50 * MIB, MIB, 500);
        for step in 0..50u64 {
            assert!(small.sample(ms(step * 100), 40 * MIB).is_none());
            // 60 MiB and up, 2 MiB more every 100 ms.
            assert!(growing
                .sample(ms(step * 100), 60 * MIB + step * 2 * MIB)
                .is_none());
        }
    }
}
