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
    /// True for a lab iolab made (reads as zeros: mkfs may skip zeroing);
    /// false for the user's device.
    pub zeroed: bool,
}

/// Makes the temporary lab (through `guard`, removed when it restores) or
/// checks the user's device.
pub fn resolve(guard: &Guard, place: &SweepPlace, force: bool) -> Result<Resolved, SweepError> {
    match place {
        SweepPlace::NewLab {
            size_bytes,
            bw_bytes,
            backend,
            model,
        } => {
            let name = format!("sweep-{}", std::process::id());
            let spec = LabSpec {
                name: name.clone(),
                size_bytes: *size_bytes,
                fs: Fs::None,
                bw_bytes: *bw_bytes,
                backend: *backend,
                model: model.clone(),
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
                zeroed: true,
            })
        }
        SweepPlace::Device { device } => {
            let dev = check_device(
                device,
                force,
                "iolab sweep runs mkfs on the whole device before every run",
            )?;
            Ok(Resolved {
                mountpoint: iolab_guard::run_dir().join(format!("sweep-{}", std::process::id())),
                what: format!("device {}", dev.dev_path().display()),
                dev,
                bw_bytes: None,
                zeroed: false,
            })
        }
    }
}

/// Resolves `spec` to a whole disk and refuses it, unless `force`, while
/// anything uses it or it holds anything libblkid recognises (see
/// `iolab_sys::device_safety`).
pub fn check_device(spec: &str, force: bool, why: &str) -> Result<BlockDev, SweepError> {
    let dev = whole_disk(spec)?;
    iolab_sys::device_safety::check_before_writing(&dev, why, force)?;
    Ok(dev)
}

/// Resolves `spec` to a device, refusing a partition: a scheduler belongs
/// to the whole disk.
pub fn whole_disk(spec: &str) -> Result<BlockDev, SweepError> {
    if is_partition(Path::new("/sys/class/block"), spec) {
        return Err(partition_error(spec).into());
    }
    Ok(BlockDev::resolve(spec)?)
}

/// True when `spec` (`sdb1` or `/dev/sdb1`) names a partition in the
/// sysfs class tree at `class_block` (`/sys/class/block`).
fn is_partition(class_block: &Path, spec: &str) -> bool {
    let name = spec.strip_prefix("/dev/").unwrap_or(spec);
    class_block.join(name).join("partition").exists()
}

fn partition_error(spec: &str) -> UsageError {
    UsageError::new(format!(
        "{spec} is a partition: the sweep formats a whole device and sets its scheduler; give the disk it is on"
    ))
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
    fn partitions_are_refused() {
        // This project's kernel has no partition support at all (no
        // CONFIG_*_PARTITION): a fixture sysfs tree stands in for one.
        let sys = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(sys.path().join("sdb1")).unwrap();
        std::fs::write(sys.path().join("sdb1/partition"), "1\n").unwrap();
        std::fs::create_dir_all(sys.path().join("sdb")).unwrap();
        assert!(is_partition(sys.path(), "/dev/sdb1"));
        assert!(is_partition(sys.path(), "sdb1"));
        assert!(!is_partition(sys.path(), "sdb"));
        let e = partition_error("/dev/sdb1");
        assert!(e.to_string().contains("is a partition"), "{e}");
    }
}
