//! Android activities as start-up targets (`iolab startup --am-start
//! PKG/ACTIVITY`, run on the phone, e.g. through `iolab remote --adb`).
//!
//! Each start is `am start -W -S -n PKG/ACTIVITY`: `-S` force-stops the
//! app first (a cold process start; the page cache is made cold by the
//! usual `--cold` step as root), `-W` waits for the launch and prints the
//! system's own measurement, which becomes the run's start-up time:
//! `TotalTime` (from the intent to the first frame of the activity),
//! with `WaitTime` and `LaunchState` (COLD/WARM/HOT) stored beside it.
//! The wall time of the `am` command itself is kept too: it includes am's
//! own start (an app_process JVM), which is not the app's.
//!
//! The app's compilation state (`cmd package compile -m MODE -f PKG`)
//! decides how much code is read from storage at start-up (odex/vdex
//! against interpreting dex from the APK); `--compile MODE` sets it once
//! per experiment and it is stored with the configuration.

use serde::{Deserialize, Serialize};

/// An activity to start, and the compilation mode to set first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AmTarget {
    /// `PKG/ACTIVITY`, e.g. `com.android.settings/.Settings`.
    pub component: String,
    /// `cmd package compile -m MODE -f PKG` before the matrix, if set
    /// (`speed-profile`, `speed`, `verify`, ...).
    #[serde(default)]
    pub compile: Option<String>,
    /// A logcat line that marks the start as done (`--ready-logcat`), e.g.
    /// `Fully drawn com.android.settings`: the activity's own
    /// `reportFullyDrawn()`, later than the first frame am waits for.
    #[serde(default)]
    pub ready_logcat: Option<String>,
}

impl AmTarget {
    /// The package part of the component.
    pub fn package(&self) -> &str {
        self.component.split('/').next().unwrap_or(&self.component)
    }

    /// The command each start runs.
    pub fn argv(&self) -> Vec<String> {
        ["am", "start", "-W", "-S", "-n", &self.component]
            .map(String::from)
            .to_vec()
    }

    /// The command a hot start runs: without `-S`, so a live app is only
    /// brought back to the front.
    pub fn argv_hot(&self) -> Vec<String> {
        ["am", "start", "-W", "-n", &self.component]
            .map(String::from)
            .to_vec()
    }

    /// The command a warm start runs: the live process keeps running and
    /// its activity is destroyed and made again
    /// (`FLAG_ACTIVITY_CLEAR_TASK`, as Macrobenchmark's StartupMode.WARM
    /// launches: `launchWithClearTask`), which ActivityMetricsLogger
    /// reports as a WARM launch.
    pub fn argv_warm(&self) -> Vec<String> {
        [
            "am",
            "start",
            "-W",
            "--activity-clear-task",
            "-n",
            &self.component,
        ]
        .map(String::from)
        .to_vec()
    }

    /// The component as am and dumpsys print it
    /// (`ComponentName.flattenToShortString`: `pkg/.Act` when the class
    /// is in the package).
    pub fn short_component(&self) -> String {
        let (pkg, act) = self
            .component
            .split_once('/')
            .unwrap_or((&self.component, ""));
        match act.strip_prefix(pkg) {
            Some(rest) if rest.starts_with('.') => format!("{pkg}/{rest}"),
            _ => self.component.clone(),
        }
    }

    /// What sends the app to the background before a hot start: the
    /// home key, as a user leaving the app.
    pub fn home_argv() -> Vec<String> {
        ["input", "keyevent", "KEYCODE_HOME"]
            .map(String::from)
            .to_vec()
    }

    /// The command that sets the compilation state, if one is asked for.
    pub fn compile_argv(&self) -> Option<Vec<String>> {
        self.compile.as_ref().map(|m| {
            ["cmd", "package", "compile", "-m", m, "-f", self.package()]
                .map(String::from)
                .to_vec()
        })
    }

    /// The command that names the package's APK (`package:/data/app/.../base.apk`).
    pub fn path_argv(&self) -> Vec<String> {
        ["pm", "path", self.package()].map(String::from).to_vec()
    }

    /// Checks `PKG/ACTIVITY`'s shape.
    pub fn parse_component(s: &str) -> Result<String, String> {
        let ok = s.split_once('/').is_some_and(|(p, a)| {
            !p.is_empty()
                && !a.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        });
        if ok {
            Ok(s.to_string())
        } else {
            Err(format!(
                "{s}: expected PACKAGE/ACTIVITY, e.g. com.android.settings/.Settings \
                 (`cmd package resolve-activity --brief PKG` prints it)"
            ))
        }
    }
}

/// What `am start -W` printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AmResult {
    /// `Status:` (`ok`, `timeout`, ...).
    pub status: String,
    /// `LaunchState:` (`COLD`, `WARM`, `HOT`, `UNKNOWN (TRAMPOLINE)`), absent before Android 10.
    pub launch_state: Option<String>,
    /// `Activity:` that was started.
    pub activity: Option<String>,
    /// `TotalTime:` ms.
    pub total_ms: Option<u64>,
    /// `WaitTime:` ms.
    pub wait_ms: Option<u64>,
    /// `Error:` or `Warning:` lines, verbatim.
    pub errors: Vec<String>,
}

