//! What is reported: percentiles, latency and bandwidth measurement switches, grouping, and fio's log files (`write_*_log`, `log_*`).

#![allow(clippy::wildcard_imports)]
use super::prelude::*;
use crate::job::value::*;

/// The options of this concern.
pub const NAMES: &[&str] = &[
    "group_reporting",
    "significant_figures",
    "kb_base",
    "unit_base",
    "percentile_list",
    "clat_percentiles",
    "lat_percentiles",
    "unified_rw_reporting",
    "gtod_reduce",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "disable_bw",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_hist_coarseness",
    "bw_avg_time",
    "iops_avg_time",
    "log_max_value",
    "log_window_value",
    "log_issue_time",
    "log_offset",
    "log_prio",
    "per_job_logs",
    "log_compression",
    "log_store_compressed",
    "slat_percentiles",
    "error_dump",
    "ignore_error",
    "continue_on_error",
    "latency_target",
    "latency_window",
    "latency_percentile",
    "latency_run",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let name = job.name.clone();
    let x = &mut job.x;
    match key {
        "group_reporting" => x.group_reporting = boolean(key, value)?,
        "percentile_list" => {
            let v = need(key, value)?;
            let mut list = Vec::new();
            for p in v.split(':') {
                let f: f64 = p.trim().parse().ok().filter(|f: &f64| (0.0..=100.0).contains(f)).ok_or_else(|| {
                    format!("{key}={v}: {p:?} is not a percentile from 0 to 100 (list them with ':', e.g. 50:99:99.9)")
                })?;
                list.push(f);
            }
            if list.len() > 20 {
                return Err(format!("{key}={v}: at most 20 percentiles, as in fio"));
            }
            x.percentile_list = Some(list);
        }
        "clat_percentiles" => x.percentiles_in.0 = boolean(key, value)?,
        "lat_percentiles" => x.percentiles_in.1 = boolean(key, value)?,
        "unified_rw_reporting" => {
            x.unified_rw_reporting = match value.unwrap_or("1") {
                "0" | "none" => 0,
                "1" | "mixed" => 1,
                "2" | "both" => 2,
                v => return Err(format!("{key}={v}: expected none, mixed or both (0/1/2)")),
            }
        }
        "gtod_reduce" | "disable_lat" | "disable_clat" => {
            if boolean(key, value)? {
                x.no_latency = true;
            }
        }
        "disable_slat" => x.no_slat = boolean(key, value)?,
        "disable_bw_measurement" | "disable_bw" => {
            boolean(key, value)?;
        }
        "write_bw_log" => x.logs.bw = Some(log_prefix(&name, value)),
        "write_lat_log" => x.logs.lat = Some(log_prefix(&name, value)),
        "write_iops_log" => x.logs.iops = Some(log_prefix(&name, value)),
        "write_hist_log" => x.logs.hist = Some(log_prefix(&name, value)),
        "log_avg_msec" => x.logs.avg_msec = number(key, need(key, value)?)?,
        "log_hist_msec" => x.logs.hist_msec = number(key, need(key, value)?)?,
        "log_hist_coarseness" => {
            let v = number(key, need(key, value)?)?;
            x.logs.hist_coarseness = u32::try_from(v)
                .ok()
                .filter(|v| *v <= 6)
                .ok_or_else(|| format!("{key}={v}: from 0 to 6, as in fio"))?;
        }
        "bw_avg_time" => x.logs.bw_avg_time = Some(number(key, need(key, value)?)?.max(1)),
        "iops_avg_time" => x.logs.iops_avg_time = Some(number(key, need(key, value)?)?.max(1)),
        "log_max_value" => x.logs.max_value = boolean(key, value)?,
        // fio 3.36's successor of log_max_value: mean, max or both.
        "log_window_value" => {
            let v = need(key, value)?;
            (x.logs.max_value, x.logs.both) = match v {
                "mean" | "avg" | "0" => (false, false),
                "max" | "1" => (true, false),
                "both" | "2" => (false, true),
                _ => return Err(format!("{key}={v}: expected mean, max or both")),
            };
        }
        "log_issue_time" => x.logs.issue_time = boolean(key, value)?,
        "log_offset" => x.logs.offset = boolean(key, value)?,
        "log_prio" => x.logs.prio = boolean(key, value)?,
        // per_job_logs=0: one file per log kind without the clone number
        // (prefix_bw.log), as fio names it; a job of several clones is
        // checked in validate (their lines would interleave).
        "per_job_logs" => x.logs.shared = !boolean(key, value)?,
        // fio compresses log chunks of this size in memory; iolab streams
        // its logs to the file as it goes, so it holds none to compress.
        "log_compression" => {
            size(key, need(key, value)?)?;
        }
        "log_store_compressed" => x.logs.compressed = boolean(key, value)?,
        // Only the queueing engines have a slat (as in fio).
        "slat_percentiles" => x.percentiles_in.2 = boolean(key, value)?,
        "latency_target" | "latency_window" => {
            let t = micros(key, need(key, value)?)?;
            if key == "latency_target" {
                x.latency_target = Some(t).filter(|t| !t.is_zero());
            } else {
                x.latency_window = t;
            }
        }
        "latency_percentile" => {
            let v = need(key, value)?;
            x.latency_percentile = v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| format!("{key}={v}: expected a percentage from 0 to 100"))?;
        }
        "latency_run" => x.latency_run = boolean(key, value)?,
        // fio's error classes (td_error.h): read 1, write 2, verify 4.
        "continue_on_error" => {
            x.continue_on_error = match need(key, value)? {
                "none" | "0" => 0,
                "read" => 1,
                "write" => 2,
                "io" => 3,
                "verify" => 4,
                "all" | "1" => 0xffff,
                v => {
                    return Err(format!(
                        "{key}={v}: expected none, read, write, io, verify, all, 0 or 1"
                    ))
                }
            }
        }
        "error_dump" => {
            boolean(key, value)?;
        }
        "ignore_error" => {
            let v = need(key, value)?;
            let lists = ignore_error(v)?;
            for (k, l) in lists.iter().enumerate() {
                if l.is_some() {
                    // fio: errors named for a class also continue it.
                    x.continue_on_error |= 1 << k;
                }
            }
            x.ignore_error = lists;
        }
        // apply() let only NAMES in.
        // fio 3.33's posval: 0 auto (bytes), 8 bytes, 1 bits.
        "unit_base" => {
            let v = crate::job::value::need(key, value)?;
            x.bits = match v {
                "0" | "8" => false,
                "1" => true,
                _ => {
                    return Err(format!(
                        "{key}={v}: expected 0 (auto), 8 (bytes) or 1 (bits)"
                    ))
                }
            }
        }
        "kb_base" => {
            let v = crate::job::value::need(key, value)?;
            x.kb_base = match v {
                "1024" => 1024,
                "1000" => 1000,
                _ => return Err(format!("{key}={v}: expected 1024 or 1000")),
            }
        }
        "significant_figures" => {
            let v = crate::job::value::need(key, value)?;
            x.sig_figs = match v.parse::<u8>() {
                Ok(n @ 1..=10) => n,
                _ => return Err(format!("{key}={v}: expected a whole number from 1 to 10")),
            }
        }
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}

