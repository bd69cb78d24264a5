//! A snapshot of what a measurement depends on, stored with every
//! experiment so two results can be compared (or not) knowingly: kernel,
//! CPUs, memory, writeback settings, the device under test and the
//! filesystem the target's files live on.
//!
//! Every field that may be missing is an `Option`: a snapshot never fails,
//! it records what it could read. Readers take a root (`/proc`, `/sys`) so
//! tests feed them fixtures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::block::BlockDev;
use crate::error::read_trimmed;

/// Everything [`Environment::capture`] records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Version of iolab that took the snapshot.
    pub iolab_version: String,
    /// The running kernel, as uname(2) reports it.
    pub kernel: Kernel,
    /// Online CPUs (`/sys/devices/system/cpu/online`).
    pub cpus_online: Option<u32>,
    /// `MemTotal` from `/proc/meminfo`, in bytes.
    pub mem_total_bytes: Option<u64>,
    /// Writeback settings (`/proc/sys/vm/dirty_*`).
    pub vm_dirty: VmDirty,
    /// The block device under test, if one was given (the first, when
    /// there are several).
    pub device: Option<DeviceSnapshot>,
    /// Every device whose scheduler is under test (the disks under an
    /// in-place directory's stack).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<DeviceSnapshot>,
    /// The storage stack of an in-place directory: its filesystem and the
    /// devices down to those whose scheduler was switched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<crate::stack::Stack>,
    /// What else shapes the queue: cgroup I/O controls on this process's
    /// path, CPU frequency governors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_shaping: Option<crate::shaping::QueueShaping>,
    /// The filesystem holding the given path, if one was given.
    pub filesystem: Option<Filesystem>,
    /// Which machine it was (absent in snapshots taken before iolab
    /// recorded it): results imported from a board or a phone keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
}

/// The identity of a machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// `uname -n`.
    pub hostname: String,
    /// A stable identifier: `/etc/machine-id` (systemd and most
    /// distributions), else Android's `ro.serialno`, else the boot id
    /// (`/proc/sys/kernel/random/boot_id`, stable until the next boot).
    pub machine_id: String,
    /// Where `machine_id` came from: `machine-id`, `serialno` or `boot_id`.
    pub id_source: String,
}

impl Host {
    /// This machine.
    pub fn current() -> Host {
        Host::read(Path::new("/"))
    }

    /// The identity under file-system root `root` (tests pass a fixture);
    /// the hostname is always this system's.
    pub fn read(root: &Path) -> Host {
        let hostname = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        let file = |rel: &str| read_trimmed(&root.join(rel)).ok().filter(|s| !s.is_empty());
        let (machine_id, id_source) =
            if let Some(id) = file("etc/machine-id").or_else(|| file("var/lib/dbus/machine-id")) {
                (id, "machine-id")
            } else if let Some(s) = android_serial(root) {
                (s, "serialno")
            } else {
                (
                    file("proc/sys/kernel/random/boot_id").unwrap_or_else(|| hostname.clone()),
                    "boot_id",
                )
            };
        Host {
            hostname,
            machine_id,
            id_source: id_source.to_string(),
        }
    }
}

/// Android's `ro.serialno`, through `getprop` (properties live in shared
/// memory, not in a file a reader could parse).
fn android_serial(root: &Path) -> Option<String> {
    if !crate::paths::is_android_in(root) || root != Path::new("/") {
        return None;
    }
    let out = std::process::Command::new("getprop")
        .arg("ro.serialno")
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// uname(2) fields that identify a kernel build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    /// Release, e.g. `6.18.0-1-amd64` (`uname -r`).
    pub release: String,
    /// Build version string (`uname -v`).
    pub version: String,
    /// Hardware name, e.g. `x86_64` (`uname -m`).
    pub machine: String,
}

/// The `vm.dirty_*` sysctls that decide when writers are throttled
/// (Documentation/admin-guide/sysctl/vm.rst). The `_bytes` forms override
/// the `_ratio` forms when non-zero.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmDirty {
    /// `vm.dirty_ratio`, percent of available memory.
    pub dirty_ratio: Option<u64>,
    /// `vm.dirty_background_ratio`, percent of available memory.
    pub dirty_background_ratio: Option<u64>,
    /// `vm.dirty_bytes` (0 = use the ratio).
    pub dirty_bytes: Option<u64>,
    /// `vm.dirty_background_bytes` (0 = use the ratio).
    pub dirty_background_bytes: Option<u64>,
    /// `vm.dirty_expire_centisecs`.
    pub dirty_expire_centisecs: Option<u64>,
    /// `vm.dirty_writeback_centisecs`.
    pub dirty_writeback_centisecs: Option<u64>,
}