impl AmResult {
    /// Why this start does not count, if it does not: an error, a status
    /// other than ok, or no TotalTime.
    pub fn failure(&self) -> Option<String> {
        // `Error: ...` says what; `Error type N` only classifies it.
        let named = self.errors.iter().find(|e| e.starts_with("Error:"));
        let any = || self.errors.iter().rev().find(|e| e.starts_with("Error"));
        if let Some(e) = named.or_else(any) {
            return Some(format!("am start: {e}"));
        }
        if self.status != "ok" {
            return Some(format!("am start: Status: {}", self.status));
        }
        if self.total_ms.is_none() {
            return Some("am start printed no TotalTime".into());
        }
        None
    }
}

impl AmResult {
    /// Why this start is not the kind asked for, when it is not: am's
    /// LaunchState (ActivityMetricsLogger's launch type) is not
    /// `expected` (`COLD`, `WARM`, `HOT`), or TotalTime is 0, which
    /// ActivityStarter reports for an activity that was still resumed and
    /// visible (START_TASK_TO_FRONT with nothing to wait for; am adds
    /// "Warning: Activity not started, its current task has been brought
    /// to the front" and LaunchState `UNKNOWN (0)`). No LaunchState
    /// (Android 9 and older) is not a problem here: the caller stores
    /// that the mode was not verified.
    pub fn mode_problem(&self, expected: &str, mode: &str) -> Option<String> {
        let front = self
            .errors
            .iter()
            .find(|e| e.contains("brought to the front"))
            .map(|w| format!(" (am: {w})"))
            .unwrap_or_default();
        if self.total_ms == Some(0) {
            return Some(format!(
                "am reported TotalTime 0 for this --start-mode {mode} start: the activity was still resumed, so nothing was started{front}"
            ));
        }
        match &self.launch_state {
            Some(state) if state != expected => Some(format!(
                "am reported LaunchState {state} for a --start-mode {mode} start, not {expected}{front}"
            )),
            _ => None,
        }
    }
}

/// What `dumpsys activity activities` says of the activity a hot start
/// brings back: the top live record of the launched package's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActivityState {
    /// The record's `state=` (`STOPPED`, `RESUMED`, ...) and which
    /// activity it is.
    Found { state: String, activity: Waited },
    /// A live record of the task with no `state=` line.
    RecordWithoutState(Waited),
    /// Tasks of the package whose every record is finishing or destroyed
    /// (the first of them named): the app is going away.
    OnlyFinishing(String),
    /// No task of the package.
    NoRecord,
}

/// The activity waited on: `PKG/.Act` as dumpsys prints it, and, when it
/// is not the launched one, why (a trampoline such as `.Splash` that
/// started the task's top and finished).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waited {
    /// `com.x/.Main`.
    pub component: String,
    /// `the task's top; the launched .Splash finished`; `None` when it is
    /// the launched activity itself.
    pub note: Option<String>,
}

impl std::fmt::Display for Waited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.note {
            Some(note) => write!(f, "{} ({note})", self.component),
            None => f.write_str(&self.component),
        }
    }
}

/// One `* Hist #N: ActivityRecord{…}` of the dump and the lines under it.
#[derive(Debug, Default)]
struct Record {
    component: String,
    package: Option<String>,
    state: Option<String>,
    finishing: bool,
}

impl Record {
    fn package(&self) -> &str {
        match &self.package {
            Some(p) => p,
            None => self.component.split('/').next().unwrap_or(""),
        }
    }

    /// A trampoline that finished itself, or any record on its way out.
    fn finished(&self) -> bool {
        self.finishing
            || matches!(
                self.state.as_deref(),
                Some("FINISHING" | "DESTROYING" | "DESTROYED")
            )
    }
}

/// One task (`* Task{…}`, before Android 12 `* TaskRecord{…}`) and its
/// records, top first; `owner` is the package its `A=` affinity (`UID:`
/// before it on Android 12+) or `I=` component names.
#[derive(Debug, Default)]
struct Task {
    owner: Option<String>,
    records: Vec<Record>,
}

/// The package a task line names: `A=10123:com.x` (Android 12+: the
/// app's uid, then the affinity), `A=com.x`, or, for a task without an
/// affinity, `I=com.x/.Main`.
fn task_owner(line: &str) -> Option<String> {
    line.split_whitespace().find_map(|w| {
        let w = w.trim_end_matches('}');
        if let Some(a) = w.strip_prefix("A=") {
            let a = match a.split_once(':') {
                Some((uid, rest)) if uid.bytes().all(|b| b.is_ascii_digit()) => rest,
                _ => a,
            };
            return Some(a.to_string());
        }
        w.strip_prefix("I=")
            .and_then(|c| c.split('/').next())
            .map(str::to_string)
    })
}

/// The tasks of `dumpsys activity activities`, in its order (top to
/// bottom). Records under no task line (an Android 9 home stack as some
/// dumps print it) make a task of their own, as does each `Stack #` or
/// `Display #` header.
fn parse_tasks(text: &str) -> Vec<Task> {
    let mut tasks: Vec<Task> = Vec::new();
    let mut open = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with("* Task{") || line.starts_with("* TaskRecord{") {
            tasks.push(Task {
                owner: task_owner(line),
                records: Vec::new(),
            });
            open = true;
        } else if line.starts_with("Stack #") || line.starts_with("Display #") {
            open = false;
        } else if line.starts_with("* Hist") || line.starts_with("* ActivityRecord{") {
            if !open {
                tasks.push(Task::default());
                open = true;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let record = Record {
                component: words
                    .iter()
                    .find(|w| w.contains('/'))
                    .map(|w| w.trim_end_matches('}').to_string())
                    .unwrap_or_default(),
                // ActivityRecord.toString ends ` f}}` once it is finishing.
                finishing: words.iter().any(|w| *w == "f}" || *w == "f}}"),
                ..Record::default()
            };
            if let Some(t) = tasks.last_mut() {
                t.records.push(record);
            }
        } else if let Some(r) = tasks.last_mut().and_then(|t| t.records.last_mut()) {
            if let Some(rest) = line.strip_prefix("state=") {
                r.state = rest.split_whitespace().next().map(str::to_string);
            }
            for w in line.split_whitespace() {
                if w == "finishing=true" {
                    r.finishing = true;
                } else if let Some(p) = w.strip_prefix("packageName=") {
                    r.package = Some(p.to_string());
                }
            }
        }
    }
    tasks
}

