//! A device's own I/O settings, read where they live (`iolab settings`, on
//! a phone through `iolab remote --adb SERIAL -- settings --json`), and
//! `--recipe device`: that topology and those values reproduced in the
//! lab, so the question becomes "what would my phone's own settings do
//! here, and what would do better".
//!
//! Read: the I/O hierarchy's root group and its children (Android: the
//! root and `background`; a systemd host: its slices), every file of
//! [`GROUP_FILES`] and `blkio.group_idle` each has, and the scheduler,
//! queue attributes and scheduler tunables of the disks under a directory
//! (`/data` on a phone). Nothing is written.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

use super::cgroup::{Hierarchy, Version};
use super::setting::{GROUP_FILES, ROOT_FILES};
use crate::ExperimentError;

/// The queue attributes read, and reproduced by the recipe where marked.
const QUEUE: [&str; 5] = [
    "read_ahead_kb",
    "nr_requests",
    "wbt_lat_usec",
    "max_sectors_kb",
    "discard_max_bytes",
];

/// One group's values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupValues {
    /// `/` for the root, `/background` for a child.
    pub path: String,
    /// File → its text (trimmed).
    pub values: BTreeMap<String, String>,
}

/// One disk's queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskValues {
    /// `sda`, `mmcblk0`.
    pub name: String,
    /// The scheduler in use.
    pub scheduler: String,
    /// Queue attribute → value.
    pub queue: BTreeMap<String, String>,
    /// The scheduler's tunables.
    pub iosched: BTreeMap<String, String>,
}

/// A device's I/O settings, as `iolab settings --json` prints them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSettings {
    /// `uname -r`.
    pub kernel: String,
    /// `cgroup v1 blkio at /dev/blkio`; `None` without an I/O hierarchy.
    pub hierarchy: Option<String>,
    /// `v1` or `v2`.
    pub version: Option<String>,
    /// The root first, then each child group.
    pub groups: Vec<GroupValues>,
    /// The disks under the directory read.
    pub disks: Vec<DiskValues>,
    /// The directory whose disks were read.
    pub dir: String,
}

impl DeviceSettings {
    /// This machine's: its I/O hierarchy's groups and the disks under `dir`.
    pub fn read(dir: &Path) -> Result<DeviceSettings, ExperimentError> {
        let hier = match Hierarchy::find() {
            Ok(h) => Some(h),
            Err(ExperimentError::Usage(_)) => None,
            Err(e) => return Err(e),
        };
        let mut groups = Vec::new();
        if let Some(h) = &hier {
            groups.push(GroupValues {
                path: "/".into(),
                values: files_of(&h.root, true),
            });
            let mut children: Vec<_> = std::fs::read_dir(&h.root)
                .map_err(|e| iolab_sys::SysError::io(&h.root, e))?
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            children.sort();
            for c in children {
                let name = c
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // iolab's own groups are not the device's.
                if name.starts_with("iolab-") {
                    continue;
                }
                groups.push(GroupValues {
                    path: format!("/{name}"),
                    values: files_of(&c, false),
                });
            }
        }
        let stack = iolab_sys::stack::Stack::of_dir(dir)?;
        let disks = stack
            .disks(Path::new("/sys"))
            .iter()
            .map(disk_values)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DeviceSettings {
            kernel: rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
            hierarchy: hier.as_ref().map(Hierarchy::describe),
            version: hier.as_ref().map(|h| match h.version {
                Version::V1 => "v1".to_string(),
                Version::V2 => "v2".to_string(),
            }),
            groups,
            disks,
            dir: dir.display().to_string(),
        })
    }

    /// Reads a file `iolab settings --json` wrote; a one-line refusal
    /// otherwise.
    pub fn load(path: &Path) -> Result<DeviceSettings, UsageError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            UsageError::new(format!(
                "--device-settings {}: {e}: expected the output of `iolab settings --json` on the device",
                path.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| {
            UsageError::new(format!(
                "--device-settings {}: not what `iolab settings --json` prints: {e}",
                path.display()
            ))
        })
    }

    /// The group the device's background work runs in: `background`
    /// (Android), else the first child that sets anything.
    pub fn background(&self) -> Option<&GroupValues> {
        let children = || self.groups.iter().filter(|g| g.path != "/");
        children()
            .find(|g| g.path == "/background")
            .or_else(|| children().find(|g| !g.values.is_empty()))
    }
}

/// The files of [`GROUP_FILES`] (and, at the root, [`ROOT_FILES`]) and
/// `blkio.group_idle` a group has, with their text.
fn files_of(dir: &Path, root: bool) -> BTreeMap<String, String> {
    let mut names: Vec<&str> = GROUP_FILES.to_vec();
    names.push("blkio.group_idle");
    if root {
        names.extend(ROOT_FILES);
        // CFQ's root weight, which Android's init.rc still writes.
        names.push("blkio.weight");
    }
    let mut out = BTreeMap::new();
    for n in names {
        if let Ok(t) = std::fs::read_to_string(dir.join(n)) {
            out.insert(n.to_string(), t.trim().to_string());
        }
    }
    out
}

