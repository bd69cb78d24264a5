//! What a lab looks like now, read back from the kernel (sysfs, blkio
//! throttle files, mountinfo, statvfs) rather than from what was asked:
//! `lab status` must show the truth even if someone changed it since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use iolab_sys::block::BlockDev;

use crate::meta::{self, LabKind, LabMeta, LabState};
use crate::throttle::{read_throttle, ThrottleValues};
use crate::zram::{self, ZramStatus};
use crate::{no_such_lab, Lab, LabError};

/// One lab's state. Field names follow lsblk and df where they overlap.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LabStatus {
    /// Lab name.
    pub name: String,
    /// `loop` or `zram`; `None` when the metadata is unreadable.
    pub kind: Option<LabKind>,
    /// `creating` or `up`.
    pub state: Option<LabState>,
    /// True when made by `iolab lab up` (removed by `iolab lab down`);
    /// false for a temporary lab of a running iolab process.
    pub persistent: bool,
    /// Pid of the process that made it.
    pub owner_pid: Option<i32>,
    /// The device under test, e.g. `/dev/loop5`.
    pub device: Option<PathBuf>,
    /// The throttled device below it, e.g. `/dev/loop4`.
    pub lower: Option<PathBuf>,
    /// Image file behind a loop lab.
    pub image: Option<PathBuf>,
    /// Device size in bytes.
    pub size_bytes: Option<u64>,
    /// Active I/O scheduler of the device under test (`none` for zram).
    pub sched: Option<String>,
    /// Schedulers the device offers.
    pub schedulers: Vec<String>,
    /// The active scheduler's tunables (`queue/iosched/*`).
    pub iosched: BTreeMap<String, String>,
    /// `queue/nr_requests`: the scheduler's request pool (or the driver
    /// depth under `none`).
    pub nr_requests: Option<u64>,
    /// Driver queue depth iolab set (requests beyond it wait in the
    /// scheduler); `None`: the driver's own depth.
    pub queue_depth: Option<u32>,
    /// The driver depth the kernel uses now: the `depth=` of hardware
    /// queue 0's tags in debugfs (see [`read_kernel_depth`]); `None` when
    /// not read. Not `queue/nr_requests`: after a scheduler switch back
    /// to `none` it shows the tag set's depth (128 for loop) while the
    /// tags stay shrunk (4), as debugfs shows.
    pub queue_depth_kernel: Option<u64>,
    /// Why the kernel's driver depth is unknown, when it was looked for
    /// and could not be read: `debugfs unavailable: …` (a user build of
    /// Android has no debugfs; a read-only / has nowhere to mount it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_depth_kernel_unknown: Option<String>,
    /// `queue/read_ahead_kb`.
    pub read_ahead_kb: Option<u64>,
    /// `queue/rotational`.
    pub rotational: Option<bool>,
    /// `queue/write_cache`: "write back" when flushes reach the device.
    pub write_cache: Option<String>,
    /// Dirty page-cache limit of the lab's filesystem in bytes (bdi
    /// `max_bytes`, with `strict_limit` on); `None` when the global limits
    /// apply.
    pub dirty_limit_bytes: Option<u64>,
    /// What the lab could not model on this host (`LabMeta::warnings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Loop direct I/O (`loop/dio`) of the device under test.
    pub direct_io: Option<bool>,
    /// Scheduler of the lower device (iolab sets `none`).
    pub lower_sched: Option<String>,
    /// Throttle rules on the lower device (all 0 when unthrottled).
    pub throttle: Option<ThrottleValues>,
    /// Filesystem type (`None` for a raw lab).
    pub fstype: Option<String>,
    /// Mount point, while mounted.
    pub mountpoint: Option<PathBuf>,
    /// Mount options as the kernel reports them.
    pub mount_options: Option<String>,
    /// Filesystem size (statvfs), bytes.
    pub fs_size_bytes: Option<u64>,
    /// Free bytes (statvfs f_bfree).
    pub fs_free_bytes: Option<u64>,
    /// Bytes available to unprivileged users (statvfs f_bavail), as df shows.
    pub fs_avail_bytes: Option<u64>,
    /// zram compression state.
    pub zram: Option<ZramStatus>,
    /// How the lab is slowed: `throttle` or `model` (`None`: not slowed).
    pub backend: Option<crate::Backend>,
    /// Why that backend (the flag given, or why the default was taken).
    pub backend_reason: Option<String>,
    /// The device model's parameters, for a model lab.
    pub model: Option<iolab_model::ModelParams>,
    /// What the model's server observed since the lab came up (requests,
    /// bytes, busy time, deepest queue), for a model lab.
    pub model_stats: Option<iolab_model::ModelStats>,
    /// What is wrong with the lab, if anything.
    pub problems: Vec<String>,
}

