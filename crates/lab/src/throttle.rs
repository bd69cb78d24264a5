//! The queue layout of a loop lab: throttle on the lower device, a shallow
//! driver queue and the scheduler under test on the top device.
//!
//! Where the queue forms decides who orders the requests. blk-throttle
//! holds over-limit bios in its own FIFO *before* they become requests of
//! the lower device (measured on 6.18: with 8 readers on a 20 MiB/s lab,
//! `/sys/block/<lower>/inflight` stays 0), so the lower device's
//! `nr_requests` never fills and cannot push the queue upwards. What does
//! is the top device's driver depth: the loop driver takes up to 128
//! requests (module parameter `hw_queue_depth`, read-only), which would let
//! any scheduler hand everything straight to the throttle's FIFO. With the
//! depth cut to 4, at most 4 requests wait in the throttle and the rest
//! wait in the top device's scheduler, which then decides the order.

use std::path::Path;

use serde::Serialize;

use iolab_guard::{Guard, Throttle, BLKIO_ROOT};
use iolab_sys::block::BlockDev;

use crate::spec::LabSpec;
use crate::LabError;

/// Throttles `lower`, then sets the top device's queue depth and
/// scheduler. Returns the driver depth the kernel applied, if limited.
pub(crate) fn configure(
    guard: &Guard,
    spec: &LabSpec,
    top: &BlockDev,
    lower: Option<&BlockDev>,
) -> Result<Option<u32>, LabError> {
    if let Some(lower) = lower {
        // The lower device gets requests the top scheduler already ordered,
        // at most `depth` at a time. A second elevator there would re-sort
        // and merge them, idle (bfq) or hold writes back (mq-deadline) on
        // its own, so results would mix two schedulers; `none` passes them
        // on in the order decided above.
        guard.set_scheduler(lower, "none")?;
        let limits = [
            (Throttle::ReadBps, spec.bw_bytes),
            (Throttle::WriteBps, spec.bw_bytes),
            (Throttle::ReadIops, spec.iops),
            (Throttle::WriteIops, spec.iops),
        ];
        for (kind, value) in limits {
            if let Some(v) = value {
                guard.set_throttle(lower, kind, v)?;
            }
        }
    }
    let depth = match spec.effective_queue_depth() {
        Some(d) => {
            // nr_requests sizes the driver tags only under `none`.
            guard.set_scheduler(top, "none")?;
            let max: u32 = top.queue_attr("nr_requests")?.parse().unwrap_or(u32::MAX);
            if d > max {
                return Err(LabError::usage(format!(
                    "--queue-depth {d} is deeper than {}'s driver allows ({max}): use {max} or less",
                    top.name
                )));
            }
            Some(guard.set_queue_depth(top, d)?)
        }
        None => None,
    };
    if let Some(s) = &spec.scheduler {
        guard.set_scheduler(top, s)?;
    }
    Ok(depth)
}

/// Checks a scheduler name against what loop devices offer, before any
/// device is made, so a typo costs nothing.
pub(crate) fn precheck_scheduler(name: &str) -> Result<(), LabError> {
    let Some(dev) = any_loop_device() else {
        return Ok(()); // checked again when set on the lab's own device
    };
    let offered = dev.schedulers()?.available;
    if offered.iter().any(|s| s == name) {
        return Ok(());
    }
    Err(LabError::usage(format!(
        "scheduler {name:?} is not offered for loop devices on this kernel: available are {}",
        offered.join(", ")
    )))
}

fn any_loop_device() -> Option<BlockDev> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/block")
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("loop"))
        .collect();
    names.sort();
    BlockDev::from_name(names.first()?).ok()
}

/// The blkio throttle rules of one device, read back from the root
/// cgroup's `blkio.throttle.*_device` files (0: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ThrottleValues {
    /// `blkio.throttle.read_bps_device`, bytes/s.
    pub read_bps: u64,
    /// `blkio.throttle.write_bps_device`, bytes/s.
    pub write_bps: u64,
    /// `blkio.throttle.read_iops_device`.
    pub read_iops: u64,
    /// `blkio.throttle.write_iops_device`.
    pub write_iops: u64,
}

/// Reads `dev`'s throttle rules from the root blkio cgroup.
pub fn read_throttle(dev: &BlockDev) -> Result<ThrottleValues, LabError> {
    let devno = dev.devno()?;
    let get = |kind: Throttle| -> Result<u64, LabError> {
        let file = Path::new(BLKIO_ROOT).join(kind.file_name());
        if !file.exists() {
            return Ok(0);
        }
        Ok(iolab_guard::read_throttle(&file, &devno)?)
    };
    Ok(ThrottleValues {
        read_bps: get(Throttle::ReadBps)?,
        write_bps: get(Throttle::WriteBps)?,
        read_iops: get(Throttle::ReadIops)?,
        write_iops: get(Throttle::WriteIops)?,
    })
}

/// cgroup v1 blk-throttle is flat: a rule in the root cgroup limits only
/// I/O issued from the root cgroup (the loop driver charges the lower
/// device's I/O to the original issuer). Returns a warning when this
/// process sits elsewhere, because then its I/O to the lab is not limited.
pub fn cgroup_warning() -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = blkio_cgroup(&text)?;
    (path != "/").then(|| {
        format!(
            "this process is in blkio cgroup {path}, and cgroup-v1 throttle rules in the root cgroup only limit I/O issued from the root cgroup: run the workload from the root cgroup (e.g. `echo $$ > {BLKIO_ROOT}/cgroup.procs`) or its I/O to the lab is not throttled"
        )
    })
}

/// The blkio line of /proc/PID/cgroup (`7:blkio:/user.slice`).
fn blkio_cgroup(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        ctrl.split(',')
            .any(|c| c == "blkio")
            .then(|| path.to_string())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_blkio_cgroup() {
        let t = "8:pids:/\n7:blkio,io:/user.slice\n0::/\n";
        assert_eq!(blkio_cgroup(t).as_deref(), Some("/user.slice"));
        assert_eq!(blkio_cgroup("0::/x\n"), None);
    }

    #[test]
    fn unknown_schedulers_are_refused_before_anything_is_made() {
        if any_loop_device().is_none() {
            iolab_testkit::skip_line("skip: no loop devices in /sys/block".to_string());
            return;
        }
        let e = precheck_scheduler("cfq-classic").unwrap_err();
        assert!(iolab_sys::is_usage(&e));
        assert!(e.to_string().contains("available are"), "{e}");
        precheck_scheduler("none").unwrap();
    }
}
