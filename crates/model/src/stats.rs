//! What the model saw since the lab came up, for `iolab lab status`:
//! requests and bytes per direction, flushes, busy time, the deepest the
//! queue in the model got, and overruns (the host's own I/O took longer
//! than the modelled time, so that request was late). Served as JSON in
//! the model's own mount (`stats.json`), computed when it is read.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::device::{Op, Slot};
use crate::params::ModelParams;

/// Live counters.
#[derive(Debug, Default)]
pub struct Stats {
    reads: AtomicU64,
    writes: AtomicU64,
    flushes: AtomicU64,
    discards: AtomicU64,
    discard_bytes: AtomicU64,
    read_bytes: AtomicU64,
    write_bytes: AtomicU64,
    wait_ns: AtomicU64,
    max_depth: AtomicU64,
    overruns: AtomicU64,
    errors: AtomicU64,
}

/// A snapshot, as written to the stats file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelStats {
    /// The model's parameters.
    pub params: Option<ModelParams>,
    /// Server process id.
    pub pid: u32,
    /// Seconds since the server started.
    pub uptime_s: f64,
    /// Reads served.
    pub reads: u64,
    /// Writes served.
    pub writes: u64,
    /// Flushes served.
    pub flushes: u64,
    /// Discards served (a loop device's discard or write-zeroes without
    /// data: a hole punched in the image).
    #[serde(default)]
    pub discards: u64,
    /// Bytes discarded.
    #[serde(default)]
    pub discard_bytes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Time at least one request was in service, s.
    pub busy_s: f64,
    /// Time requests waited in the model for a slot, summed, s.
    pub queue_wait_s: f64,
    /// Most requests in the model at once (in service or waiting).
    pub max_queue_depth: u64,
    /// Requests whose real I/O outlasted their modelled time.
    pub overruns: u64,
    /// Requests that failed on the image file.
    pub errors: u64,
    /// True once the transport round trip was measured (the server is
    /// ready).
    #[serde(default)]
    pub calibrated: bool,
    /// The kernel→server→kernel round trip taken off every request's
    /// modelled time, ns.
    #[serde(default)]
    pub transport_ns: u64,
    /// And its part per byte moved, ps (a qemu guest's path: its copies).
    #[serde(default)]
    pub transport_ps_per_byte: u64,
    /// A write's path (a qemu guest's calibration), when set.
    #[serde(default)]
    pub write_transport: Option<crate::server::PathCost>,
}

impl Stats {
    /// Counts an admitted request.
    pub fn admitted(&self, op: Op, now_ns: u64, slot: Slot, depth: u64) {
        match op {
            Op::Read { bytes, .. } => {
                self.reads.fetch_add(1, Ordering::Relaxed);
                self.read_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Op::Write { bytes, .. } => {
                self.writes.fetch_add(1, Ordering::Relaxed);
                self.write_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Op::Discard { bytes, .. } => {
                self.discards.fetch_add(1, Ordering::Relaxed);
                self.discard_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Op::Flush => {
                self.flushes.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.wait_ns
            .fetch_add(slot.start_ns.saturating_sub(now_ns), Ordering::Relaxed);
        self.max_depth.fetch_max(depth, Ordering::Relaxed);
    }

    /// A request's real I/O finished after its modelled completion.
    pub fn overrun(&self) {
        self.overruns.fetch_add(1, Ordering::Relaxed);
    }

    /// A request failed on the image.
    pub fn error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now, with the device's busy time (the device clock
    /// keeps it).
    pub fn snapshot(&self, params: &ModelParams, uptime_s: f64, busy_ns: u64) -> ModelStats {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ModelStats {
            params: Some(params.clone()),
            pid: std::process::id(),
            uptime_s,
            reads: g(&self.reads),
            writes: g(&self.writes),
            flushes: g(&self.flushes),
            discards: g(&self.discards),
            discard_bytes: g(&self.discard_bytes),
            read_bytes: g(&self.read_bytes),
            write_bytes: g(&self.write_bytes),
            busy_s: busy_ns as f64 / 1e9,
            queue_wait_s: g(&self.wait_ns) as f64 / 1e9,
            max_queue_depth: g(&self.max_depth),
            overruns: g(&self.overruns),
            errors: g(&self.errors),
            calibrated: false,
            transport_ns: 0,
            transport_ps_per_byte: 0,
            write_transport: None,
        }
    }
}

/// Reads the stats a server publishes at `path`, `None` if absent (the
/// server is gone) or unreadable.
pub fn read(path: &Path) -> Option<ModelStats> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}
