//! Where an experiment's I/O happens, for every command: a temporary lab
//! made for it, a lab made earlier with `iolab lab up`, a loop device over
//! tmpfs (`sweep --max`), a directory of the user's own filesystem
//! (`--in DIR`: the scheduler is switched on every disk under its storage
//! stack), or a device of the user's. One configuration
//! type ([`Place`], stored with the experiment so `--resume` finds the same
//! place again) and one resolver ([`resolve`]), told what the body will do
//! there ([`PlaceUse`]): write files in a directory, format the device, or
//! read and write it raw. What a use may not do on a place (format the
//! user's disk, write where no filesystem is) is refused here, once.

mod device;

use std::path::PathBuf;

use iolab_guard::Guard;
use iolab_lab::{Fs, LabSpec};
use iolab_sys::block::BlockDev;
use iolab_sys::units::format_bytes;
use iolab_sys::UsageError;
use serde::{Deserialize, Serialize};

pub use device::{backend_words, check_before_writing, whole_disk};

use crate::ExperimentError;

/// Room the tmpfs of a [`Place::TmpfsLab`] needs beyond its image (the lab
/// keeps 64 MiB spare).
const TMPFS_SPARE: u64 = 128 << 20;

/// Where an experiment runs, as configured and stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Place {
    /// A temporary lab made for this experiment and removed after it.
    NewLab {
        /// Size in bytes.
        size_bytes: u64,
        /// Its filesystem; `none` for a sweep, which makes one per run
        /// (v5 sweeps stored no `fs`).
        #[serde(default = "no_fs")]
        fs: Fs,
        /// Bandwidth limit in bytes/s (phone-class storage), if any.
        bw_bytes: Option<u64>,
        /// IOPS limit, if any.
        #[serde(default)]
        iops: Option<u64>,
        /// How the lab is slowed (`None`: chosen when it is made).
        #[serde(default)]
        backend: Option<iolab_lab::Backend>,
        /// The device model, for a model lab.
        #[serde(default)]
        model: Option<iolab_model::ModelParams>,
    },
    /// A loop device over a file in a tmpfs iolab mounts for the
    /// experiment: the fastest device with a real request queue (zram and
    /// pmem have none, so no scheduler), which is what exposes a
    /// scheduler's own cost per request. Both go away when it ends.
    TmpfsLab {
        /// Device size in bytes (held in RAM).
        size_bytes: u64,
    },
    /// A directory of the user's own filesystem (`--in DIR`), where the
    /// app under test lives: iolab makes its scratch directory there and
    /// writes nothing else; the scheduler under test is switched on every
    /// disk under the directory's storage stack (through partitions,
    /// device-mapper, md, btrfs' devices).
    InPlace {
        /// The directory.
        dir: PathBuf,
    },
    /// An existing lab made with `iolab lab up`.
    Lab {
        /// Its name.
        name: String,
    },
    /// A device of the user's: for files, `dir` on a filesystem of it
    /// (and `--force`); a sweep formats it whole.
    Device {
        /// Device path or kernel name, as given.
        device: String,
        /// Directory on it for the experiment's files (startup).
        #[serde(default)]
        dir: Option<PathBuf>,
    },
    /// A machine iolab restarts (`iolab boot`: a qemu guest or a board
    /// over ssh): no device of this host is under test, and the body
    /// brings it up for every run (its own `Body::resolve_place`).
    Machine,
}

/// The place of every boot experiment (its description is the body's).
pub static MACHINE: Place = Place::Machine;

fn no_fs() -> Fs {
    Fs::None
}

/// What the body does at the place: decides what resolving checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceUse {
    /// Writes workload and target files in a directory of a mounted
    /// filesystem (startup).
    Files,
    /// Formats the whole device before every run (sweep).
    Format,
    /// Reads the raw device, and writes it when `writes` (sweep --max).
    Raw {
        /// Whether any run writes.
        writes: bool,
    },
}

/// What the resolver needs besides the place.
#[derive(Debug, Clone, Copy)]
pub struct PlaceRequest<'a> {
    /// Where.
    pub place: &'a Place,
    /// For what.
    pub use_: PlaceUse,
    /// Per-device dirty-page limit for a new lab (bdi `max_bytes`).
    pub dirty_limit_bytes: Option<u64>,
    /// `dirty_limit_bytes` is iolab's choice, not the user's
    /// (`LabSpec::dirty_limit_preferred`).
    pub dirty_limit_preferred: bool,
    /// Why a new lab's throttle would not do for this experiment
    /// (`LabSpec::throttle_unsuitable`).
    pub throttle_unsuitable: Option<&'static str>,
}

