//! The job: what to run, parsed from fio job files, command-line options,
//! S-style shorthand or a named workload, and checked before anything
//! runs. Nothing here touches a file or a device.
//!
//! - [`model`]: one job (`Job`, fio's option names and defaults), and
//!   [`extra`]: the options beyond its core; [`kinds`]: `rw`, engines,
//!   directions.
//! - [`options`]: every fio option iolab reads, by concern; [`value`]: the
//!   value parsers they (and [`cmdprio`]) share.
//! - [`jobfile`], [`spec`], [`named`]: where jobs come from.
//! - [`sizes`], [`distribution`], [`cmdprio`], [`verify`]: the option
//!   families with a grammar of their own.

pub mod cmdprio;
pub(crate) mod distribution;
pub(crate) mod extra;
pub mod jobfile;
pub(crate) mod kinds;
pub(crate) mod model;
pub mod named;
pub(crate) mod options;
pub(crate) mod replay;
pub(crate) mod sizes;
pub(crate) mod spec;
pub(crate) mod value;
pub(crate) mod verify;