/// The state of lab `name`.
pub fn status(name: &str) -> Result<LabStatus, LabError> {
    crate::spec::validate_name(name)?;
    let persistent = meta::journal_path(name).exists();
    let Some(m) = meta::read(name)? else {
        if persistent {
            return Ok(LabStatus {
                name: name.to_string(),
                persistent,
                problems: vec![format!(
                    "metadata {} is missing; `iolab lab down {name}` removes the lab",
                    meta::meta_path(name).display()
                )],
                ..LabStatus::default()
            });
        }
        return Err(no_such_lab(name));
    };
    let mut st = from_meta(&m, persistent);
    if m.state == LabState::Creating {
        st.problems
            .push(format!("still being created by iolab pid {}", m.owner_pid));
        return Ok(st);
    }
    match Lab::from_meta(&m) {
        Ok(lab) => read_live(&lab, &mut st),
        Err(e) => st.problems.push(e.to_string()),
    }
    Ok(st)
}

/// Every lab's state, sorted by name; a lab that cannot be read is listed
/// with its problem rather than hiding the others.
pub fn list() -> Result<Vec<LabStatus>, LabError> {
    let mut labs: Vec<LabStatus> = meta::names()?
        .into_iter()
        .map(|name| {
            status(&name).unwrap_or_else(|e| LabStatus {
                name,
                problems: vec![e.to_string()],
                ..LabStatus::default()
            })
        })
        .collect();
    let dir = crate::orphans::image_dir();
    for name in crate::orphans::orphans_in(&dir)? {
        let image = dir.join(format!("{name}.img"));
        labs.push(LabStatus {
            problems: vec![format!(
                "orphaned image {} (its lab is gone, e.g. after a reboot): `iolab lab down {name}` removes it",
                image.display()
            )],
            size_bytes: std::fs::metadata(&image).ok().map(|m| m.len()),
            image: Some(image),
            name,
            ..LabStatus::default()
        });
    }
    Ok(labs)
}

/// Reads the lab's driver depth from debugfs mounted at `debugfs`
/// (`depth=N` in `block/NAME/hctx0/tags`) into `st`, with a problem when
/// it is not the depth iolab set. A bio-based device (zram) has none.
pub fn read_kernel_depth(st: &mut LabStatus, debugfs: &Path) {
    let Some(name) = st.device.as_ref().and_then(|d| d.file_name()) else {
        return;
    };
    let tags = debugfs.join("block").join(name).join("hctx0/tags");
    st.queue_depth_kernel = std::fs::read_to_string(&tags)
        .ok()
        .and_then(|t| parse_tags_depth(&t));
    if st.queue_depth_kernel.is_none() && !st.schedulers.is_empty() {
        st.queue_depth_kernel_unknown = Some(format!("{} unreadable", tags.display()));
    }
    if let (Some(set), Some(now)) = (st.queue_depth, st.queue_depth_kernel) {
        if u64::from(set) != now {
            st.problems.push(format!(
                "driver depth {now} in the kernel, not the {set} iolab set: something reset it (a scheduler switched outside iolab's guard?)"
            ));
        }
    }
}

/// `depth=` of a debugfs `hctx*/tags` file (the first: the bitmap tags,
/// not the reserved ones).
fn parse_tags_depth(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("depth="))
        .and_then(|d| d.trim().parse().ok())
}

fn from_meta(m: &LabMeta, persistent: bool) -> LabStatus {
    LabStatus {
        name: m.name.clone(),
        kind: Some(m.kind),
        state: Some(m.state),
        persistent,
        owner_pid: Some(m.owner_pid),
        device: m.device.as_deref().map(node),
        lower: m.lower.as_deref().map(node),
        image: m.image.clone(),
        size_bytes: Some(m.spec.size_bytes),
        queue_depth: m.queue_depth,
        fstype: (m.spec.fs != crate::Fs::None).then(|| m.spec.fs.to_string()),
        backend: m.spec.backend,
        backend_reason: m.spec.backend_reason.clone(),
        model: m.spec.model.clone(),
        warnings: m.warnings.clone(),
        ..LabStatus::default()
    }
}

