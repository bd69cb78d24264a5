//! Before iolab formats or writes a block device it did not create: is
//! anything using it, and does it hold anything?
//!
//! "In use" is what the kernel knows: mounts of the disk or its
//! partitions, stacked devices holding them (device-mapper, md), loop
//! devices over them, and exclusive openers (an `O_EXCL` open fails with
//! EBUSY: swap in use, a filesystem mounted in another namespace, an
//! assembled RAID member).
//!
//! "Holds something" is two probes: iolab's own ([`crate::signatures`]:
//! filesystems, partition tables, LVM physical volumes, LUKS, md and
//! bcache members, swap, ZFS, at the offsets libblkid reads), which needs
//! nothing installed (a phone's blkid is toybox's, with no low-level
//! probe), and, where util-linux is installed, libblkid's own (`blkid -p`),
//! which knows every signature util-linux knows and reads the device
//! itself rather than a cache. An unused LVM PV holds a volume group's
//! data as surely as a mounted ext4 does.

use std::path::Path;
use std::process::Command;

use crate::block::BlockDev;
use crate::UsageError;

/// Loop devices whose backing file is `backing` (`/sys/block/loop*/loop/backing_file`).
pub fn loops_backed_by(backing: &Path) -> Vec<String> {
    let want = backing.to_string_lossy();
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/sys/block") {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("loop") {
                continue;
            }
            // An unbound loop device has no backing_file: it backs nothing.
            let Ok(bf) = std::fs::read_to_string(e.path().join("loop/backing_file")) else {
                continue;
            };
            let bf = bf.trim_end();
            let bf = bf.strip_suffix(" (deleted)").unwrap_or(bf);
            if bf == want {
                out.push(name);
            }
        }
    }
    out
}

/// What uses the disk or its partitions (empty when nothing does).
pub fn users_of(dev: &BlockDev) -> Vec<String> {
    let mut parts = vec![(dev.name.clone(), dev.sysfs.clone())];
    if let Ok(rd) = std::fs::read_dir(&dev.sysfs) {
        for e in rd.flatten() {
            if e.path().join("partition").exists() {
                parts.push((e.file_name().to_string_lossy().into_owned(), e.path()));
            }
        }
    }
    parts.sort();
    let mut users = Vec::new();
    // What cannot be read counts as a use: the check fails safe.
    let mounts = crate::mounts::try_read().unwrap_or_else(|e| {
        users.push(format!(
            "cannot tell what is mounted (/proc/self/mountinfo: {e})"
        ));
        Vec::new()
    });
    for (name, sysfs) in &parts {
        let devno = match std::fs::read_to_string(sysfs.join("dev")) {
            Ok(d) => d,
            Err(e) => {
                users.push(format!("cannot tell whether {name} is mounted ({e})"));
                continue;
            }
        };
        for m in mounts.iter().filter(|m| m.devno == devno.trim()) {
            users.push(format!("{name} mounted on {}", m.target.display()));
        }
        let holders = crate::block::list_names(&sysfs.join("holders"));
        if !holders.is_empty() {
            users.push(format!("{name} held by {}", holders.join(", ")));
        }
        // A loop's backing_file is the node it was opened by: /dev/NAME
        // or, on Android, /dev/block/NAME.
        let mut nodes = vec![Path::new("/dev").join(name)];
        nodes.extend(crate::block::node_of(name).filter(|n| !nodes.contains(n)));
        for node in &nodes {
            for l in loops_backed_by(node) {
                users.push(format!("{name} backs {l}"));
            }
        }
    }
    if users.is_empty() && busy(&dev.dev_path()) {
        users.push(format!(
            "{} is opened exclusively (swap, RAID, or a mount in another namespace)",
            dev.name
        ));
    }
    users
}

/// True when an exclusive open fails with EBUSY (the kernel's own "in use").
fn busy(path: &Path) -> bool {
    use rustix::fs::{open, Mode, OFlags};
    matches!(
        open(
            path,
            OFlags::RDONLY | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::empty()
        ),
        Err(rustix::io::Errno::BUSY)
    )
}