fn disk_values(d: &BlockDev) -> Result<DiskValues, ExperimentError> {
    let mut queue = BTreeMap::new();
    for q in QUEUE {
        if let Ok(t) = std::fs::read_to_string(d.queue_path(q)) {
            queue.insert(q.to_string(), t.trim().to_string());
        }
    }
    Ok(DiskValues {
        name: d.name.clone(),
        scheduler: d.schedulers()?.current,
        queue,
        iosched: d.iosched_tunables().into_iter().collect(),
    })
}

/// A group file's value as a point sets it: a weight file's `default N`
/// is N; a file keyed by device (io.max, io.latency, the throttles) has
/// the device's numbers, which mean nothing in the lab: `None`.
fn settable(file: &str, text: &str) -> Option<String> {
    let first = text.lines().next()?.trim();
    if first.is_empty() {
        return None;
    }
    match file {
        "io.weight" | "io.bfq.weight" => first.strip_prefix("default ").map(str::to_string),
        "io.max" | "io.latency" => None,
        f if f.starts_with("blkio.throttle.") => None,
        _ => Some(first.to_string()),
    }
}

/// The same setting in the lab's hierarchy when it speaks the other
/// version (a phone's v1 blkio in a v2 guest, or back).
fn in_lab(file: &str, lab_v2: bool) -> String {
    let pairs = [
        ("blkio.bfq.weight", "io.bfq.weight"),
        ("blkio.prio.class", "io.prio.class"),
    ];
    for (v1, v2) in pairs {
        if file == v1 && lab_v2 {
            return v2.to_string();
        }
        if file == v2 && !lab_v2 {
            return v1.to_string();
        }
    }
    file.to_string()
}

