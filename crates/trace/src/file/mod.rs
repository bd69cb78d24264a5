//! Trace files: raw ring-buffer pages recorded now, decoded later.
//!
//! Recording does no decoding at all: the reader thread appends each page
//! it reads, as the kernel wrote it, so recording costs one read(2) and one
//! buffered write per page. Everything needed to decode the pages later is
//! stored with them. Layout (all integers little-endian; full description
//! in docs/trace-file.md):
//!
//! ```text
//! file    := "IOLABTRC" u32:version(=1) u32:0 section*
//! section := u32:kind u32:arg u64:len byte[len]
//! kind 1 START       JSON: version, clock, page layout, cpus, start_ns, events
//! kind 2 HEADER_PAGE text of events/header_page
//! kind 3 FORMAT      "<system>\n" + text of events/<system>/<name>/format
//! kind 4 PAGE        one page of CPU index `arg` (position in START.cpus),
//!                    trimmed to its used bytes
//! kind 5 KALLSYMS    /proc/kallsyms text symbols (only when stacks were asked)
//! kind 6 END         JSON: end_ns, stats (TraceStats)
//! ```
//!
//! START, HEADER_PAGE and FORMAT come first, PAGEs as they are read,
//! KALLSYMS and END at finish. A recording killed before finish lacks END
//! (and KALLSYMS) but its pages still decode; [`FileMeta::complete`] says
//! which.

mod read;
mod write;

use serde::{Deserialize, Serialize};

use crate::config::EventRequest;
use crate::page::PageLayout;
use crate::record::TraceStats;

pub use read::TraceFile;
pub use write::Recorder;

pub(crate) const MAGIC: &[u8; 8] = b"IOLABTRC";
pub(crate) const VERSION: u32 = 1;
pub(crate) const START: u32 = 1;
pub(crate) const HEADER_PAGE: u32 = 2;
pub(crate) const FORMAT: u32 = 3;
pub(crate) const PAGE: u32 = 4;
pub(crate) const KALLSYMS: u32 = 5;
pub(crate) const END: u32 = 6;

/// What a trace file says about its recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMeta {
    /// File format version.
    pub version: u32,
    /// Trace clock (`mono`: CLOCK_MONOTONIC ns).
    pub clock: String,
    /// Ring-buffer page layout.
    pub layout: PageLayout,
    /// CPU numbers, in the order PAGE sections index them.
    pub cpus: Vec<u32>,
    /// CLOCK_MONOTONIC ns just before tracing was switched on.
    pub start_ns: u64,
    /// The events as requested (filters and triggers included).
    pub events: Vec<EventRequest>,
    /// CLOCK_MONOTONIC ns when tracing was switched off (END present).
    #[serde(default)]
    pub end_ns: Option<u64>,
    /// The recording's counters (END present): `events` counts entries
    /// read from the kernel, stack entries included.
    #[serde(default)]
    pub stats: Option<TraceStats>,
}

impl FileMeta {
    /// True when the recording finished (END section present).
    pub fn complete(&self) -> bool {
        self.end_ns.is_some()
    }
}

#[derive(Serialize, Deserialize)]
pub(crate) struct EndSection {
    pub(crate) end_ns: u64,
    pub(crate) stats: TraceStats,
}

pub(crate) fn section_header(kind: u32, arg: u32, len: u64) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&kind.to_le_bytes());
    h[4..8].copy_from_slice(&arg.to_le_bytes());
    h[8..16].copy_from_slice(&len.to_le_bytes());
    h
}