/// The block device under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSnapshot {
    /// Kernel name, e.g. `loop3`.
    pub name: String,
    /// `device/model`, when the driver exposes one (virtio and loop do not).
    pub model: Option<String>,
    /// `queue/rotational`.
    pub rotational: Option<bool>,
    /// The active I/O scheduler.
    pub scheduler: Option<String>,
    /// Every scheduler the device offers.
    pub schedulers_available: Vec<String>,
    /// The active scheduler's tunables (`queue/iosched/*`).
    pub iosched_tunables: BTreeMap<String, String>,
    /// `queue/read_ahead_kb`.
    pub read_ahead_kb: Option<u64>,
    /// `queue/nr_requests`.
    pub nr_requests: Option<u64>,
    /// For a loop device, the file behind it (`loop/backing_file`).
    pub backing_file: Option<PathBuf>,
    /// `queue/wbt_lat_usec`: writeback throttling's latency target (0:
    /// off), which holds back buffered writes before any scheduler.
    #[serde(default)]
    pub wbt_lat_usec: Option<u64>,
    /// What could not be read (the file and the OS's reason): a field
    /// above left empty for it is unknown, not absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// The filesystem that holds a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filesystem {
    /// Mount point.
    pub mount_point: PathBuf,
    /// Filesystem type, e.g. `ext4`.
    pub fstype: String,
    /// Mount source, e.g. `/dev/loop3`.
    pub source: String,
    /// Mount and superblock options, e.g. `rw,relatime,rw,data=ordered`.
    pub options: String,
}

impl Environment {
    /// Snapshots the live system, with the device and the filesystem of
    /// `path` when given.
    pub fn capture(dev: Option<&BlockDev>, path: Option<&Path>) -> Environment {
        Environment::capture_place(dev.map(std::slice::from_ref).unwrap_or(&[]), path, None)
    }

    /// Snapshots the live system for an experiment on `disks` (the
    /// devices whose scheduler is under test), the filesystem of `path`
    /// and, in place, its storage `stack`.
    pub fn capture_place(
        disks: &[BlockDev],
        path: Option<&Path>,
        stack: Option<&crate::stack::Stack>,
    ) -> Environment {
        let (proc_root, sys_root) = (Path::new("/proc"), Path::new("/sys"));
        let snapshots: Vec<DeviceSnapshot> = disks.iter().map(DeviceSnapshot::read).collect();
        Environment {
            iolab_version: env!("CARGO_PKG_VERSION").to_string(),
            kernel: Kernel::current(),
            cpus_online: read_cpus_online(sys_root),
            mem_total_bytes: read_mem_total(proc_root),
            vm_dirty: VmDirty::read(proc_root),
            device: snapshots.first().cloned(),
            disks: if snapshots.len() > 1 {
                snapshots
            } else {
                Vec::new()
            },
            stack: stack.cloned(),
            queue_shaping: Some(crate::shaping::QueueShaping::read()),
            filesystem: path.and_then(Filesystem::of),
            host: Some(Host::current()),
        }
    }
}

impl Kernel {
    /// The running kernel.
    pub fn current() -> Kernel {
        let u = rustix::system::uname();
        let s = |c: &std::ffi::CStr| c.to_string_lossy().into_owned();
        Kernel {
            release: s(u.release()),
            version: s(u.version()),
            machine: s(u.machine()),
        }
    }
}

impl VmDirty {
    /// Reads `<proc>/sys/vm/dirty_*`.
    pub fn read(proc_root: &Path) -> VmDirty {
        let vm = proc_root.join("sys/vm");
        let get = |name: &str| read_u64(&vm.join(name));
        VmDirty {
            dirty_ratio: get("dirty_ratio"),
            dirty_background_ratio: get("dirty_background_ratio"),
            dirty_bytes: get("dirty_bytes"),
            dirty_background_bytes: get("dirty_background_bytes"),
            dirty_expire_centisecs: get("dirty_expire_centisecs"),
            dirty_writeback_centisecs: get("dirty_writeback_centisecs"),
        }
    }
}

impl DeviceSnapshot {
    /// Reads what sysfs says about `dev` (under whatever root it was
    /// opened with).
    pub fn read(dev: &BlockDev) -> DeviceSnapshot {
        let mut unreadable = Vec::new();
        let schedulers = dev
            .schedulers()
            .map_err(|e| unreadable.push(e.to_string()))
            .ok();
        DeviceSnapshot {
            name: dev.name.clone(),
            model: dev.model(),
            rotational: dev.rotational().ok(),
            scheduler: schedulers.as_ref().map(|s| s.current.clone()),
            schedulers_available: schedulers.map_or_else(Vec::new, |s| s.available),
            iosched_tunables: dev.iosched_tunables().into_iter().collect(),
            read_ahead_kb: read_u64(&dev.queue_path("read_ahead_kb")),
            nr_requests: read_u64(&dev.queue_path("nr_requests")),
            backing_file: read_trimmed(&dev.sysfs.join("loop/backing_file"))
                .ok()
                .map(PathBuf::from),
            wbt_lat_usec: read_u64(&dev.queue_path("wbt_lat_usec")),
            unreadable,
        }
    }
}

