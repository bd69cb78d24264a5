//! What lies under a directory: its filesystem, the block device behind
//! it, and the stack of devices down to those whose I/O scheduler orders
//! its requests — a partition's disk, a device-mapper device's (dm-crypt,
//! dm-linear, LVM, Android's dm-default-key) or an md array's members, a
//! btrfs filesystem's devices. Device-mapper and md have no elevator of
//! their own (their queue offers only `none`), so the scheduler that
//! matters is on the devices under them; a device whose queue offers a
//! choice (a disk, a loop device) is where the walk stops.
//!
//! Everything is read from sysfs (`/sys/dev/block/MAJ:MIN`, `slaves/`,
//! `partition`, `dm/`, `md/`, `loop/`, `queue/scheduler`,
//! `/sys/fs/btrfs/*/devices`) under a root the caller gives, so tests walk
//! fixture trees. See Documentation/ABI/stable/sysfs-block.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::block::{parse_schedulers, BlockDev};
use crate::UsageError;

/// Deepest stack walked (a real one is a handful of layers).
const MAX_DEPTH: usize = 16;

/// What a device in a stack is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Kind {
    /// A whole disk (or a device with a queue of its own: nvme, virtio,
    /// mmcblk, zram).
    Disk,
    /// A partition of a disk.
    Partition,
    /// A device-mapper device.
    DeviceMapper {
        /// Its name (`dm/name`), e.g. `vg-root`, `userdata`.
        name: Option<String>,
        /// What it does: its target types as the kernel reports them
        /// (`crypt`, `linear`, `default-key`, `verity`; `+` between the
        /// targets of a table with several), else from `dm/uuid`'s prefix
        /// (`crypt` for CRYPT-, `lvm` for LVM-, ...), or `dm`.
        what: String,
    },
    /// An md array.
    Md {
        /// Its RAID level (`md/level`).
        level: Option<String>,
    },
    /// A loop device.
    Loop {
        /// The file it is backed by (`loop/backing_file`).
        backing: Option<String>,
    },
}

/// One device in a stack, with the devices it is built on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Kernel name (`dm-5`, `sda20`, `loop3`).
    pub name: String,
    /// `major:minor`.
    pub devno: String,
    /// What it is.
    #[serde(flatten)]
    pub kind: Kind,
    /// The scheduler in use where the queue offers a choice: the device
    /// whose scheduler orders this stack's requests. `None` elsewhere.
    pub scheduler: Option<String>,
    /// The devices it is built on (a partition's disk, a dm device's
    /// slaves); empty where the walk stopped.
    pub below: Vec<Node>,
}

/// A directory's storage stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    /// The directory.
    pub dir: PathBuf,
    /// The mount point of its filesystem.
    pub mount_point: PathBuf,
    /// Its filesystem type.
    pub fstype: String,
    /// The devices the filesystem is on (one; several for btrfs).
    pub top: Vec<Node>,
}

impl Node {
    /// This device and every device under it, depth first.
    pub fn walk(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for b in &self.below {
            out.extend(b.walk());
        }
        out
    }

    /// `dm-5 (crypt) → sda20 → sda [mq-deadline]`, branches in braces.
    pub fn describe(&self) -> String {
        let mut s = self.name.clone();
        match &self.kind {
            Kind::DeviceMapper { name, what } => {
                s.push_str(&format!(" ({what}"));
                if let Some(n) = name {
                    s.push_str(&format!(" {n}"));
                }
                s.push(')');
            }
            Kind::Md { level } => s.push_str(&format!(" ({})", level.as_deref().unwrap_or("md"))),
            Kind::Loop { backing: Some(b) } => s.push_str(&format!(" (file {b})")),
            Kind::Disk | Kind::Partition | Kind::Loop { backing: None } => {}
        }
        if let Some(sched) = &self.scheduler {
            s.push_str(&format!(" [{sched}]"));
        }
        match self.below.as_slice() {
            [] => {}
            [one] => s.push_str(&format!(" → {}", one.describe())),
            many => {
                let parts: Vec<String> = many.iter().map(Node::describe).collect();
                s.push_str(&format!(" → {{{}}}", parts.join(", ")));
            }
        }
        s
    }
}

