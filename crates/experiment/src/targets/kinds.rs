//! What `iolab startup` starts. Every kind runs as a command through the
//! one launcher (`crate::launch`: held before exec, its own process group
//! recorded with the guard, readiness, timeout, kill by group), so timing
//! and cleanup are the same for all; what differs per kind lives here:
//! which files are the target's own (what `--cold evict` evicts and
//! `--memory-pressure` measures), what must happen once per experiment,
//! and what a start's time is.
//!
//! Where the target runs is not a kind: on a phone or a board the whole
//! of iolab runs there (`iolab remote`), with its own guard, so launch,
//! cold cache and readiness are local calls on that device, not round
//! trips over a link that may drop.

use std::path::{Path, PathBuf};
use std::time::Instant;

use iolab_guard::Guard;
use iolab_sys::{cast, UsageError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::android::{self, AmTarget, LogcatWatch};
use crate::launch::Outcome;
use crate::ExperimentError;

/// A start-up target, as configured and stored with the experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Target {
    /// Any command: its files are its executable's.
    Command {
        /// Program and arguments.
        argv: Vec<String>,
    },
    /// iolab's built-in app (`iolab app --dir D`), or an S trace it
    /// replays (`--replay FILE`): D holds every file it reads.
    App {
        /// Program and arguments.
        argv: Vec<String>,
        /// Its `--dir`.
        dir: PathBuf,
        /// The S trace, for a replay.
        #[serde(default)]
        replay: Option<PathBuf>,
    },
    /// A launch script (`--script FILE`): run by the interpreter its `#!`
    /// line names (`sh` without one), with its text stored with the
    /// experiment, so what a start ran is on record and a resumed
    /// experiment refuses a script that changed since.
    Script {
        /// The script as given.
        path: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Its text when the experiment began.
        text: String,
    },
    /// An Android activity, started by `am start -W -S`.
    Activity {
        /// The activity and what is set for it.
        am: AmTarget,
        /// Its APKs' directories and its data directory (from `pm path`,
        /// read once by [`Target::prepare`]; not stored).
        #[serde(skip)]
        roots: Vec<PathBuf>,
        /// The package's uid (read once by [`Target::prepare`]): a process
        /// is the app only with it.
        #[serde(skip)]
        uid: Option<u32>,
    },
}

/// What a target keeps beside one launch.
pub struct Watch(Option<LogcatWatch>);

impl Target {
    /// An activity as configured (`--am-start`).
    pub fn activity(am: AmTarget) -> Target {
        Target::Activity {
            am,
            roots: Vec::new(),
            uid: None,
        }
    }

    /// A launch script and its arguments, its text read now.
    pub fn script(path: PathBuf, args: Vec<String>) -> Result<Target, UsageError> {
        if path.to_string_lossy().contains("{dir}") {
            return Err(UsageError::new(format!(
                "--script {}: the script must exist when the experiment begins (its text is stored with it); for one --prepare makes, run it as a command: -- sh {}",
                path.display(),
                path.display()
            )));
        }
        let text = read_script(&path)?;
        Ok(Target::Script { path, args, text })
    }

    /// The target a v5 configuration described by its command line and
    /// `am_start`: the built-in app was told apart by its arguments then.
    /// Used only to read configurations stored before targets were.
    pub fn from_v5(command: &[String], am: Option<AmTarget>) -> Target {
        if let Some(am) = am {
            return Target::activity(am);
        }
        let argv = command.to_vec();
        let flag = |name: &str| {
            command
                .windows(2)
                .find(|w| w[0] == name)
                .map(|w| PathBuf::from(&w[1]))
        };
        match (command.get(1).map(String::as_str), flag("--dir")) {
            (Some("app"), Some(dir)) if is_iolab(command) => Target::App {
                argv,
                dir,
                replay: flag("--replay"),
            },
            _ => Target::Command { argv },
        }
    }

