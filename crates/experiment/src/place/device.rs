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
/// says what iolab would do to it. Allowed, the warning to give when
/// blkid's signature check was unavailable (only iolab's own probe
/// looked).
pub fn check_before_writing(
    dev: &BlockDev,
    why: &str,
    force: bool,
) -> Result<Option<String>, ExperimentError> {
    Ok(iolab_sys::device_safety::check_before_writing(
        dev, why, force,
    )?)
}

/// Resolves `spec` — by kernel name, `/dev/...`, `/dev/block/...` or any
/// link to the node — to exactly that device, and refuses what is not a
/// whole disk with a scheduler of its own: a partition (its scheduler is
/// its disk's), a device-mapper or md device (none: theirs are on the
/// disks under them).
pub fn whole_disk(spec: &str) -> Result<BlockDev, ExperimentError> {
    let sys = Path::new("/sys");
    let node = iolab_sys::stack::node_of_spec(sys, spec)?;
    refuse_layer(spec, &node)?;
    Ok(BlockDev::from_name(&node.name)?)
}

/// The refusal of a device that is a layer over disks, naming the disks.
fn refuse_layer(spec: &str, node: &iolab_sys::stack::Node) -> Result<(), UsageError> {
    use iolab_sys::stack::Kind;
    let what = match &node.kind {
        Kind::Partition => "a partition",
        Kind::DeviceMapper { .. } => "a device-mapper device",
        Kind::Md { .. } => "an md array",
        Kind::Disk | Kind::Loop { .. } => return Ok(()),
    };
    Err(UsageError::new(format!(
        "{spec} is {what} ({}): the sweep formats a whole device and sets its scheduler; give the disk it is on, or measure in a directory of its filesystem with startup --in DIR",
        node.describe()
    )))
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
    fn layers_are_refused_with_what_is_under_them() {
        use iolab_sys::stack::{Kind, Node};
        let disk = Node {
            name: "sda".into(),
            devno: "8:0".into(),
            kind: Kind::Disk,
            scheduler: Some("mq-deadline".into()),
            below: vec![],
        };
        let part = Node {
            name: "sda20".into(),
            devno: "8:20".into(),
            kind: Kind::Partition,
            scheduler: None,
            below: vec![disk.clone()],
        };
        let e = refuse_layer("/dev/block/sda20", &part).unwrap_err();
        assert!(
            e.0.contains("is a partition (sda20 → sda [mq-deadline])"),
            "{e}"
        );
        assert!(refuse_layer("sda", &disk).is_ok());
    }
}
