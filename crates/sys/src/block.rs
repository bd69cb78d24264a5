//! Block devices as sysfs describes them: scheduler, tunables, queue limits.
//! See Documentation/ABI/stable/sysfs-block in the kernel tree.

use std::path::{Path, PathBuf};

use crate::error::read_trimmed;
use crate::{SysError, UsageError};

/// A whole block device (`vda`, `loop3`, `zram1`), found under `<sys>/block`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDev {
    /// Kernel name, e.g. `loop3`.
    pub name: String,
    /// `<sys>/block/<name>`.
    pub sysfs: PathBuf,
}

/// The I/O schedulers a device offers and the one in use.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Schedulers {
    /// The active scheduler (the bracketed entry).
    pub current: String,
    /// Every scheduler the device accepts.
    pub available: Vec<String>,
}

impl BlockDev {
    /// Opens a device by kernel name under the live `/sys`.
    pub fn from_name(name: &str) -> Result<Self, UsageError> {
        Self::from_name_in(Path::new("/sys"), name)
    }

    /// Opens a device by kernel name under a custom sysfs root (for tests).
    pub fn from_name_in(sys: &Path, name: &str) -> Result<Self, UsageError> {
        let sysfs = sys.join("block").join(name);
        if !sysfs.exists() {
            return Err(UsageError::new(format!(
                "no block device named {name:?}: expected a whole disk listed in /sys/block (e.g. vda, loop0)"
            )));
        }
        Ok(BlockDev {
            name: name.to_string(),
            sysfs,
        })
    }

    /// Resolves `/dev/vda`, `vda` or `/dev/vda1` (a partition resolves to
    /// its disk, whose queue holds the scheduler).
    pub fn resolve(spec: &str) -> Result<Self, UsageError> {
        let name = spec.strip_prefix("/dev/").unwrap_or(spec);
        if !spec.starts_with('/') {
            return Self::from_name(name);
        }
        let meta = std::fs::metadata(spec).map_err(|e| {
            UsageError::new(format!(
                "{spec}: {e}: expected a block device path such as /dev/vda"
            ))
        })?;
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_block_device() {
            return Err(UsageError::new(format!(
                "{spec} is not a block device: expected e.g. /dev/vda or a kernel name such as loop3"
            )));
        }
        use std::os::unix::fs::MetadataExt;
        let rdev = meta.rdev();
        Self::from_devno(libc::major(rdev), libc::minor(rdev))
    }

    /// The whole disk for a device number (`st_dev` of a file, `st_rdev` of
    /// a device node); a partition resolves to its disk.
    pub fn from_devno(maj: u32, min: u32) -> Result<Self, UsageError> {
        let link = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
        let real = std::fs::canonicalize(&link)
            .map_err(|e| UsageError::new(format!("{}: {e}", link.display())))?;
        // A partition's directory has a `partition` file; its parent is the disk.
        let disk = if real.join("partition").exists() {
            real.parent().map(Path::to_path_buf).unwrap_or(real)
        } else {
            real
        };
        let kname = disk.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            UsageError::new(format!(
                "{} resolves to {}, which names no block device",
                link.display(),
                disk.display()
            ))
        })?;
        Self::from_name(kname)
    }

    /// Path of a file in this device's `queue/` directory.
    pub fn queue_path(&self, attr: &str) -> PathBuf {
        self.sysfs.join("queue").join(attr)
    }

    /// The device's node: `/dev/block/<name>` (Android's ueventd makes
    /// nodes there only), `/dev/<name>`, or one iolab made (see
    /// [`crate::loopdev`]); `/dev/<name>` when there is none, for the
    /// error to name.
    pub fn dev_path(&self) -> PathBuf {
        node_of(&self.name).unwrap_or_else(|| PathBuf::from("/dev").join(&self.name))
    }

    /// Reads the scheduler list, e.g. `none [mq-deadline] kyber bfq`.
    pub fn schedulers(&self) -> Result<Schedulers, SysError> {
        let path = self.queue_path("scheduler");
        let text = read_trimmed(&path)?;
        parse_schedulers(&text).ok_or_else(|| SysError::Parse {
            path,
            text,
            why: "expected names separated by spaces with the active one in [brackets]".into(),
        })
    }

    /// `major:minor`, as the blkio throttle files want it.
    pub fn devno(&self) -> Result<String, SysError> {
        read_trimmed(&self.sysfs.join("dev"))
    }

    /// Reads a `queue/` attribute as text.
    pub fn queue_attr(&self, attr: &str) -> Result<String, SysError> {
        read_trimmed(&self.queue_path(attr))
    }

    /// True for spinning disks (queue/rotational = 1).
    pub fn rotational(&self) -> Result<bool, SysError> {
        Ok(self.queue_attr("rotational")? == "1")
    }

    /// Size in bytes (`size` counts 512-byte sectors).
    pub fn size_bytes(&self) -> Result<u64, SysError> {
        let path = self.sysfs.join("size");
        let text = read_trimmed(&path)?;
        text.parse::<u64>()
            .map(|s| s * 512)
            .map_err(|_| SysError::Parse {
                path,
                text,
                why: "expected a sector count".into(),
            })
    }

    /// The device model (`device/model`), if the driver exposes one.
    pub fn model(&self) -> Option<String> {
        read_trimmed(&self.sysfs.join("device/model")).ok()
    }

    /// The active scheduler's tunables (`queue/iosched/*`) as name → value.
    /// Empty for `none`.
    pub fn iosched_tunables(&self) -> Vec<(String, String)> {
        let dir = self.queue_path("iosched");
        let mut out = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Ok(v) = read_trimmed(&e.path()) {
                    out.push((name, v));
                }
            }
        }
        out.sort();
        out
    }

    /// Kernel names of the devices this one is stacked on (`slaves/`), e.g.
    /// the lower loop device under a lab's top device.
    pub fn holders(&self) -> Result<Vec<String>, SysError> {
        list_names(&self.sysfs.join("holders"))
    }
}

