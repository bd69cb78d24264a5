//! What the device under test presents to the filesystem and scheduler
//! above it (read-ahead, rotational, write cache), set by the lab rather
//! than inherited.
//!
//! LOOP_CONFIGURE copies these from the disk under the backing file and
//! from the loop number's past. On this VM the image's virtio disk
//! (read_ahead_kb 8192, rotational) gave a throttle lab's device
//! read_ahead_kb 2560 and rotational 1, where a model lab's FUSE-served
//! image gives 128 and 0; and a loop number once written "write through"
//! binds "write through" ever after (see the guard's `LOOP_QUEUE_ATTRS`),
//! so fsync's flushes reached a model lab's flush cost on a fresh machine
//! and never on a used one. Measured on `--bw 20MiB/s` labs, a cold 8 MiB
//! start under `startup`'s 1r1w took 0.8–1.9 s on the throttle lab and
//! 6.4–8.0 s on the model lab; with read-ahead 128 on both, 5.9–7.3 s on
//! each. A result should depend on the device asked for, not on the
//! host's disk or on which lab ran before.
//!
//! Flash, which the lab stands in for, is non-rotational and has a
//! volatile write cache (eMMC's cache, UFS's WCE), so a flush is the
//! device's to pay; the `hdd` model is rotational. 128 KiB is the kernel's
//! read-ahead (VM_READAHEAD_PAGES) for a disk with no optimal I/O size
//! and Android's after boot.

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;

use crate::spec::LabSpec;
use crate::LabError;

/// read_ahead_kb of a lab's device unless `--read-ahead-kb` says otherwise.
pub const DEFAULT_READ_AHEAD_KB: u32 = 128;

/// Sets the device under test's read-ahead, rotational flag and write
/// cache through the guard (each restored to what the bind gave it), and
/// a throttle lab's lower device to write through. Before the scheduler
/// is chosen: BFQ reads `rotational` when it starts on a queue. Returns
/// what could not be set, as warnings for the lab's status.
pub(crate) fn set(
    guard: &Guard,
    spec: &LabSpec,
    top: &BlockDev,
    lower: Option<&BlockDev>,
) -> Result<Vec<String>, LabError> {
    let ra = spec.read_ahead_kb.unwrap_or(DEFAULT_READ_AHEAD_KB);
    guard.set_queue_attr(top, "read_ahead_kb", &ra.to_string())?;
    let rotational = spec.model.as_ref().is_some_and(|m| m.seek_ns > 0);
    guard.set_queue_attr(top, "rotational", if rotational { "1" } else { "0" })?;
    let mut warnings = Vec::new();
    // A model charges its flush cost only for the flushes that reach it;
    // a throttle lab's flush goes to the lower device, which the throttle
    // does not slow, and ends there rather than costing this host's disk
    // a cache flush (which would differ from host to host).
    let caches = std::iter::once((top, "write back")).chain(lower.map(|l| (l, "write through")));
    for (dev, mode) in caches {
        if let Err(e) = guard.set_queue_attr(dev, "write_cache", mode) {
            warnings.push(format!(
                "{}'s write cache could not be set to {mode} ({e}): flushes {}",
                dev.name,
                if mode == "write back" {
                    "end at the device and cost nothing"
                } else {
                    "reach this host's disk"
                }
            ));
        }
    }
    Ok(warnings)
}