impl Filesystem {
    /// The mount holding `path` in this process's mount namespace.
    pub fn of(path: &Path) -> Option<Filesystem> {
        crate::mounts::containing(path).map(|m| Filesystem {
            mount_point: m.target,
            fstype: m.fstype,
            source: m.source,
            options: m.options,
        })
    }
}

/// `MemTotal` from `<proc>/meminfo`, in bytes.
pub fn read_mem_total(proc_root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(proc_root.join("meminfo")).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// Number of CPUs in `<sys>/devices/system/cpu/online` (a cpulist such as
/// `0-3,8,10-11`, see Documentation/admin-guide/cputopology.rst).
pub fn read_cpus_online(sys_root: &Path) -> Option<u32> {
    let text = read_trimmed(&sys_root.join("devices/system/cpu/online")).ok()?;
    parse_cpulist_count(&text)
}

/// Counts the CPUs in a cpulist.
pub fn parse_cpulist_count(text: &str) -> Option<u32> {
    let mut n = 0;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<u32>().ok()?.checked_sub(a.parse().ok()?)? + 1,
            None => part.parse::<u32>().map(|_| 1).ok()?,
        };
    }
    Some(n)
}

fn read_u64(path: &Path) -> Option<u64> {
    read_trimmed(path).ok()?.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn the_host_is_the_machine_id_else_the_boot_id() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "proc/sys/kernel/random/boot_id", "b00t\n");
        let h = Host::read(d.path());
        assert_eq!(
            (h.machine_id.as_str(), h.id_source.as_str()),
            ("b00t", "boot_id")
        );
        write(d.path(), "etc/machine-id", "0123abcd\n");
        let h = Host::read(d.path());
        assert_eq!(
            (h.machine_id.as_str(), h.id_source.as_str()),
            ("0123abcd", "machine-id")
        );
        // The host name is the running system's (uname -n).
        let uname = std::process::Command::new("uname")
            .arg("-n")
            .output()
            .unwrap();
        assert_eq!(h.hostname, String::from_utf8_lossy(&uname.stdout).trim());
    }

    #[test]
    fn fixture_proc_and_sys() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(
            r,
            "proc/meminfo",
            "MemTotal:       24576000 kB\nMemFree: 1 kB\n",
        );
        write(r, "proc/sys/vm/dirty_ratio", "20\n");
        write(r, "proc/sys/vm/dirty_bytes", "0\n");
        write(r, "sys/devices/system/cpu/online", "0-3,8,10-11\n");
        assert_eq!(read_mem_total(&r.join("proc")), Some(24576000 * 1024));
        assert_eq!(read_cpus_online(&r.join("sys")), Some(7));
        let vm = VmDirty::read(&r.join("proc"));
        assert_eq!(vm.dirty_ratio, Some(20));
        assert_eq!(vm.dirty_bytes, Some(0));
        assert_eq!(vm.dirty_expire_centisecs, None);
    }

    #[test]
    fn fixture_device() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(r, "block/loop9/queue/scheduler", "none [bfq]\n");
        write(r, "block/loop9/queue/iosched/slice_idle", "8\n");
        write(r, "block/loop9/queue/rotational", "0\n");
        write(r, "block/loop9/queue/read_ahead_kb", "128\n");
        write(r, "block/loop9/loop/backing_file", "/var/lib/iolab/a.img\n");
        let dev = BlockDev::from_name_in(r, "loop9").unwrap();
        let info = DeviceSnapshot::read(&dev);
        assert_eq!(info.scheduler.as_deref(), Some("bfq"));
        assert_eq!(info.schedulers_available, ["none", "bfq"]);
        assert_eq!(info.iosched_tunables["slice_idle"], "8");
        assert_eq!(info.rotational, Some(false));
        assert_eq!(info.read_ahead_kb, Some(128));
        assert_eq!(info.nr_requests, None);
        assert_eq!(info.model, None);
        assert_eq!(
            info.backing_file,
            Some(PathBuf::from("/var/lib/iolab/a.img"))
        );
    }

    #[test]
    fn cpulists() {
        assert_eq!(parse_cpulist_count("0"), Some(1));
        assert_eq!(parse_cpulist_count("0-1"), Some(2));
        assert_eq!(parse_cpulist_count("3-1"), None);
        assert_eq!(parse_cpulist_count("x"), None);
    }

    #[test]
    fn live_capture_round_trips_through_json() {
        let env = Environment::capture(None, Some(Path::new("/")));
        assert!(!env.kernel.release.is_empty());
        assert!(env.cpus_online.is_some_and(|n| n >= 1));
        assert!(env.mem_total_bytes.is_some_and(|b| b > 0));
        assert!(env.vm_dirty.dirty_ratio.is_some());
        assert_eq!(env.filesystem.as_ref().unwrap().mount_point, Path::new("/"));
        let json = serde_json::to_string(&env).unwrap();
        let back: Environment = serde_json::from_str(&json).unwrap();
        assert_eq!(back, env);
    }
}
