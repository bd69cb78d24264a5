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

    /// The command that sets the compilation state, if one is asked for.
    pub fn compile_argv(&self) -> Option<Vec<String>> {
        self.compile.as_ref().map(|m| {
            ["cmd", "package", "compile", "-m", m, "-f", self.package()]
                .map(String::from)
                .to_vec()
        })
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `am start -W -S` on Android 14 (a Pixel, cold start of Settings).
    const COLD: &str = "Stopping: com.android.settings
Starting: Intent { cmp=com.android.settings/.Settings }
Status: ok
LaunchState: COLD
Activity: com.android.settings/.Settings
TotalTime: 1131
WaitTime: 1134
Complete
";

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
        };
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
}