/// A place brought up and checked.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The devices whose scheduler is under test: one for a lab or a
    /// device; every disk under an in-place directory's stack.
    pub disks: Vec<BlockDev>,
    /// The filesystem's own device, whose queue holds its read-ahead and
    /// whose bdi its dirty limit (a lab's device; the top of a stack).
    pub fs_dev: Option<BlockDev>,
    /// The storage stack of an in-place directory.
    pub stack: Option<iolab_sys::stack::Stack>,
    /// The directory for files ([`PlaceUse::Files`]).
    pub dir: Option<PathBuf>,
    /// The mount point of the filesystem holding `dir`; for
    /// [`PlaceUse::Format`], where each run mounts its fresh filesystem.
    pub mountpoint: Option<PathBuf>,
    /// Human description for messages and the stored configuration.
    pub what: String,
    /// The bandwidth iolab set on it (a throttled or modelled lab).
    pub bw_bytes: Option<u64>,
    /// True when iolab made it for this experiment (reads as zeros, and
    /// writing it needs no `--force`).
    pub made: bool,
    /// What the place could not model on this host (a lab's
    /// `warnings`): stored with the experiment and said at its end.
    pub warnings: Vec<String>,
}

impl Resolved {
    /// A place of one device.
    fn single(dev: BlockDev) -> (Vec<BlockDev>, Option<BlockDev>) {
        (vec![dev.clone()], Some(dev))
    }

    /// A machine iolab boots (`iolab boot`): no device of this host.
    pub fn machine(what: String) -> Resolved {
        Resolved {
            disks: Vec::new(),
            fs_dev: None,
            stack: None,
            dir: None,
            mountpoint: None,
            what,
            bw_bytes: None,
            made: false,
            warnings: Vec::new(),
        }
    }

    /// The filesystem's own device (a lab's; the top of a stack).
    pub fn fs_dev(&self) -> Result<&BlockDev, ExperimentError> {
        self.fs_dev.as_ref().ok_or_else(|| self.no_device())
    }

    fn no_device(&self) -> ExperimentError {
        UsageError::new(format!("{} has no block device of this host", self.what)).into()
    }

    /// The (first) device under test: the one of a lab, a device, a
    /// sweep.
    pub fn dev(&self) -> Result<&BlockDev, ExperimentError> {
        match (self.disks.first(), &self.fs_dev) {
            (Some(d), _) | (None, Some(d)) => Ok(d),
            (None, None) => Err(self.no_device()),
        }
    }

    /// The kernel names of the devices under test.
    pub fn disk_names(&self) -> Vec<&str> {
        self.disks.iter().map(|d| d.name.as_str()).collect()
    }

    /// Their counters now, added up (`None` when one is missing).
    pub fn diskstats(&self) -> Result<Option<iolab_sys::diskstats::DiskStat>, ExperimentError> {
        Ok(iolab_sys::diskstats::read_sum(
            std::path::Path::new("/proc"),
            &self.disk_names(),
        )?)
    }

    /// The directory for files; present for [`PlaceUse::Files`].
    pub fn files_dir(&self) -> Result<&std::path::Path, ExperimentError> {
        self.dir.as_deref().ok_or_else(|| {
            UsageError::new(format!("{} has no directory for files", self.what)).into()
        })
    }

    /// The mount point; present for [`PlaceUse::Files`] and [`PlaceUse::Format`].
    pub fn mount(&self) -> Result<&std::path::Path, ExperimentError> {
        self.mountpoint
            .as_deref()
            .ok_or_else(|| UsageError::new(format!("{} has no mount point", self.what)).into())
    }
}

/// Brings the place up (what iolab makes is made through `guard` and
/// undone when it restores) and checks it suits the use: one function
/// per kind of place.
pub fn resolve(
    guard: &Guard,
    req: PlaceRequest<'_>,
    force: bool,
) -> Result<Resolved, ExperimentError> {
    match (req.place, req.use_) {
        (Place::NewLab { .. }, use_) => new_lab(guard, &req, use_),
        (Place::TmpfsLab { size_bytes }, PlaceUse::Raw { .. }) => tmpfs_lab(guard, *size_bytes),
        (Place::Lab { name }, PlaceUse::Files) => existing_lab(name),
        (Place::Device { device, dir }, PlaceUse::Files) => {
            let dir = dir.as_ref().ok_or_else(|| {
                UsageError::new(format!(
                    "--device {device} needs --dir, a directory on it for workload files"
                ))
            })?;
            files_on_device(device, dir, force)
        }
        (Place::Device { device, .. }, PlaceUse::Format) => device_to_format(device, force),
        (Place::Device { device, .. }, PlaceUse::Raw { writes }) => {
            raw_device(device, writes, force)
        }
        (Place::InPlace { dir }, PlaceUse::Files) => in_place(guard, dir),
        (place, use_) => Err(UsageError::new(format!(
            "{} cannot be used to {}",
            place.words(),
            use_.words()
        ))
        .into()),
    }
}

