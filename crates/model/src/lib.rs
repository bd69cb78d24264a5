//! A storage device model served in user space, under the I/O scheduler
//! under test: the lab's loop device is backed by `disk.img` on a FUSE
//! filesystem this crate serves; each request the scheduler dispatches
//! completes when the model says (bandwidth per direction, per-request
//! latency, queue depth, flush cost), with the data kept in the lab's
//! image file. No cgroup, no kernel module beyond FUSE, which every
//! distribution kernel has: the phone-storage lab on any Linux.
//!
//! [`serve`] runs the server on a `/dev/fuse` descriptor the caller has
//! already mounted (so the mount is made, journaled and undone by the
//! guard, not by the server); the lab crate starts it as a process of its
//! own (`iolab __model-server`) that lives exactly as long as the lab.
#![deny(missing_docs)]

pub mod clock;
pub mod device;
pub mod params;
pub mod server;
pub mod stats;

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

pub use device::{DeviceClock, Op, Slot};
pub use params::ModelParams;
pub use stats::ModelStats;

/// Serves `image` through the model until the FUSE mount goes away.
/// `fuse` is the descriptor the mount was made with. The statistics are
/// the mount's second file, `stats.json`.
/// Until the caller writes the measured round trip to `control` (see
/// [`server::Transport`]), reads are answered at once with zeros.
pub fn serve(fuse: OwnedFd, image: &Path, params: ModelParams) -> std::io::Result<()> {
    // Allocations of this process must not wait for writeback of the
    // lab's own dirty pages, which only this process can complete
    // (PR_SET_IO_FLUSHER = 57, Linux 5.6+; root only). Best effort.
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(57, 1, 0, 0, 0);
    }
    let stats = Arc::new(stats::Stats::default());
    let transport = Arc::new(server::Transport::default());
    let fs = server::ModelFs::new(image, DeviceClock::new(params), stats, transport)?;

    let mut config = fuser::Config::default();
    config.acl = fuser::SessionACL::All;
    let session = fuser::Session::from_fd(fs, fuse, fuser::SessionACL::All, config)?;
    session.run()
}
