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
//! data as surely as a mounted ext4 does. When blkid cannot look (none
//! installed, or toybox's without `-p`), that is said, never taken for
//! "nothing found".

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::block::BlockDev;
use crate::UsageError;

/// Loop devices whose backing file is `backing` (`/sys/block/loop*/loop/backing_file`).
pub fn loops_backed_by(backing: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/sys/block") {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("loop") {
                continue;
            }
            // An unbound loop device backs nothing.
            if crate::loopdev::backing_file(&name)
                .ok()
                .flatten()
                .is_some_and(|bf| bf == backing)
            {
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
        // Unreadable counts as a use too (fails safe).
        match crate::block::list_names(&sysfs.join("holders")) {
            Ok(h) if h.is_empty() => {}
            Ok(h) => users.push(format!("{name} held by {}", h.join(", "))),
            Err(e) => users.push(format!("cannot tell whether {name} is held ({e})")),
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

/// What a probe says of a device's contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// A signature, in words: `an LVM physical volume (LVM2_member)`.
    Found(String),
    /// The probe looked and found nothing.
    Nothing,
    /// The probe could not look, and why: `signature check unavailable:
    /// toybox blkid has no -p (/system/bin/blkid)`. Never "nothing".
    Unavailable(String),
}

/// What the probes find on `path`. iolab's own probe runs first; a
/// signature it finds is the answer. Otherwise util-linux's `blkid -p`:
/// `Nothing` only when it looked too, `Unavailable(why)` when it could
/// not (no blkid, toybox's without `-p`, a failure), which the caller
/// must say rather than take for "nothing". `Err(why)` when the device
/// cannot be read at all.
pub fn probe_contents(path: &Path) -> Result<Probe, String> {
    match crate::signatures::probe(path) {
        Ok(Some(f)) => {
            let key = if f.table { "PTTYPE" } else { "TYPE" };
            return Ok(Probe::Found(describe(&format!("{key}={}\n", f.name))));
        }
        Ok(None) => {}
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    Ok(match blkid_on(&path_var) {
        Some(blkid) => blkid_probe(&blkid, path),
        None => Probe::Unavailable(
            "signature check unavailable: no blkid on PATH (util-linux's blkid -p knows every signature libblkid does)".into(),
        ),
    })
}

/// The first executable `blkid` in `path_var` (PATH's value).
fn blkid_on(path_var: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path_var)
        .map(|dir| dir.join("blkid"))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// util-linux's low-level probe of `dev` by the blkid at `blkid`: exit 0
/// with its export lines is a signature, exit 8 an ambivalent result
/// (more than one), exit 2 with nothing on stderr nothing found (blkid
/// also exits 2 when it cannot open the device, saying so on stderr).
/// Anything else is `Unavailable`: toybox's blkid (Android's), which has
/// no `-p` and exits 1 with `blkid: Unknown option 'p'`, names itself.
pub fn blkid_probe(blkid: &Path, dev: &Path) -> Probe {
    // -p: low-level probe of the device itself (no cache); -o export
    // prints KEY=VALUE lines.
    let out = match Command::new(blkid)
        .args(["-p", "-o", "export"])
        .arg(dev)
        .env("LC_ALL", "C")
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            return Probe::Unavailable(format!(
                "signature check unavailable: cannot run {}: {e}",
                blkid.display()
            ))
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stderr = stderr.trim();
    match out.status.code() {
        Some(0) => Probe::Found(describe(&String::from_utf8_lossy(&out.stdout))),
        Some(8) => Probe::Found(format!("more than one signature (blkid -p: {stderr})")),
        Some(2) if stderr.is_empty() => Probe::Nothing,
        code => {
            let lower = stderr.to_ascii_lowercase();
            let no_p = ["unknown option", "invalid option", "unrecognized option"]
                .iter()
                .any(|w| lower.contains(w));
            if no_p {
                return Probe::Unavailable(format!(
                    "signature check unavailable: {} has no -p ({})",
                    blkid_kind(blkid, stderr),
                    blkid.display()
                ));
            }
            let how = match code {
                Some(c) => format!("exit {c}"),
                None => "killed by a signal".to_string(),
            };
            Probe::Unavailable(format!(
                "signature check unavailable: {} -p {} failed ({how}): {stderr}",
                blkid.display(),
                dev.display()
            ))
        }
    }
}

/// Which blkid refused `-p`: toybox's (Android's, a link to `toybox`, or
/// its wording, lib/args.c's `Unknown option 'p'`), busybox's, or another.
fn blkid_kind(blkid: &Path, stderr: &str) -> &'static str {
    let target = std::fs::canonicalize(blkid).ok();
    let name = target
        .as_deref()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if name == "toybox" || stderr.contains("Unknown option 'p'") {
        "toybox blkid"
    } else if name == "busybox" {
        "busybox blkid"
    } else {
        "this blkid"
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
/// Allowed, it returns a warning for the user when only iolab's own probe
/// could look (blkid's check unavailable: see [`probe_contents`]).
pub fn check_before_writing(
    dev: &BlockDev,
    consequence: &str,
    force: bool,
) -> Result<Option<String>, UsageError> {
    if force {
        return Ok(None);
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
        Ok(Probe::Nothing) => Ok(None),
        Ok(Probe::Unavailable(why)) => Ok(Some(format!(
            "{}: iolab's own probe found no signature on it, but {why}: a signature only util-linux's libblkid knows was not looked for",
            path.display()
        ))),
        Ok(Probe::Found(what)) => Err(UsageError::new(format!(
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

    /// A stand-in `blkid` in `dir` running `body`. Written by a child
    /// process, so no thread of this test binary holds it open for
    /// writing when it is run (ETXTBSY).
    fn fake_blkid(dir: &Path, body: &str) -> PathBuf {
        let path = dir.join("blkid");
        let made = Command::new("sh")
            .args([
                "-c",
                "printf '#!/bin/sh\\n%s\\n' \"$1\" > \"$2\" && chmod +x \"$2\"",
            ])
            .args(["sh", body])
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        path
    }

    #[test]
    fn blkid_is_found_on_path_only_as_an_executable() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(a.path().join("blkid"), "not executable").unwrap();
        let blkid = fake_blkid(b.path(), "exit 2");
        let path_var = std::env::join_paths([a.path(), b.path()]).unwrap();
        assert_eq!(blkid_on(&path_var), Some(blkid));
        assert_eq!(blkid_on(std::ffi::OsStr::new(a.path().as_os_str())), None);
        assert_eq!(blkid_on(std::ffi::OsStr::new("")), None);
    }

    #[test]
    fn a_blkid_that_cannot_probe_is_unavailable_never_nothing() {
        let dev = Path::new("/dev/null");
        let cases = [
            // toybox 0.8.9, Android's: no -p, exit 1.
            (
                r#"echo "blkid: Unknown option 'p' (see \"blkid --help\")" >&2; exit 1"#,
                Probe::Unavailable(String::new()),
                "signature check unavailable: toybox blkid has no -p (",
            ),
            // util-linux: exit 2 and silence is nothing found...
            ("exit 2", Probe::Nothing, ""),
            // ...but exit 2 with an error is a device it could not open.
            (
                r#"echo "blkid: error: $4: Permission denied" >&2; exit 2"#,
                Probe::Unavailable(String::new()),
                "failed (exit 2): blkid: error: /dev/null: Permission denied",
            ),
            (
                "echo DEVNAME=$4; echo TYPE=ext4",
                Probe::Found("an ext2/3/4 filesystem (ext4)".into()),
                "",
            ),
            (
                "echo 'blkid: /dev/x: ambivalent result (probably more filesystems on the device, use wipefs(8) to see more details)' >&2; exit 8",
                Probe::Found(String::new()),
                "more than one signature (blkid -p: blkid: /dev/x: ambivalent result",
            ),
            ("kill -9 $$", Probe::Unavailable(String::new()), "(killed by a signal)"),
        ];
        for (body, want, words) in cases {
            let dir = tempfile::tempdir().unwrap();
            let blkid = fake_blkid(dir.path(), body);
            let got = blkid_probe(&blkid, dev);
            let text = match (&got, &want) {
                (Probe::Unavailable(t), Probe::Unavailable(_)) => t.clone(),
                (Probe::Found(t), Probe::Found(w)) if w.is_empty() => t.clone(),
                _ => {
                    assert_eq!(got, want, "{body}");
                    continue;
                }
            };
            assert!(text.contains(words), "{body}: {text}");
        }
    }

    #[test]
    fn toybox_is_named_by_its_link() {
        let Some(toybox) = std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("toybox"))
                .find(|t| t.is_file())
        }) else {
            iolab_testkit::skip("toybox_is_named_by_its_link", "toybox is not installed");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let blkid = dir.path().join("blkid");
        std::os::unix::fs::symlink(&toybox, &blkid).unwrap();
        assert_eq!(
            blkid_probe(&blkid, Path::new("/dev/null")),
            Probe::Unavailable(format!(
                "signature check unavailable: toybox blkid has no -p ({})",
                blkid.display()
            ))
        );
    }
}
