//! Disposable lab devices: an image file behind a loop device with direct
//! I/O (or a zram device), a filesystem, a mount point — all made through
//! the guard, so every piece is journaled and undone on error, Ctrl-C, or
//! after a SIGKILL by the next iolab run.
//!
//! A throttled lab (`--bw`, `--iops`) emulates phone-class storage without
//! slowing the rest of the machine: two loop devices are stacked,
//!
//! ```text
//! /dev/loopT  top: scheduler under test, driver queue depth 4, direct I/O
//!     │           ← requests beyond the depth wait here, in the scheduler
//! /dev/loopL  lower: scheduler none, blkio throttle (root cgroup), direct I/O
//!     │
//! NAME.img    fallocate'd image file on the host filesystem
//! ```
//!
//! The throttle holds bios *before* they become requests of the lower
//! device, so the queue that forms is not visible to any scheduler; what
//! bounds it is how many requests the top device's driver accepts. That
//! depth is cut to 4 (see [`spec::DEFAULT_THROTTLED_DEPTH`] and
//! `Guard::set_queue_depth`), so at most 4 requests wait in the throttle
//! and the rest wait in the top device's scheduler, which decides their
//! order — as on an SD card or an eMMC without command queueing.
//!
//! Labs made by `iolab lab up` outlive the command (their journal is
//! persisted under `<run dir>/labs/`); callers such as the start-up matrix
//! make temporary labs inside their own guard with [`up`] and never
//! persist them.
#![deny(missing_docs)]

pub mod backend;
mod dirty;
mod down;
mod error;
mod image;
pub mod meta;
pub mod model;
pub mod orphans;
mod presented;
pub mod render;
pub mod spec;
mod status;
mod throttle;
mod up;
mod zram;

use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;

pub use backend::Backend;
pub use down::{down, down_all, DownReport};
pub use error::LabError;
pub use meta::{LabKind, LabMeta, LabState};
pub use presented::DEFAULT_READ_AHEAD_KB;
pub use spec::{slowing_from_text, Fs, LabSpec, ModelText, SpecText};
pub use status::{list, read_kernel_depth, status, LabStatus};
pub use throttle::{cgroup_warning, read_throttle, ThrottleValues};
pub use up::{format_and_mount, up};
pub use zram::{mem_available, ZramStatus};

/// A lab that is up: its devices and where its filesystem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lab {
    /// Lab name.
    pub name: String,
    /// Loop or zram.
    pub kind: LabKind,
    /// What was asked for.
    pub spec: LabSpec,
    /// The device whose scheduler is under test (the top loop device, or
    /// the zram device).
    pub top: BlockDev,
    /// The throttled loop device under `top`, for throttled labs.
    pub lower: Option<BlockDev>,
    /// The image file (loop labs).
    pub image: Option<PathBuf>,
    /// Mount point of the filesystem (`None` for `--fs none`).
    pub mountpoint: Option<PathBuf>,
    /// The filesystem on `top`.
    pub fs: Fs,
    /// Driver queue depth of `top`, when limited.
    pub queue_depth: Option<u32>,
    /// What the lab could not model on this host (see `LabMeta::warnings`).
    pub warnings: Vec<String>,
}

impl Lab {
    /// The device whose I/O scheduler is under test: run loads and tracers
    /// against this one.
    pub fn device(&self) -> &BlockDev {
        &self.top
    }

    /// `/dev/<top>`.
    pub fn dev_path(&self) -> PathBuf {
        self.top.dev_path()
    }

    /// Hands the lab's changes to its own ownerless journal
    /// (`<run dir>/labs/NAME.jsonl`) so it outlives the calling process;
    /// `iolab lab down NAME` removes it. The guard must hold nothing but
    /// this lab's changes.
    pub fn persist(&self, guard: &Guard) -> Result<PathBuf, LabError> {
        Ok(guard.persist_as("labs", &self.name)?)
    }

    pub(crate) fn from_meta(m: &LabMeta) -> Result<Lab, LabError> {
        let gone = |what: &str| {
            LabError::usage(format!(
                "lab {:?} is broken: its {what} is gone; remove it with `iolab lab down {}`",
                m.name, m.name
            ))
        };
        let dev = |name: &Option<String>, what: &str| -> Result<Option<BlockDev>, LabError> {
            name.as_deref()
                .map(|n| BlockDev::from_name(n).map_err(|_| gone(&format!("{what} {n}"))))
                .transpose()
        };
        let top = dev(&m.device, "device")?.ok_or_else(|| gone("device"))?;
        let lower = dev(&m.lower, "lower device")?;
        // A loop device number is reused once detached: make sure it still
        // serves this lab (its backing file is the lower device or image).
        if m.kind == LabKind::Loop {
            let want = match (&lower, &m.spec.model) {
                (Some(l), _) => l.dev_path(),
                (None, Some(_)) => {
                    model::fuse_mountpoint(&m.name).join(iolab_model::server::FILE_NAME)
                }
                (None, None) => m
                    .image
                    .clone()
                    .ok_or_else(|| gone("image (none recorded)"))?,
            };
            // Unreadable: the device is no loop device now (or the kernel
            // refuses), which is not "used for something else".
            let file = top.sysfs.join("loop/backing_file");
            let backing = std::fs::read_to_string(&file).map_err(|e| {
                gone(&format!(
                    "device {} (its {} is unreadable: {e})",
                    top.name,
                    file.display()
                ))
            })?;
            if want != Path::new(backing.trim_end()) {
                return Err(gone(&format!(
                    "device {} (now used for something else)",
                    top.name
                )));
            }
        }
        Ok(Lab {
            name: m.name.clone(),
            kind: m.kind,
            spec: m.spec.clone(),
            top,
            lower,
            image: m.image.clone(),
            mountpoint: m.mountpoint.clone(),
            fs: m.spec.fs,
            queue_depth: m.queue_depth,
            warnings: m.warnings.clone(),
        })
    }
}

/// Opens a lab that is up (made by `iolab lab up`, or a temporary lab of a
/// running iolab process), e.g. for `iolab load --lab NAME`.
pub fn open(name: &str) -> Result<Lab, LabError> {
    spec::validate_name(name)?;
    let m = meta::read(name)?.ok_or_else(|| no_such_lab(name))?;
    if m.state == LabState::Creating {
        return Err(LabError::usage(format!(
            "lab {name:?} is still being created by iolab pid {}: wait for `iolab lab up` to finish",
            m.owner_pid
        )));
    }
    Lab::from_meta(&m)
}

pub(crate) fn no_such_lab(name: &str) -> LabError {
    LabError::usage(format!(
        "no lab named {name:?}: `iolab lab list` shows the labs, `iolab lab up --name {name}` makes one"
    ))
}
