//! When the job runs and stops: `runtime`, `ramp_time`, start delays and dependencies, think time, `exitall`, steady state.

#![allow(clippy::wildcard_imports)]
use super::prelude::*;
use crate::job::value::*;

/// The options of this concern.
pub const NAMES: &[&str] = &[
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "startdelay",
    "wait_for",
    "exitall",
    "exit_what",
    "exitwhat",
    "steadystate",
    "ss",
    "steadystate_duration",
    "ss_dur",
    "steadystate_ramp_time",
    "ss_ramp",
    "steadystate_check_interval",
    "ss_interval",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let x = &mut job.x;
    match key {
        "runtime" | "timeout" => {
            let t = time(key, need_raw(key, value)?)?;
            job.runtime = (!t.is_zero()).then_some(t);
        }
        "time_based" => job.time_based = boolean(key, value)?,
        "ramp_time" => job.ramp_time = time(key, need_raw(key, value)?)?,
        "thinktime" => x.thinktime = micros(key, need(key, value)?)?,
        "thinktime_spin" => x.thinktime_spin = micros(key, need(key, value)?)?,
        "thinktime_blocks" => x.thinktime_blocks = count(key, need(key, value)?, 1)?,
        "startdelay" => {
            let v = need(key, value)?;
            x.startdelay = match v.split_once('-') {
                Some((a, b)) => (time(key, a)?, time(key, b)?),
                None => {
                    let t = time(key, v)?;
                    (t, t)
                }
            };
            if x.startdelay.1 < x.startdelay.0 {
                return Err(format!("{key}={v}: expected LOW-HIGH with LOW <= HIGH"));
            }
        }
        "wait_for" => x.wait_for = Some(need(key, value)?.to_string()),
        "exitall" => x.exitall = boolean(key, value)?,
        "exit_what" | "exitwhat" => {
            x.exit_what = match need(key, value)? {
                "group" => ExitWhat::Group,
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                v => return Err(format!("{key}={v}: expected group, stonewall or all")),
            }
        }
        "steadystate" | "ss" => {
            let v = need(key, value)?;
            let prev = x.steadystate.clone();
            x.steadystate = Some(parse_ss(v, prev)?);
        }
        "steadystate_duration" | "ss_dur" => {
            let t = time(key, need(key, value)?)?;
            ss_mut(x).dur = t;
        }
        "steadystate_ramp_time" | "ss_ramp" => {
            let t = time(key, need(key, value)?)?;
            ss_mut(x).ramp = t;
        }
        "steadystate_check_interval" | "ss_interval" => {
            let t = time(key, need(key, value)?)?;
            if t.is_zero() {
                return Err(format!("{key}=0: expected an interval, e.g. 1s"));
            }
            ss_mut(x).interval = t;
        }
        // apply() let only NAMES in.
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}
