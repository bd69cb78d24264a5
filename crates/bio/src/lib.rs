//! Per-request block I/O tracing for iolab: what biosnoop, biolatency and
//! iosnoop show, from the kernel's block tracepoints read through iolab's
//! own trace session (no BPF compiler, no kernel headers).
//!
//! Data flows one way: trace records → [`decode`] → [`BlockEvent`] →
//! [`Tracker`] → [`BioRequest`] (every completed request, kept raw) →
//! outputs that only read them: biosnoop lines ([`snoop`]), biolatency-style
//! histograms with percentiles ([`hist`]), per-process summaries
//! ([`summary`]) and Chrome-JSON traces for ui.perfetto.dev ([`perfetto`]).
#![deny(missing_docs)]

pub mod bpf;
pub mod decode;
pub mod disks;
pub mod event;
mod fxhash;
pub mod hist;
pub mod perfetto;
pub mod request;
pub mod result;
pub mod session;
pub mod snoop;
pub mod summary;
mod tracer;
pub mod tracker;

#[cfg(test)]
mod testutil;

pub use disks::{Disk, Disks};
pub use event::{BlockEvent, Comm, Dev, EventKind, Op, Rwbs};
pub use request::{BioRequest, Origin};
pub use result::{BioHistograms, BioSummary, BioTrace, OwnerSplit, SlotCounts, TraceCounts};
pub use session::{BioError, BioOptions, BioSession};
pub use tracer::BioTracer;
pub use tracker::{Tracker, TrackerStats};
