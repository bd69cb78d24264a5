//! Thin, read-only wrappers over the kernel interfaces iolab reads.
//!
//! Nothing here changes system state on its own: every write goes through
//! `iolab-guard` (`loopdev` holds the ioctls the guard calls). Each reader takes a root path (`/sys`, `/proc`) so tests can
//! point it at fixture files instead of the live system.
#![deny(missing_docs)]

pub mod block;
pub mod cachestat;
pub mod cast;
pub mod cpustat;
pub mod device_safety;
pub mod diskstats;
pub mod dm;
pub mod environment;
pub mod error;
pub mod fiemap;
pub mod ioprio;
pub mod loopdev;
pub mod mounts;
pub mod pagecache;
pub mod paths;
pub mod pressure;
pub mod process;
pub mod say;
pub mod shaping;
pub mod signatures;
pub mod stack;
pub mod taskstats;
pub mod text;
pub mod units;
pub mod writeback;
pub mod zoned;

pub use error::{is_usage, SysError, UsageError};

/// True when the current process has an effective uid of 0.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}
