//! Guarded changes to device and kernel knobs: scheduler, tunables, queue
//! attributes and depth, bdi dirty limit, sysctls, blkio throttles.

use std::path::{Path, PathBuf};

use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

use crate::change::{write_attr, Change};
use crate::guard::{read_throttle, Guard, Throttle, BLKIO_ROOT};
use crate::GuardError;

impl Guard {
    /// Writes `value` to a sysfs/procfs attribute after journaling its
    /// current value. Scheduler files are read as their bracketed entry.
    pub fn write_attr(&self, path: &Path, value: &str) -> Result<(), GuardError> {
        let current = std::fs::read_to_string(path).map_err(|e| GuardError::io(path, e))?;
        let old = if path.ends_with("queue/scheduler") {
            iolab_sys::block::parse_schedulers(current.trim())
                .map(|s| s.current)
                .unwrap_or_else(|| current.trim().to_string())
        } else {
            current.trim().to_string()
        };
        let mut st = self.st();
        st.record(Change::Attr {
            path: path.to_path_buf(),
            old,
        })?;
        write_attr(path, value)
    }

    /// Switches `dev` to the I/O scheduler `name`.
    pub fn set_scheduler(&self, dev: &BlockDev, name: &str) -> Result<(), GuardError> {
        let s = dev.schedulers()?;
        if !s.available.iter().any(|a| a == name) {
            return Err(UsageError::new(format!(
                "scheduler {name:?} is not offered by {}: available are {}",
                dev.name,
                s.available.join(", ")
            ))
            .into());
        }
        if s.current == name {
            return Ok(());
        }
        // Leaving a scheduler frees its instance: switching back later
        // starts one with default tunables, and the kernel resets the
        // queue's nr_requests to its default on every switch (an eMMC's
        // 128 became 2 on a queue one tag deep). Journal the current
        // values first, so they are written back after the scheduler is
        // restored (undo runs newest first).
        {
            let mut st = self.st();
            let nr = dev.queue_path("nr_requests");
            if let Ok(v) = std::fs::read_to_string(&nr) {
                st.record(Change::Attr {
                    path: nr,
                    old: v.trim().to_string(),
                })?;
            }
            for (k, v) in dev.iosched_tunables() {
                st.record(Change::Attr {
                    path: dev.queue_path("iosched").join(k),
                    old: v,
                })?;
            }
        }
        self.write_attr(&dev.queue_path("scheduler"), name)
    }

    /// Sets a tunable of the active scheduler (`queue/iosched/NAME`).
    pub fn set_iosched_param(
        &self,
        dev: &BlockDev,
        name: &str,
        value: &str,
    ) -> Result<(), GuardError> {
        let path = dev.queue_path("iosched").join(name);
        if name.contains('/') || !path.exists() {
            let have: Vec<String> = dev.iosched_tunables().into_iter().map(|(k, _)| k).collect();
            let sched = dev
                .schedulers()
                .map_or_else(|_| "its scheduler".to_string(), |s| s.current);
            return Err(UsageError::new(format!(
                "{sched} on {} has no tunable {name:?}: available are {}",
                dev.name,
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            ))
            .into());
        }
        self.write_attr(&path, value)
    }

    /// Sets a `queue/` attribute such as `nr_requests` or `read_ahead_kb`.
    pub fn set_queue_attr(
        &self,
        dev: &BlockDev,
        attr: &str,
        value: &str,
    ) -> Result<(), GuardError> {
        let path = dev.queue_path(attr);
        if attr.contains('/') || !path.exists() {
            return Err(UsageError::new(format!(
                "{} has no queue attribute {attr:?}: see /sys/block/{}/queue/",
                dev.name, dev.name
            ))
            .into());
        }
        self.write_attr(&path, value)
    }

    /// Caps the dirty page cache of `dev`'s filesystem (bdi `max_bytes`,
    /// with `strict_limit` so the cap holds even below the global
    /// background threshold). `max_bytes` is stored by the kernel as a
    /// ratio, and writing back the bytes value it reported is refused, so
    /// the journal records `max_ratio_fine` (what `max_bytes` really sets)
    /// and restores that.
    pub fn set_bdi_dirty_limit(&self, dev: &BlockDev, bytes: u64) -> Result<(), GuardError> {
        let bdi = Path::new("/sys/class/bdi").join(dev.devno()?);
        let fine = bdi.join("max_ratio_fine");
        if !exact_dirty_limit(dev)? {
            return Err(UsageError::new(format!(
                "this kernel has no per-device dirty limit ({} missing; needs Linux 6.2+): drop the dirty limit option",
                bdi.join("max_bytes").display()
            ))
            .into());
        }
        let old = std::fs::read_to_string(&fine).map_err(|e| GuardError::io(&fine, e))?;
        self.st().record(Change::Attr {
            path: fine,
            old: old.trim().to_string(),
        })?;
        write_attr(&bdi.join("max_bytes"), &bytes.to_string())?;
        self.write_attr(&bdi.join("strict_limit"), "1")
    }