/// A temporary lab for this experiment: formatted for a startup's files,
/// raw for a sweep (which formats it per run) or a max sweep.
fn new_lab(
    guard: &Guard,
    req: &PlaceRequest<'_>,
    use_: PlaceUse,
) -> Result<Resolved, ExperimentError> {
    let Place::NewLab {
        size_bytes,
        fs,
        bw_bytes,
        iops,
        backend,
        model,
    } = req.place
    else {
        return Err(UsageError::new("not a new lab").into());
    };
    let pid = std::process::id();
    let (prefix, fs) = match use_ {
        PlaceUse::Files if *fs == Fs::None => {
            return Err(UsageError::new(
                "the startup lab needs a filesystem: use --lab-fs ext4|xfs|btrfs",
            )
            .into())
        }
        PlaceUse::Files => ("startup", *fs),
        PlaceUse::Format => ("sweep", Fs::None),
        PlaceUse::Raw { .. } => ("raw", Fs::None),
    };
    let name = format!("{prefix}-{pid}");
    let spec = LabSpec {
        name: name.clone(),
        size_bytes: *size_bytes,
        fs,
        bw_bytes: *bw_bytes,
        iops: *iops,
        dirty_limit_bytes: req.dirty_limit_bytes,
        dirty_limit_preferred: req.dirty_limit_preferred,
        throttle_unsuitable: req.throttle_unsuitable.map(str::to_string),
        backend: *backend,
        model: model.clone(),
        ..LabSpec::default()
    };
    let lab = iolab_lab::up(guard, &spec)?;
    let dev = lab.device().clone();
    let what = match use_ {
        PlaceUse::Files => format!(
            "temporary lab {} on {}{}; {}",
            lab.name,
            dev.name,
            backend_words(&lab.spec),
            presented_words(&dev)
        ),
        _ => format!(
            "temporary lab {name} on {} ({}, {})",
            dev.name,
            format_bytes(*size_bytes),
            bw_bytes.map_or_else(
                || "unthrottled".to_string(),
                |b| iolab_sys::units::format_rate(b as f64)
            )
        ),
    };
    let mountpoint = match use_ {
        PlaceUse::Files => lab.mountpoint.clone(),
        PlaceUse::Format => Some(iolab_lab::meta::mountpoint(&name)),
        PlaceUse::Raw { .. } => None,
    };
    let (disks, fs_dev) = Resolved::single(dev);
    Ok(Resolved {
        dir: lab.mountpoint.clone().filter(|_| use_ == PlaceUse::Files),
        mountpoint,
        disks,
        fs_dev,
        stack: None,
        what,
        bw_bytes: *bw_bytes,
        made: true,
        warnings: lab.warnings.clone(),
    })
}

/// What the lab's device presents above it, read back from sysfs (the
/// lab sets it rather than inheriting the host disk's: see
/// iolab-lab's `presented.rs`); an unreadable value is named so.
fn presented_words(dev: &BlockDev) -> String {
    let attr = |a: &str| {
        dev.queue_attr(a)
            .unwrap_or_else(|e| format!("unreadable ({e})"))
    };
    format!(
        "read_ahead_kb {}, rotational {}, write cache: {}",
        attr("read_ahead_kb"),
        attr("rotational"),
        attr("write_cache")
    )
}

/// A loop device over a file in a tmpfs of its own (a max sweep: the
/// fastest device this machine has).
fn tmpfs_lab(guard: &Guard, size_bytes: u64) -> Result<Resolved, ExperimentError> {
    check_memory(size_bytes)?;
    let name = format!("max-{}", std::process::id());
    let dir = iolab_guard::run_dir().join(&name);
    guard.mkdir_all(&dir)?;
    guard.mount(
        "tmpfs",
        &dir,
        "tmpfs",
        &format!("size={},mode=0700", size_bytes + TMPFS_SPARE),
    )?;
    let lab = iolab_lab::up(
        guard,
        &LabSpec {
            name,
            size_bytes,
            fs: Fs::None,
            dir,
            ..LabSpec::default()
        },
    )?;
    let dev = lab.device().clone();
    let what = format!(
        "{} (loop over a {} file in tmpfs, temporary)",
        dev.name,
        format_bytes(size_bytes)
    );
    let (disks, fs_dev) = Resolved::single(dev);
    Ok(Resolved {
        what,
        disks,
        fs_dev,
        stack: None,
        dir: None,
        mountpoint: None,
        bw_bytes: None,
        made: true,
        warnings: Vec::new(),
    })
}

