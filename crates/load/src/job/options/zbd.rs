//! Zoned block devices (`zonemode=zbd`, set in [`super::sizes`] with the
//! other zone modes): the write-zone limits, reads past the write
//! pointer, periodic zone resets and an emulated zone's capacity, as fio
//! 3.33 names them.

use crate::job::model::Job;
use crate::job::value::{boolean, need, number, size};

/// The options this file handles.
pub const NAMES: &[&str] = &[
    "zonecapacity",
    "read_beyond_wp",
    "max_open_zones",
    "job_max_open_zones",
    "ignore_zone_limits",
    "zone_reset_threshold",
    "zone_reset_frequency",
];

/// fio's own limit on open zones (zbd.h, ZBD_MAX_OPEN_ZONES).
pub const MAX_OPEN_ZONES: u32 = 4096;

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let z = &mut job.x.zbd_opts;
    match key {
        "zonecapacity" => z.capacity = size(key, need(key, value)?)?,
        "read_beyond_wp" => z.read_beyond_wp = boolean(key, value)?,
        "ignore_zone_limits" => z.ignore_limits = boolean(key, value)?,
        "max_open_zones" | "job_max_open_zones" => {
            let v = need(key, value)?;
            let n = u32::try_from(number(key, v)?)
                .ok()
                .filter(|n| *n <= MAX_OPEN_ZONES)
                .ok_or_else(|| {
                    format!(
                        "{key}={v}: expected at most {MAX_OPEN_ZONES} (fio's limit on open zones)"
                    )
                })?;
            if key == "max_open_zones" {
                z.max_open = n;
            } else {
                z.job_max_open = n;
            }
        }
        "zone_reset_threshold" | "zone_reset_frequency" => {
            let v = need(key, value)?;
            // fio's float lists: one value here (its words, which fio's
            // t/zbd tests look for).
            if v.contains(':') {
                return Err(format!(
                    "{key}={v}: one value expected, the list exceeding max length 1 (e.g. 0.7)"
                ));
            }
            let f: f64 = v
                .parse()
                .ok()
                .filter(|f: &f64| f.is_finite())
                .ok_or_else(|| format!("{key}={v}: expected a number from 0 to 1, e.g. 0.7"))?;
            if !(0.0..=1.0).contains(&f) {
                return Err(format!(
                    "{key}={v}: value out of range (expected a number from 0 to 1, e.g. 0.7)"
                ));
            }
            if key == "zone_reset_threshold" {
                z.reset_threshold = f;
            } else {
                z.reset_frequency = f;
            }
        }
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}