    /// Caps `dev`'s share of the global dirty threshold at `percent`
    /// (bdi `max_ratio`, in every kernel since 2.6.24): the coarse
    /// per-device limit of a kernel without `max_bytes`, which the kernel
    /// enforces only above the global background threshold (no
    /// `strict_limit` before 6.2).
    pub fn set_bdi_max_ratio(&self, dev: &BlockDev, percent: u32) -> Result<(), GuardError> {
        let path = Path::new("/sys/class/bdi")
            .join(dev.devno()?)
            .join("max_ratio");
        self.write_attr(&path, &percent.clamp(1, 100).to_string())
    }

    /// Sets a sysctl by dotted name (`vm.dirty_ratio`).
    pub fn set_sysctl(&self, name: &str, value: &str) -> Result<(), GuardError> {
        let path = PathBuf::from("/proc/sys").join(name.replace('.', "/"));
        if name.contains("..") || !path.exists() {
            return Err(UsageError::new(format!(
                "no sysctl named {name:?}: expected e.g. vm.dirty_ratio (see /proc/sys)"
            ))
            .into());
        }
        self.write_attr(&path, value)
    }

    /// Sets a blkio throttle for `dev` in the root blkio cgroup (0 removes it).
    pub fn set_throttle(
        &self,
        dev: &BlockDev,
        kind: Throttle,
        value: u64,
    ) -> Result<(), GuardError> {
        let file = Path::new(BLKIO_ROOT).join(kind.file_name());
        if !file.exists() {
            return Err(UsageError::new(format!(
                "blkio throttling is not available ({} missing): it needs the cgroup-v1 blkio controller mounted at {BLKIO_ROOT}",
                file.display()
            ))
            .into());
        }
        let devno = dev.devno()?;
        let old = read_throttle(&file, &devno)?;
        self.st().record(Change::Throttle {
            file: file.clone(),
            devno: devno.clone(),
            old,
        })?;
        write_attr(&file, &format!("{devno} {value}"))
    }

    /// Limits how many requests `dev`'s driver accepts at once (its tag
    /// depth), so requests beyond `depth` wait in the I/O scheduler, as on a
    /// device with a shallow hardware queue (eMMC, SD card). `nr_requests`
    /// sizes the driver tags only while the scheduler is `none`, and the
    /// shrunk depth stays when an elevator is attached afterwards: call this
    /// first, then switch to the scheduler under test. Returns the depth
    /// the kernel applied (it raises values below 4, BLKDEV_MIN_RQ).
    pub fn set_queue_depth(&self, dev: &BlockDev, depth: u32) -> Result<u32, GuardError> {
        let current = dev.schedulers()?.current;
        if current != "none" {
            return Err(UsageError::new(format!(
                "the queue depth of {} can only be limited while its scheduler is none (it is {current}): switch it to none first",
                dev.name
            ))
            .into());
        }
        let nr = dev.queue_path("nr_requests");
        let read = || -> Result<u32, GuardError> {
            let text = std::fs::read_to_string(&nr).map_err(|e| GuardError::io(&nr, e))?;
            text.trim().parse().map_err(|_| {
                GuardError::io(&nr, std::io::Error::other(format!("unexpected {text:?}")))
            })
        };
        let old = read()?;
        self.st().record(Change::QueueDepth {
            queue: dev.sysfs.join("queue"),
            old,
        })?;
        write_attr(&nr, &depth.to_string())?;
        read()
    }
}

/// Whether this kernel limits a device's dirty pages in bytes, even below
/// the global background threshold (bdi `max_bytes`, `max_ratio_fine` and
/// `strict_limit`: Linux 6.2+). Debian 12's 6.1, Ubuntu 22.04's 5.15 and
/// RHEL 9's 5.14 do not.
pub fn exact_dirty_limit(dev: &BlockDev) -> Result<bool, GuardError> {
    let bdi = Path::new("/sys/class/bdi").join(dev.devno()?);
    Ok(["max_bytes", "max_ratio_fine", "strict_limit"]
        .iter()
        .all(|f| bdi.join(f).exists()))
}
