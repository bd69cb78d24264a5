//! Applying one plan point for a cell: every setting it gives a value is
//! written through the guard (undone after the cell, so the next point
//! starts from the system's own state) and read back from the file the
//! kernel keeps it in. A setting that reads back otherwise is "not
//! applied": the cell's starts are invalid with that reason, never a
//! silent "ok".

use std::path::Path;

use serde::Serialize;

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;

use super::cgroup::{Groups, Hierarchy};
use super::points::Point;
use super::setting::{Knob, Who};
use crate::ExperimentError;

/// What the point sets on the processes iolab starts (applied per start by
/// `spawn` and the load, checked there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `target.ioprio`.
    pub target_ioprio: Option<IoPrio>,
    /// `target.nice`.
    pub target_nice: Option<i32>,
    /// `load.ioprio`.
    pub load_ioprio: Option<IoPrio>,
}

/// One setting as written and read back.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ReadBack {
    /// The setting's name.
    pub name: String,
    /// The value asked for.
    pub asked: String,
    /// The file it went to.
    pub file: String,
    /// What was written.
    pub wrote: String,
    /// The file's text afterwards (trimmed).
    pub read: String,
    /// Whether the kernel holds the value asked for.
    pub applied: bool,
}

/// A point as applied.
#[derive(Debug)]
pub struct Applied {
    /// iolab's groups for the cell (when the plan has a `cg.*` axis).
    pub groups: Option<Groups>,
    /// Every file written, read back.
    pub read_back: Vec<ReadBack>,
    /// What the starts and the load take from the point.
    pub overrides: Overrides,
}

impl Applied {
    /// Why the point does not hold, or `None`.
    pub fn not_applied(&self) -> Option<String> {
        let bad: Vec<String> = self
            .read_back
            .iter()
            .filter(|r| !r.applied)
            .map(|r| {
                format!(
                    "{}={} not applied: {} reads back {:?} after {:?} was written",
                    r.name, r.asked, r.file, r.read, r.wrote
                )
            })
            .collect();
        (!bad.is_empty()).then(|| bad.join("; "))
    }
}

