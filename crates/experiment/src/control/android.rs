//! Android's block-I/O groups as AOSP ships them, release by release, for
//! `--recipe android-profiles`. Read from platform/system/core at each
//! release tag (rootdir/init.rc, libprocessgroup/profiles/
//! task_profiles.json and cgroups.json):
//!
//! - blkio is cgroup v1 at `/dev/blkio` in every release 12–15 (moves to
//!   v2 were made and reverted on main four times, the last by d0ce4ca33cd5,
//!   b/314861914), with two groups: the root and `background`.
//! - task_profiles.json only moves tasks: `LowIoPriority` joins
//!   `background` (background apps, SCHED_SP_SYSTEM, dex2oat, OTA);
//!   `Normal`/`High`/`MaxIoPriority` join the root (foreground and top
//!   app). No release sets a blkio attribute there: the `IoPrioClass`
//!   attribute (9bba87244d6b) was reverted before any tag.
//! - The values are init.rc's, the same in every release: the root's
//!   blkio.weight 1000, background's blkio.weight 200 and blkio.bfq.weight
//!   10, blkio.group_idle 0 on both; from android-14.0.0_r50 (0cf102b70348,
//!   "Restore I/O priority support") also background's blkio.prio.class
//!   restrict-to-be. `promote-to-rt` for the root (7f3fe0aaf286) was
//!   reverted (4cb11951e2c7: eMMC devices rebooted under I/O load) in every
//!   android-15 tag, so iolab never sets it.
//!
//! So the top app shares the root group with everything not moved, and on
//! v1 with all of the page cache's writeback. The lab does the same: the
//! target in the hierarchy's root (`target.cgroup=root`), the load in
//! iolab's load group standing for `background`.

/// One release as shipped.
struct Release {
    /// What users call it.
    name: &'static str,
    /// The tag read.
    tag: &'static str,
    /// init.rc's blkio block at that tag.
    lines: &'static str,
    /// The line writing background's `blkio.prio.class restrict-to-be`.
    restrict_to_be: Option<u32>,
}

/// AOSP 12 to 15; 14-QPR2 is the first tag with restrict-to-be.
const RELEASES: [Release; 5] = [
    Release {
        name: "12",
        tag: "android-12.0.0_r1",
        lines: "208-222",
        restrict_to_be: None,
    },
    Release {
        name: "13",
        tag: "android-13.0.0_r1",
        lines: "242-260",
        restrict_to_be: None,
    },
    Release {
        name: "14",
        tag: "android-14.0.0_r1",
        lines: "224-242",
        restrict_to_be: None,
    },
    Release {
        name: "14-QPR2",
        tag: "android-14.0.0_r50",
        lines: "231-250",
        restrict_to_be: Some(250),
    },
    Release {
        name: "15",
        tag: "android-15.0.0_r30",
        lines: "192-211",
        restrict_to_be: Some(211),
    },
];

/// Adds Android's points to a recipe's `singles`: its topology with no
/// value, then each release's values that this kernel's groups have (the
/// releases that come out alike are one point); what cannot be set here
/// goes to `notes`, every value's source to `sources`.
pub(super) fn design(
    has: &dyn Fn(&str) -> bool,
    pfx: &str,
    singles: &mut Vec<Vec<(String, String)>>,
    notes: &mut Vec<String>,
    sources: &mut Vec<String>,
) {
    let topology = ("target.cgroup".to_string(), "root".to_string());
    singles.push(vec![topology.clone()]);
    sources.push(
        "target.cgroup=root: task_profiles.json's Max/High/NormalIoPriority join the blkio root (\"Path\": \"\"), so the top app shares it with everything not moved; LowIoPriority joins background, which iolab's load group stands for (every tag android-12.0.0_r1 … android-15.0.0_r30)".into(),
    );
    let bfq = format!("{pfx}.bfq.weight");
    let prio = format!("{pfx}.prio.class");
    let all: Vec<&str> = RELEASES.iter().map(|r| r.tag).collect();
    // Each distinct set of values, with the releases that ship it.
    type Values = Vec<(String, String)>;
    let mut per_release: Vec<(Values, Vec<&'static str>)> = Vec::new();
    for r in &RELEASES {
        let mut values = vec![topology.clone()];
        if has(&bfq) {
            values.push((format!("cg.load.{bfq}"), "10".into()));
        }
        if r.restrict_to_be.is_some() && has(&prio) {
            values.push((format!("cg.load.{prio}"), "restrict-to-be".into()));
        }
        match per_release.iter_mut().find(|(v, _)| *v == values) {
            Some((_, names)) => names.push(r.name),
            None => per_release.push((values, vec![r.name])),
        }
    }
    let blocks: Vec<String> = RELEASES
        .iter()
        .map(|r| format!("{} l.{}", r.tag, r.lines))
        .collect();
    if has(&bfq) {
        sources.push(format!(
            "cg.load.{bfq}=10: rootdir/init.rc `write /dev/blkio/background/blkio.bfq.weight 10` ({})",
            blocks.join(", ")
        ));
    } else {
        notes.push(format!(
            "background's blkio.bfq.weight 10 (init.rc, every release): this kernel's groups have no {bfq} (BFQ with CONFIG_BFQ_GROUP_IOSCHED, loaded); left out"
        ));
    }
    let late: Vec<String> = RELEASES
        .iter()
        .filter_map(|r| r.restrict_to_be.map(|l| format!("{} l.{l}", r.tag)))
        .collect();
    if has(&prio) {
        sources.push(format!(
            "cg.load.{prio}=restrict-to-be: rootdir/init.rc `write /dev/blkio/background/blkio.prio.class restrict-to-be`, from android-14.0.0_r50 (0cf102b70348) on ({})",
            late.join(", ")
        ));
    } else {
        notes.push(format!(
            "background's blkio.prio.class restrict-to-be (init.rc from android-14.0.0_r50): this kernel's groups have no {prio} (CONFIG_BLK_CGROUP_IOPRIO); left out, so 14-QPR2 and 15 run as 12"
        ));
    }
    notes.push(
        "the root's blkio.weight 1000 and background's blkio.weight 200 (init.rc, every release): CFQ's weights, gone with CFQ in Linux 5.0; BFQ's root group takes no weight. A GKI kernel refuses these writes too; left out".into(),
    );
    notes.push(
        "blkio.group_idle 0 on the root and background (init.rc, every release): CFQ's, gone with it; left out".into(),
    );
    notes.push(format!(
        "promote-to-rt for the root group: on main only, reverted before every android-15 tag (4cb11951e2c7: eMMC devices rebooted); never set. Tags read: {}",
        all.join(", ")
    ));
    for (values, names) in per_release {
        let release = format!("android {}", names.join(", "));
        sources.push(format!(
            "{release}: {}",
            values
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
        singles.push(values);
    }
}
