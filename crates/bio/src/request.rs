//! A completed request: the raw sample every output derives from.

use crate::event::{Comm, Dev, Op, Rwbs};

/// Where a request's queue time and owner came from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// `block_bio_queue` (bio-based devices: queue = issue).
    BioQueue,
    /// `block_io_start`: the request was made from a bio in the submitter's
    /// context (what biosnoop uses on kernels ≥ 6.5).
    IoStart,
    /// `block_rq_insert` (no `block_io_start` seen).
    Insert,
    /// Only `block_rq_issue` seen (request made before tracing started, or a
    /// kernel without `block_io_start` and a direct issue): no queue time,
    /// and the owner is whoever issued it.
    Issue,
}

impl Origin {
    /// Lower-case name for JSON.
    pub fn name(self) -> &'static str {
        match self {
            Origin::BioQueue => "bio_queue",
            Origin::IoStart => "io_start",
            Origin::Insert => "insert",
            Origin::Issue => "issue",
        }
    }
}

/// One request (or, on a bio-based device, one bio) from queue to
/// completion. Timestamps are CLOCK_MONOTONIC nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BioRequest {
    /// Whole-disk device (bio-based devices: the device the bio was sent to).
    pub dev: Dev,
    /// Start sector as issued (512-byte units).
    pub sector: u64,
    /// Size in sectors as issued (after every merge).
    pub nr_sector: u32,
    /// Operation and flags as issued.
    pub rwbs: Rwbs,
    /// Name of the task that queued it (see [`BioRequest::origin`]).
    pub comm: Comm,
    /// Thread id of that task.
    pub tid: i32,
    /// Thread-group id (process id) of that task, when it could be looked up
    /// while the task was alive; otherwise the thread id.
    pub pid: i32,
    /// When it was queued ([`Origin`] says by which event); `None` when only
    /// its issue was seen.
    pub queue_ns: Option<u64>,
    /// When the driver got it; `None` for a request that completed without
    /// being issued itself (an empty pre-flush write, finished by the flush
    /// request it waited for).
    pub issue_ns: Option<u64>,
    /// When the last of its sectors completed.
    pub complete_ns: u64,
    /// Times the driver gave it back (`block_rq_requeue`).
    pub requeues: u16,
    /// The completion's `error` (0 = success, else a negative errno).
    pub error: i32,
    /// Which event gave the queue time and owner.
    pub origin: Origin,
}

impl BioRequest {
    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        u64::from(self.nr_sector) * 512
    }
    /// The operation.
    pub fn op(&self) -> Op {
        self.rwbs.op
    }
    /// Queue time (insert/start → issue), 0 when unknown.
    pub fn que_ns(&self) -> u64 {
        match (self.queue_ns, self.issue_ns) {
            (Some(q), Some(i)) => i.saturating_sub(q),
            _ => 0,
        }
    }
    /// Device time (issue → complete); from the queue time for a request
    /// that was never issued itself.
    pub fn lat_ns(&self) -> u64 {
        let from = self.issue_ns.or(self.queue_ns).unwrap_or(self.complete_ns);
        self.complete_ns.saturating_sub(from)
    }
    /// Queue + device time (first sight → complete).
    pub fn total_ns(&self) -> u64 {
        let from = self.queue_ns.or(self.issue_ns).unwrap_or(self.complete_ns);
        self.complete_ns.saturating_sub(from)
    }
    /// First event seen of this request.
    pub fn start_ns(&self) -> u64 {
        self.queue_ns.or(self.issue_ns).unwrap_or(self.complete_ns)
    }
    /// Sector after the last one.
    pub fn end_sector(&self) -> u64 {
        self.sector + u64::from(self.nr_sector)
    }
}