/// Applies `point` on `disks` (the place's), making iolab's groups in
/// `hier` when `cgroups` (the plan varies a `cg.*` setting: every point
/// then runs in groups, its baseline too).
pub fn apply(
    guard: &Guard,
    disks: &[BlockDev],
    fs_dev: Option<&BlockDev>,
    hier: Option<&Hierarchy>,
    fs: Option<&Path>,
    mountpoint: Option<&Path>,
    point: &Point,
) -> Result<Applied, ExperimentError> {
    let groups = match hier {
        Some(h) => Some(Groups::make(guard, h)?),
        None => None,
    };
    let devnos = disks
        .iter()
        .map(BlockDev::devno)
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Applied {
        groups,
        read_back: Vec::new(),
        overrides: Overrides::default(),
    };
    for (name, value) in point.set() {
        let knob = Knob::parse(name)?;
        match &knob {
            Knob::Iosched(t) => {
                let mut any = false;
                for dev in disks {
                    let path = dev.queue_path("iosched").join(t);
                    if path.exists() {
                        any = true;
                        guard.set_iosched_param(dev, t, value)?;
                        out.read_back.push(simple(name, value, &path, value));
                    }
                }
                if !any {
                    // Only the message's wording: the read-back fails anyway.
                    let sched = disks
                        .first()
                        .and_then(|d| d.schedulers().ok())
                        .map_or_else(|| "the scheduler".to_string(), |s| s.current);
                    out.read_back.push(ReadBack {
                        name: name.to_string(),
                        asked: value.to_string(),
                        file: format!("queue/iosched/{t}"),
                        wrote: String::new(),
                        read: format!("{sched} has no {t}"),
                        applied: false,
                    });
                }
            }
            Knob::Queue(q) => {
                // A file's read-ahead is its filesystem's device's (the
                // top of a stack: dm-0 over the disk), the others act at
                // the disk's queue: read_ahead_kb goes to both.
                let top = fs_dev
                    .filter(|f| q == "read_ahead_kb" && !disks.iter().any(|d| d.name == f.name));
                for dev in disks.iter().chain(top) {
                    guard.set_queue_attr(dev, q, value)?;
                    let path = dev.queue_path(q);
                    let mut r = simple(name, value, &path, value);
                    // -1 asks for the kernel's default, which reads back
                    // as that default.
                    if q == "wbt_lat_usec" && value == "-1" {
                        r.applied = r.read.parse::<i64>().is_ok();
                    }
                    out.read_back.push(r);
                }
            }
            Knob::Sysctl(s) => {
                guard.set_sysctl(s, value)?;
                let path = Path::new("/proc/sys").join(s.replace('.', "/"));
                out.read_back.push(simple(name, value, &path, value));
            }
            Knob::Ioprio(who) => {
                let p: IoPrio = value
                    .parse()
                    .map_err(|_| UsageError::new(format!("{name}={value}: not an I/O priority")))?;
                match who {
                    Who::Target => out.overrides.target_ioprio = Some(p),
                    Who::Load => out.overrides.load_ioprio = Some(p),
                }
            }
            Knob::Nice(_) => {
                let n: i32 = value
                    .parse()
                    .map_err(|_| UsageError::new(format!("{name}={value}: not a nice value")))?;
                out.overrides.target_nice = Some(n);
            }
            Knob::Mount(opt) => {
                let m = mountpoint.ok_or_else(|| {
                    UsageError::new(format!("{name}: the place has no filesystem of its own"))
                })?;
                out.read_back
                    .push(super::mount::apply(guard, m, name, opt, value)?);
            }
            Knob::Fs(attr) => {
                let dir = fs.ok_or_else(|| {
                    UsageError::new(format!("{name}: the place has no filesystem of its own"))
                })?;
                let path = dir.join(attr);
                guard.write_attr(&path, value)?;
                out.read_back.push(simple(name, value, &path, value));
            }
            Knob::TargetCgroup => {
                let g = out.groups.as_mut().ok_or_else(|| {
                    UsageError::new(format!("{name}: iolab made no cgroups for this plan"))
                })?;
                // Checked per start, where the target is moved: its
                // /proc/PID/cgroup must name the root (see Groups::put_target).
                g.target_in_root = true;
                out.read_back.push(ReadBack {
                    name: name.to_string(),
                    asked: value.to_string(),
                    file: g.hier.root.join("cgroup.procs").display().to_string(),
                    wrote: "each start's pid".into(),
                    read: "checked per start in /proc/PID/cgroup".into(),
                    applied: true,
                });
            }
            Knob::Group(who, file) => {
                let g = out.groups.as_ref().ok_or_else(|| {
                    UsageError::new(format!("{name}: iolab made no cgroups for this plan"))
                })?;
                let dir = g.dir(*who);
                // The memory controller keeps pages: it reads back a byte
                // value rounded down to one.
                let page = rustix::param::page_size() as u64;
                let want = match value.parse::<u64>() {
                    Ok(b) if file.starts_with("memory.") => (b / page * page).to_string(),
                    _ => value.to_string(),
                };
                let lines = group_lines(file, &want, &devnos);
                for l in &lines {
                    guard.set_in_own_cgroup(&dir, file, l)?;
                }
                let mut r = read_back(name, &want, &dir.join(file), &lines, &devnos);
                r.asked = value.to_string();
                out.read_back.push(r);
            }
            Knob::Root(file) => {
                let h = hier.ok_or_else(|| {
                    UsageError::new(format!("{name}: no cgroup hierarchy was found"))
                })?;
                let path = h.root.join(file);
                if file.starts_with("io.cost.") {
                    let reset = if file == "io.cost.qos" {
                        "enable=0"
                    } else {
                        "ctrl=auto"
                    };
                    for d in &devnos {
                        guard.set_dev_line(&path, d, value, reset)?;
                    }
                    let lines: Vec<String> =
                        devnos.iter().map(|d| format!("{d} {value}")).collect();
                    out.read_back
                        .push(read_back(name, value, &path, &lines, &devnos));
                } else {
                    guard.write_attr(&path, value)?;
                    out.read_back.push(simple(name, value, &path, value));
                }
            }
        }
    }
    Ok(out)
}

/// What to write to a group's `file` for `value`: one line per device for
/// the files keyed by device.
fn group_lines(file: &str, value: &str, devnos: &[String]) -> Vec<String> {
    match file {
        "io.latency" => devnos
            .iter()
            .map(|d| format!("{d} target={value}"))
            .collect(),
        "io.max" => devnos.iter().map(|d| format!("{d} {value}")).collect(),
        f if f.starts_with("blkio.throttle.") => {
            devnos.iter().map(|d| format!("{d} {value}")).collect()
        }
        _ => vec![value.to_string()],
    }
}

