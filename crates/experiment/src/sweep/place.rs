//! Where a sweep runs: a temporary lab without a filesystem of its own
//! (every run makes one), or a real device the user gave — refused while
//! anything uses it, because the sweep formats it before every run.

use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_lab::{Fs, LabSpec};
use iolab_load::{job_from_options, run_to_completion, StartOptions};
use iolab_sys::block::BlockDev;
use iolab_sys::units::format_bytes;
use iolab_sys::UsageError;

use super::config::SweepPlace;
use super::SweepError;

/// A resolved place.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The device under test: formatted before every run, scheduler set per run.
    pub dev: BlockDev,
    /// Where each run's fresh filesystem is mounted.
    pub mountpoint: PathBuf,
    /// Human description for messages.
    pub what: String,
    /// The device's bandwidth when iolab set it (a throttled lab).
    pub bw_bytes: Option<u64>,
}

/// Makes the temporary lab (through `guard`, removed when it restores) or
/// checks the user's device.
pub fn resolve(guard: &Guard, place: &SweepPlace, force: bool) -> Result<Resolved, SweepError> {
    match place {
        SweepPlace::NewLab {
            size_bytes,
            bw_bytes,
        } => {
            let name = format!("sweep-{}", std::process::id());
            let spec = LabSpec {
                name: name.clone(),
                size_bytes: *size_bytes,
                fs: Fs::None,
                bw_bytes: *bw_bytes,
                ..LabSpec::default()
            };
            let lab = iolab_lab::up(guard, &spec)?;
            let bw = bw_bytes.map_or_else(
                || "unthrottled".to_string(),
                |b| iolab_sys::units::format_rate(b as f64),
            );
            Ok(Resolved {
                dev: lab.device().clone(),
                mountpoint: iolab_lab::meta::mountpoint(&name),
                what: format!(
                    "temporary lab {name} on {} ({}, {bw})",
                    lab.device().name,
                    format_bytes(*size_bytes)
                ),
                bw_bytes: *bw_bytes,
            })
        }
        SweepPlace::Device { device } => {
            let dev = check_device(device, force)?;
            Ok(Resolved {
                mountpoint: iolab_guard::run_dir().join(format!("sweep-{}", std::process::id())),
                what: format!("device {}", dev.dev_path().display()),
                dev,
                bw_bytes: None,
            })
        }
    }
}

/// Resolves `spec` to a whole disk and refuses it while it is in use, or
/// while it holds a filesystem or partition table, unless `force`.
pub fn check_device(spec: &str, force: bool) -> Result<BlockDev, SweepError> {
    let name = spec.strip_prefix("/dev/").unwrap_or(spec);
    if Path::new("/sys/class/block")
        .join(name)
        .join("partition")
        .exists()
    {
        return Err(UsageError::new(format!(
            "{spec} is a partition: the sweep formats a whole device and sets its scheduler; give the disk it is on"
        ))
        .into());
    }
    let dev = BlockDev::resolve(spec)?;
    if force {
        return Ok(dev);
    }
    let path = dev.dev_path();
    let destroy =
        "iolab sweep runs mkfs on the whole device before every run, destroying everything on it";
    let users = users_of(&dev);
    if !users.is_empty() {
        return Err(UsageError::new(format!(
            "refusing {}: it is in use ({}); {destroy}: pick an unused device, or pass --force if that is really intended",
            path.display(),
            users.join("; ")
        ))
        .into());
    }
    if let Some(what) = signature(&path) {
        return Err(UsageError::new(format!(
            "refusing {}: it holds {what}; {destroy}: pass --force to destroy it",
            path.display()
        ))
        .into());
    }
    Ok(dev)
}