/// The state of the activity a hot start of `component` (`PKG/.Act`, as
/// dumpsys prints it) brings back, from `dumpsys activity activities`:
/// the top live record (ActivityRecord.dump: `* Hist  #N:
/// ActivityRecord{… u0 PKG/.Act tN}`, then among its lines `packageName=`
/// and `state=STOPPED delayedResume=false finishing=false`) of the
/// package's task, the first listed whose affinity is the package, else
/// the first holding a record of it. A finished record (`finishing=true`,
/// or FINISHING/DESTROYING/DESTROYED), such as a splash activity that
/// started `.Main` and finished, is passed over: am brings back the task,
/// so its top is what must have stopped.
pub fn parse_activity_state(text: &str, component: &str) -> ActivityState {
    let pkg = component.split('/').next().unwrap_or(component);
    let tasks = parse_tasks(text);
    let by_affinity = tasks.iter().filter(|t| t.owner.as_deref() == Some(pkg));
    let by_record = tasks.iter().filter(|t| {
        t.owner.as_deref() != Some(pkg) && t.records.iter().any(|r| r.package() == pkg)
    });
    let mut first_finished: Option<&Record> = None;
    for task in by_affinity.chain(by_record) {
        let Some(top) = task.records.iter().find(|r| !r.finished()) else {
            first_finished = first_finished.or(task.records.first());
            continue;
        };
        let activity = Waited {
            component: top.component.clone(),
            note: launched_note(task, &top.component, component),
        };
        return match &top.state {
            Some(state) => ActivityState::Found {
                state: state.clone(),
                activity,
            },
            None => ActivityState::RecordWithoutState(activity),
        };
    }
    match first_finished {
        Some(r) => ActivityState::OnlyFinishing(r.component.clone()),
        None => ActivityState::NoRecord,
    }
}

/// Why the task's top `top` is waited on rather than the launched
/// `component`; `None` when they are the same.
fn launched_note(task: &Task, top: &str, component: &str) -> Option<String> {
    if top == component {
        return None;
    }
    let act = component.split_once('/').map_or(component, |(_, a)| a);
    let launched = task.records.iter().find(|r| r.component == component);
    Some(match launched {
        Some(r) if r.finished() => format!("the task's top; the launched {act} finished"),
        Some(_) => format!("the task's top, above the launched {act}"),
        None => format!("the task's top; the launched {act} has no record in it"),
    })
}

/// The command that prints the activity records.
pub fn activities_argv() -> Vec<String> {
    ["dumpsys", "activity", "activities"]
        .map(String::from)
        .to_vec()
}

/// Parses `am start -W`'s output.
pub fn parse_am_start(text: &str) -> AmResult {
    let mut r = AmResult {
        status: String::new(),
        launch_state: None,
        activity: None,
        total_ms: None,
        wait_ms: None,
        errors: Vec::new(),
    };
    for line in text.lines().map(str::trim) {
        let field = |k: &str| line.strip_prefix(k).map(|v| v.trim().to_string());
        if let Some(v) = field("Status:") {
            r.status = v;
        } else if let Some(v) = field("LaunchState:") {
            r.launch_state = Some(v);
        } else if let Some(v) = field("Activity:") {
            r.activity = Some(v);
        } else if let Some(v) = field("TotalTime:") {
            r.total_ms = v.parse().ok();
        } else if let Some(v) = field("WaitTime:") {
            r.wait_ms = v.parse().ok();
        } else if line.starts_with("Error") || line.starts_with("Warning") {
            r.errors.push(line.to_string());
        }
    }
    r
}

/// One dex file's compiled state, as `dumpsys package PKG` prints it in
/// its "Dexopt state:" section (ART service's DumpHelper, Android 14+;
/// the same `ISA: [status=..] [reason=..]` lines since Android 10):
///
/// ```text
///   [com.example.foo]
///     path: /data/app/foo/base.apk
///       arm64: [status=speed-profile] [reason=bg-dexopt] [primary-abi]
///         [location is /data/app/foo/oat/arm64/base.odex]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dexopt {
    /// The APK (or split) the code is compiled from.
    pub path: String,
    /// Instruction set, e.g. `arm64`.
    pub isa: String,
    /// The compiler filter in force (`speed-profile`, `verify`,
    /// `run-from-apk`, ...).
    pub status: String,
    /// Why it is so (`cmdline` after `cmd package compile`, `install`,
    /// `bg-dexopt`, ...).
    pub reason: String,
    /// True for the app's primary ABI (the one its processes run).
    pub primary: bool,
    /// Where the compiled code is (an odex/vdex beside the APK, or under
    /// /data/dalvik-cache for a system app), when dumpsys says.
    pub location: Option<String>,
}

/// The command that prints the package's state, its dexopt among it.
pub fn dumpsys_argv(package: &str) -> Vec<String> {
    ["dumpsys", "package", package].map(String::from).to_vec()
}