/// A lab `iolab lab up` made, with its filesystem.
fn existing_lab(name: &str) -> Result<Resolved, ExperimentError> {
    let lab = iolab_lab::open(name)?;
    let mnt = lab.mountpoint.clone().ok_or_else(|| {
        UsageError::new(format!(
            "lab {name} has no filesystem (--fs none): startup needs one to hold workload and target files"
        ))
    })?;
    let (disks, fs_dev) = Resolved::single(lab.device().clone());
    Ok(Resolved {
        disks,
        fs_dev,
        stack: None,
        dir: Some(mnt.clone()),
        mountpoint: Some(mnt),
        what: format!("lab {name} on {}", lab.device().name),
        bw_bytes: lab.spec.bw_bytes,
        made: false,
        warnings: lab.warnings.clone(),
    })
}

/// A whole device a sweep formats before every run (checked first).
fn device_to_format(device: &str, force: bool) -> Result<Resolved, ExperimentError> {
    let mountpoint = iolab_guard::run_dir().join(format!("sweep-{}", std::process::id()));
    whole_device(
        device,
        Some("iolab sweep runs mkfs on the whole device before every run"),
        force,
        Some(mountpoint),
    )
}

/// A whole device a max sweep reads (and, with write kinds, overwrites:
/// checked first).
fn raw_device(device: &str, writes: bool, force: bool) -> Result<Resolved, ExperimentError> {
    let why = writes.then_some("iolab sweep --max with write kinds overwrites the whole device");
    whole_device(device, why, force, None)
}

/// A whole disk a sweep uses as it is, checked before writing when
/// `writes` says why it will be written.
fn whole_device(
    device: &str,
    writes: Option<&str>,
    force: bool,
    mountpoint: Option<std::path::PathBuf>,
) -> Result<Resolved, ExperimentError> {
    let dev = whole_disk(device)?;
    let warnings = match writes {
        Some(why) => check_before_writing(&dev, why, force)?
            .into_iter()
            .collect(),
        None => Vec::new(),
    };
    let what = format!("device {}", dev.dev_path().display());
    let (disks, fs_dev) = Resolved::single(dev);
    Ok(Resolved {
        mountpoint,
        what,
        disks,
        fs_dev,
        stack: None,
        dir: None,
        bw_bytes: None,
        made: false,
        warnings,
    })
}

impl Place {
    /// What the place is, in words for a refusal.
    fn words(&self) -> String {
        match self {
            Place::NewLab { .. } => "a temporary lab".to_string(),
            Place::TmpfsLab { .. } => "a tmpfs lab".to_string(),
            Place::Lab { name } => format!("lab {name}"),
            Place::Device { device, .. } => format!("device {device}"),
            Place::InPlace { dir } => format!("directory {}", dir.display()),
            Place::Machine => "a machine iolab boots".to_string(),
        }
    }
}

impl PlaceUse {
    fn words(self) -> &'static str {
        match self {
            PlaceUse::Files => "hold workload and target files",
            PlaceUse::Format => "be formatted before every run",
            PlaceUse::Raw { .. } => "be read and written raw",
        }
    }
}