/// What the probes find on `path`: `Ok(None)` for nothing either
/// recognises, `Ok(Some(description))` for a signature. iolab's own probe
/// runs first; util-linux's `blkid -p` after it where it is installed (a
/// blkid that cannot probe, toybox's, adds nothing). `Err(why)` when the
/// device cannot be read at all.
pub fn probe_contents(path: &Path) -> Result<Option<String>, String> {
    match crate::signatures::probe(path) {
        Ok(Some(f)) => {
            let key = if f.table { "PTTYPE" } else { "TYPE" };
            return Ok(Some(describe(&format!("{key}={}\n", f.name))));
        }
        Ok(None) => {}
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    }
    Ok(blkid_probe(path).ok().flatten())
}

/// util-linux's low-level probe: `Ok(None)` for nothing found, `Err(why)`
/// when it could not run (not installed, or a blkid without `-p`).
pub fn blkid_probe(path: &Path) -> Result<Option<String>, String> {
    // -p: low-level probe of the device itself (no cache); export format;
    // -o export prints KEY=VALUE lines. Exit 2: nothing found.
    let out = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(path)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| format!("cannot run blkid (util-linux): {e}"))?;
    match out.status.code() {
        Some(0) => Ok(Some(describe(&String::from_utf8_lossy(&out.stdout)))),
        Some(2) => Ok(None),
        _ => Err(format!(
            "blkid -p {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// Words for blkid's export lines: `an LVM2 physical volume (LVM2_member)`.
pub fn describe(export: &str) -> String {
    let get = |k: &str| {
        export
            .lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .map(str::to_string)
    };
    let known = |t: &str| -> Option<&'static str> {
        Some(match t {
            "LVM2_member" | "LVM1_member" => "an LVM physical volume",
            "crypto_LUKS" => "a LUKS encrypted volume",
            "linux_raid_member" => "an md RAID member",
            "swap" => "a swap area",
            "zfs_member" => "a ZFS pool member",
            "bcache" => "a bcache device",
            "f2fs" => "an f2fs filesystem",
            "ext2" | "ext3" | "ext4" => "an ext2/3/4 filesystem",
            "xfs" => "an XFS filesystem",
            "btrfs" => "a Btrfs filesystem",
            "vfat" => "a FAT filesystem",
            "erofs" => "an EROFS image",
            "squashfs" => "a SquashFS image",
            "ntfs" => "an NTFS filesystem",
            _ => return None,
        })
    };
    match (get("TYPE"), get("PTTYPE")) {
        (Some(t), _) => match known(&t) {
            Some(words) => format!("{words} ({t})"),
            None => format!("a {t} signature"),
        },
        (None, Some(pt)) => format!("a {pt} partition table"),
        (None, None) => format!(
            "a signature blkid reports as {:?}",
            export.lines().collect::<Vec<_>>().join(" ")
        ),
    }
}

/// Refuses to format or write `dev` unless `force`, while anything uses it
/// or it holds anything libblkid recognises. `consequence` says what iolab
/// would do to it ("iolab sweep runs mkfs on it before every run").
pub fn check_before_writing(
    dev: &BlockDev,
    consequence: &str,
    force: bool,
) -> Result<(), UsageError> {
    if force {
        return Ok(());
    }
    let path = dev.dev_path();
    let users = users_of(dev);
    if !users.is_empty() {
        return Err(UsageError::new(format!(
            "refusing {}: it is in use ({}); {consequence}, destroying everything on it: pick an unused device, or pass --force if that is really intended",
            path.display(),
            users.join("; ")
        )));
    }
    match probe_contents(&path) {
        Ok(None) => Ok(()),
        Ok(Some(what)) => Err(UsageError::new(format!(
            "refusing {}: it holds {what}; {consequence}, destroying it: pass --force to destroy it, or wipe it first (wipefs -a)",
            path.display()
        ))),
        Err(why) => Err(UsageError::new(format!(
            "refusing {}: cannot tell what it holds ({why}); {consequence}: pass --force if it holds nothing you need",
            path.display()
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn blkid_exports_are_named() {
        assert_eq!(
            describe("DEVNAME=/dev/loop3\nUUID=x\nTYPE=LVM2_member\nUSAGE=raid\n"),
            "an LVM physical volume (LVM2_member)"
        );
        assert_eq!(
            describe("TYPE=crypto_LUKS\n"),
            "a LUKS encrypted volume (crypto_LUKS)"
        );
        assert_eq!(describe("PTTYPE=gpt\n"), "a gpt partition table");
        assert_eq!(describe("TYPE=hfsplus\n"), "a hfsplus signature");
    }
}