fn read_live(lab: &Lab, st: &mut LabStatus) {
    let top = &lab.top;
    st.size_bytes = top.size_bytes().ok().or(st.size_bytes);
    match top.schedulers() {
        Ok(s) => {
            st.sched = Some(s.current);
            st.schedulers = s.available;
        }
        // zram is bio-based: no queue/scheduler file at all.
        Err(_) if lab.kind == LabKind::Zram => st.sched = Some("none".into()),
        Err(e) => st.problems.push(e.to_string()),
    }
    st.iosched = top.iosched_tunables().into_iter().collect();
    st.nr_requests = num(top, "nr_requests");
    st.read_ahead_kb = num(top, "read_ahead_kb");
    st.rotational = num(top, "rotational").map(|r| r == 1);
    st.write_cache = top.queue_attr("write_cache").ok();
    st.dirty_limit_bytes = top.devno().ok().and_then(|d| {
        let bdi = Path::new("/sys/class/bdi").join(d);
        let read = |f: &str| std::fs::read_to_string(bdi.join(f)).ok();
        // Without strict_limit, max_bytes only caps the bdi's share of the
        // global limit: iolab always sets both.
        (read("strict_limit")?.trim() == "1")
            .then(|| read("max_bytes")?.trim().parse().ok())
            .flatten()
    });
    st.direct_io = std::fs::read_to_string(top.sysfs.join("loop/dio"))
        .ok()
        .map(|s| s.trim() == "1");
    if let Some(lower) = &lab.lower {
        st.lower_sched = lower.schedulers().ok().map(|s| s.current);
    }
    let throttled = lab.lower.as_ref().unwrap_or(top);
    if lab.kind == LabKind::Loop {
        match read_throttle(throttled) {
            Ok(t) => st.throttle = Some(t),
            Err(e) => st.problems.push(e.to_string()),
        }
    }
    if lab.kind == LabKind::Zram {
        st.zram = zram::status(top);
    }
    if st.model.is_some() {
        st.model_stats = iolab_model::stats::read(&crate::model::stats_path(&lab.name));
        let alive = st
            .model_stats
            .as_ref()
            .is_some_and(|s| Path::new(&format!("/proc/{}", s.pid)).exists());
        if !alive {
            st.problems.push(format!(
                "the device-model server is not running: the lab's I/O fails; `iolab lab down {}` removes it",
                lab.name
            ));
        }
    }
    if let Some(mp) = &lab.mountpoint {
        read_mount(top, mp, st);
    }
}

fn num(dev: &BlockDev, attr: &str) -> Option<u64> {
    dev.queue_attr(attr).ok()?.parse().ok()
}

fn read_mount(top: &BlockDev, mp: &Path, st: &mut LabStatus) {
    // By source, not devno: btrfs reports an anonymous device number.
    let source = top.dev_path();
    let Some(m) = iolab_sys::mounts::read()
        .into_iter()
        .find(|m| m.target == mp && Path::new(&m.source) == source)
    else {
        st.problems.push(format!(
            "{} is not mounted on {}",
            top.dev_path().display(),
            mp.display()
        ));
        return;
    };
    st.fstype = Some(m.fstype);
    st.mountpoint = Some(m.target);
    st.mount_options = Some(m.options);
    if let Ok(v) = rustix::fs::statvfs(mp) {
        st.fs_size_bytes = Some(v.f_blocks * v.f_frsize);
        st.fs_free_bytes = Some(v.f_bfree * v.f_frsize);
        st.fs_avail_bytes = Some(v.f_bavail * v.f_frsize);
    }
}

/// The node of device `name` where this system keeps it (`/dev/block/` on
/// Android).
fn node(name: &str) -> PathBuf {
    iolab_sys::block::node_of(name).unwrap_or_else(|| PathBuf::from("/dev").join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_depth_is_the_bitmap_tags_depth() {
        // As this kernel prints it for a loop lab shrunk to 4, after its
        // scheduler went to mq-deadline and back to none.
        let text = "nr_tags=128\nnr_reserved_tags=0\nactive_queues=0\n\nbitmap_tags:\ndepth=4\nbusy=0\ncleared=3\n\nbreserved_tags:\ndepth=0\n";
        assert_eq!(parse_tags_depth(text), Some(4));
        assert_eq!(parse_tags_depth("nr_tags=128\n"), None);
    }
}
