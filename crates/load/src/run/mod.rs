//! The run: jobs turned into a checked plan, files laid out, clones
//! started as threads, each driving its engine until done, and what they
//! measured merged into a [`report::LoadReport`].
//!
//! - [`plan`] checks jobs against the machine; [`runner`] starts and
//!   stops a load; [`coordinator`] runs stonewall groups in order.
//! - [`clone`]: one clone's loop state (`Run`), built of owned parts:
//!   what to issue next, its pacing, its verifier, its sinks.
//! - [`engine`]: the I/O engines behind one narrow interface (they ask
//!   `Run` for the next step and report completions to it).
//! - [`files`]: the file set (the one owner of the offset codec), offset
//!   patterns, zones, iolog replay; [`layout`] lays the plan's files out.
//! - [`sinks`]: where completions go: latency and bandwidth statistics,
//!   fio's log files, steady state, CPU use.

pub(crate) mod buffer;
pub(crate) mod clone;
pub(crate) mod coordinator;
pub(crate) mod engine;
pub mod files;
pub(crate) mod lat_target;
pub(crate) mod layout;
pub(crate) mod live;
pub(crate) mod plan;
pub(crate) mod plan_zbd;
pub(crate) mod progress;
pub(crate) mod rate;
pub(crate) mod report;
pub(crate) mod runner;
pub(crate) mod shared;
pub mod sinks;
pub(crate) mod thread;
pub(crate) mod verify_state;