/// The entries of a sysfs directory, sorted: none where it does not exist
/// (no btrfs mounted, a device without holders/); one that cannot be read
/// is an error, never "no holders" (a device in use would look free).
pub(crate) fn list_names(dir: &Path) -> Result<Vec<String>, SysError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SysError::io(dir, e)),
    };
    let mut v = Vec::new();
    for e in rd {
        v.push(
            e.map_err(|e| SysError::io(dir, e))?
                .file_name()
                .to_string_lossy()
                .into_owned(),
        );
    }
    v.sort();
    Ok(v)
}

/// The node of block device `name` where this system keeps it, checked by
/// number against sysfs (a stale node of another device is not it).
pub fn node_of(name: &str) -> Option<PathBuf> {
    let want =
        std::fs::read_to_string(Path::new("/sys/class/block").join(name).join("dev")).ok()?;
    let (maj, min) = want.trim().split_once(':')?;
    let want = (maj.parse::<u32>().ok()?, min.parse::<u32>().ok()?);
    let made = crate::paths::machine_dir().join("dev");
    [Path::new("/dev/block"), Path::new("/dev"), made.as_path()]
        .iter()
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::{FileTypeExt, MetadataExt};
            std::fs::metadata(p).is_ok_and(|m| {
                m.file_type().is_block_device()
                    && (libc::major(m.rdev()), libc::minor(m.rdev())) == want
            })
        })
}

/// Parses the `queue/scheduler` format.
pub fn parse_schedulers(text: &str) -> Option<Schedulers> {
    let mut current = None;
    let mut available = Vec::new();
    for word in text.split_whitespace() {
        if let Some(inner) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            current = Some(inner.to_string());
            available.push(inner.to_string());
        } else {
            available.push(word.to_string());
        }
    }
    // Devices without an elevator (zram) print just "none" without brackets.
    if current.is_none() && available == ["none"] {
        current = Some("none".into());
    }
    Some(Schedulers {
        current: current?,
        available,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_scheduler_list() {
        let s = parse_schedulers("none [mq-deadline] kyber bfq").unwrap();
        assert_eq!(s.current, "mq-deadline");
        assert_eq!(s.available, ["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(parse_schedulers("none").unwrap().current, "none");
        assert!(parse_schedulers("a b").is_none());
    }

    #[test]
    fn fixture_device() {
        let dir = tempfile::tempdir().unwrap();
        let q = dir.path().join("block/fake0/queue");
        std::fs::create_dir_all(q.join("iosched")).unwrap();
        std::fs::write(q.join("scheduler"), "none mq-deadline kyber [bfq]\n").unwrap();
        std::fs::write(q.join("iosched/slice_idle"), "8\n").unwrap();
        std::fs::write(dir.path().join("block/fake0/size"), "2048\n").unwrap();
        let d = BlockDev::from_name_in(dir.path(), "fake0").unwrap();
        assert_eq!(d.schedulers().unwrap().current, "bfq");
        assert_eq!(d.size_bytes().unwrap(), 1 << 20);
        assert_eq!(d.iosched_tunables(), [("slice_idle".into(), "8".into())]);
        assert!(BlockDev::from_name_in(dir.path(), "nope").is_err());
    }
}