    /// `command`, `app`, `replay` or `activity`.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Command { .. } => "command",
            Target::App { replay: None, .. } => "app",
            Target::App { .. } => "replay",
            Target::Script { .. } => "script",
            Target::Activity { .. } => "activity",
        }
    }

    /// What each start runs.
    pub fn argv(&self) -> Vec<String> {
        match self {
            Target::Command { argv } | Target::App { argv, .. } => argv.clone(),
            Target::Script { path, args, text } => {
                let mut v = interpreter(text);
                v.push(path.to_string_lossy().into_owned());
                v.extend(args.iter().cloned());
                v
            }
            Target::Activity { am, .. } => am.argv(),
        }
    }

    /// The label its runs are stored under: what each start runs, as
    /// configured (`{dir}` unsubstituted, so a resumed experiment on a new
    /// temporary lab lands its starts in the same cells).
    pub fn label(&self) -> String {
        self.argv().join(" ")
    }

    /// What each start runs in `mode`: a hot start of an activity is
    /// `am start` without `-S` (refused for other targets by the
    /// configuration's check).
    pub fn argv_for(&self, mode: crate::startup::StartMode) -> Vec<String> {
        match (self, mode) {
            (Target::Activity { am, .. }, crate::startup::StartMode::Hot) => am.argv_hot(),
            (Target::Activity { am, .. }, crate::startup::StartMode::Warm) => am.argv_warm(),
            _ => self.argv(),
        }
    }

    /// Before a hot start: the app is sent to the background (the home
    /// key), its process and activity kept.
    pub fn to_background(&self) -> Result<(), ExperimentError> {
        if let Target::Activity { .. } = self {
            run(&AmTarget::home_argv(), "--start-mode hot")?;
        }
        Ok(())
    }

    /// Before a hot start, after the home key: waits until the system
    /// says the activity am brings back is stopped (`state=STOPPED` in
    /// `dumpsys activity activities`: the top live record of the app's
    /// task, which for a splash or trampoline activity that finished is
    /// the activity it started), polled every 50 ms for at most
    /// `timeout`, so am brings back a stopped activity (a HOT launch)
    /// rather than one still resumed (TotalTime 0, nothing started). Why
    /// it could not be waited for when it did not stop: the state it was
    /// left in and for how long, a record without a state, or no task.
    pub fn wait_stopped(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<String>, ExperimentError> {
        use android::ActivityState;
        let Target::Activity { am, .. } = self else {
            return Ok(None);
        };
        let component = am.short_component();
        let start = Instant::now();
        loop {
            let text = run(&android::activities_argv(), "--start-mode hot")?;
            let state = android::parse_activity_state(&text, &component);
            if matches!(&state, ActivityState::Found { state, .. } if state == "STOPPED") {
                return Ok(None);
            }
            if start.elapsed() >= timeout {
                let pkg = am.package();
                return Ok(Some(match state {
                    ActivityState::Found { state, activity } => format!(
                        "the activity {activity} was still {state} {:.1} s after the home key (dumpsys activity activities), so it could not be brought back hot",
                        start.elapsed().as_secs_f64()
                    ),
                    ActivityState::RecordWithoutState(activity) => format!(
                        "the activity record of {activity} shows no state= line (dumpsys activity activities): cannot tell whether it stopped"
                    ),
                    ActivityState::OnlyFinishing(activity) => format!(
                        "`dumpsys activity activities` shows only finishing activities of {pkg} (its task's top: {activity}): there is no activity to bring back hot"
                    ),
                    ActivityState::NoRecord => format!(
                        "`dumpsys activity activities` shows no task of {pkg}: there is no activity to bring back hot"
                    ),
                }));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// The target with `{dir}` replaced by `dir` (the place's directory),
    /// and `iolab` as the program meaning this very binary.
    pub fn at(&self, dir: &Path) -> Target {
        let d = dir.to_string_lossy();
        let sub = |a: &String| a.replace("{dir}", &d);
        let argv = |v: &[String]| {
            let mut v: Vec<String> = v.iter().map(sub).collect();
            if v.first().is_some_and(|c| c == "iolab") {
                if let Ok(exe) = std::env::current_exe() {
                    v[0] = exe.to_string_lossy().into_owned();
                }
            }
            v
        };
        let path = |p: &Path| PathBuf::from(p.to_string_lossy().replace("{dir}", &d));
        match self {
            Target::Command { argv: a } => Target::Command { argv: argv(a) },
            Target::App {
                argv: a,
                dir,
                replay,
            } => Target::App {
                argv: argv(a),
                dir: path(dir),
                replay: replay.as_deref().map(path),
            },
            Target::Script {
                path: p,
                args,
                text,
            } => Target::Script {
                path: path(p),
                args: args.iter().map(sub).collect(),
                text: text.clone(),
            },
            Target::Activity { .. } => self.clone(),
        }
    }

    /// Checks what needs no system access: there is a program to run.
    pub fn check_shape(&self) -> Result<(), UsageError> {
        if self.argv().first().is_none_or(|p| p.is_empty()) {
            return Err(UsageError::new(
                "no target command: put it after --, e.g. iolab startup -- iolab app --dir {dir}/app",
            ));
        }
        Ok(())
    }

    /// Checks it can start at all, before an experiment is stored that
    /// could never have a run.
    pub fn check(&self) -> Result<(), UsageError> {
        let argv = self.argv();
        let Some(prog) = argv.first().map(String::as_str) else {
            return Err(UsageError::new(
                "no target command: put it after --, e.g. iolab startup -- iolab app --dir {dir}/app",
            ));
        };
        if let Target::Script { path, text, .. } = self {
            // What a start runs must be what the experiment stored.
            if read_script(path)? != *text {
                return Err(UsageError::new(format!(
                    "--script {} changed since this experiment began: restore it, or start a new experiment",
                    path.display()
                )));
            }
        }
        if which(prog).is_some_and(|p| p.is_file()) {
            return Ok(());
        }
        Err(UsageError::new(match self {
            Target::Activity { .. } => format!(
                "cannot find {prog:?}: --am-start needs Android's am (run on the phone, e.g. \
                 iolab remote --adb SERIAL -- startup ...)"
            ),
            _ => format!(
                "cannot find the target {prog:?}: expected an executable on PATH or a path to one"
            ),
        }))
    }

    /// Once per experiment: an activity's compilation state is set (and
    /// checked in `dumpsys package`: `cmd package compile` says Success
    /// even when dexopt was skipped) and its files are looked up, its
    /// compiled code (an odex beside the APK, or under /data/dalvik-cache
    /// for a system app) among them. Returns the dexopt state read, to be
    /// stored with the experiment.
    pub fn prepare(&mut self) -> Result<Option<Value>, ExperimentError> {
        let Target::Activity { am, roots, uid } = self else {
            return Ok(None);
        };
        // Who the app is: its package's uid (the names collide).
        let (found_uid, uid_from) = package_uid(am.package())?;
        *uid = Some(found_uid);
        if let Some(argv) = am.compile_argv() {
            let said = run(&argv, "--compile")?;
            if !said.contains("Success") {
                return Err(UsageError::new(format!(
                    "`{}` did not say Success: {}",
                    argv.join(" "),
                    said.trim()
                ))
                .into());
            }
        }
        let dumpsys = android::dumpsys_argv(am.package());
        let dexopt = match (run(&dumpsys, "--am-start"), &am.compile) {
            (Ok(text), _) => android::parse_dexopt(&text, am.package()),
            // Without --compile the state is only recorded: its absence
            // is no reason to refuse the experiment.
            (Err(_), None) => Vec::new(),
            (Err(e), Some(_)) => return Err(e),
        };
        if let Some(mode) = &am.compile {
            if let Some(why) = android::compile_mismatch(&dexopt, mode) {
                return Err(UsageError::new(format!(
                    "--compile {mode}: `cmd package compile` said Success, but `{}` shows it did not take ({why}): see `logcat -s PackageManager ArtService` for why dexopt was skipped",
                    dumpsys.join(" ")
                ))
                .into());
            }
        }
        let apks = android::parse_pm_path(&run(&am.path_argv(), "--am-start")?);
        if apks.is_empty() {
            return Err(UsageError::new(format!(
                "`pm path {}` names no APK: is the package installed?",
                am.package()
            ))
            .into());
        }
        // The APK's directory holds what a cold start reads besides
        // the APK: oat/ (odex, vdex, art) and lib/.
        *roots = apks
            .iter()
            .filter_map(|a| a.parent().map(Path::to_path_buf))
            .collect();
        roots.dedup();
        // Compiled code elsewhere (a system app's, in dalvik-cache): the
        // file dumpsys names and its siblings of the same stem (.odex or
        // .dex, .vdex, .art). Early ART-service dumps (and the
        // PackageManager ones before them) name no location: then where
        // ART puts it, by its own naming, for every ISA it has.
        let named: Vec<&Path> = dexopt
            .iter()
            .filter_map(|d| d.location.as_deref())
            .map(Path::new)
            .collect();
        let located_by = if named.is_empty() {
            "dalvik-cache naming"
        } else {
            "dumpsys"
        };
        let stems: Vec<PathBuf> = if named.is_empty() {
            android::dalvik_cache_stems(&apks, Path::new("/data/dalvik-cache"))?
        } else {
            named
                .iter()
                .filter(|loc| !roots.iter().any(|r| loc.starts_with(r)))
                .filter_map(|loc| Some(loc.parent()?.join(loc.file_stem()?)))
                .collect()
        };
        let mut compiled = Vec::new();
        for stem in stems {
            for ext in ["odex", "dex", "vdex", "art"] {
                // Not with_extension: dalvik-cache names hold dots
                // (`...@Settings.apk@classes.odex`).
                let mut name = stem.clone().into_os_string();
                name.push(format!(".{ext}"));
                let f = PathBuf::from(name);
                if f.is_file() && !roots.contains(&f) {
                    compiled.push(f.clone());
                    roots.push(f);
                }
            }
        }
        let data = Path::new("/data/data").join(am.package());
        if data.is_dir() {
            roots.push(data);
        }
        Ok(Some(json!({
            "package": am.package(),
            "package_uid": found_uid,
            "package_uid_from": uid_from,
            "compile": am.compile,
            "dexopt": dexopt,
            "compiled_code": compiled,
            "compiled_code_located_by": located_by,
        })))
    }

    /// The activity's dexopt state now (`dumpsys package`): what its
    /// starts read; None for other targets.
    pub fn dexopt_now(&self) -> Result<Option<Vec<android::Dexopt>>, ExperimentError> {
        let Target::Activity { am, .. } = self else {
            return Ok(None);
        };
        let text = run(&android::dumpsys_argv(am.package()), "--am-start")?;
        Ok(Some(android::parse_dexopt(&text, am.package())))
    }

    /// `--compile MODE` again (a background dexopt changed what it made),
    /// checked as the first time; the state after it.
    pub fn recompile(&self) -> Result<Option<Vec<android::Dexopt>>, ExperimentError> {
        let Target::Activity { am, .. } = self else {
            return Ok(None);
        };
        let (Some(argv), Some(mode)) = (am.compile_argv(), am.compile.as_deref()) else {
            return Ok(None);
        };
        run(&argv, "--compile")?;
        let Some(now) = self.dexopt_now()? else {
            return Ok(None);
        };
        if let Some(why) = android::compile_mismatch(&now, mode) {
            return Err(UsageError::new(format!(
                "--compile {mode}: compiling again after a background dexopt did not take ({why})"
            ))
            .into());
        }
        Ok(Some(now))
    }

    /// Before each start's cold step: an activity's app, which outlives
    /// `am start` (it stays up until something stops it, as on a phone),
    /// is force-stopped, so its mappings do not keep its files cached
    /// through the cold step (Macrobenchmark's cold start does the same:
    /// kill the process, then drop caches).
    pub fn stop(&self) -> Result<(), ExperimentError> {
        if let Target::Activity { am, .. } = self {
            run(
                &["am", "force-stop", am.package()].map(String::from),
                "--am-start",
            )?;
        }
        Ok(())
    }

    /// The target's files, listed again for every start (it may have
    /// created or deleted some since): `explicit` (`--evict`) when given,
    /// else the app's directory, the activity's APK and data directories,
    /// or the command's executable.
    pub fn files(&self, explicit: &[PathBuf]) -> Vec<PathBuf> {
        let roots: Vec<PathBuf> = if !explicit.is_empty() {
            explicit.to_vec()
        } else {
            match self {
                Target::App { dir, .. } => vec![dir.clone()],
                Target::Activity { roots, .. } => roots.clone(),
                Target::Script { path, text, .. } => std::iter::once(path.clone())
                    .chain(interpreter(text).first().and_then(|p| which(p)))
                    .collect(),
                Target::Command { argv } => {
                    argv.first().and_then(|p| which(p)).into_iter().collect()
                }
            }
        };
        let mut out = Vec::new();
        for r in roots {
            collect_files(&r, &mut out);
        }
        out
    }

    /// Just before a launch: what must watch it from outside (an
    /// activity's `--ready-logcat` reader).
    pub fn watch(&self, guard: &Guard) -> Result<Watch, ExperimentError> {
        match self {
            Target::Activity { am, .. } => match &am.ready_logcat {
                Some(re) => {
                    let re = regex::Regex::new(re).map_err(|e| {
                        UsageError::new(format!("--ready-logcat {re:?} is not a valid regex: {e}"))
                    })?;
                    Ok(Watch(Some(LogcatWatch::start(guard, &re)?)))
                }
                None => Ok(Watch(None)),
            },
            _ => Ok(Watch(None)),
        }
    }

    /// After a launch begun at `t0` with `timeout`: the start's own time
    /// where the target reports one (an activity: am's TotalTime, or the
    /// `--ready-logcat` line), and what to store about it.
    ///
    /// The second value is why the start is not of `mode` (am's
    /// LaunchState, or a TotalTime of 0), when it is not.
    pub fn measure(
        &self,
        guard: &Guard,
        outcome: &mut Outcome,
        watch: Watch,
        t0: Instant,
        timeout: std::time::Duration,
        mode: crate::startup::StartMode,
    ) -> Result<(Option<Value>, Option<String>), ExperimentError> {
        let Target::Activity { .. } = self else {
            return Ok((None, None));
        };
        let r = android::parse_am_start(&outcome.output_tail);
        let expected = match mode {
            crate::startup::StartMode::Cold => "COLD",
            crate::startup::StartMode::Warm => "WARM",
            crate::startup::StartMode::Hot => "HOT",
        };
        let mode_problem = (outcome.failure.is_none() && !outcome.censored && !outcome.interrupted)
            .then(|| r.mode_problem(expected, mode.as_str()))
            .flatten();
        let started = outcome.failure.is_none() && !outcome.censored && !outcome.interrupted;
        if started {
            match (r.failure(), r.total_ms) {
                (Some(why), _) => outcome.failure = Some(why),
                // am's figure, unless the start was timed by the app itself
                // (--ready-rss-stable on the app's memory).
                (None, Some(ms)) if outcome.ready_ns.is_none() => {
                    outcome.duration_ns = ms * 1_000_000
                }
                (None, _) => {}
            }
        }
        let logcat = match watch.0 {
            // Waited for only when am says the activity started.
            Some(w) if started && outcome.failure.is_none() => {
                Some(w.finish(guard, t0, t0 + timeout)?)
            }
            Some(w) => {
                w.finish(guard, t0, Instant::now())?;
                None
            }
            None => None,
        };
        let seen = match &logcat {
            Some(Some(line)) => match line.duration_ms() {
                Some(ms) => {
                    outcome.duration_ns = cast::floor_u64(ms * 1e6);
                    outcome.ready_ns = Some(outcome.duration_ns);
                    Some(line)
                }
                None => None,
            },
            Some(None) => {
                // Never drawn fully within the timeout: a lower bound.
                outcome.duration_ns = cast::duration_ns(timeout);
                outcome.censored = true;
                None
            }
            None => None,
        };
        let verified = r.launch_state.is_some();
        Ok((
            Some(json!({
                "result": r,
                "am_wall_ns": outcome.exit_ns,
                "logcat": seen,
                "expected_launch_state": expected,
                // Android 9 and older print no LaunchState: the mode is
                // then stored as unverified, not assumed.
                "launch_state_verified": verified,
            })),
            mode_problem,
        ))
    }
}

/// The package's uid: `cmd package list packages -U PKG`
/// (PackageManagerShellCommand: `package:NAME uid:UID`, the filter a
/// substring, so the exact name is picked), else the owner of its data
/// directory (`/data/data/PKG`, the app's uid). Refused when neither
/// tells: without it another package's process could pass for the app.
fn package_uid(package: &str) -> Result<(u32, String), ExperimentError> {
    let argv: Vec<String> = ["cmd", "package", "list", "packages", "-U", package]
        .map(String::from)
        .to_vec();
    let listed = run(&argv, "--am-start");
    if let Ok(text) = &listed {
        if let Some(uid) = android::parse_package_uid(text, package) {
            return Ok((uid, argv.join(" ")));
        }
    }
    let data = Path::new("/data/data").join(package);
    if let Ok(m) = std::fs::metadata(&data) {
        use std::os::unix::fs::MetadataExt;
        return Ok((m.uid(), format!("the owner of {}", data.display())));
    }
    Err(UsageError::new(format!(
        "cannot tell {package}'s uid: `{}` {} and {} does not exist; is the package installed?",
        argv.join(" "),
        match &listed {
            Ok(t) if t.trim().is_empty() => "printed nothing".to_string(),
            Ok(t) => format!("did not list it ({})", t.trim()),
            Err(e) => format!("failed ({e})"),
        },
        data.display()
    ))
    .into())
}

/// Longest launch script whose text is stored: a script, not a program.
const MAX_SCRIPT_BYTES: u64 = 1 << 20;

/// A launch script's text, refused when missing, unreadable or too long.
fn read_script(path: &Path) -> Result<String, UsageError> {
    let bad = |why: String| {
        UsageError::new(format!(
            "--script {}: {why}; expected a readable launch script of at most 1 MiB",
            path.display()
        ))
    };
    let len = std::fs::metadata(path)
        .map_err(|e| bad(e.to_string()))?
        .len();
    if len > MAX_SCRIPT_BYTES {
        return Err(bad(format!("{len} bytes")));
    }
    std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))
}

/// The interpreter and its argument from a script's `#!` line (as the
/// kernel reads it: the program, then the rest as one argument), or `sh`.
fn interpreter(text: &str) -> Vec<String> {
    let Some(line) = text.lines().next().and_then(|l| l.strip_prefix("#!")) else {
        return vec!["sh".to_string()];
    };
    let line = line.trim();
    match line.split_once(char::is_whitespace) {
        Some((prog, arg)) => vec![prog.to_string(), arg.trim().to_string()],
        None if !line.is_empty() => vec![line.to_string()],
        None => vec!["sh".to_string()],
    }
}

/// `iolab` or a path to it.
fn is_iolab(argv: &[String]) -> bool {
    argv.first()
        .and_then(|p| Path::new(p).file_name())
        .is_some_and(|n| n.to_string_lossy().starts_with("iolab"))
}

/// Runs a device command once and returns its stdout.
pub(crate) fn run(argv: &[String], flag: &str) -> Result<String, ExperimentError> {
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| {
            UsageError::new(format!(
                "cannot run `{}`: {e}; {flag} needs Android's {} (run on the phone, e.g. \
                 iolab remote --adb SERIAL -- startup ...)",
                argv.join(" "),
                argv[0]
            ))
        })?;
    if !out.status.success() {
        return Err(UsageError::new(format!(
            "`{}` failed: {}{}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The executable `prog` names (a path, or the first match on PATH).
pub fn which(prog: &str) -> Option<PathBuf> {
    iolab_spawn::resolve(prog)
}

/// Every file under `p` (itself when a file).
pub fn collect_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                collect_files(&e.path(), out);
            }
        }
    } else if p.is_file() {
        out.push(p.to_path_buf());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn v5_commands_become_their_kinds() {
        let t = Target::from_v5(&argv("/usr/bin/iolab app --dir /mnt/a --scale 2"), None);
        assert_eq!(t.kind(), "app");
        let t = Target::from_v5(&argv("iolab app --dir /mnt/a --replay x.trace"), None);
        assert_eq!(t.kind(), "replay");
        assert!(matches!(&t, Target::App { replay: Some(p), .. } if p == Path::new("x.trace")));
        // Another program's `app` subcommand is just a command.
        assert_eq!(
            Target::from_v5(&argv("flatpak app --dir x"), None).kind(),
            "command"
        );
        let am = AmTarget {
            component: "com.x/.Main".into(),
            compile: None,
            ready_logcat: None,
        };
        let t = Target::from_v5(&am.argv(), Some(am));
        assert_eq!((t.kind(), t.argv()[0].as_str()), ("activity", "am"));
    }

    #[test]
    fn targets_round_trip_and_substitute_the_dir() {
        let t = Target::App {
            argv: argv("sh {dir}/app --dir {dir}/app"),
            dir: "{dir}/app".into(),
            replay: Some("{dir}/x.trace".into()),
        };
        let j = serde_json::to_value(&t).unwrap();
        assert_eq!(j["kind"], "app");
        assert_eq!(serde_json::from_value::<Target>(j).unwrap(), t);
        let at = t.at(Path::new("/mnt/l"));
        assert_eq!(at.argv(), argv("sh /mnt/l/app --dir /mnt/l/app"));
        assert!(matches!(&at, Target::App { dir, replay: Some(r), .. }
            if dir == Path::new("/mnt/l/app") && r == Path::new("/mnt/l/x.trace")));
        assert_eq!(t.label(), "sh {dir}/app --dir {dir}/app");
    }

    #[test]
    fn a_script_runs_by_its_shebang_and_must_not_change() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("launch.sh");
        std::fs::write(&p, "#!/usr/bin/env bash -e\necho hi\n").unwrap();
        let t = Target::script(p.clone(), argv("--fast")).unwrap();
        assert_eq!(t.kind(), "script");
        let want = vec![
            "/usr/bin/env".to_string(),
            "bash -e".to_string(),
            p.to_string_lossy().into_owned(),
            "--fast".to_string(),
        ];
        assert_eq!(t.argv(), want);
        t.check().unwrap();
        assert!(t.files(&[]).contains(&p));
        let back: Target = serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        std::fs::write(&p, "echo changed\n").unwrap();
        assert!(t.check().unwrap_err().0.contains("changed since"));
        let plain = Target::script(p.clone(), vec![]).unwrap();
        assert_eq!(plain.argv()[0], "sh");
        assert!(Target::script("{dir}/x.sh".into(), vec![]).is_err());
        assert!(Target::script(d.path().join("missing.sh"), vec![]).is_err());
    }

    #[test]
    fn files_are_the_apps_dir_or_the_executable_unless_listed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        for f in ["a", "sub/b"] {
            std::fs::write(d.path().join(f), "x").unwrap();
        }
        let app = Target::App {
            argv: argv("iolab app"),
            dir: d.path().to_path_buf(),
            replay: None,
        };
        let mut files = app.files(&[]);
        files.sort();
        assert_eq!(files, [d.path().join("a"), d.path().join("sub/b")]);
        let sh = Target::Command {
            argv: argv("sh -c true"),
        };
        assert_eq!(sh.files(&[]), [which("sh").unwrap()]);
        assert_eq!(sh.files(&[d.path().join("a")]), [d.path().join("a")]);
    }
}