/// A one-value file read back: its last word (`default 100` holds 100).
fn simple(name: &str, value: &str, path: &Path, wrote: &str) -> ReadBack {
    let read = std::fs::read_to_string(path).unwrap_or_else(|e| format!("unreadable: {e}"));
    let read = read.trim().to_string();
    let first = read.lines().next().unwrap_or("");
    let last = first.split_whitespace().last().unwrap_or("");
    // A scheduler tunable or the scheduler file may show brackets.
    let applied = last == value || same_number(last, value);
    ReadBack {
        name: name.to_string(),
        asked: value.to_string(),
        file: path.display().to_string(),
        wrote: wrote.to_string(),
        read,
        applied,
    }
}

/// A file read back after `lines` were written: for a keyed file, each
/// device's line holds every `key=value` written (numbers compared as
/// numbers: io.cost.qos shows `rpct=95.00` for 95); a plain one, as
/// [`simple`].
fn read_back(
    name: &str,
    value: &str,
    path: &Path,
    lines: &[String],
    devnos: &[String],
) -> ReadBack {
    let keyed = lines
        .first()
        .and_then(|l| l.split_whitespace().next())
        .is_some_and(|d| devnos.iter().any(|x| x == d));
    if !keyed {
        return simple(name, value, path, lines.first().map_or("", String::as_str));
    }
    let read = std::fs::read_to_string(path).unwrap_or_else(|e| format!("unreadable: {e}"));
    let applied = lines.iter().all(|want| {
        let mut w = want.split_whitespace();
        let dev = w.next().unwrap_or("");
        let Some(have) = read
            .lines()
            .find(|l| l.split_whitespace().next() == Some(dev))
        else {
            return false;
        };
        let have: Vec<&str> = have.split_whitespace().skip(1).collect();
        w.all(|kv| match kv.split_once('=') {
            Some((k, v)) => have.iter().any(|h| {
                h.split_once('=')
                    .is_some_and(|(hk, hv)| hk == k && (hv == v || same_number(hv, v)))
            }),
            // blkio.throttle.*: `MAJ:MIN N`.
            None => have.first().is_some_and(|h| *h == kv),
        })
    });
    ReadBack {
        name: name.to_string(),
        asked: value.to_string(),
        file: path.display().to_string(),
        wrote: lines.join("\n"),
        read: read.trim().to_string(),
        applied,
    }
}

fn same_number(a: &str, b: &str) -> bool {
    matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if (x - y).abs() < 1e-9)
}

/// The sysfs directory of the filesystem mounted at `mount`
/// (`/sys/fs/ext4/loop0`), when its type keeps one per device.
pub fn fs_dir(mount: &Path, dev: &BlockDev) -> Option<std::path::PathBuf> {
    let m = iolab_sys::mounts::containing(mount)?;
    let dir = Path::new("/sys/fs").join(&m.fstype).join(&dev.name);
    dir.is_dir().then_some(dir)
}

/// Refuses, before anything runs, a point's `fs.ATTR` the place's
/// filesystem does not have, naming what it has.
pub fn check_fs(points: &[Point], dir: Option<&Path>) -> Result<(), UsageError> {
    for p in points {
        for (n, _) in p.set() {
            let Ok(Knob::Fs(attr)) = Knob::parse(n) else {
                continue;
            };
            let Some(dir) = dir else {
                return Err(UsageError::new(format!(
                    "{n}: the place's filesystem has no directory under /sys/fs (f2fs, EROFS and ext4 have one per device; a lab or --in on one of them)"
                )));
            };
            let path = dir.join(&attr);
            if path.is_file() {
                use std::os::unix::fs::PermissionsExt;
                let writable =
                    std::fs::metadata(&path).is_ok_and(|m| m.permissions().mode() & 0o200 != 0);
                if !writable {
                    return Err(UsageError::new(format!(
                        "{n}: {} is read-only (the kernel shows it, it takes no value)",
                        path.display()
                    )));
                }
            } else {
                let takes = match std::fs::read_dir(dir) {
                    Ok(d) => {
                        let mut have: Vec<String> = d
                            .filter_map(Result::ok)
                            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .filter(|f| {
                                use std::os::unix::fs::PermissionsExt;
                                std::fs::metadata(dir.join(f))
                                    .is_ok_and(|m| m.permissions().mode() & 0o200 != 0)
                            })
                            .collect();
                        have.sort();
                        format!("what it takes: {}", have.join(", "))
                    }
                    Err(e) => format!("its files cannot be listed: {e}"),
                };
                return Err(UsageError::new(format!(
                    "{n}: {} has no {attr} ({takes})",
                    dir.display(),
                )));
            }
        }
    }
    Ok(())
}

