//! iolab's kernel event source.
//!
//! Every kernel event iolab consumes (block requests, scheduler switches
//! and wakeups, page-cache insertions, stall stacks) comes through here:
//!
//! - a private tracefs instance per session, created through the guard
//!   (removed on finish and on every exit path), never the global buffer;
//!   `trace_clock` = `mono`, so timestamps are CLOCK_MONOTONIC ns;
//!   `overwrite` = 0 (a full buffer drops the newest events, counted);
//! - per-CPU `trace_pipe_raw` pages read by one thread per session and
//!   decoded with the kernel's own `header_page` and per-event `format`
//!   files, never with offsets compiled into iolab ([`page`], [`format`]);
//! - records merged across CPUs in timestamp order ([`TraceSession::poll`]),
//!   each with the kernel stack of its `stacktrace` trigger, if any;
//! - lost events counted from page flags and the per-CPU `stats` files
//!   ([`TraceStats`]);
//! - a trace file that stores raw pages plus everything needed to decode
//!   them later ([`Recorder`], [`TraceFile`], docs/trace-file.md).
#![deny(missing_docs)]

pub mod bpf;
mod config;
mod error;
mod file;
pub mod format;
mod instance;
mod kallsyms;
mod merge;
pub mod page;
mod reader;
mod record;
mod session;
mod setup;

pub use config::{default_buffer_kib_per_cpu, EventRequest, SessionConfig};
pub use error::TraceError;
pub use file::{FileMeta, Recorder, TraceFile};
pub use format::{Field, Field32, FieldKind, Format, Formats};
pub use instance::{has_event, TRACEFS};
pub use kallsyms::{Kallsyms, Symbol};
pub use reader::monotonic_ns;
pub use record::{CpuStats, Record, TraceStats};
pub use session::TraceSession;

#[cfg(test)]
mod tests {
    /// Sessions and recordings can move to a worker thread.
    #[test]
    fn handles_are_send() {
        fn send<T: Send>() {}
        send::<crate::TraceSession>();
        send::<crate::Recorder>();
        send::<crate::TraceFile>();
    }
}
