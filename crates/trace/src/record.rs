//! What consumers receive: one decoded event, and the session's counters.

use serde::Serialize;

use crate::format::Format;

/// One event, borrowed from the reader's page for the duration of the
/// callback. Records arrive in timestamp order across CPUs.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// The event's format (system, name, fields).
    pub format: &'a Format,
    /// Timestamp, CLOCK_MONOTONIC ns (the instance's `trace_clock` is
    /// `mono`), comparable with `clock_gettime(CLOCK_MONOTONIC)`.
    pub ts_ns: u64,
    /// CPU the event happened on.
    pub cpu: u32,
    /// `common_pid`: the task current when the event fired.
    pub pid: i32,
    /// The raw payload (common fields first); decode with `format`.
    pub data: &'a [u8],
    /// Kernel stack (innermost first) when the event's request asked for a
    /// stacktrace trigger and the trigger fired.
    pub stack: Option<&'a [u64]>,
}

impl<'a> Record<'a> {
    /// `system` of the event.
    pub fn system(&self) -> &'a str {
        &self.format.system
    }

    /// Name of the event, e.g. `sched_switch`.
    pub fn name(&self) -> &'a str {
        &self.format.name
    }

    /// True when this is `system/name`.
    pub fn is(&self, system: &str, name: &str) -> bool {
        self.format.name == name && self.format.system == system
    }

    /// Field `name` as an unsigned integer (`None` if there is no such
    /// field). For hot paths, resolve the `Field` once with
    /// `format.field()` and call `Field::u64`.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.format.field(name).map(|f| f.u64(self.data))
    }

    /// Field `name` as a signed integer.
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.format.field(name).map(|f| f.i64(self.data))
    }

    /// Field `name` as text (`char[]` or `__data_loc char[]`).
    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.format.field(name).map(|f| f.str(self.data))
    }
}

/// Counters of one CPU's buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CpuStats {
    /// CPU number.
    pub cpu: u32,
    /// Events delivered from this CPU (stack entries not counted).
    pub events: u64,
    /// Events lost on this CPU: the larger of the pages' missed-event
    /// counts and the buffer's `overrun`, plus `dropped events` and
    /// `commit overrun` (a full buffer drops the newest: `overwrite` is 0).
    pub lost: u64,
    /// Ring-buffer pages read.
    pub pages: u64,
}

/// What a session delivered and lost. Consumers print it with every
/// output: a trace that lost events must say so.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TraceStats {
    /// Events delivered (for a recording: entries the kernel handed over,
    /// stack entries included, since recording does not decode).
    pub events: u64,
    /// Events the kernel could not store (sum over CPUs).
    pub lost: u64,
    /// Events delivered with a timestamp older than one already delivered
    /// (arrived after the merge watermark passed them); 0 in practice.
    pub out_of_order: u64,
    /// Per-CPU counters.
    pub per_cpu: Vec<CpuStats>,
}

impl std::fmt::Display for TraceStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} events, {} lost", self.events, self.lost)?;
        if self.out_of_order > 0 {
            write!(f, ", {} out of order", self.out_of_order)?;
        }
        Ok(())
    }
}