impl Stack {
    /// The stack under `dir`, read from the live system (`/proc` and
    /// `/sys`).
    pub fn of_dir(dir: &Path) -> Result<Stack, UsageError> {
        let canon = std::fs::canonicalize(dir).map_err(|e| {
            UsageError::new(format!(
                "{}: {e}: expected an existing directory of a disk-backed filesystem",
                dir.display()
            ))
        })?;
        if !canon.is_dir() {
            return Err(UsageError::new(format!(
                "{} is not a directory: name a directory of the filesystem to measure in",
                dir.display()
            )));
        }
        let mount = crate::mounts::containing(&canon)
            .ok_or_else(|| UsageError::new(format!("{}: no mount holds it", dir.display())))?;
        let st_dev = std::fs::metadata(&canon)
            .map_err(|e| UsageError::new(format!("{}: {e}", dir.display())))?
            .dev();
        Self::build(Path::new("/sys"), &canon, &mount, st_dev)
    }

    /// The stack of a filesystem mounted as `mount` holding `dir`, whose
    /// files have device number `st_dev`, under sysfs root `sys`.
    pub fn build(
        sys: &Path,
        dir: &Path,
        mount: &crate::mounts::Mount,
        st_dev: u64,
    ) -> Result<Stack, UsageError> {
        let (maj, min) = (libc::major(st_dev), libc::minor(st_dev));
        let top = if maj != 0 {
            vec![node_of_devno(sys, maj, min)?]
        } else if mount.fstype == "btrfs" {
            btrfs_devices(sys, &mount.source)?
        } else {
            return Err(UsageError::new(format!(
                "{} is on {} ({}), which no block device holds: iolab cannot switch a scheduler under it; name a directory of a disk-backed filesystem (ext4, xfs, btrfs, f2fs, ...) or use a lab",
                dir.display(),
                mount.fstype,
                mount.source
            )));
        };
        let stack = Stack {
            dir: dir.to_path_buf(),
            mount_point: mount.target.clone(),
            fstype: mount.fstype.clone(),
            top,
        };
        if stack.disks(sys).is_empty() {
            return Err(UsageError::new(format!(
                "no device under {} offers a choice of I/O scheduler ({}): there is nothing to compare",
                dir.display(),
                stack.describe()
            )));
        }
        Ok(stack)
    }

    /// `/data (f2fs) → dm-5 (crypt) → sda20 → sda [mq-deadline]`.
    pub fn describe(&self) -> String {
        let tops: Vec<String> = self.top.iter().map(Node::describe).collect();
        let below = match tops.as_slice() {
            [one] => one.clone(),
            many => format!("{{{}}}", many.join(", ")),
        };
        format!("{} ({}) → {below}", self.mount_point.display(), self.fstype)
    }

    /// Every device in the stack.
    pub fn nodes(&self) -> Vec<&Node> {
        self.top.iter().flat_map(Node::walk).collect()
    }

    /// The devices whose scheduler orders this stack's I/O: the bottom
    /// of each branch that has a choice of scheduler (a loop device's own
    /// queue is above its backing file's disk, and stays as it is), each
    /// once, in the order found, under sysfs root `sys`.
    pub fn disks(&self, sys: &Path) -> Vec<BlockDev> {
        Self::bottoms(sys, self.nodes())
    }

    /// [`Stack::disks`] under the node with device number `devno` only;
    /// that node itself when it has a scheduler of its own (a device the
    /// user named explicitly is the one switched).
    pub fn disks_under(&self, sys: &Path, devno: &str) -> Vec<BlockDev> {
        let Some(node) = self.nodes().into_iter().find(|n| n.devno == devno) else {
            return Vec::new();
        };
        if node.scheduler.is_some() {
            return BlockDev::from_name_in(sys, &node.name)
                .into_iter()
                .collect();
        }
        Self::bottoms(sys, node.walk())
    }

    fn bottoms<'a>(sys: &Path, nodes: impl IntoIterator<Item = &'a Node>) -> Vec<BlockDev> {
        let mut out: Vec<BlockDev> = Vec::new();
        for n in nodes
            .into_iter()
            .filter(|n| n.scheduler.is_some() && n.below.is_empty())
        {
            if out.iter().any(|d| d.name == n.name) {
                continue;
            }
            if let Ok(d) = BlockDev::from_name_in(sys, &n.name) {
                out.push(d);
            }
        }
        out
    }

    /// The device the filesystem is on (the first of several for btrfs).
    pub fn top_name(&self) -> Option<&str> {
        self.top.first().map(|n| n.name.as_str())
    }
}

