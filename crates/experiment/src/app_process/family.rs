//! The app's other processes: an app is more than the process named after
//! its package. Its `android:process` components (`PKG:service`) run as
//! its uid in processes zygote forks on demand; its isolated services
//! and WebView's renderer run as isolated uids (Process.java:
//! FIRST_ISOLATED_UID 99000..99999, app-zygote ones 90000..98999), the
//! renderer forked by `webview_zygote`, an app's own isolated services by
//! its app zygote (`PKG_zygote`). A process born during the start is the
//! app's when its uid is the package's, or when it is isolated and was
//! forked by one of those zygotes; until zygote's child specialises (its
//! setresuid), it is still zygote's uid and stays pending.

use std::collections::HashMap;

use serde::Serialize;

/// How long a process born during the start may stay unspecialised (still
/// root, zygote's uid) before it is dropped as not the app's.
const PENDING_NS: u64 = 10_000_000_000;

/// Another process of the app, found during the start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Member {
    /// Its pid.
    pub pid: i32,
    /// Its name (argv[0]) at the end of the start.
    pub name: String,
    /// Its uid.
    pub uid: u32,
    /// Why it is the app's: `uid` (the package's) or `isolated uid,
    /// forked by webview_zygote` (or the app's app zygote).
    pub found_by: String,
    /// When iolab set it, ms from the launch.
    pub set_after_ms: f64,
    /// Threads set then.
    pub threads_set: usize,
    /// Its own I/O at the end of the start (`/proc/PID/io`).
    pub io: Option<iolab_sys::process::IoCounters>,
    /// CLOCK_MONOTONIC ns it was set; made `set_after_ms` at the end.
    #[serde(skip)]
    pub set_ns: u64,
}

/// Processes born during the start, until each is told the app's or not.
#[derive(Debug, Default)]
pub struct Family {
    /// pid → (birth, CLOCK_MONOTONIC ns; argv[0] of the process that
    /// forked it; that process's uid).
    pending: HashMap<i32, (u64, String, Option<u32>)>,
    /// The app's other processes.
    pub members: Vec<Member>,
}

/// The app's uid and package, what [`Family::classify`] judges by.
#[derive(Debug, Clone)]
pub struct Owner {
    /// The package.
    pub package: String,
    /// Its uid.
    pub uid: u32,
}

/// Whether an isolated process forked by `parent` can be the app's.
fn isolated_of(uid: u32, parent: &str, package: &str) -> bool {
    let app_id = uid % 100_000;
    let isolated = (99_000..=99_999).contains(&app_id) || (90_000..=98_999).contains(&app_id);
    isolated && (parent == "webview_zygote" || parent == format!("{package}_zygote"))
}

/// Whether `name` (a process's argv[0]) is a zygote: only a zygote's
/// child can be an app's process (what else forks as an app's uid is the
/// app's own child, which inherits its settings).
pub fn is_zygote(name: &str) -> bool {
    matches!(
        name,
        "zygote64" | "zygote" | "usap64" | "usap32" | "webview_zygote"
    ) || name.ends_with("_zygote")
}

impl Family {
    /// A process forked while watching, by a process named `parent`:
    /// pending when that is a zygote.
    pub fn birth(&mut self, pid: i32, at_ns: u64, parent: String, parent_uid: Option<u32>) {
        if self.pending.len() < 4096 && is_zygote(&parent) {
            self.pending.insert(pid, (at_ns, parent, parent_uid));
        }
    }

    /// Processes of the USAP pool alive when watching began (`usap64`,
    /// `usap32`): forked before the launch, any of them may become one of
    /// the app's processes (a `:service` the app starts).
    pub fn pool(&mut self, at_ns: u64) -> std::io::Result<()> {
        for pid in super::pids()? {
            if let Some(c) = super::comm(pid) {
                if c == "usap64" || c == "usap32" {
                    self.birth(pid, at_ns, "zygote64".into(), Some(0));
                }
            }
        }
        Ok(())
    }

    /// Looks at every pending process: the app's when its uid is the
    /// package's (or an isolated uid a WebView or app zygote gave it);
    /// still pending while it has its zygote's uid (root for zygote64,
    /// 1053 for webview_zygote: not specialised yet); otherwise not the
    /// app's. Returns the new members' pids (`main` excluded: it is the
    /// app itself).
    pub fn classify(
        &mut self,
        owner: &Owner,
        main: Option<i32>,
        now_ns: u64,
    ) -> Vec<(i32, u32, String)> {
        let mut found = Vec::new();
        self.pending.retain(|&pid, (born, parent, parent_uid)| {
            if Some(pid) == main {
                return false;
            }
            let Some(uid) = uid_of(pid) else {
                return false; // gone
            };
            if uid == owner.uid {
                found.push((pid, uid, "uid".to_string()));
                return false;
            }
            if isolated_of(uid, parent, &owner.package) {
                found.push((pid, uid, format!("isolated uid, forked by {parent}")));
                return false;
            }
            (uid == 0 || Some(uid) == *parent_uid) && now_ns.saturating_sub(*born) < PENDING_NS
        });
        found
    }
}

/// The real uid of `pid` (`/proc/PID/status`), None when it is gone.
pub fn uid_of(pid: i32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn isolated_processes_are_the_apps_only_from_its_zygotes() {
        assert!(isolated_of(99_012, "webview_zygote", "com.x"));
        assert!(isolated_of(1_099_012, "webview_zygote", "com.x"));
        assert!(isolated_of(90_005, "com.x_zygote", "com.x"));
        assert!(!isolated_of(90_005, "com.y_zygote", "com.x"));
        assert!(!isolated_of(99_012, "zygote64", "com.x"));
        assert!(!isolated_of(10_123, "webview_zygote", "com.x"));
    }

    /// A child of this test's uid is the app's when the owner's uid is
    /// ours, and is dropped when it is not (and is not root).
    #[test]
    fn a_process_of_the_packages_uid_is_a_member() {
        let mut child = std::process::Command::new("sleep")
            .arg("3")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let me = uid_of(std::process::id() as i32).unwrap();
        let mut f = Family::default();
        // Not a zygote's child: never one of the app's.
        f.birth(pid, 0, "sh".into(), None);
        assert!(f
            .classify(
                &Owner {
                    package: "com.x".into(),
                    uid: me
                },
                None,
                1
            )
            .is_empty());
        f.birth(pid, 0, "zygote64".into(), Some(0));
        let found = f.classify(
            &Owner {
                package: "com.x".into(),
                uid: me,
            },
            None,
            1,
        );
        assert_eq!(found, vec![(pid, me, "uid".to_string())]);
        f.birth(pid, 0, "zygote64".into(), Some(0));
        let other = f.classify(
            &Owner {
                package: "com.x".into(),
                uid: me + 1,
            },
            None,
            1,
        );
        assert!(other.is_empty());
        // Root is zygote's uid before setresuid: still pending then.
        assert_eq!(f.pending.len(), usize::from(me == 0));
        let _ = child.kill();
        let _ = child.wait();
    }
}
