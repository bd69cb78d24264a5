//! How I/O is issued: the engine, queue depth and batching, direct or buffered, syncs, I/O priorities and cmdprio, the scheduler.

#![allow(clippy::wildcard_imports)]
use super::prelude::*;
use crate::job::value::*;

/// The options of this concern.
pub const NAMES: &[&str] = &[
    "iodepth",
    "ioengine",
    "direct",
    "buffered",
    "fsync",
    "fdatasync",
    "end_fsync",
    "invalidate",
    "ioscheduler",
    "sync_file_range",
    "fsync_on_close",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "userspace_reap",
    "hipri",
    "nowait",
    "uncached",
    "io_submit_mode",
    "prio",
    "prioclass",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let x = &mut job.x;
    match key {
        "iodepth" => {
            job.iodepth = at_most(
                key,
                count(key, need_raw(key, value)?, 1)?,
                MAX_IODEPTH,
                "io_uring's largest submission queue",
            )?
        }
        "ioengine" => {
            let v = need_raw(key, value)?;
            job.ioengine = match IoEngine::parse(v) {
                Some(e) => e,
                None => return Err(unknown_engine(v)),
            };
        }
        "direct" => job.direct = boolean(key, value)?,
        "buffered" => job.direct = !boolean(key, value)?,
        "fsync" => job.fsync = count(key, need_raw(key, value)?, 0)?,
        "fdatasync" => job.fdatasync = count(key, need_raw(key, value)?, 0)?,
        "end_fsync" => job.end_fsync = boolean(key, value)?,
        "invalidate" => job.invalidate = boolean(key, value)?,
        "ioscheduler" => job.ioscheduler = Some(need_raw(key, value)?.to_string()),
        "sync_file_range" => {
            let v = need(key, value)?;
            let (flags, n) = v
                .rsplit_once(':')
                .ok_or_else(|| format!("{key}={v}: expected FLAGS:N, e.g. wait_before,write:8"))?;
            let mut f = 0u32;
            for part in flags.split(',') {
                f |= match part.trim() {
                    "wait_before" => libc::SYNC_FILE_RANGE_WAIT_BEFORE,
                    "write" => libc::SYNC_FILE_RANGE_WRITE,
                    "wait_after" => libc::SYNC_FILE_RANGE_WAIT_AFTER,
                    p => return Err(format!("{key}={v}: flag {p:?}: expected wait_before, write, wait_after")),
                };
            }
            x.sync_file_range = Some((f, count(key, n, 1)?));
        }
        "fsync_on_close" => job.end_fsync |= boolean(key, value)?,
        "cmdprio_percentage" | "cmdprio_class" | "cmdprio" | "cmdprio_bssplit" => {
            crate::job::cmdprio::apply(&mut x.cmdprio, key, need(key, value)?)?;
        }
        // iolab keeps per-second bandwidth samples only when a log asks:
        // disabling them is what is done.
        "iodepth_batch" | "iodepth_batch_submit" => x.batch_submit = count(key, need(key, value)?, 0)?.max(1),
        "iodepth_batch_complete" | "iodepth_batch_complete_min" => {
            x.batch_complete_min = count(key, need(key, value)?, 0)?;
        }
        "iodepth_batch_complete_max" => x.batch_complete_max = count(key, need(key, value)?, 0)?,
        "iodepth_low" => {
            count(key, need(key, value)?, 0)?;
            note(job, format!(
                "job {}: iodepth_low: iolab refills the queue as soon as an I/O completes (iodepth_low=iodepth-1)",
                job.name
            ));
        }
        "userspace_reap" => x.userspace_reap = boolean(key, value)?,
        "hipri" => x.hipri = boolean(key, value)?,
        "nowait" => x.nowait = boolean(key, value)?,
        "uncached" => x.uncached = boolean(key, value)?,
        "io_submit_mode" => match need(key, value)? {
            "inline" => {}
            "offload" => note(job, format!(
                "job {}: io_submit_mode=offload: iolab submits from the job's own thread, each I/O when its rate says it is due (what offload is for in rate-paced jobs)",
                job.name
            )),
            v => return Err(format!("io_submit_mode={v}: expected inline or offload")),
        },
        "prio" => {
            let v = need(key, value)?;
            let n = count(key, v, 0)?;
            let n = u8::try_from(n)
                .ok()
                .filter(|n| *n <= 7)
                .ok_or_else(|| format!("prio={n}: expected 0 (highest) to 7"))?;
            x.priolevel = Some(n);
            x.prio = Some(make_prio(x.prioclass.unwrap_or(2), n)?);
        }
        "prioclass" => {
            let v = need(key, value)?;
            let c = count(key, v, 0)?;
            let c = u8::try_from(c).ok().filter(|c| *c <= 3).ok_or_else(|| {
                format!("prioclass={c}: expected 1 (real-time), 2 (best-effort), 3 (idle) or 0 (none)")
            })?;
            x.prioclass = Some(c);
            x.prio = (c != 0).then(|| make_prio(c, x.priolevel.unwrap_or(4))).transpose()?;
        }
        // Errors are always printed, with the file and offset.
        // apply() let only NAMES in.
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}
