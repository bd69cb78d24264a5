//! What else shapes a disk's queue besides its scheduler, recorded with
//! an experiment so two results can be told apart by it: the I/O controls
//! of the cgroups this process runs in (cgroup v2's `io.max`,
//! `io.latency`, `io.weight`, the root's `io.cost.qos`/`io.cost.model`;
//! cgroup v1's blkio throttles and weights) and the CPU frequency
//! governors. (Per-device knobs — `wbt_lat_usec`, `nr_requests`,
//! `read_ahead_kb` — are in each device's snapshot.)

use std::path::Path;

use serde::{Deserialize, Serialize};

/// One non-empty control file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    /// Its path.
    pub path: String,
    /// Its contents, trimmed.
    pub value: String,
}

/// The queue-shaping state of this process's place in the system.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueShaping {
    /// Every non-empty I/O control on the way from this process's cgroups
    /// to the roots (v2 and the v1 blkio hierarchy).
    pub io_controls: Vec<Control>,
    /// `scaling_governor` values of the CPUs, each once (empty where
    /// cpufreq is absent, as in most VMs).
    pub cpu_governors: Vec<String>,
    /// What could not be read (a file or directory and the OS's reason):
    /// the lists above are then incomplete, not empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// The files read in each cgroup directory on the way to the root.
const V2_FILES: [&str; 4] = ["io.max", "io.latency", "io.weight", "io.bfq.weight"];
/// The files only the v2 root has.
const V2_ROOT_FILES: [&str; 2] = ["io.cost.qos", "io.cost.model"];
/// The v1 blkio files that shape a queue.
const V1_FILES: [&str; 5] = [
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device",
    "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
    "blkio.weight",
];

impl QueueShaping {
    /// Reads the live system's.
    pub fn read() -> QueueShaping {
        QueueShaping::read_in(Path::new("/proc"), Path::new("/sys"))
    }

    /// Reads under `proc` (this process's `self/cgroup`) and `sys`.
    pub fn read_in(proc: &Path, sys: &Path) -> QueueShaping {
        let mut unreadable = Vec::new();
        let own = proc.join("self/cgroup");
        let cgroups = std::fs::read_to_string(&own).unwrap_or_else(|e| {
            unreadable.push(format!("{}: {e}", own.display()));
            String::new()
        });
        let mut io_controls = Vec::new();
        for line in cgroups.lines() {
            let mut f = line.splitn(3, ':');
            let (_, controllers, path) = (f.next(), f.next(), f.next());
            let (Some(controllers), Some(path)) = (controllers, path) else {
                continue;
            };
            let (root, files): (std::path::PathBuf, &[&str]) = if controllers.is_empty() {
                // v2, possibly mounted at /sys/fs/cgroup/unified on hybrid hosts.
                let unified = sys.join("fs/cgroup/unified");
                let root = if unified.join("cgroup.controllers").exists() {
                    unified
                } else {
                    sys.join("fs/cgroup")
                };
                for f in V2_ROOT_FILES {
                    push(&mut io_controls, &root.join(f));
                }
                (root, &V2_FILES)
            } else if controllers.split(',').any(|c| c == "blkio") {
                (sys.join("fs/cgroup/blkio"), &V1_FILES)
            } else {
                continue;
            };
            let mut dir = root.join(path.trim_start_matches('/'));
            loop {
                for f in files {
                    push(&mut io_controls, &dir.join(f));
                }
                if dir == root || !dir.pop() {
                    break;
                }
            }
        }
        let mut cpu_governors: Vec<String> = Vec::new();
        let cpus = sys.join("devices/system/cpu");
        // Not there (no cpufreq in most VMs) is no governor; unreadable
        // is said.
        let names = crate::block::list_names(&cpus).unwrap_or_else(|e| {
            unreadable.push(e.to_string());
            Vec::new()
        });
        for name in names {
            if name
                .strip_prefix("cpu")
                .is_none_or(|n| n.parse::<u32>().is_err())
            {
                continue;
            }
            if let Ok(g) =
                std::fs::read_to_string(cpus.join(&name).join("cpufreq/scaling_governor"))
            {
                let g = g.trim().to_string();
                if !cpu_governors.contains(&g) {
                    cpu_governors.push(g);
                }
            }
        }
        QueueShaping {
            io_controls,
            cpu_governors,
            unreadable,
        }
    }
}

/// Adds `path` when it exists with something in it (a weight file always
/// has its default; a throttle file with no rule is empty).
fn push(out: &mut Vec<Control>, path: &Path) {
    if let Ok(v) = std::fs::read_to_string(path) {
        let value = v.trim().to_string();
        let path = path.to_string_lossy().into_owned();
        if !value.is_empty() && !out.iter().any(|c| c.path == path) {
            out.push(Control { path, value });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// What cannot be read is listed, not shown as "no controls, no
    /// governors"; what is not there (no cpufreq) is not listed.
    #[test]
    fn unreadable_files_are_listed_and_absent_ones_are_not() {
        let t = tempfile::tempdir().unwrap();
        let (proc, sys) = (t.path().join("proc"), t.path().join("sys"));
        std::fs::create_dir_all(&sys).unwrap();
        assert_eq!(
            QueueShaping::read_in(&proc, &sys).unreadable.len(),
            1,
            "no self/cgroup is unreadable, no cpu directory is not"
        );
        std::fs::create_dir_all(proc.join("self/cgroup")).unwrap();
        std::fs::create_dir_all(sys.join("devices/system")).unwrap();
        std::fs::write(sys.join("devices/system/cpu"), "").unwrap();
        let s = QueueShaping::read_in(&proc, &sys);
        assert_eq!(s.unreadable.len(), 2, "{s:?}");
        assert!(s.unreadable[0].contains("self/cgroup"), "{s:?}");
        assert!(s.unreadable[1].contains("devices/system/cpu"), "{s:?}");
    }

    #[test]
    fn v2_controls_on_the_way_to_the_root_and_governors() {
        let t = tempfile::tempdir().unwrap();
        let (proc, sys) = (t.path().join("proc"), t.path().join("sys"));
        std::fs::create_dir_all(proc.join("self")).unwrap();
        std::fs::write(proc.join("self/cgroup"), "0::/user.slice/app\n").unwrap();
        let cg = sys.join("fs/cgroup");
        std::fs::create_dir_all(cg.join("user.slice/app")).unwrap();
        std::fs::write(cg.join("io.cost.qos"), "8:0 enable=1 ctrl=auto\n").unwrap();
        std::fs::write(cg.join("user.slice/io.max"), "8:0 rbps=1048576 wbps=max\n").unwrap();
        std::fs::write(cg.join("user.slice/app/io.latency"), "").unwrap();
        for (cpu, g) in [
            ("cpu0", "schedutil"),
            ("cpu1", "schedutil"),
            ("cpufreq", "x"),
        ] {
            let d = sys.join("devices/system/cpu").join(cpu).join("cpufreq");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("scaling_governor"), format!("{g}\n")).unwrap();
        }
        let q = QueueShaping::read_in(&proc, &sys);
        let got: Vec<(&str, &str)> = q
            .io_controls
            .iter()
            .map(|c| (c.path.rsplit('/').next().unwrap(), c.value.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("io.cost.qos", "8:0 enable=1 ctrl=auto"),
                ("io.max", "8:0 rbps=1048576 wbps=max")
            ]
        );
        assert_eq!(q.cpu_governors, ["schedutil"]);
    }
}
