//! A lab's dirty-page limit: a phone keeps tens of MiB of unwritten data,
//! a desktop's global limits let a writer keep gigabytes, minutes of
//! writeback at phone speed. On Linux 6.2+ the limit is exact, per device
//! (`max_bytes` with `strict_limit`). Older kernels (Debian 12's 6.1,
//! Ubuntu 22.04's 5.15, RHEL 9's 5.14) only have `max_ratio`, a share of
//! the global threshold that is enforced only above the global background
//! threshold: there a lab made on its defaults gets that share and a
//! warning that says what it could not model; a limit the user asked for
//! is refused instead (it could not be applied as asked).

use iolab_guard::Guard;
use iolab_sys::block::BlockDev;
use iolab_sys::units::format_bytes;
use iolab_sys::writeback::DirtyLimits;

use crate::LabError;

/// Applies `bytes` as `dev`'s dirty limit; returns what could not be
/// modelled, if anything. `asked`: the user gave the limit.
pub(crate) fn limit(
    guard: &Guard,
    dev: &BlockDev,
    bytes: u64,
    asked: bool,
) -> Result<Option<String>, LabError> {
    if asked || iolab_guard::exact_dirty_limit(dev)? {
        guard.set_bdi_dirty_limit(dev, bytes)?;
        return Ok(None);
    }
    let proc_root = std::path::Path::new("/proc");
    let global = DirtyLimits::read(proc_root)?;
    let pct = global.ratio_for(bytes);
    guard.set_bdi_max_ratio(dev, pct)?;
    Ok(Some(format!(
        "dirty limit {} not applied per device: this kernel has no bdi max_bytes or strict_limit (Linux 6.2+); the lab got max_ratio {pct} % of the global {} threshold, which the kernel enforces only above {} of dirty memory in all: a writer may leave up to that much unwritten on the lab, where a phone holds tens of MiB, so writes and syncs under a writing load can take longer than on the device",
        format_bytes(bytes),
        format_bytes(global.thresh_bytes),
        format_bytes(global.freerun_bytes()),
    )))
}
