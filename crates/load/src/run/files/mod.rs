//! What a clone's I/O goes to and in which order: the open files and the
//! offset codec ([`file_set`]), the targets a plan names ([`io_file`]),
//! offset patterns ([`pattern`]), strided zones ([`zones`]) and iolog
//! record and replay ([`iolog`]).

pub(crate) mod file_set;
pub(crate) mod io_file;
pub mod iolog;
pub(crate) mod pattern;
pub(crate) mod zbd;
pub(crate) mod zones;