/// fio's errno names for `ignore_error` (options.c, str2error): EPERM..ERANGE
/// are errno 1..34 on Linux.
const ERRNO_NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// `ignore_error=READ,WRITE,VERIFY`: per class (comma separated), the
/// errors (colon separated, names or numbers) that do not stop the job;
/// `None` keeps fio's default list (EIO, EILSEQ) for that class.
fn ignore_error(v: &str) -> Result<[Option<Vec<i32>>; 3], String> {
    let mut out: [Option<Vec<i32>>; 3] = Default::default();
    for (k, class) in v.split(',').enumerate() {
        if k >= 3 {
            return Err(format!(
                "ignore_error={v}: Illegal error type (at most three lists: read, write, verify)"
            ));
        }
        let mut errs = Vec::new();
        // fio stops at the first empty name.
        for name in class.trim().split(':').take_while(|n| !n.is_empty()) {
            let e = if name.starts_with('E') {
                // errno k is ERRNO_NAMES[k - 1].
                ERRNO_NAMES
                    .iter()
                    .zip(1..)
                    .find(|(n, _)| **n == name)
                    .map_or(0, |(_, errno)| errno)
            } else {
                name.parse::<i32>().map_or(0, i32::abs)
            };
            if e == 0 {
                return Err(format!(
                    "ignore_error={v}: Unknown error {name}, please use number value (or one of {})",
                    ERRNO_NAMES.join(", ")
                ));
            }
            errs.push(e);
        }
        if !errs.is_empty() {
            out[k] = Some(errs);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod ignore_error_tests {
    #[test]
    fn classes_are_comma_separated_errors_colon_separated() {
        let l = super::ignore_error(",ENOSPC:EFBIG,84").unwrap();
        assert_eq!(l[0], None);
        assert_eq!(l[1], Some(vec![libc::ENOSPC, libc::EFBIG]));
        assert_eq!(l[2], Some(vec![84]));
        assert!(super::ignore_error("EWHAT").is_err());
        assert!(super::ignore_error("EIO,EIO,EIO,EIO").is_err());
        assert_eq!(super::ignore_error("-5").unwrap()[0], Some(vec![5]));
    }
}