/// Refuses, before anything runs, a plan whose `cg.*` files this system's
/// groups or root do not have, naming what they do have; `have` is what a
/// group of iolab's has ([`Hierarchy::group_files`]).
pub fn check_files(points: &[Point], hier: &Hierarchy, have: &[String]) -> Result<(), UsageError> {
    let roots = hier.root_files();
    let mut names: Vec<&str> = Vec::new();
    for p in points {
        for (n, _) in &p.0 {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    for n in names {
        match Knob::parse(n)? {
            Knob::Group(_, f) if !have.contains(&f) => {
                return Err(UsageError::new(format!(
                    "{n}: this kernel's cgroups have no {f} ({}; a group there has {}){}",
                    hier.describe(),
                    if have.is_empty() {
                        "none of iolab's files".to_string()
                    } else {
                        have.join(", ")
                    },
                    hint(&f)
                )))
            }
            Knob::Root(f) if !hier.root.join(&f).exists() => {
                return Err(UsageError::new(format!(
                    "{n}: this kernel has no {f} at {} (its root has {}){}",
                    hier.root.display(),
                    if roots.is_empty() {
                        "none of iolab's root files".to_string()
                    } else {
                        roots.join(", ")
                    },
                    hint(&f)
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Why a file may be missing: the kernel option or scheduler it needs.
fn hint(file: &str) -> &'static str {
    match file {
        "io.latency" => ": it needs CONFIG_BLK_CGROUP_IOLATENCY (Debian's kernels leave it out)",
        "memory.high" | "memory.low" => ": cgroup v2's memory controller (v1's memory is another hierarchy, which iolab does not use)",
        "io.prio.class" | "blkio.prio.class" => {
            ": it needs CONFIG_BLK_CGROUP_IOPRIO (Debian's kernels leave it out)"
        }
        "io.bfq.weight" | "blkio.bfq.weight" => {
            ": it needs BFQ with CONFIG_BFQ_GROUP_IOSCHED, loaded"
        }
        "io.weight" | "io.cost.qos" | "io.cost.model" => ": it needs CONFIG_BLK_CGROUP_IOCOST",
        "blkio.weight" => ": CFQ's weight; Linux 5.0 removed CFQ, use blkio.bfq.weight",
        _ => "",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keyed_files_read_back_by_device_and_number() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("io.cost.qos");
        std::fs::write(&f, "7:0 enable=1 ctrl=user rpct=95.00 rlat=5000 wpct=0.00 wlat=250000 min=1.00 max=10000.00\n").unwrap();
        let lines = vec!["7:0 enable=1 rpct=95 rlat=5000".to_string()];
        let r = read_back(
            "cg.root.io.cost.qos",
            "enable=1 rpct=95 rlat=5000",
            &f,
            &lines,
            &["7:0".into()],
        );
        assert!(r.applied, "{r:?}");
        let lines = vec!["7:0 rlat=2500".to_string()];
        assert!(!read_back("x", "rlat=2500", &f, &lines, &["7:0".into()]).applied);
        let t = dir.path().join("blkio.throttle.read_bps_device");
        std::fs::write(&t, "7:0 1048576\n").unwrap();
        let ok = read_back("x", "1048576", &t, &["7:0 1048576".into()], &["7:0".into()]);
        assert!(ok.applied);
        assert!(!read_back("x", "5", &t, &["7:0 5".into()], &["7:0".into()]).applied);
        let w = dir.path().join("io.weight");
        std::fs::write(&w, "default 1000\n").unwrap();
        assert!(simple("x", "1000", &w, "1000").applied);
        assert!(!simple("x", "100", &w, "100").applied);
    }
}
