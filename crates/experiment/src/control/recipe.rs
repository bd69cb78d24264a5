//! Designs for the question people ask after "how slow?": "what do I set
//! so it stops?". A recipe is a small list of points, chosen from what
//! this system has (cgroup v2 or v1 blkio, which files a group has, which
//! schedulers are compared), so it runs anywhere and says what it left out
//! and why. docs/CONTROL.md gives each setting's rationale.

use iolab_sys::UsageError;

use super::android;
use super::cgroup::{Hierarchy, Version};
use super::points::Point;

/// The recipes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Recipe {
    /// The baseline, each protection of the start-up alone (no writeback
    /// throttling, the load's I/O at idle priority, the target's group
    /// weighted 10:1, the load's group at idle class, a latency target on
    /// the target's group), and all of them together.
    ProtectForeground,
    /// Android's block-I/O groups as AOSP 12–15 ship them (system/core
    /// rootdir/init.rc and task_profiles.json): the top app in the root
    /// group, background work in `background` with BFQ weight 10 (and,
    /// from android-14.0.0_r50, restrict-to-be), each value with its
    /// source; against the same topology without the values, and iolab's
    /// plain groups.
    AndroidProfiles,
    /// A device's own groups and queue, as `iolab settings --json` read
    /// them there (`--device-settings FILE`): its topology and values,
    /// then with its queue and scheduler tunables, against iolab's plain
    /// groups.
    Device,
}

/// What a recipe needs to know about the system.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The hierarchy, when there is one.
    pub hier: Option<Hierarchy>,
    /// The files a group iolab makes has there.
    pub group_files: Vec<String>,
    /// The root's files iolab can set.
    pub root_files: Vec<String>,
    /// The kernel's (major, minor) version.
    pub kernel: (u32, u32),
    /// A device's settings, for `--recipe device`.
    pub device: Option<super::device::DeviceSettings>,
}

/// A recipe's points and the lines saying what it left out.
#[derive(Debug, Clone)]
pub struct Design {
    /// The points, the baseline first.
    pub points: Vec<Point>,
    /// What was left out, and why (printed before the plan).
    pub notes: Vec<String>,
    /// Where each value comes from (printed before the plan).
    pub sources: Vec<String>,
}

impl Recipe {
    /// The recipe's points on a system with `facts`.
    pub fn design(self, facts: &Facts) -> Result<Design, UsageError> {
        let has = |f: &str| facts.group_files.iter().any(|g| g == f);
        let v2 = facts.hier.as_ref().map(|h| h.version) == Some(Version::V2);
        let pfx = if v2 { "io" } else { "blkio" };
        let mut notes = Vec::new();
        let mut sources = Vec::new();
        let mut singles: Vec<Vec<(String, String)>> = Vec::new();
        let weight = [format!("{pfx}.bfq.weight"), "io.weight".to_string()]
            .into_iter()
            .filter(|f| has(f))
            .collect::<Vec<_>>();
        let prio = format!("{pfx}.prio.class");
        match self {
            Recipe::ProtectForeground => {
                singles.push(vec![("wbt_lat_usec".into(), "0".into())]);
                singles.push(vec![("load.ioprio".into(), "idle".into())]);
                if facts.hier.is_none() {
                    notes.push(
                        "no cgroup I/O controller here: the recipe has no cgroup points".into(),
                    );
                } else {
                    if weight.is_empty() {
                        notes.push(format!(
                            "no group weight here (neither {pfx}.bfq.weight nor io.weight): left out"
                        ));
                    } else {
                        singles.push(
                            weight
                                .iter()
                                .map(|f| (format!("cg.target.{f}"), TARGET_WEIGHT.to_string()))
                                .collect(),
                        );
                    }
                    if has(&prio) {
                        singles.push(vec![(format!("cg.load.{prio}"), "idle".into())]);
                    } else {
                        notes.push(format!(
                            "no {prio} here (CONFIG_BLK_CGROUP_IOPRIO): the load's idle class left out"
                        ));
                    }
                    if has("io.latency") {
                        singles.push(vec![("cg.target.io.latency".into(), "10000".into())]);
                    } else if v2 {
                        notes.push(
                            "no io.latency here (CONFIG_BLK_CGROUP_IOLATENCY): its point left out"
                                .into(),
                        );
                    }
                }
                let all: Vec<(String, String)> = singles.iter().flatten().cloned().collect();
                singles.push(all);
            }
            Recipe::AndroidProfiles => {
                if facts.hier.is_none() {
                    return Err(UsageError::new(
                        "--recipe android-profiles needs a cgroup I/O controller (v1 blkio as Android mounts it at /dev/blkio, or v2 io); this system has neither",
                    ));
                }
                android::design(&has, pfx, &mut singles, &mut notes, &mut sources);
            }
            Recipe::Device => {
                let Some(dev) = &facts.device else {
                    return Err(UsageError::new(
                        "--recipe device needs --device-settings FILE: what `iolab settings --json` printed on the device (on a phone: iolab remote --adb SERIAL -- settings --json > phone.json)",
                    ));
                };
                if facts.hier.is_none() {
                    return Err(UsageError::new(
                        "--recipe device needs a cgroup I/O controller here (v1 blkio or v2 io) to reproduce the device's groups; this system has neither",
                    ));
                }
                super::device::design(dev, facts, &mut singles, &mut notes, &mut sources)?;
            }
        }
        // plan_points puts the baseline (every axis left alone) first.
        let points = super::points::plan_points(&[], &singles);
        Ok(Design {
            points,
            notes,
            sources,
        })
    }
}

