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
            let max = driver_depth(top)?;
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

/// The deepest queue `dev`'s driver allows: its tag set's depth per
/// hardware queue (`mq/N/nr_tags`, the smallest), which bounds
/// nr_requests under `none`. Not `queue/nr_requests`: that reads what the
/// last writer left under `none` (switching from none to none resets
/// nothing), and a loop device keeps its queue when detached, so one cut
/// to 4 by a throttled lab and reused after a kill, or cut by another
/// tool, refused every deeper `--queue-depth` after (CI on this machine:
/// loop1 left at 4, `--queue-depth 128` refused with "allows (4)").
/// A bio-based device has no `mq/`: its nr_requests is all there is.
pub(crate) fn driver_depth(dev: &BlockDev) -> Result<u32, LabError> {
    let mq = dev.sysfs.join("mq");
    let parse = |path: &Path, text: &str| -> Result<u32, LabError> {
        text.trim().parse().map_err(|_| {
            LabError::io(
                path,
                std::io::Error::other(format!("{:?} is not a number", text.trim())),
            )
        })
    };
    let mut least: Option<u32> = None;
    if let Ok(entries) = std::fs::read_dir(&mq) {
        for e in entries {
            let tags = e
                .map_err(|err| LabError::io(&mq, err))?
                .path()
                .join("nr_tags");
            let text = std::fs::read_to_string(&tags).map_err(|err| LabError::io(&tags, err))?;
            let n = parse(&tags, &text)?;
            least = Some(least.map_or(n, |l| l.min(n)));
        }
    }
    match least {
        Some(n) => Ok(n),
        None => {
            let nr = dev.queue_path("nr_requests");
            parse(&nr, &dev.queue_attr("nr_requests")?)
        }
    }
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

    /// A loop device left cut to 4 under `none` (as a lab's top is while
    /// it lives, and was after a reuse): the driver's depth is still what
    /// the kernel accepts for nr_requests, to the request, and not 4.
    #[test]
    fn the_driver_depth_is_what_the_kernel_accepts_not_what_was_left() {
        if !iolab_sys::is_root() {
            return iolab_testkit::skip(
                "the_driver_depth_is_what_the_kernel_accepts_not_what_was_left",
                "it attaches a loop device (needs root)",
            );
        }
        let run = tempfile::tempdir().unwrap();
        let img = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
        img.as_file().set_len(16 << 20).unwrap();
        let guard = Guard::in_dir(run.path().to_path_buf());
        let dev = guard.attach_loop(img.path(), false).unwrap();
        guard.set_scheduler(&dev, "none").unwrap();
        assert_eq!(guard.set_queue_depth(&dev, 4).unwrap(), 4);
        let depth = driver_depth(&dev).unwrap();
        assert!(depth > 4, "{depth}");
        // The kernel's own bound: nr_requests takes the depth, not one more.
        let nr = dev.queue_path("nr_requests");
        std::fs::write(&nr, depth.to_string()).unwrap();
        assert_eq!(dev.queue_attr("nr_requests").unwrap(), depth.to_string());
        let over = std::fs::write(&nr, (depth + 1).to_string()).unwrap_err();
        assert_eq!(over.raw_os_error(), Some(libc::EINVAL), "{over}");
        let report = guard.restore();
        assert!(report.iter().all(Result::is_ok), "{report:?}");
    }

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
