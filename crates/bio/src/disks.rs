//! Device numbers ↔ disk names, and which devices are bio-based, from
//! sysfs: `/sys/dev/block/MAJ:MIN` links to the device's directory; a
//! partition's directory has a `partition` file and lives inside its disk's;
//! a blk-mq (request-based) disk has an `mq` directory, a bio-based one
//! (zram, device-mapper, md) does not. See
//! Documentation/ABI/stable/sysfs-block and sysfs-dev.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use iolab_sys::UsageError;

use crate::event::Dev;

/// A whole disk the user named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// Kernel name (`vda`, `loop3`, `zram0`).
    pub name: String,
    /// Its device number.
    pub dev: Dev,
    /// True when it has no request queue (only bio events describe it).
    pub bio_based: bool,
    /// Its partitions' device numbers (bio events name the partition).
    pub partitions: Vec<Dev>,
}

/// Sysfs lookups, cached per device, rooted at a custom sysfs for tests.
#[derive(Debug, Clone)]
pub struct Disks {
    sys: PathBuf,
    names: HashMap<Dev, String>,
}

impl Default for Disks {
    fn default() -> Self {
        Disks::new(Path::new("/sys"))
    }
}

impl Disks {
    /// Lookups under `sys` (normally `/sys`).
    pub fn new(sys: &Path) -> Disks {
        Disks {
            sys: sys.to_path_buf(),
            names: HashMap::new(),
        }
    }

    /// The sysfs directory of a device (its disk for a partition), if any.
    fn disk_dir(&self, dev: Dev) -> Option<PathBuf> {
        let link = self.sys.join(format!("dev/block/{dev}"));
        let real = std::fs::canonicalize(link).ok()?;
        if real.join("partition").exists() {
            real.parent().map(Path::to_path_buf)
        } else {
            Some(real)
        }
    }

    /// The disk's kernel name (a partition's disk), or `MAJ:MIN` for a
    /// device that is gone.
    pub fn name(&mut self, dev: Dev) -> String {
        if let Some(n) = self.names.get(&dev) {
            return n.clone();
        }
        let name = self
            .disk_dir(dev)
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dev.to_string());
        self.names.insert(dev, name.clone());
        name
    }

    /// The whole disk of a device number (itself for a disk; itself when
    /// unknown).
    pub fn disk_of(&self, dev: Dev) -> Dev {
        self.disk_dir(dev)
            .and_then(|d| std::fs::read_to_string(d.join("dev")).ok())
            .and_then(|t| parse_devno(t.trim()))
            .unwrap_or(dev)
    }

    /// True for a disk with no request queue. An unknown device counts as
    /// request-based: its bio events are then ignored rather than left
    /// waiting for completions that never come.
    pub fn is_bio_based(&self, dev: Dev) -> bool {
        self.disk_dir(dev).is_some_and(|d| !d.join("mq").exists())
    }

    /// Every whole disk under `<sys>/block`, sorted by name.
    pub fn all(&self) -> Vec<Disk> {
        let mut out: Vec<Disk> = std::fs::read_dir(self.sys.join("block"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| self.open_name(&e.file_name().to_string_lossy()).ok())
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    fn open_name(&self, name: &str) -> Result<Disk, UsageError> {
        let dir = self.sys.join("block").join(name);
        let text = std::fs::read_to_string(dir.join("dev")).map_err(|_| {
            UsageError::new(format!(
                "no block device named {name:?}: expected a disk listed in /sys/block (e.g. vda, loop0, zram0), /dev/NAME or MAJ:MIN"
            ))
        })?;
        let dev = parse_devno(text.trim()).ok_or_else(|| {
            UsageError::new(format!(
                "{}: unreadable device number {text:?}",
                dir.display()
            ))
        })?;
        let mut partitions: Vec<Dev> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("partition").exists())
            .filter_map(|p| std::fs::read_to_string(p.join("dev")).ok())
            .filter_map(|t| parse_devno(t.trim()))
            .collect();
        partitions.sort();
        Ok(Disk {
            name: name.to_string(),
            dev,
            bio_based: !dir.join("mq").exists(),
            partitions,
        })
    }

    /// Resolves what a user typed: `sda`, `/dev/sda`, `/dev/block/sda`
    /// (Android's nodes), `/dev/block/by-name/userdata`, `/dev/sda1` or
    /// `8:0` (a partition resolves to its disk: request events only name
    /// disks). A node is resolved by its device number, so any name or
    /// link to it works.
    pub fn resolve(&self, spec: &str) -> Result<Disk, UsageError> {
        if spec.starts_with('/') {
            use std::os::unix::fs::{FileTypeExt, MetadataExt};
            if let Ok(m) = std::fs::metadata(spec) {
                if m.file_type().is_block_device() {
                    let (maj, min) = (libc::major(m.rdev()), libc::minor(m.rdev()));
                    if let Ok(d) = self.resolve(&format!("{maj}:{min}")) {
                        return Ok(d);
                    }
                }
            }
        }
        if let Some(dev) = parse_devno(spec) {
            let dir = self.disk_dir(dev).ok_or_else(|| {
                UsageError::new(format!(
                    "-d {spec}: no block device with that number (see /sys/dev/block)"
                ))
            })?;
            let name = dir.file_name().ok_or_else(|| {
                UsageError::new(format!("-d {spec}: {} names no device", dir.display()))
            })?;
            return self.open_name(&name.to_string_lossy());
        }
        let name = spec
            .strip_prefix("/dev/block/")
            .or_else(|| spec.strip_prefix("/dev/"))
            .unwrap_or(spec);
        if self.sys.join("block").join(name).exists() {
            return self.open_name(name);
        }
        // A partition: /sys/class/block/NAME is its directory inside the disk's.
        let class = self.sys.join("class/block").join(name);
        if let Ok(real) = std::fs::canonicalize(&class) {
            if real.join("partition").exists() {
                if let Some(disk) = real.parent().and_then(Path::file_name) {
                    return self.open_name(&disk.to_string_lossy());
                }
            }
        }
        self.open_name(name)
    }
}

