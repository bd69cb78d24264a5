//! Mount options as plan settings: `mount.atime` (noatime, relatime,
//! strictatime), `mount.lazytime` (0, 1) and ext4's `mount.commit`
//! (seconds between journal commits), applied to the place's filesystem
//! by a remount through the guard (which remounts it back after the cell)
//! and read back from /proc/self/mountinfo.
//!
//! A remount replaces the mount's flags with those it is given, so every
//! flag the mount has (nosuid, nodev, noexec, ro, the atime mode, and the
//! superblock's lazytime and sync) is passed again, changed only where the
//! point asks. ext4's `journal_ioprio` is not offered: the kernel does not
//! show it in mountinfo, so it could not be read back.

use std::path::Path;

use iolab_guard::Guard;
use iolab_sys::UsageError;

use super::apply::ReadBack;
use crate::ExperimentError;

/// The mount settings and their values.
pub const NAMES: [&str; 3] = ["atime", "lazytime", "commit"];

// MS_* bits of mount(2).
const RDONLY: u64 = 1;
const NOSUID: u64 = 2;
const NODEV: u64 = 4;
const NOEXEC: u64 = 8;
const SYNCHRONOUS: u64 = 16;
const DIRSYNC: u64 = 128;
const NOATIME: u64 = 1024;
const NODIRATIME: u64 = 2048;
const RELATIME: u64 = 1 << 21;
const STRICTATIME: u64 = 1 << 24;
const LAZYTIME: u64 = 1 << 25;
const ATIME: u64 = NOATIME | RELATIME | STRICTATIME;

/// ext4's commit interval when mountinfo shows none
/// (JBD2_DEFAULT_MAX_COMMIT_AGE).
const EXT4_COMMIT: &str = "5";

/// Checks `mount.NAME=value`.
pub fn check(name: &str, opt: &str, value: &str) -> Result<(), UsageError> {
    let ok = match opt {
        "atime" => ["noatime", "relatime", "strictatime"].contains(&value),
        "lazytime" => value == "0" || value == "1",
        "commit" => value.parse::<u32>().is_ok_and(|v| v > 0),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(UsageError::new(format!(
            "{name}={value:?}: expected mount.atime=noatime|relatime|strictatime, mount.lazytime=0|1 or mount.commit=SECONDS (ext4)"
        )))
    }
}

/// The mount at `target` as mountinfo shows it: (per-mount options,
/// fstype, superblock options).
fn mountinfo(target: &Path) -> Result<(Vec<String>, String, Vec<String>), ExperimentError> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| iolab_sys::SysError::io(Path::new("/proc/self/mountinfo"), e))?;
    let want = target.to_string_lossy();
    // The last line for the mount point is the one on top.
    let line = text
        .lines()
        .rfind(|l| l.split(' ').nth(4) == Some(&*want))
        .ok_or_else(|| UsageError::new(format!("{want} is not a mount point")))?;
    let (left, right) = line
        .split_once(" - ")
        .ok_or_else(|| UsageError::new(format!("mountinfo line without ' - ': {line}")))?;
    let per_mount = left.split(' ').nth(5).unwrap_or("");
    let mut r = right.split(' ');
    let fstype = r.next().unwrap_or("").to_string();
    let _source = r.next();
    let sb = r.next().unwrap_or("");
    let split = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
    Ok((split(per_mount), fstype, split(sb)))
}

/// The flags a remount must pass to keep the mount as it is.
fn flags_of(per_mount: &[String], sb: &[String]) -> u64 {
    let mut f = 0;
    for o in per_mount {
        f |= match o.as_str() {
            "ro" => RDONLY,
            "nosuid" => NOSUID,
            "nodev" => NODEV,
            "noexec" => NOEXEC,
            "noatime" => NOATIME,
            "nodiratime" => NODIRATIME,
            "relatime" => RELATIME,
            _ => 0,
        };
    }
    if f & (NOATIME | RELATIME) == 0 {
        f |= STRICTATIME;
    }
    for o in sb {
        f |= match o.as_str() {
            "lazytime" => LAZYTIME,
            "sync" => SYNCHRONOUS,
            "dirsync" => DIRSYNC,
            _ => 0,
        };
    }
    f
}

