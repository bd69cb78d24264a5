//! What a phone does around and between an activity's starts that is not
//! the start, and that iolab must prevent, undo or note:
//! - the screen times out (Settings.System.SCREEN_OFF_TIMEOUT) and the
//!   keyguard comes; an activity launched then is made but neither resumed
//!   nor drawn, and a resumed one stops. iolab keeps the screen on while
//!   plugged in for the run (`svc power stayon true`, the setting put back
//!   by the guard), and before each start wakes a device found asleep and
//!   dismisses the keyguard, outside the start's window, saying so;
//! - a charging, idle phone recompiles apps (the background dexopt job):
//!   the compiled code a start reads can change mid-run or between
//!   `--resume` sessions. The state is read again before each cell.

use serde::Serialize;
use serde_json::Value;

use super::android::Dexopt;
use super::kinds::run;
use crate::ExperimentError;
use iolab_guard::Guard;

/// The setting `svc power stayon` writes (BatteryManager's plug types
/// kept on: AC 1, USB 2, wireless 4; `true` is all of them, 7).
const STAY_ON: &str = "stay_on_while_plugged_in";

/// Keeps the screen on while plugged in for the run (`svc power stayon
/// true`), the setting put back as it was by the guard; the line to
/// announce.
pub fn stay_awake(guard: &Guard) -> Result<String, ExperimentError> {
    let get: Vec<String> = ["settings", "get", "global", STAY_ON]
        .map(String::from)
        .to_vec();
    let old = run(&get, "--am-start")?.trim().to_string();
    if old == "7" {
        return Ok(format!(
            "the screen stays on while plugged in already ({STAY_ON} 7)"
        ));
    }
    let old = (old != "null" && !old.is_empty()).then_some(old);
    guard
        .android_setting("global", STAY_ON, old.clone(), || Ok(()))
        .map_err(ExperimentError::from)?;
    run(
        &["svc", "power", "stayon", "true"].map(String::from),
        "--am-start",
    )?;
    Ok(format!(
        "the screen kept on while plugged in for the run (svc power stayon true; {STAY_ON} was {}, put back at the end)",
        old.as_deref().unwrap_or("unset")
    ))
}

/// What a start found of the screen and did about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Woke {
    /// PowerManager's wakefulness before (`Asleep`, `Dozing`, `Dreaming`).
    pub was: String,
    /// The keyguard before (KeyguardController's `mKeyguardShowing`; None
    /// where the dump has no such line).
    pub keyguard_was: Option<bool>,
    /// After the wake-up key and `wm dismiss-keyguard`.
    pub now: String,
    /// The keyguard then.
    pub keyguard_now: Option<bool>,
}

impl Woke {
    /// The start cannot be what was asked: the device stayed asleep or
    /// locked.
    pub fn problem(&self) -> Option<String> {
        if self.now != "Awake" {
            return Some(format!(
                "the device was {} before the start and still {} after KEYCODE_WAKEUP (dumpsys power mWakefulness): an activity is neither resumed nor drawn then",
                self.was, self.now
            ));
        }
        (self.keyguard_now == Some(true)).then(|| {
            "the keyguard still showed after `wm dismiss-keyguard` (dumpsys activity activities mKeyguardShowing): a secure lock screen cannot be dismissed from the shell, and an activity behind it is not drawn".to_string()
        })
    }

    /// The line said to the user.
    pub fn note(&self) -> String {
        format!(
            "the device was {}{} (its screen timed out): woken and the keyguard dismissed before the start, outside its window",
            self.was,
            if self.keyguard_was == Some(true) {
                ", its keyguard showing"
            } else {
                ""
            }
        )
    }
}

/// KeyguardController.dump's `mKeyguardShowing=` (in `dumpsys activity
/// activities`), None when the dump has none.
pub fn parse_keyguard(text: &str) -> Option<bool> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("mKeyguardShowing="))
        .map(|v| v.trim() == "true")
}

fn keyguard() -> Result<Option<bool>, ExperimentError> {
    let text = run(&super::android::activities_argv(), "--am-start")?;
    Ok(parse_keyguard(&text))
}

/// `mWakefulness=` in `dumpsys power` (PowerManagerService.dumpInternal).
pub fn parse_wakefulness(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("mWakefulness="))
        .map(|v| v.trim().to_string())
}