/// Parses `MAJ:MIN`.
pub fn parse_devno(text: &str) -> Option<Dev> {
    let (maj, min) = text.split_once(':')?;
    Some(Dev::new(maj.parse().ok()?, min.parse().ok()?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A fake sysfs with vda (blk-mq, partition vda1) and zram0 (bio-based).
    fn fake_sys() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let s = t.path();
        let devices = s.join("devices/virtual/block");
        for (name, devno, mq) in [("vda", "254:0", true), ("zram0", "252:0", false)] {
            let d = devices.join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("dev"), format!("{devno}\n")).unwrap();
            if mq {
                std::fs::create_dir(d.join("mq")).unwrap();
            }
            for link in ["block", "class/block", "dev/block"] {
                std::fs::create_dir_all(s.join(link)).unwrap();
            }
            std::os::unix::fs::symlink(&d, s.join("block").join(name)).unwrap();
            std::os::unix::fs::symlink(&d, s.join("class/block").join(name)).unwrap();
            std::os::unix::fs::symlink(&d, s.join("dev/block").join(devno)).unwrap();
        }
        let p = devices.join("vda/vda1");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("partition"), "1\n").unwrap();
        std::fs::write(p.join("dev"), "254:1\n").unwrap();
        std::os::unix::fs::symlink(&p, s.join("class/block/vda1")).unwrap();
        std::os::unix::fs::symlink(&p, s.join("dev/block/254:1")).unwrap();
        t
    }

    #[test]
    fn resolves_names_paths_numbers_and_partitions() {
        let t = fake_sys();
        let d = Disks::new(t.path());
        let vda = d.resolve("vda").unwrap();
        assert_eq!((vda.dev, vda.bio_based), (Dev::new(254, 0), false));
        assert_eq!(vda.partitions, [Dev::new(254, 1)]);
        assert_eq!(d.resolve("/dev/vda").unwrap(), vda);
        assert_eq!(d.resolve("/dev/block/vda").unwrap(), vda);
        assert_eq!(d.resolve("/dev/block/vda1").unwrap(), vda);
        assert_eq!(d.resolve("254:0").unwrap(), vda);
        assert_eq!(d.resolve("vda1").unwrap(), vda);
        assert_eq!(d.resolve("254:1").unwrap(), vda);
        let z = d.resolve("zram0").unwrap();
        assert!(z.bio_based);
    }

    #[test]
    fn unknown_devices_are_usage_errors_naming_the_input() {
        let t = fake_sys();
        let d = Disks::new(t.path());
        let e = d.resolve("sdz").unwrap_err().to_string();
        assert!(e.contains("sdz") && e.contains("/sys/block"), "{e}");
        let e = d.resolve("9:9").unwrap_err().to_string();
        assert!(e.contains("9:9"), "{e}");
    }

    #[test]
    fn names_and_kinds_by_number() {
        let t = fake_sys();
        let mut d = Disks::new(t.path());
        assert_eq!(d.name(Dev::new(254, 1)), "vda");
        assert_eq!(d.name(Dev::new(252, 0)), "zram0");
        assert_eq!(d.name(Dev::new(1, 2)), "1:2");
        assert_eq!(d.disk_of(Dev::new(254, 1)), Dev::new(254, 0));
        assert_eq!(d.disk_of(Dev::new(1, 2)), Dev::new(1, 2));
        assert!(d.is_bio_based(Dev::new(252, 0)));
        assert!(!d.is_bio_based(Dev::new(254, 0)));
        assert!(!d.is_bio_based(Dev::new(1, 2)));
        let all: Vec<String> = d.all().into_iter().map(|d| d.name).collect();
        assert_eq!(all, ["vda", "zram0"]);
    }
}