/// The dexopt entries of `package` in `dumpsys package` output.
pub fn parse_dexopt(text: &str, package: &str) -> Vec<Dexopt> {
    let want = format!("[{package}]");
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out: Vec<Dexopt> = Vec::new();
    let mut lines = text.lines();
    // The package's block in the "Dexopt state:" section.
    let mut in_section = false;
    let base = loop {
        let Some(l) = lines.next() else {
            return out;
        };
        if l.trim() == "Dexopt state:" {
            in_section = true;
        } else if in_section && l.trim() == want {
            break indent(l);
        }
    };
    let mut path = String::new();
    for l in lines {
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if indent(l) <= base {
            break;
        }
        if let Some(p) = t.strip_prefix("path: ") {
            path = p.to_string();
        } else if let Some(loc) = t
            .strip_prefix("[location is ")
            .and_then(|r| r.strip_suffix(']'))
        {
            // "primary.vdex in /x/split_0.dm": the file is the container.
            let loc = loc.rsplit(" in ").next().unwrap_or(loc);
            if let Some(last) = out.last_mut() {
                last.location = Some(loc.to_string());
            }
        } else if let Some((isa, rest)) = t.split_once(": [status=") {
            let status = rest.split_once(']').map_or(rest, |(s, _)| s).to_string();
            let reason = rest
                .split("[reason=")
                .nth(1)
                .and_then(|r| r.split(']').next())
                .unwrap_or_default()
                .to_string();
            out.push(Dexopt {
                path: path.clone(),
                isa: isa.to_string(),
                status,
                reason,
                primary: rest.contains("[primary-abi]"),
                location: None,
            });
        }
    }
    out
}

/// Why `--compile MODE` did not take, judged from dumpsys: the entries of
/// the primary ABI (every entry where none is marked) must show MODE.
pub fn compile_mismatch(entries: &[Dexopt], mode: &str) -> Option<String> {
    if entries.is_empty() {
        return Some("dumpsys shows no dexopt state for it".into());
    }
    let primary: Vec<&Dexopt> = if entries.iter().any(|e| e.primary) {
        entries.iter().filter(|e| e.primary).collect()
    } else {
        entries.iter().collect()
    };
    let off: Vec<String> = primary
        .iter()
        .filter(|e| e.status != mode)
        .map(|e| {
            format!(
                "{} {}: status={} reason={}",
                e.path, e.isa, e.status, e.reason
            )
        })
        .collect();
    (!off.is_empty()).then(|| off.join("; "))
}

/// Where ART keeps an APK's compiled code in `cache` (`/data/dalvik-cache`)
/// for every ISA directory there, without the extension: its path without
/// the leading `/`, with `/classes.dex` added and every `/` made `@`
/// (art/libartbase/base/file_utils.cc GetDalvikCacheFilename), e.g.
/// `arm64/system@priv-app@Settings@Settings.apk@classes`.
/// No `cache` directory: nothing compiled there. One that cannot be read
/// is an error: the cold check would silently leave the compiled code out.
pub fn dalvik_cache_stems(
    apks: &[std::path::PathBuf],
    cache: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, iolab_sys::SysError> {
    let isas: Vec<std::path::PathBuf> = match std::fs::read_dir(cache) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(iolab_sys::SysError::io(cache, e)),
    };
    let mut out = Vec::new();
    for apk in apks {
        let rel = apk.to_string_lossy();
        let name = format!("{}/classes", rel.trim_start_matches('/')).replace('/', "@");
        for isa in &isas {
            out.push(isa.join(&name));
        }
    }
    Ok(out)
}

/// The uid `cmd package list packages -U` gives `package`: its lines are
/// `package:NAME uid:UID` (with `--user all`, the uids comma-joined: the
/// first, user 0's, is taken); the filter matches substrings, so only
/// the exact name counts.
pub fn parse_package_uid(text: &str, package: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("package:")?;
        let (name, uid) = rest.split_once(" uid:")?;
        if name != package {
            return None;
        }
        uid.split(',').next()?.trim().parse().ok()
    })
}

/// The APK paths `pm path PKG` printed (`package:PATH` lines; split APKs
/// give several).
pub fn parse_pm_path(text: &str) -> Vec<std::path::PathBuf> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("package:"))
        .map(std::path::PathBuf::from)
        .collect()
}

/// The line `--ready-logcat` waited for, and the times read from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogcatReady {
    /// The line, verbatim.
    pub line: String,
    /// Its log time (`logcat -v epoch`), seconds since the epoch.
    pub log_time_s: Option<f64>,
    /// Its log time less the wall time the launch began, ms.
    pub log_delay_ms: Option<f64>,
    /// The delay the system put in the line itself (`Fully drawn ...:
    /// +1s234ms`, measured from the launch intent as TotalTime is), ms.
    pub reported_ms: Option<u64>,
}

impl LogcatReady {
    /// The start-up time this line gives: the system's own figure when the
    /// line has one, else its log time after the launch began.
    pub fn duration_ms(&self) -> Option<f64> {
        self.reported_ms.map(|m| m as f64).or(self.log_delay_ms)
    }
}

/// Reads one `logcat -v epoch` line: its time and the `+XsYms` delay.
pub fn parse_logcat_line(line: &str, since_s: f64) -> LogcatReady {
    let log_time_s = line
        .split_whitespace()
        .next()
        .and_then(|t| t.parse::<f64>().ok());
    LogcatReady {
        line: line.trim_end().to_string(),
        log_time_s,
        log_delay_ms: log_time_s.map(|t| (t - since_s) * 1000.0),
        reported_ms: reported_delay_ms(line),
    }
}

