//! A device of the user's, checked before iolab writes to it: a partition
//! is refused where a whole disk is needed (a scheduler belongs to the
//! disk), and a disk in use or holding data needs `--force`.

use std::path::Path;

use iolab_lab::LabSpec;
use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

use crate::ExperimentError;

/// Refuses `dev`, unless `force`, while anything uses it or it holds
/// anything libblkid recognises (see `iolab_sys::device_safety`); `why`
/// says what iolab would do to it.
pub fn check_before_writing(dev: &BlockDev, why: &str, force: bool) -> Result<(), ExperimentError> {
    iolab_sys::device_safety::check_before_writing(dev, why, force)?;
    Ok(())
}

/// Resolves `spec` to a device, refusing a partition: a scheduler belongs
/// to the whole disk.
pub fn whole_disk(spec: &str) -> Result<BlockDev, ExperimentError> {
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

/// `, device model emmc (--device-model)` or `, throttle backend (...)`.
pub fn backend_words(spec: &LabSpec) -> String {
    match (&spec.backend, &spec.model) {
        (_, Some(m)) => format!(
            ", device model {} ({})",
            m.profile,
            spec.backend_reason.as_deref().unwrap_or("")
        ),
        (Some(b), None) => format!(
            ", {} backend ({})",
            b.name(),
            spec.backend_reason.as_deref().unwrap_or("")
        ),
        (None, None) => String::new(),
    }
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