/// `--recipe device`'s points on a lab with `facts`: the device's groups
/// (the target in the root, the load standing for its background group,
/// with that group's values and the root's), then the same with the
/// device's queue and scheduler tunables. What cannot be set here is said.
pub(super) fn design(
    dev: &DeviceSettings,
    facts: &super::recipe::Facts,
    singles: &mut Vec<Vec<(String, String)>>,
    notes: &mut Vec<String>,
    sources: &mut Vec<String>,
) -> Result<(), UsageError> {
    let has = |f: &str| facts.group_files.iter().any(|g| g == f);
    let lab_v2 = facts.hier.as_ref().map(|h| h.version) == Some(Version::V2);
    let Some(bg) = dev.background() else {
        return Err(UsageError::new(format!(
            "--recipe device: the device's {} has no child group to stand for its background work (it has {}); read it where Android or systemd made its groups",
            dev.hierarchy.as_deref().unwrap_or("system (no I/O hierarchy)"),
            dev.groups.iter().map(|g| g.path.as_str()).collect::<Vec<_>>().join(", ")
        )));
    };
    let from = format!(
        "the device's {} (kernel {})",
        dev.hierarchy.as_deref().unwrap_or("-"),
        dev.kernel
    );
    let mut groups = vec![("target.cgroup".to_string(), "root".to_string())];
    sources.push(format!(
        "target.cgroup=root: the device's foreground in its root group, the load standing for its {} ({from})",
        bg.path
    ));
    for (file, text) in &bg.values {
        let lab = in_lab(file, lab_v2);
        match settable(file, text) {
            Some(v) if has(&lab) && v != "-" => {
                sources.push(format!("cg.load.{lab}={v}: {}/{file} reads {text:?}", bg.path));
                groups.push((format!("cg.load.{lab}"), v));
            }
            Some(_) => notes.push(format!(
                "{}/{file} = {text:?} on the device: this lab's groups have no {lab}; left out",
                bg.path
            )),
            None => notes.push(format!(
                "{}/{file} = {text:?} on the device: keyed by the device's own disks (or empty), so not reproduced",
                bg.path
            )),
        }
    }
    if let Some(root) = dev.groups.iter().find(|g| g.path == "/") {
        for (file, text) in &root.values {
            let lab = in_lab(file, lab_v2);
            let Some(v) = settable(file, text) else {
                continue;
            };
            if file.ends_with("prio.class") && facts.root_files.contains(&lab) {
                sources.push(format!("cg.root.{lab}={v}: /{file} reads {text:?}"));
                groups.push((format!("cg.root.{lab}"), v));
            } else if !file.starts_with("io.cost") {
                notes.push(format!(
                    "the device's root {file} = {text:?}: not a value a lab's root takes (a root group has no weight; BFQ's none); left out"
                ));
            }
        }
    }
    singles.push(groups.clone());
    let Some(disk) = dev.disks.first() else {
        notes.push(format!(
            "the device had no disk under {}: its queue left out",
            dev.dir
        ));
        return Ok(());
    };
    let mut queue = groups;
    for q in ["read_ahead_kb", "nr_requests", "wbt_lat_usec"] {
        if let Some(v) = disk.queue.get(q) {
            sources.push(format!("{q}={v}: {}'s queue/{q}", disk.name));
            queue.push((q.to_string(), v.clone()));
        }
    }
    for (t, v) in &disk.iosched {
        if v.parse::<i64>().is_ok() {
            sources.push(format!(
                "iosched.{t}={v}: {}'s {} tunable",
                disk.name, disk.scheduler
            ));
            queue.push((format!("iosched.{t}"), v.clone()));
        }
    }
    notes.push(format!(
        "the device's {} runs {}: compare it with --schedulers {} (its tunables act only there); max_sectors_kb and discard_max_bytes are the device's hardware limits, not reproduced",
        disk.name, disk.scheduler, disk.scheduler
    ));
    singles.push(queue);
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A phone as AOSP 15's init.rc leaves it, with mq-deadline on UFS:
    /// the shape `iolab settings --json` prints on one.
    fn phone() -> DeviceSettings {
        let g = |p: &str, kv: &[(&str, &str)]| GroupValues {
            path: p.into(),
            values: kv
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        DeviceSettings {
            kernel: "6.1.75-android14-11".into(),
            hierarchy: Some("cgroup v1 blkio at /dev/blkio".into()),
            version: Some("v1".into()),
            groups: vec![
                g("/", &[("blkio.prio.class", "no-change")]),
                g(
                    "/background",
                    &[
                        ("blkio.prio.class", "restrict-to-be"),
                        ("blkio.throttle.read_bps_device", ""),
                    ],
                ),
            ],
            disks: vec![DiskValues {
                name: "sda".into(),
                scheduler: "mq-deadline".into(),
                queue: [
                    ("read_ahead_kb", "128"),
                    ("nr_requests", "64"),
                    ("wbt_lat_usec", "0"),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
                iosched: [("read_expire".to_string(), "500".to_string())].into(),
            }],
            dir: "/data".into(),
        }
    }

    fn lab(v: Version, files: &[&str], roots: &[&str]) -> super::super::recipe::Facts {
        super::super::recipe::Facts {
            hier: Some(Hierarchy {
                version: v,
                root: PathBuf::from("/sys/fs/cgroup"),
                home: PathBuf::from("/sys/fs/cgroup"),
            }),
            group_files: files.iter().map(|f| f.to_string()).collect(),
            root_files: roots.iter().map(|f| f.to_string()).collect(),
            kernel: (6, 1),
            device: None,
        }
    }

    #[test]
    fn a_phones_groups_and_queue_become_two_points_in_a_v2_lab() {
        let (mut singles, mut notes, mut sources) = (Vec::new(), Vec::new(), Vec::new());
        design(
            &phone(),
            &lab(Version::V2, &["io.prio.class", "io.bfq.weight"], &[]),
            &mut singles,
            &mut notes,
            &mut sources,
        )
        .unwrap();
        assert_eq!(singles.len(), 2);
        assert!(singles[0].contains(&("target.cgroup".into(), "root".into())));
        assert!(singles[0].contains(&("cg.load.io.prio.class".into(), "restrict-to-be".into())));
        assert!(singles[1].contains(&("nr_requests".into(), "64".into())));
        assert!(singles[1].contains(&("iosched.read_expire".into(), "500".into())));
        assert!(
            notes.iter().any(|n| n.contains("keyed by the device")),
            "{notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains("--schedulers mq-deadline")));
        assert!(sources
            .iter()
            .any(|s| s.contains("/background/blkio.prio.class")));
        // A lab without the class file says so instead.
        let (mut singles, mut notes) = (Vec::new(), Vec::new());
        design(
            &phone(),
            &lab(Version::V1, &[], &[]),
            &mut singles,
            &mut notes,
            &mut Vec::new(),
        )
        .unwrap();
        assert!(
            notes.iter().any(|n| n.contains("no blkio.prio.class")),
            "{notes:?}"
        );
        assert_eq!(
            singles[0],
            vec![("target.cgroup".to_string(), "root".to_string())]
        );
    }

    #[test]
    fn weights_read_as_their_number_and_the_json_round_trips() {
        assert_eq!(
            settable("io.bfq.weight", "default 10\n8:0 20"),
            Some("10".into())
        );
        assert_eq!(settable("io.max", "8:0 rbps=1"), None);
        assert_eq!(in_lab("blkio.bfq.weight", true), "io.bfq.weight");
        assert_eq!(in_lab("io.prio.class", false), "blkio.prio.class");
        let p = phone();
        let back: DeviceSettings =
            serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        let mut none = p.clone();
        none.groups.truncate(1);
        assert!(none.background().is_none());
    }
}
