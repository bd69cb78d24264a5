//! Built-in targets: programs `iolab startup` can launch and time like any
//! command, because each runs as its own process (`iolab probe`,
//! `iolab app`).
//!
//! Both read through the page cache like the apps they stand for, so their
//! reads reach storage only when the cache is cold: `iolab startup` drops
//! caches (or evicts the target's files, `--cold evict`) before each start,
//! and standalone runs can pass `--evict`.

pub mod android;
pub mod app;
pub(crate) mod content;
pub mod device;
mod kinds;
pub mod replay;

pub use kinds::{collect_files, which, Target, Watch};