/// The target's group weight: 10:1 against the default of 100, within
/// both BFQ's range (1..1000) and io.weight's (1..10000).
const TARGET_WEIGHT: u32 = 1000;

impl Facts {
    /// This system's: the hierarchy, and the files of a probe group of
    /// iolab's (made and removed through `guard`).
    pub fn probe(guard: &iolab_guard::Guard) -> Result<Facts, crate::ExperimentError> {
        // No I/O controller is a fact the design works with; an error
        // reading the system is an error.
        let hier = match Hierarchy::find() {
            Ok(h) => Some(h),
            Err(crate::ExperimentError::Usage(_)) => None,
            Err(e) => return Err(e),
        };
        let (group_files, root_files) = match &hier {
            Some(h) => (h.group_files(guard)?, h.root_files()),
            None => (Vec::new(), Vec::new()),
        };
        let release = rustix::system::uname()
            .release()
            .to_string_lossy()
            .into_owned();
        let mut nums = release
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse::<u32>().ok());
        let kernel = match (nums.next(), nums.next()) {
            (Some(major), Some(minor)) => (major, minor),
            _ => {
                return Err(UsageError::new(format!(
                    "the kernel release {release:?} has no MAJOR.MINOR: the recipe cannot tell which io.prio.class names it takes"
                ))
                .into())
            }
        };
        Ok(Facts {
            hier,
            group_files,
            root_files,
            kernel,
            device: None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn facts(v: Version, files: &[&str]) -> Facts {
        Facts {
            hier: Some(Hierarchy {
                version: v,
                root: PathBuf::from("/sys/fs/cgroup"),
                home: PathBuf::from("/sys/fs/cgroup"),
            }),
            group_files: files.iter().map(|f| f.to_string()).collect(),
            root_files: Vec::new(),
            kernel: (6, 1),
            device: None,
        }
    }

    #[test]
    fn protect_foreground_has_a_baseline_each_protection_and_all_together() {
        let d = Recipe::ProtectForeground
            .design(&facts(
                Version::V2,
                &["io.bfq.weight", "io.weight", "io.prio.class", "io.latency"],
            ))
            .unwrap();
        assert!(d.points[0].is_baseline());
        assert_eq!(d.points.len(), 1 + 5 + 1);
        let all = d.points.last().unwrap();
        assert_eq!(all.get("cg.load.io.prio.class"), Some("idle"));
        assert_eq!(all.get("cg.target.io.latency"), Some("10000"));
        assert!(d.notes.is_empty(), "{:?}", d.notes);
    }

    #[test]
    fn what_a_v1_host_lacks_is_left_out_and_said() {
        let d = Recipe::ProtectForeground
            .design(&facts(Version::V1, &["blkio.bfq.weight"]))
            .unwrap();
        assert_eq!(d.points.len(), 1 + 3 + 1);
        assert!(
            d.notes.iter().any(|n| n.contains("blkio.prio.class")),
            "{:?}",
            d.notes
        );
        let a = Recipe::AndroidProfiles
            .design(&facts(Version::V1, &["blkio.bfq.weight"]))
            .unwrap();
        // iolab's groups, Android's topology, its values (without
        // blkio.prio.class here, 14-QPR2 and 15 are 12's).
        assert_eq!(a.points.len(), 3, "{:?}", a.points);
        assert_eq!(a.points[1].get("target.cgroup"), Some("root"));
        assert_eq!(a.points[2].get("cg.load.blkio.bfq.weight"), Some("10"));
        assert!(a.sources.iter().any(|s| s.contains("android-12.0.0_r1")));
        assert!(a.notes.iter().any(|n| n.contains("blkio.weight 200")));
        assert!(Recipe::AndroidProfiles
            .design(&facts(Version::V1, &[]))
            .is_ok());
    }

    #[test]
    fn android_releases_differ_by_restrict_to_be_and_never_promote() {
        let a = Recipe::AndroidProfiles
            .design(&facts(
                Version::V1,
                &["blkio.bfq.weight", "blkio.prio.class"],
            ))
            .unwrap();
        assert_eq!(a.points.len(), 4, "{:?}", a.points);
        let late = &a.points[3];
        assert_eq!(late.get("cg.load.blkio.prio.class"), Some("restrict-to-be"));
        assert_eq!(a.points[2].get("cg.load.blkio.prio.class"), None);
        assert!(a.points.iter().all(|p| !p.text().contains("promote-to-rt")));
        assert!(a.sources.iter().any(|s| s.contains("android-14.0.0_r50")));
    }
}