fn wakefulness() -> Result<String, ExperimentError> {
    let text = run(&["dumpsys", "power"].map(String::from), "--am-start")?;
    parse_wakefulness(&text).ok_or_else(|| {
        iolab_sys::UsageError::new(
            "`dumpsys power` printed no mWakefulness= line: cannot tell whether the screen is on",
        )
        .into()
    })
}

/// How long a woken device is given to be awake and unlocked: the
/// screen's own work on waking (the display, the launcher drawn again)
/// is over before the start's cold step, not inside its window.
const WAKE_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Before a start: a device found asleep is woken, and a keyguard
/// dismissed (the screen may have timed out though stayon was set: on
/// battery, stayon keeps nothing on); then waited for until it is awake
/// and unlocked, at most [`WAKE_SETTLE`]. None when it was awake and
/// unlocked.
pub fn wake() -> Result<Option<Woke>, ExperimentError> {
    let was = wakefulness()?;
    let keyguard_was = keyguard()?;
    if was == "Awake" && keyguard_was != Some(true) {
        return Ok(None);
    }
    if was != "Awake" {
        run(
            &["input", "keyevent", "KEYCODE_WAKEUP"].map(String::from),
            "--am-start",
        )?;
    }
    run(&["wm", "dismiss-keyguard"].map(String::from), "--am-start")?;
    let until = std::time::Instant::now() + WAKE_SETTLE;
    loop {
        let (now, keyguard_now) = (wakefulness()?, keyguard()?);
        if (now == "Awake" && keyguard_now != Some(true)) || std::time::Instant::now() >= until {
            return Ok(Some(Woke {
                was,
                keyguard_was,
                now,
                keyguard_now,
            }));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The primary ABI's compiled state, as one phrase per APK
/// (`arm64 speed (cmdline)`).
pub fn summary(entries: &[Dexopt]) -> String {
    let primary: Vec<&Dexopt> = entries.iter().filter(|d| d.primary).collect();
    let shown = if primary.is_empty() {
        entries.iter().collect()
    } else {
        primary
    };
    shown
        .iter()
        .map(|d| format!("{} {} ({})", d.isa, d.status, d.reason))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The entries stored with the experiment (its `dexopt` document).
/// None where none was read (not Android, or no dexopt state printed);
/// an error naming what could not be read where the document is there but
/// unreadable.
pub fn stored_entries(doc: &Value) -> Result<Vec<Dexopt>, String> {
    match doc.get("dexopt") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            format!("the stored dexopt state could not be read ({e}): the dexopt checks are off")
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wakefulness_is_read_from_dumpsys_power() {
        let text = "POWER MANAGER (dumpsys power)\n\nPower Manager State:\n  mDirty=0x0\n  mWakefulness=Asleep\n  mWakefulnessChanging=false\n";
        assert_eq!(parse_wakefulness(text).as_deref(), Some("Asleep"));
        assert_eq!(parse_wakefulness("nothing"), None);
        let w = Woke {
            was: "Asleep".into(),
            keyguard_was: Some(true),
            now: "Awake".into(),
            keyguard_now: Some(false),
        };
        assert!(w.problem().is_none());
        assert!(w.note().contains("Asleep, its keyguard showing"));
        let w = Woke {
            was: "Dozing".into(),
            keyguard_was: None,
            now: "Dozing".into(),
            keyguard_now: None,
        };
        assert!(w.problem().unwrap().contains("still Dozing"));
        let w = Woke {
            keyguard_now: Some(true),
            now: "Awake".into(),
            ..w
        };
        assert!(w.problem().unwrap().contains("secure lock screen"));
        let dump = "  KeyguardController:\n    mKeyguardShowing=true\n    mAodShowing=false\n";
        assert_eq!(parse_keyguard(dump), Some(true));
        assert_eq!(parse_keyguard("nothing"), None);
    }

    #[test]
    fn the_summary_is_the_primary_abis() {
        let d = |isa: &str, status: &str, primary| Dexopt {
            path: "/x/base.apk".into(),
            isa: isa.into(),
            status: status.into(),
            reason: "bg-dexopt".into(),
            primary,
            location: None,
        };
        assert_eq!(
            summary(&[d("arm64", "speed-profile", true), d("arm", "verify", false)]),
            "arm64 speed-profile (bg-dexopt)"
        );
    }
}