/// Refuses, before anything runs, `mount.commit` on a filesystem other
/// than ext4, and any mount setting without a filesystem of the place.
pub fn check_place(names: &[&str], mountpoint: Option<&Path>) -> Result<(), ExperimentError> {
    if names.is_empty() {
        return Ok(());
    }
    let Some(m) = mountpoint else {
        return Err(UsageError::new(format!(
            "{}: the place has no filesystem of its own to remount (a lab, or --in a directory)",
            names.join(", ")
        ))
        .into());
    };
    let (_, fstype, _) = mountinfo(m)?;
    if names.contains(&"mount.commit") && !matches!(fstype.as_str(), "ext4" | "ext3") {
        return Err(UsageError::new(format!(
            "mount.commit: {} is {fstype}; commit= is ext4's (jbd2's commit interval)",
            m.display()
        ))
        .into());
    }
    Ok(())
}

/// Remounts `target` with `opt=value` through `guard` and reads it back.
pub fn apply(
    guard: &Guard,
    target: &Path,
    name: &str,
    opt: &str,
    value: &str,
) -> Result<ReadBack, ExperimentError> {
    let (per_mount, _, sb) = mountinfo(target)?;
    let old = flags_of(&per_mount, &sb);
    let mut flags = old;
    let (mut data, mut undo_data) = (String::new(), String::new());
    match opt {
        "atime" => {
            flags &= !ATIME;
            flags |= match value {
                "noatime" => NOATIME,
                "relatime" => RELATIME,
                _ => STRICTATIME,
            };
        }
        "lazytime" if value == "1" => flags |= LAZYTIME,
        "lazytime" => flags &= !LAZYTIME,
        _ => {
            let was = sb
                .iter()
                .find_map(|o| o.strip_prefix("commit="))
                .unwrap_or(EXT4_COMMIT);
            data = format!("commit={value}");
            undo_data = format!("commit={was}");
        }
    }
    guard.remount(target, flags, &data, old, &undo_data)?;
    let (per_mount, _, sb) = mountinfo(target)?;
    let has = |o: &str| per_mount.iter().chain(&sb).any(|x| x == o);
    let applied = match opt {
        "atime" if value == "strictatime" => !has("noatime") && !has("relatime"),
        "atime" => has(value),
        "lazytime" => has("lazytime") == (value == "1"),
        _ => {
            has(&format!("commit={value}"))
                || (value == EXT4_COMMIT && !sb.iter().any(|o| o.starts_with("commit=")))
        }
    };
    Ok(ReadBack {
        name: name.to_string(),
        asked: value.to_string(),
        file: format!("/proc/self/mountinfo ({})", target.display()),
        wrote: format!(
            "remount flags {flags:#x}{}",
            if data.is_empty() {
                String::new()
            } else {
                format!(" {data}")
            }
        ),
        read: format!("{} - {}", per_mount.join(","), sb.join(",")),
        applied,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn flags_keep_what_the_mount_has() {
        let v = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
        let f = flags_of(&v("rw,nosuid,nodev,relatime"), &v("rw,lazytime,commit=30"));
        assert_eq!(f, NOSUID | NODEV | RELATIME | LAZYTIME);
        assert_eq!(
            flags_of(&v("ro,noexec"), &v("rw")),
            RDONLY | NOEXEC | STRICTATIME
        );
        assert!(check("mount.atime", "atime", "noatime").is_ok());
        assert!(check("mount.atime", "atime", "off").is_err());
        assert!(check("mount.commit", "commit", "0").is_err());
        assert!(check("mount.lazytime", "lazytime", "1").is_ok());
    }
}