/// What uses the disk or its partitions: mounts, stacked devices
/// (holders: device-mapper, md), loop devices over it, and any exclusive
/// opener the kernel knows of (O_EXCL fails with EBUSY: swap, filesystems
/// in other mount namespaces).
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
    let mounts = iolab_sys::mounts::read();
    let mut users = Vec::new();
    for (name, sysfs) in &parts {
        let devno = std::fs::read_to_string(sysfs.join("dev")).unwrap_or_default();
        for m in mounts.iter().filter(|m| m.devno == devno.trim()) {
            users.push(format!("{name} mounted on {}", m.target.display()));
        }
        let holders = list(&sysfs.join("holders"));
        if !holders.is_empty() {
            users.push(format!("{name} held by {}", holders.join(", ")));
        }
        for l in iolab_guard::loops_backed_by(&Path::new("/dev").join(name)) {
            users.push(format!("{name} backs {l}"));
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

fn list(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
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

/// Names what the first bytes of a device hold, if iolab recognises it:
/// the magic numbers blkid looks for (ext2/3/4 superblock magic 0xEF53 at
/// 1080, XFS "XFSB" at 0, Btrfs "_BHRfS_M" at 65600, GPT "EFI PART" at
/// 512, an MBR/boot sector's 0x55AA at 510).
pub fn signature(path: &Path) -> Option<&'static str> {
    use std::io::Read;
    let mut head = vec![0u8; 65_600 + 8];
    let mut f = std::fs::File::open(path).ok()?;
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => break,
        }
    }
    identify(&head[..n])
}

fn identify(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    if at(1080, &[0x53, 0xEF]) {
        Some("an ext2/3/4 filesystem")
    } else if at(0, b"XFSB") {
        Some("an XFS filesystem")
    } else if at(65_600, b"_BHRfS_M") {
        Some("a Btrfs filesystem")
    } else if at(512, b"EFI PART") {
        Some("a GPT partition table")
    } else if at(510, &[0x55, 0xAA]) {
        Some("an MBR partition table or boot sector")
    } else {
        None
    }
}

/// Measures sequential read bandwidth for one second (1 MiB direct reads,
/// 4 in flight) straight from the device, when nothing says what it is.
/// Writes are not measured (that would need the filesystem the sweep has
/// not made yet); a run that writes slower is bounded by the runtime cap.
pub fn measure_bandwidth(dev: &BlockDev) -> Result<f64, SweepError> {
    let opts: Vec<(String, String)> = [
        ("filename", dev.dev_path().to_string_lossy().into_owned()),
        ("rw", "read".into()),
        ("bs", "1M".into()),
        ("direct", "1".into()),
        ("ioengine", "io_uring".into()),
        ("iodepth", "4".into()),
        ("runtime", "1".into()),
        ("time_based", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let job = job_from_options("calibrate", &opts)?;
    let report = run_to_completion(vec![job], StartOptions::default())?;
    let bw = report.total.read.bw_bytes();
    if bw <= 0.0 {
        return Err(UsageError::new(format!(
            "could not read {} to estimate its bandwidth: give --size to fix the bytes per run",
            dev.dev_path().display()
        ))
        .into());
    }
    Ok(bw)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn signatures_blkid_knows() {
        let mut b = vec![0u8; 70_000];
        assert_eq!(identify(&b), None);
        b[1080] = 0x53;
        b[1081] = 0xEF;
        assert!(identify(&b).unwrap().contains("ext"));
        let mut b = vec![0u8; 70_000];
        b[65_600..65_608].copy_from_slice(b"_BHRfS_M");
        assert!(identify(&b).unwrap().contains("Btrfs"));
        let mut b = vec![0u8; 1024];
        b[510] = 0x55;
        b[511] = 0xAA;
        assert!(identify(&b).unwrap().contains("MBR"));
        b[512..520].copy_from_slice(b"EFI PART");
        assert!(identify(&b).unwrap().contains("GPT"));
        assert_eq!(identify(&[]), None);
    }

    #[test]
    fn partitions_are_refused() {
        // Any partition on this machine will do; skip where there is none.
        let Some(part) = std::fs::read_dir("/sys/class/block").ok().and_then(|rd| {
            rd.flatten()
                .find(|e| e.path().join("partition").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
        }) else {
            eprintln!("skip: no partition on this machine");
            return;
        };
        let e = check_device(&part, false).unwrap_err();
        assert!(e.to_string().contains("is a partition"), "{e}");
    }
}