/// A directory on the user's device: only with `--force`, and only where
/// the directory's I/O really goes through the device named (any layer of
/// its stack: the disk, a partition, a dm device). The scheduler is then
/// switched on the device named when it has one, else on the disks under
/// it, as for `--in`.
fn files_on_device(
    device: &str,
    dir: &std::path::Path,
    force: bool,
) -> Result<Resolved, ExperimentError> {
    let sys = std::path::Path::new("/sys");
    let named = iolab_sys::stack::node_of_spec(sys, device)?;
    if !force {
        return Err(UsageError::new(format!(
            "{device} is not an iolab lab: startup would write workload files in {} and change its scheduler; pass --force if that is intended, or use --in DIR (iolab's own scratch directory there, no --force) or --lab",
            dir.display()
        ))
        .into());
    }
    let stack = iolab_sys::stack::Stack::of_dir(dir)?;
    // The scheduler under test must be the one the directory's I/O goes
    // through, or the matrix would measure nothing it changes.
    if !stack.nodes().iter().any(|n| n.devno == named.devno) {
        return Err(UsageError::new(format!(
            "{} is on {}, which does not go through {device}: give a --dir on the device under test",
            dir.display(),
            stack.describe()
        ))
        .into());
    }
    Ok(Resolved {
        disks: stack.disks_under(sys, &named.devno),
        fs_dev: Some(fs_device(&stack)?),
        dir: Some(dir.to_path_buf()),
        mountpoint: Some(stack.mount_point.clone()),
        what: format!("device {device}: {}", stack.describe()),
        stack: Some(stack),
        bw_bytes: None,
        made: false,
        warnings: Vec::new(),
    })
}

/// `--in DIR`: the directory's stack, and iolab's scratch directory in it
/// (made and removed through the guard; naming DIR is the consent for
/// that and nothing else).
fn in_place(guard: &Guard, dir: &std::path::Path) -> Result<Resolved, ExperimentError> {
    let sys = std::path::Path::new("/sys");
    let stack = iolab_sys::stack::Stack::of_dir(dir)?;
    let scratch = stack
        .dir
        .join(format!("iolab-scratch-{}", std::process::id()));
    guard.create_scratch_dir(&scratch)?;
    Ok(Resolved {
        disks: stack.disks(sys),
        fs_dev: Some(fs_device(&stack)?),
        dir: Some(scratch),
        mountpoint: Some(stack.mount_point.clone()),
        what: format!("in place: {}", stack.describe()),
        stack: Some(stack),
        bw_bytes: None,
        made: false,
        warnings: Vec::new(),
    })
}

/// The device whose queue and bdi the filesystem's I/O goes through first:
/// its own (a dm device, a disk), or a partition's disk.
fn fs_device(stack: &iolab_sys::stack::Stack) -> Result<BlockDev, ExperimentError> {
    let top = stack
        .top
        .first()
        .ok_or_else(|| UsageError::new(format!("{} has no device", stack.describe())))?;
    let node = match (&top.kind, top.below.first()) {
        (iolab_sys::stack::Kind::Partition, Some(disk)) => disk,
        _ => top,
    };
    Ok(BlockDev::from_name(&node.name)?)
}

/// A tmpfs lab lives in RAM: refuse one that would leave the machine
/// short (more than half of what is available).
fn check_memory(size_bytes: u64) -> Result<(), ExperimentError> {
    if let Some(avail) = iolab_lab::mem_available(std::path::Path::new("/proc/meminfo")) {
        if size_bytes + TMPFS_SPARE > avail / 2 {
            return Err(UsageError::new(format!(
                "--lab-size {}: the lab lives in RAM and only {} is available; use at most {} (half), or --device",
                format_bytes(size_bytes),
                format_bytes(avail),
                format_bytes((avail / 2).saturating_sub(TMPFS_SPARE))
            ))
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn v5_places_of_every_command_read_back() {
        let startup: Place = serde_json::from_value(serde_json::json!({
            "kind": "new_lab", "size_bytes": 1, "fs": "ext4", "bw_bytes": 2, "iops": null,
            "backend": null, "model": null
        }))
        .unwrap();
        assert!(matches!(startup, Place::NewLab { fs: Fs::Ext4, .. }));
        let sweep: Place = serde_json::from_value(serde_json::json!({
            "kind": "new_lab", "size_bytes": 1, "bw_bytes": null
        }))
        .unwrap();
        assert!(matches!(
            sweep,
            Place::NewLab {
                fs: Fs::None,
                iops: None,
                ..
            }
        ));
        let dev: Place = serde_json::from_value(serde_json::json!({
            "kind": "device", "device": "/dev/sdb", "dir": "/mnt/x"
        }))
        .unwrap();
        assert_eq!(
            dev,
            Place::Device {
                device: "/dev/sdb".into(),
                dir: Some("/mnt/x".into())
            }
        );
        let raw: Place =
            serde_json::from_value(serde_json::json!({"kind": "device", "device": "sdb"})).unwrap();
        assert!(matches!(raw, Place::Device { dir: None, .. }));
        let max: Place =
            serde_json::from_value(serde_json::json!({"kind": "tmpfs_lab", "size_bytes": 8}))
                .unwrap();
        assert_eq!(max, Place::TmpfsLab { size_bytes: 8 });
    }
}