/// `+1s234ms`, `+850ms`, `+1m2s3ms` (TimeUtils.formatDuration) → ms.
fn reported_delay_ms(line: &str) -> Option<u64> {
    let tail = &line[line.rfind(": +")? + 3..];
    let token = tail.split_whitespace().next()?;
    let mut total = 0u64;
    let mut num = String::new();
    let mut rest = token;
    while !rest.is_empty() {
        let c = rest.chars().next()?;
        if c.is_ascii_digit() {
            num.push(c);
            rest = &rest[1..];
            continue;
        }
        let (unit, scale) = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
            .into_iter()
            .find(|(u, _)| rest.starts_with(u))?;
        total += num.parse::<u64>().ok()? * scale;
        num.clear();
        rest = &rest[unit.len()..];
    }
    num.is_empty().then_some(total)
}

fn epoch_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A `logcat -v epoch -T NOW` reader started just before a launch, in its
/// own process group recorded with the guard (logcat never ends on its
/// own: it is killed by pgid when the start is over).
pub struct LogcatWatch {
    pid: i32,
    tracked: iolab_guard::Recorded,
    rx: std::sync::mpsc::Receiver<String>,
    child: Option<std::thread::JoinHandle<()>>,
}

impl LogcatWatch {
    /// Starts reading the log from now on for a line matching `re`.
    pub fn start(
        guard: &iolab_guard::Guard,
        re: &regex::Regex,
    ) -> Result<LogcatWatch, crate::ExperimentError> {
        let since_s = epoch_s();
        let spec = iolab_spawn::Spec {
            stdin: iolab_spawn::Input::Null,
            stdout: iolab_spawn::Output::Piped,
            stderr: iolab_spawn::Output::Null,
            process_group: true,
            ..iolab_spawn::Spec::new(
                &["logcat", "-v", "epoch", "-T", &format!("{since_s:.3}")].map(String::from),
            )
        };
        let held = iolab_spawn::hold(&spec).map_err(|e| {
            iolab_sys::UsageError::new(format!(
                "--ready-logcat: {e} (Android's logcat; run on the phone, e.g. iolab remote --adb SERIAL -- startup ...)"
            ))
        })?;
        let pid = held.pid();
        let tracked = guard.track_process_group(pid)?;
        let mut running = held
            .release()
            .map_err(|e| iolab_sys::UsageError::new(format!("--ready-logcat: {e}")))?;
        let (tx, rx) = std::sync::mpsc::channel();
        let out = running.stdout.take();
        let re = re.clone();
        let child = std::thread::spawn(move || {
            use std::io::BufRead;
            if let Some(out) = out {
                for line in std::io::BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if re.is_match(&line) {
                        let _ = tx.send(line);
                        break;
                    }
                }
            }
            // Reaped here once killed (or ended).
            let _ = running.wait();
        });
        Ok(LogcatWatch {
            pid,
            tracked,
            rx,
            child: Some(child),
        })
    }

    /// Waits for the line until `until`, then ends logcat. `launched` is
    /// when the launch began: the line's log time is read against it.
    pub fn finish(
        mut self,
        guard: &iolab_guard::Guard,
        launched: std::time::Instant,
        until: std::time::Instant,
    ) -> Result<Option<LogcatReady>, crate::ExperimentError> {
        let wait = until.saturating_duration_since(std::time::Instant::now());
        let seen = self.rx.recv_timeout(wait).ok();
        self.end();
        guard.forget(self.tracked)?;
        // Log times are wall-clock: the launch's wall time is ours now less
        // the monotonic time since it began.
        let launched_s = epoch_s() - launched.elapsed().as_secs_f64();
        Ok(seen.map(|line| parse_logcat_line(&line, launched_s)))
    }

    /// Kills logcat's group and waits for its reader (which reaps it).
    fn end(&mut self) {
        crate::launch::kill_group(self.pid);
        if let Some(t) = self.child.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LogcatWatch {
    fn drop(&mut self) {
        // Dropped on an error path without `finish`: logcat never ends on
        // its own. (The guard still lists the group and kills it again, a
        // no-op, when it restores.)
        self.end();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `am start -W -S` on Android 14 (a Pixel, cold start of Settings);
    /// the stand-in `am` of the startup test prints the same file.
    const COLD: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../iolab/tests/fixtures/android/am_start_cold.txt"
    ));

    /// Android 9 (no LaunchState), and a missing activity.
    const OLD: &str = "Starting: Intent { cmp=com.example/.Main }
Status: ok
Activity: com.example/.Main
ThisTime: 402
TotalTime: 402
WaitTime: 431
Complete
";
    const MISSING: &str = "Starting: Intent { cmp=com.nope/.Main }
Error type 3
Error: Activity class {com.nope/com.nope.Main} does not exist.
";

    /// The format of ART service's DumpHelper, as its own test in AOSP
    /// (art/libartservice/service/javatests/.../DumpHelperTest.java)
    /// expects it, inside `dumpsys package`'s output.
    const DUMPSYS: &str = r#"Packages:
  Package [com.example.foo] (1a2b3c):
    versionCode=1
Dexopt state:
  [com.example.foo]
    path: /data/app/foo/base.apk
      arm64: [status=speed-profile] [reason=cmdline] [primary-abi]
        [location is /data/app/foo/oat/arm64/base.odex]
      arm: [status=verify] [reason=install]
        [location is /data/app/foo/oat/arm/base.odex]
    path: /data/app/foo/split_0.apk
      arm64: [status=verify] [reason=vdex] [primary-abi]
        [location is primary.vdex in /data/app/foo/split_0.dm]
  [com.example.bar]
    path: /system_ext/priv-app/Bar/Bar.apk
      arm64: [status=speed] [reason=cmdline] [primary-abi]
        [location is /data/dalvik-cache/arm64/system_ext@priv-app@Bar@Bar.apk@classes.dex]

Compiler stats:
  [com.example.foo]
"#;

    /// An early ART-service dump: status and reason, no `[primary-abi]`
    /// and no location.
    const DUMPSYS_EARLY: &str = "Dexopt state:
  [com.example.bar]
    path: /system_ext/priv-app/Bar/Bar.apk
      arm64: [status=speed] [reason=cmdline]
";

    #[test]
    fn an_early_dump_without_locations_is_read_and_art_naming_finds_the_code() {
        let bar = parse_dexopt(DUMPSYS_EARLY, "com.example.bar");
        assert_eq!(bar.len(), 1);
        assert_eq!(
            (
                bar[0].status.as_str(),
                bar[0].primary,
                bar[0].location.clone()
            ),
            ("speed", false, None)
        );
        assert!(compile_mismatch(&bar, "speed").is_none());
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("arm64")).unwrap();
        let stems = dalvik_cache_stems(
            &[std::path::PathBuf::from("/system_ext/priv-app/Bar/Bar.apk")],
            d.path(),
        )
        .unwrap();
        assert_eq!(
            stems,
            [d.path()
                .join("arm64/system_ext@priv-app@Bar@Bar.apk@classes")]
        );
    }

    #[test]
    fn dexopt_state_is_read_per_apk_and_abi() {
        let foo = parse_dexopt(DUMPSYS, "com.example.foo");
        assert_eq!(foo.len(), 3);
        assert_eq!(
            (
                foo[0].isa.as_str(),
                foo[0].status.as_str(),
                foo[0].reason.as_str(),
                foo[0].primary
            ),
            ("arm64", "speed-profile", "cmdline", true)
        );
        assert_eq!(
            foo[0].location.as_deref(),
            Some("/data/app/foo/oat/arm64/base.odex")
        );
        assert_eq!(foo[2].location.as_deref(), Some("/data/app/foo/split_0.dm"));
        assert!(!foo[1].primary);
        // The split's primary ABI is only verified: speed-profile did not
        // take for all of the app.
        let why = compile_mismatch(&foo, "speed-profile").unwrap();
        assert!(
            why.contains("split_0.apk arm64: status=verify reason=vdex"),
            "{why}"
        );
        let bar = parse_dexopt(DUMPSYS, "com.example.bar");
        assert_eq!(bar.len(), 1);
        assert!(compile_mismatch(&bar, "speed").is_none());
        assert!(bar[0]
            .location
            .as_deref()
            .unwrap()
            .starts_with("/data/dalvik-cache/"));
        assert_eq!(parse_dexopt(DUMPSYS, "com.example.none"), vec![]);
        assert!(compile_mismatch(&[], "speed").is_some());
    }

    /// `dumpsys activity activities` (Android 9's layout, as recorded in
    /// a public dump: a resumed Settings over a stopped launcher).
    const ACTIVITIES: &str = "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)