/// The device a user named, exactly: a partition stays a partition, and
/// every spelling of one device — `sda20`, `/dev/sda20`,
/// `/dev/block/sda20`, a `/dev/disk/by-*` link — is the same device.
pub fn node_of_spec(sys: &Path, spec: &str) -> Result<Node, UsageError> {
    if spec.starts_with('/') {
        let meta = std::fs::metadata(spec).map_err(|e| {
            UsageError::new(format!(
                "{spec}: {e}: expected a block device such as /dev/vda or /dev/block/sda20"
            ))
        })?;
        if !meta.file_type().is_block_device() {
            return Err(UsageError::new(format!(
                "{spec} is not a block device: expected e.g. /dev/vda, /dev/block/sda20 or a kernel name such as loop3"
            )));
        }
        let rdev = meta.rdev();
        return node_of_devno(sys, libc::major(rdev), libc::minor(rdev));
    }
    let class = sys.join("class/block").join(spec);
    let devno = std::fs::read_to_string(class.join("dev")).map_err(|_| {
        UsageError::new(format!(
            "no block device named {spec:?}: expected a name listed in /sys/class/block (vda, sda20, dm-3, loop0) or a device path"
        ))
    })?;
    let (maj, min) = parse_devno(devno.trim())
        .ok_or_else(|| UsageError::new(format!("{spec}: unreadable device number {devno:?}")))?;
    node_of_devno(sys, maj, min)
}

/// `8:20` → (8, 20).
pub fn parse_devno(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The device `maj:min` and the stack under it.
pub fn node_of_devno(sys: &Path, maj: u32, min: u32) -> Result<Node, UsageError> {
    let link = sys.join(format!("dev/block/{maj}:{min}"));
    let real = std::fs::canonicalize(&link).map_err(|e| {
        UsageError::new(format!(
            "no block device {maj}:{min} ({}: {e})",
            link.display()
        ))
    })?;
    node_at(&real, 0)
}

/// The node whose sysfs directory is `dir`.
fn node_at(dir: &Path, depth: usize) -> Result<Node, UsageError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| UsageError::new(format!("{} names no device", dir.display())))?;
    if depth > MAX_DEPTH {
        return Err(UsageError::new(format!(
            "the device stack under {name} is deeper than {MAX_DEPTH} layers"
        )));
    }
    let read = |rel: &str| {
        std::fs::read_to_string(dir.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    };
    // Every block device in sysfs has one: without it the node could not
    // be matched to the disks under it.
    let devno = read("dev")
        .filter(|d| parse_devno(d).is_some())
        .ok_or_else(|| {
            UsageError::new(format!(
                "{}: unreadable device number (sysfs's dev file)",
                dir.join("dev").display()
            ))
        })?;
    let partition = dir.join("partition").exists();
    let kind = if partition {
        Kind::Partition
    } else if dir.join("dm").is_dir() {
        Kind::DeviceMapper {
            name: read("dm/name").filter(|n| !n.is_empty()),
            // The kernel's own target types where it answers (the real
            // /sys only: a fixture's numbers are not this machine's
            // devices), else the uuid's convention.
            what: dir
                .starts_with("/sys")
                .then(|| dm_types(&devno))
                .flatten()
                .unwrap_or_else(|| dm_what(read("dm/uuid").as_deref().unwrap_or(""))),
        }
    } else if dir.join("md").is_dir() {
        Kind::Md {
            level: read("md/level").filter(|l| !l.is_empty()),
        }
    } else if dir.join("loop").is_dir() {
        Kind::Loop {
            backing: read("loop/backing_file").filter(|b| !b.is_empty()),
        }
    } else {
        Kind::Disk
    };
    // A choice of scheduler: this device's queue orders the stack's I/O.
    let scheduler = if partition {
        None
    } else {
        read("queue/scheduler")
            .and_then(|t| parse_schedulers(&t))
            .filter(|s| s.available.len() > 1)
            .map(|s| s.current)
    };
    let below = if let (
        Kind::Loop {
            backing: Some(file),
        },
        true,
    ) = (&kind, dir.starts_with("/sys"))
    {
        // A loop device's I/O goes on to its backing file's filesystem
        // (a snap's squashfs, an APEX on /data, a VM image): its stack,
        // down to the disk, is under this one — the disk's scheduler is
        // the one the rest of the machine's I/O meets. Only on the real
        // /sys (a fixture's files are not this machine's), and a file on
        // tmpfs leaves the loop device as the bottom.
        let file = file.trim_end_matches(" (deleted)");
        match Path::new(file).parent().map(Stack::of_dir) {
            Some(Ok(lower)) if depth < MAX_DEPTH => lower.top,
            _ => Vec::new(),
        }
    } else if scheduler.is_some() {
        Vec::new()
    } else if partition {
        match dir.parent() {
            Some(disk) => vec![node_at(disk, depth + 1)?],
            None => Vec::new(),
        }
    } else {
        let mut v = Vec::new();
        let slaves = crate::block::list_names(&dir.join("slaves"))
            .map_err(|e| UsageError::new(format!("{name}: {e}")))?;
        for slave in slaves {
            let real = std::fs::canonicalize(dir.join("slaves").join(&slave)).map_err(|e| {
                UsageError::new(format!("{name}: its slave {slave} cannot be read: {e}"))
            })?;
            v.push(node_at(&real, depth + 1)?);
        }
        v
    };
    Ok(Node {
        name,
        devno,
        kind,
        scheduler,
        below,
    })
}

