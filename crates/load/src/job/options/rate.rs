//! Rate limits and floors (`rate`, `rate_iops`, `ratemin`, `rate_process`) and `flow` between jobs.

#![allow(clippy::wildcard_imports)]
use super::prelude::*;
use crate::job::value::*;

/// The options of this concern.
pub const NAMES: &[&str] = &[
    "rate",
    "rate_iops",
    "ratemin",
    "rate_min",
    "rate_iops_min",
    "ratecycle",
    "rate_cycle",
    "rate_process",
    "flow",
    "flow_id",
    "flow_watermark",
    "flow_sleep",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let x = &mut job.x;
    match key {
        "rate" => job.rate = pair(key, need_raw(key, value)?, |v| size(key, v))?,
        "rate_iops" => job.rate_iops = pair(key, need_raw(key, value)?, |v| number(key, v))?,
        "ratemin" | "rate_min" => x.ratemin = pair(key, need(key, value)?, |v| size(key, v))?,
        "rate_iops_min" => x.rate_iops_min = pair(key, need(key, value)?, |v| number(key, v))?,
        "ratecycle" | "rate_cycle" => {
            let ms = number(key, need(key, value)?)?;
            if ms == 0 {
                return Err(format!("{key}=0: expected milliseconds, e.g. 1000"));
            }
            x.ratecycle = Duration::from_millis(ms);
        }
        "rate_process" => {
            x.rate_poisson = match need(key, value)? {
                "linear" => false,
                "poisson" => true,
                v => return Err(format!("rate_process={v}: expected linear or poisson")),
            }
        }
        "flow" => {
            let v = need(key, value)?;
            x.flow = v
                .parse()
                .map_err(|_| format!("flow={v}: expected a whole-number weight"))?;
        }
        "flow_id" => x.flow_id = count(key, need(key, value)?, 0)?,
        "flow_watermark" => {
            count(key, need(key, value)?, 0)?;
            note(job, format!(
                "job {}: flow_watermark: iolab keeps each flow job within 8 I/Os of its share; the watermark sets nothing else",
                job.name
            ));
        }
        "flow_sleep" => {
            x.flow_sleep = Duration::from_micros(number(key, need(key, value)?)?);
        }
        // apply() let only NAMES in.
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}