Display #0 (activities from top to bottom):
  Stack #3: type=standard mode=fullscreen
    * TaskRecord{73545e7 #5 A=com.android.settings.root U=0 StackId=3 sz=1}
      * Hist #0: ActivityRecord{d784835 u0 com.android.settings/.Settings t5}
          packageName=com.android.settings processName=com.android.settings
          haveState=false icicle=null
          state=RESUMED stopped=false delayedResume=false finishing=false
          keysPaused=false inHistory=true visible=true sleeping=false idle=true
  Stack #0: type=home mode=fullscreen
      * Hist #0: ActivityRecord{349ee0a u0 com.android.launcher3/.Launcher t2}
          packageName=com.android.launcher3 processName=com.android.launcher3
          state=STOPPED stopped=true delayedResume=false finishing=false
  ResumedActivity: ActivityRecord{d784835 u0 com.android.settings/.Settings t5}
";

    /// `state` of the record of `component` itself (no trampoline).
    fn found(state: &str, component: &str) -> ActivityState {
        ActivityState::Found {
            state: state.into(),
            activity: Waited {
                component: component.into(),
                note: None,
            },
        }
    }

    #[test]
    fn activity_states_are_read_per_package_task() {
        assert_eq!(
            parse_activity_state(ACTIVITIES, "com.android.settings/.Settings"),
            found("RESUMED", "com.android.settings/.Settings")
        );
        assert_eq!(
            parse_activity_state(ACTIVITIES, "com.android.launcher3/.Launcher"),
            found("STOPPED", "com.android.launcher3/.Launcher")
        );
        assert_eq!(
            parse_activity_state(ACTIVITIES, "com.x/.Main"),
            ActivityState::NoRecord
        );
        // Android 12 and later print `state=` without `stopped=`.
        let new = "      * Hist  #0: ActivityRecord{1c2 u0 com.x/.Main t9}\n        state=STOPPED delayedResume=false finishing=false\n";
        assert_eq!(
            parse_activity_state(new, "com.x/.Main"),
            found("STOPPED", "com.x/.Main")
        );
        let t = AmTarget {
            component: "com.x/com.x.Main".into(),
            compile: None,
            ready_logcat: None,
        };
        assert_eq!(t.short_component(), "com.x/.Main");
        assert_eq!(
            t.argv_warm().join(" "),
            "am start -W --activity-clear-task -n com.x/com.x.Main"
        );
    }

    /// Android 14's dump of a trampoline: `.Splash` (the launched
    /// activity) started `.Main` in its task and finished; `.Main`, the
    /// task's top, is listed first (Hist #1). Another app's task is above.
    const TRAMPOLINE: &str = "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)
Display #0 (activities from top to bottom):
  * Task{8c1d2e3 #1 type=home U=0 visible=true visibleRequested=true mode=fullscreen translucent=false sz=1}
    * Task{4f5a6b7 #3 type=home I=com.google.android.apps.nexuslauncher/.NexusLauncherActivity U=0 rootTaskId=1 visible=true sz=1}
      * Hist  #0: ActivityRecord{9d8c7b6 u0 com.google.android.apps.nexuslauncher/.NexusLauncherActivity t3}
        packageName=com.google.android.apps.nexuslauncher processName=com.google.android.apps.nexuslauncher
        state=RESUMED delayedResume=false finishing=false
  * Task{e5f6a7b #12 type=standard A=10123:com.x U=0 visible=false visibleRequested=false mode=fullscreen translucent=false sz=2}
    mLastPausedActivity: ActivityRecord{a1b2c3 u0 com.x/.Main t12}
    isSleeping=false
    * Hist  #1: ActivityRecord{a1b2c3 u0 com.x/.Main t12}
      packageName=com.x processName=com.x
      launchedFromUid=10123 launchedFromPackage=com.x launchedFromFeature=null userId=0
      app=ProcessRecord{f0e1d2 4242:com.x/u0a123}
      Intent { flg=0x10000000 cmp=com.x/.Main }
      rootOfTask=false task=Task{e5f6a7b #12 type=standard A=10123:com.x}
      taskAffinity=10123:com.x
      mActivityComponent=com.x/.Main
      state=STOPPED delayedResume=false finishing=false
      keysPaused=false inHistory=true setVisible=false visibleRequested=false
    * Hist  #0: ActivityRecord{b2c3d4 u0 com.x/.Splash t12 f}}
      packageName=com.x processName=com.x
      Intent { act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] flg=0x10000000 cmp=com.x/.Splash }
      rootOfTask=true task=Task{e5f6a7b #12 type=standard A=10123:com.x}
      state=DESTROYED delayedResume=false finishing=true
      keysPaused=false inHistory=true setVisible=false visibleRequested=false

  Resumed activities in task display areas (from top to bottom):
    Resumed: ActivityRecord{9d8c7b6 u0 com.google.android.apps.nexuslauncher/.NexusLauncherActivity t3}
";

    #[test]
    fn a_finished_trampoline_is_passed_over_for_the_tasks_top() {
        let got = parse_activity_state(TRAMPOLINE, "com.x/.Splash");
        let ActivityState::Found { state, activity } = &got else {
            panic!("{got:?}");
        };
        assert_eq!(state, "STOPPED");
        assert_eq!(
            activity.to_string(),
            "com.x/.Main (the task's top; the launched .Splash finished)"
        );
        // Launched as .Main, it is what is waited on, named alone.
        assert_eq!(
            parse_activity_state(TRAMPOLINE, "com.x/.Main"),
            found("STOPPED", "com.x/.Main")
        );
        // A task without an affinity names its package by its intent.
        assert_eq!(
            parse_activity_state(
                TRAMPOLINE,
                "com.google.android.apps.nexuslauncher/.NexusLauncherActivity"
            ),
            found(
                "RESUMED",
                "com.google.android.apps.nexuslauncher/.NexusLauncherActivity"
            )
        );
        // Once destroyed, the splash's record is gone from the task.
        let gone = TRAMPOLINE
            .split("    * Hist  #0: ActivityRecord{b2c3d4")
            .next()
            .unwrap();
        let ActivityState::Found { activity, .. } = parse_activity_state(gone, "com.x/.Splash")
        else {
            panic!("{gone}");
        };
        assert_eq!(
            activity.to_string(),
            "com.x/.Main (the task's top; the launched .Splash has no record in it)"
        );
        // A task whose every record is finishing has nothing to bring back.
        let closing = TRAMPOLINE.replace(
            "state=STOPPED delayedResume=false finishing=false",
            "state=STOPPING delayedResume=false finishing=true",
        );
        assert_eq!(
            parse_activity_state(&closing, "com.x/.Splash"),
            ActivityState::OnlyFinishing("com.x/.Main".into())
        );
    }

    #[test]
    fn a_record_without_state_is_not_a_missing_record() {
        let dump = "Display #0 (activities from top to bottom):
  * Task{e5f6 #12 type=standard A=com.x U=0 visible=false}
    * Hist  #0: ActivityRecord{a1b2c3 u0 com.x/.Main t12}
      packageName=com.x processName=com.x
      keysPaused=false inHistory=true
";
        assert_eq!(
            parse_activity_state(dump, "com.x/.Main"),
            ActivityState::RecordWithoutState(Waited {
                component: "com.x/.Main".into(),
                note: None
            })
        );
        assert_eq!(
            parse_activity_state(
                "Display #0 (activities from top to bottom):\n",
                "com.x/.Main"
            ),
            ActivityState::NoRecord
        );
    }

    #[test]
    fn a_package_is_not_matched_by_a_prefix_of_its_name() {
        // com.x.y on top, resumed; com.x below it, stopped.
        let dump = "Display #0 (activities from top to bottom):
  * Task{1a #14 type=standard A=10200:com.x.y U=0 visible=true}
    * Hist  #0: ActivityRecord{2b u0 com.x.y/.Main t14}
      packageName=com.x.y processName=com.x.y
      state=RESUMED delayedResume=false finishing=false
  * Task{3c #12 type=standard A=10123:com.x U=0 visible=false}
    * Hist  #0: ActivityRecord{4d u0 com.x/.Main t12}
      packageName=com.x processName=com.x
      state=STOPPED delayedResume=false finishing=false
";
        assert_eq!(
            parse_activity_state(dump, "com.x/.Main"),
            found("STOPPED", "com.x/.Main")
        );
        assert_eq!(
            parse_activity_state(dump, "com.x.y/.Main"),
            found("RESUMED", "com.x.y/.Main")
        );
        assert_eq!(
            task_owner("* Task{3c #12 type=standard A=10123:com.x U=0}").as_deref(),
            Some("com.x")
        );
        assert_eq!(
            task_owner("* TaskRecord{3c #12 A=com.x U=0 StackId=3 sz=1}").as_deref(),
            Some("com.x")
        );
        assert_eq!(
            task_owner("* Task{3c #12 type=standard I=com.x/.Main}").as_deref(),
            Some("com.x")
        );
    }

    /// A hot start of an activity still resumed, as ActivityStarter's
    /// waitResultIfNeeded and am print it.
    const STILL_RESUMED: &str = "Starting: Intent { cmp=com.x/.Main }
Warning: Activity not started, its current task has been brought to the front
Status: ok
LaunchState: UNKNOWN (0)
Activity: com.x/.Main
TotalTime: 0
WaitTime: 9
Complete
";

    #[test]
    fn a_start_of_another_kind_or_of_nothing_is_named() {
        let r = parse_am_start(STILL_RESUMED);
        assert_eq!(r.failure(), None);
        let why = r.mode_problem("HOT", "hot").unwrap();
        assert!(
            why.contains("TotalTime 0") && why.contains("brought to the front"),
            "{why}"
        );
        let cold = parse_am_start(COLD);
        assert_eq!(cold.mode_problem("COLD", "cold"), None);
        let why = cold.mode_problem("WARM", "warm").unwrap();
        assert!(
            why.contains("LaunchState COLD") && why.contains("not WARM"),
            "{why}"
        );
        // Android 9: nothing to compare.
        assert_eq!(parse_am_start(OLD).mode_problem("HOT", "hot"), None);
    }

    #[test]
    fn reads_the_systems_own_times() {
        let r = parse_am_start(COLD);
        assert_eq!(r.status, "ok");
        assert_eq!(r.launch_state.as_deref(), Some("COLD"));
        assert_eq!((r.total_ms, r.wait_ms), (Some(1131), Some(1134)));
        assert_eq!(r.failure(), None);
        let r = parse_am_start(OLD);
        assert_eq!((r.total_ms, r.launch_state.clone()), (Some(402), None));
        assert_eq!(r.failure(), None);
        let r = parse_am_start(MISSING);
        assert!(r.failure().unwrap().contains("does not exist"), "{r:?}");
    }

    #[test]
    fn the_commands_are_ams_and_pms() {
        let t = AmTarget {
            component: "com.android.settings/.Settings".into(),
            compile: Some("speed-profile".into()),
            ready_logcat: None,
        };
        assert_eq!(t.path_argv().join(" "), "pm path com.android.settings");
        assert_eq!(
            t.argv().join(" "),
            "am start -W -S -n com.android.settings/.Settings"
        );
        assert_eq!(
            t.compile_argv().unwrap().join(" "),
            "cmd package compile -m speed-profile -f com.android.settings"
        );
        assert!(AmTarget::parse_component("com.x/.Main").is_ok());
        for bad in ["com.x", "/.Main", "com x/.Main", ""] {
            assert!(AmTarget::parse_component(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn logcat_lines_give_the_systems_delay_or_their_log_time() {
        // `logcat -v epoch`, Android 14, reportFullyDrawn() of an app.
        let l = parse_logcat_line(
            " 1732440000.350  1402  1433 I ActivityTaskManager: Fully drawn com.example/.Main: +1s234ms",
            1732440000.0,
        );
        assert_eq!(l.reported_ms, Some(1234));
        assert!((l.log_delay_ms.unwrap() - 350.0).abs() < 0.01, "{l:?}");
        assert_eq!(l.duration_ms(), Some(1234.0));
        for (text, ms) in [
            (
                "I ActivityTaskManager: Displayed com.x/.Main: +850ms",
                Some(850),
            ),
            ("Fully drawn com.x/.Main: +1m2s3ms", Some(62_003)),
            ("Fully drawn com.x/.Main: +2s5ms (total +3s)", Some(2_005)),
            ("ready at last", None),
            ("bad: +12q", None),
        ] {
            assert_eq!(reported_delay_ms(text), ms, "{text}");
        }
        let l = parse_logcat_line("1732440000.500 1 1 I app: ready", 1732440000.0);
        assert_eq!(l.reported_ms, None);
        assert!((l.duration_ms().unwrap() - 500.0).abs() < 0.01);
        assert_eq!(
            parse_pm_path("package:/data/app/~~a==/com.x-b==/base.apk\npackage:/data/app/~~a==/com.x-b==/split_config.arm64_v8a.apk\n"),
            [
                std::path::PathBuf::from("/data/app/~~a==/com.x-b==/base.apk"),
                std::path::PathBuf::from("/data/app/~~a==/com.x-b==/split_config.arm64_v8a.apk")
            ]
        );
    }
}