/// What made a device-mapper device, from its uuid's prefix (cryptsetup
/// writes `CRYPT-LUKS2-...`, LVM `LVM-...`, veritysetup `CRYPT-VERITY-`).
/// `crypt`, `linear+crypt`: the target types of dm device `major:minor`.
fn dm_types(devno: &str) -> Option<String> {
    let (a, b) = devno.split_once(':')?;
    let types = crate::dm::target_types(a.parse().ok()?, b.parse().ok()?)?;
    (!types.is_empty()).then(|| types.join("+"))
}

fn dm_what(uuid: &str) -> String {
    let u = uuid.to_ascii_uppercase();
    let what = if u.starts_with("CRYPT-VERITY") {
        "verity"
    } else if u.starts_with("CRYPT-") {
        "crypt"
    } else if u.starts_with("LVM-") {
        "lvm"
    } else if u.starts_with("PART-") {
        "partition"
    } else if u.starts_with("MPATH-") {
        "multipath"
    } else {
        "dm"
    };
    what.to_string()
}

/// The devices of the btrfs filesystem whose mount source is `source`
/// (`/dev/loop4`): its `/sys/fs/btrfs/FSID/devices/` lists them all.
fn btrfs_devices(sys: &Path, source: &str) -> Result<Vec<Node>, UsageError> {
    let want = source.rsplit('/').next().unwrap_or(source);
    let root = sys.join("fs/btrfs");
    let unreadable = |e: crate::SysError| UsageError::new(format!("btrfs's devices: {e}"));
    for fs in crate::block::list_names(&root).map_err(unreadable)? {
        let devices = root.join(&fs).join("devices");
        let names = crate::block::list_names(&devices).map_err(unreadable)?;
        if !names.iter().any(|n| n == want) {
            continue;
        }
        let mut out = Vec::new();
        for n in names {
            let real = std::fs::canonicalize(devices.join(&n)).map_err(|e| {
                UsageError::new(format!("btrfs {fs}: device {n} cannot be read: {e}"))
            })?;
            out.push(node_at(&real, 0)?);
        }
        return Ok(out);
    }
    Err(UsageError::new(format!(
        "btrfs on {source}: {} lists no filesystem with that device",
        root.display()
    )))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fixture sysfs: `devices/` holds the real directories, `block/`,
    /// `class/block/` and `dev/block/` link to them as the kernel's do.
    struct Fixture {
        t: tempfile::TempDir,
    }

    impl Fixture {
        fn new() -> Fixture {
            let t = tempfile::tempdir().unwrap();
            for d in ["devices", "block", "class/block", "dev/block"] {
                std::fs::create_dir_all(t.path().join(d)).unwrap();
            }
            Fixture { t }
        }

        fn sys(&self) -> &Path {
            self.t.path()
        }

        /// A device at `rel` under devices/ with `dev` and optional files.
        fn dev(&self, rel: &str, devno: &str, files: &[(&str, &str)]) -> PathBuf {
            let dir = self.sys().join("devices").join(rel);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("dev"), format!("{devno}\n")).unwrap();
            for (f, v) in files {
                let p = dir.join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, format!("{v}\n")).unwrap();
            }
            let name = dir.file_name().unwrap().to_owned();
            symlink(&dir, self.sys().join("class/block").join(&name)).unwrap();
            symlink(&dir, self.sys().join("dev/block").join(devno)).unwrap();
            if !files.iter().any(|(f, _)| *f == "partition") {
                symlink(&dir, self.sys().join("block").join(&name)).unwrap();
            }
            dir
        }

        fn slave(&self, upper: &Path, lower: &Path) {
            std::fs::create_dir_all(upper.join("slaves")).unwrap();
            symlink(lower, upper.join("slaves").join(lower.file_name().unwrap())).unwrap();
        }
    }

    const SCHED: (&str, &str) = ("queue/scheduler", "[mq-deadline] kyber bfq none");
    const NONE: (&str, &str) = ("queue/scheduler", "none");

    /// A laptop: ext4 on dm-crypt (LUKS) on LVM on sda2, and a phone's
    /// /data: f2fs on dm-default-key on sda20.
    fn laptop() -> (Fixture, PathBuf, PathBuf) {
        let f = Fixture::new();
        let sda = f.dev("pci0/sda", "8:0", &[SCHED]);
        let sda2 = f.dev("pci0/sda/sda2", "8:2", &[("partition", "2")]);
        let lvm = f.dev(
            "virtual/block/dm-0",
            "253:0",
            &[("dm/name", "vg-root"), ("dm/uuid", "LVM-abc"), NONE],
        );
        let crypt = f.dev(
            "virtual/block/dm-1",
            "253:1",
            &[("dm/name", "luks-1"), ("dm/uuid", "CRYPT-LUKS2-xyz"), NONE],
        );
        f.slave(&lvm, &sda2);
        f.slave(&crypt, &lvm);
        (f, crypt, sda)
    }

    #[test]
    fn a_laptops_stack_goes_down_to_the_disk_with_the_scheduler() {
        let (f, _, _) = laptop();
        let n = node_of_devno(f.sys(), 253, 1).unwrap();
        assert_eq!(
            n.describe(),
            "dm-1 (crypt luks-1) → dm-0 (lvm vg-root) → sda2 → sda [mq-deadline]"
        );
        let stack = Stack {
            dir: "/home/u".into(),
            mount_point: "/".into(),
            fstype: "ext4".into(),
            top: vec![n],
        };
        let disks: Vec<String> = stack.disks(f.sys()).into_iter().map(|d| d.name).collect();
        assert_eq!(disks, ["sda"]);
        assert!(stack.describe().starts_with("/ (ext4) → dm-1"));
    }

    #[test]
    fn raid_members_are_each_a_disk_and_loops_stop_the_walk() {
        let f = Fixture::new();
        let a = f.dev("pci0/vdb", "254:16", &[SCHED]);
        let b = f.dev("pci0/vdc", "254:32", &[SCHED]);
        let md = f.dev("virtual/block/md0", "9:0", &[("md/level", "raid1"), NONE]);
        f.slave(&md, &a);
        f.slave(&md, &b);
        let n = node_of_devno(f.sys(), 9, 0).unwrap();
        assert_eq!(
            n.describe(),
            "md0 (raid1) → {vdb [mq-deadline], vdc [mq-deadline]}"
        );
        let lo = f.dev(
            "virtual/block/loop5",
            "7:5",
            &[("loop/backing_file", "/lower/img"), SCHED],
        );
        let n = node_of_devno(f.sys(), 7, 5).unwrap();
        assert!(n.below.is_empty());
        assert_eq!(n.describe(), "loop5 (file /lower/img) [mq-deadline]");
        drop(lo);
    }

    #[test]
    fn every_spelling_of_a_partition_is_that_partition() {
        let (f, _, _) = laptop();
        let n = node_of_spec(f.sys(), "sda2").unwrap();
        assert_eq!((n.name.as_str(), &n.kind), ("sda2", &Kind::Partition));
        assert!(node_of_spec(f.sys(), "sdz9").is_err());
        // Paths resolve through the device number: the live /dev has no
        // sda here, so the kernel's own loop-control stands in for "not a
        // block device".
        let e = node_of_spec(f.sys(), "/dev/null").unwrap_err();
        assert!(e.0.contains("not a block device"), "{e}");
    }

    #[test]
    fn a_partitions_device_node_by_any_path_is_the_partition() {
        let test = "a_partitions_device_node_by_any_path_is_the_partition";
        if !crate::is_root() {
            iolab_testkit::skip(test, "mknod of a fixture device node needs root");
            return;
        }
        let (f, _, _) = laptop();
        // Device nodes as udev and Android's ueventd lay them out: /dev,
        // /dev/block, and a by-id link; all name 8:2, the partition.
        let dev = f.sys().join("devfs");
        std::fs::create_dir_all(dev.join("block")).unwrap();
        std::fs::create_dir_all(dev.join("disk/by-id")).unwrap();
        for p in [dev.join("sda2"), dev.join("block/sda2")] {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &p,
                rustix::fs::FileType::BlockDevice,
                rustix::fs::Mode::from_raw_mode(0o600),
                rustix::fs::makedev(8, 2),
            )
            .unwrap();
        }
        symlink(
            dev.join("block/sda2"),
            dev.join("disk/by-id/ata-DISK-part2"),
        )
        .unwrap();
        for spec in [
            "sda2".to_string(),
            dev.join("sda2").to_string_lossy().into_owned(),
            dev.join("block/sda2").to_string_lossy().into_owned(),
            dev.join("disk/by-id/ata-DISK-part2")
                .to_string_lossy()
                .into_owned(),
        ] {
            let n = node_of_spec(f.sys(), &spec).unwrap();
            assert_eq!(
                (n.name.as_str(), &n.kind),
                ("sda2", &Kind::Partition),
                "{spec}"
            );
        }
    }

    #[test]
    fn dm_creators_are_named_from_the_uuid() {
        assert_eq!(dm_what("CRYPT-LUKS2-1234"), "crypt");
        assert_eq!(dm_what("CRYPT-VERITY-1"), "verity");
        assert_eq!(dm_what("LVM-xyz"), "lvm");
        assert_eq!(dm_what(""), "dm");
    }

    #[test]
    fn virtual_filesystems_are_refused_with_what_they_are() {
        let f = Fixture::new();
        let m = crate::mounts::Mount {
            devno: "0:25".into(),
            target: "/tmp".into(),
            fstype: "tmpfs".into(),
            source: "tmpfs".into(),
            options: String::new(),
        };
        let e = Stack::build(f.sys(), Path::new("/tmp/x"), &m, libc::makedev(0, 25)).unwrap_err();
        assert!(
            e.0.contains("tmpfs") && e.0.contains("no block device"),
            "{e}"
        );
    }

    #[test]
    fn btrfs_devices_come_from_its_fsid() {
        let f = Fixture::new();
        let a = f.dev("virtual/block/loop4", "7:4", &[SCHED]);
        let b = f.dev("virtual/block/loop6", "7:6", &[SCHED]);
        let devs = f.sys().join("fs/btrfs/1234-abcd/devices");
        std::fs::create_dir_all(&devs).unwrap();
        symlink(&a, devs.join("loop4")).unwrap();
        symlink(&b, devs.join("loop6")).unwrap();
        let m = crate::mounts::Mount {
            devno: "0:50".into(),
            target: "/mnt/b".into(),
            fstype: "btrfs".into(),
            source: "/dev/loop6".into(),
            options: String::new(),
        };
        let s = Stack::build(f.sys(), Path::new("/mnt/b/x"), &m, libc::makedev(0, 50)).unwrap();
        let disks: Vec<String> = s.disks(f.sys()).into_iter().map(|d| d.name).collect();
        assert_eq!(disks, ["loop4", "loop6"]);
        assert_eq!(
            s.describe(),
            "/mnt/b (btrfs) → {loop4 [mq-deadline], loop6 [mq-deadline]}"
        );
    }
}
