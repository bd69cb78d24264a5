//! The output: a [`crate::run::report::LoadReport`] rendered as fio
//! renders its results: JSON and json+ ([`json`]), the normal text
//! ([`normal`]), terse ([`terse`]) and iolab's table ([`table`]), and
//! fio's `--debug` lines ([`debug`]). Only reads the report.

pub mod debug;
pub mod json;
pub mod normal;
pub mod render;
pub mod table;
pub mod terse;
