//! Matches block events into requests: queue → (insert) → issue → complete.
//!
//! The tracepoints carry no request pointer, so requests are matched the way
//! Brendan Gregg's ftrace `iosnoop` does it, by device and start sector (plus
//! whether it is a flush, whose sector is always 0). Requests that share a
//! key at the same time (two threads reading the same block) are matched
//! first-in first-out within their stage. What changes a request's key or
//! life is handled explicitly:
//!
//! - `block_io_start` creates it in the submitter's context (the owner, as
//!   biosnoop takes it); without it, `block_rq_insert`, then
//!   `block_rq_issue` (a direct issue under `none` has no insert) do;
//! - `block_bio_frontmerge` moves its start sector to the merged bio's;
//!   back merges keep the start (the size comes from the issue event);
//! - `block_rq_merge` removes a request merged into its neighbour;
//! - `block_rq_requeue` sends an issued request back to the queued stage;
//! - `block_rq_complete` for fewer sectors than remain is a partial
//!   completion: the rest moves on to the next sector;
//! - a flush request's sector reads 0 on issue and -1 on completion;
//! - bio-based devices (zram: no request queue) only emit
//!   `block_bio_queue` → `block_bio_complete`: one bio is one "request",
//!   issued when queued. For request-based devices those two events are
//!   ignored (the block layer does not trace their bio completions).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::event::{BlockEvent, Dev, EventKind};
use crate::fxhash::FxBuildHasher;
use crate::request::{BioRequest, Origin};

/// Whether a device is bio-based (no request queue): asked once per device.
pub type BioBasedFn = Box<dyn Fn(Dev) -> bool + Send>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    dev: Dev,
    flush: bool,
    sector: u64,
}

impl Key {
    fn of(ev: &BlockEvent) -> Key {
        Key {
            dev: ev.dev,
            flush: ev.rwbs.is_flush(),
            // A flush request has no sector: its position is (sector_t)-1,
            // which block_rq_issue prints as 0 (blk_rq_trace_sector()) but
            // block_rq_complete prints raw.
            sector: if ev.sector == u64::MAX { 0 } else { ev.sector },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Queued,
    Issued,
}

#[derive(Debug, Clone)]
struct Pending {
    stage: Stage,
    inserted: bool,
    req: BioRequest,
    /// Sectors completed so far (partial completions).
    done: u32,
}

/// Counts of what the tracker saw besides completed requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TrackerStats {
    /// Completions of requests whose issue was not seen (issued before the
    /// trace started, or the event was lost).
    pub unmatched_completions: u64,
    /// Sectors those unmatched completions finished.
    pub unmatched_sectors: u64,
    /// Requests merged into another before issue (`block_rq_merge`).
    pub merged_requests: u64,
    /// Requeues (`block_rq_requeue`).
    pub requeues: u64,
    /// Completions that finished only part of a request.
    pub partial_completions: u64,
}

/// The request tracker. Feed it every event in time order with
/// [`Tracker::on_event`]; it returns each request as it completes.
pub struct Tracker {
    pending: HashMap<Key, Slot, FxBuildHasher>,
    kinds: HashMap<Dev, bool, FxBuildHasher>,
    bio_based: BioBasedFn,
    stats: TrackerStats,
}

impl Tracker {
    /// A tracker; `bio_based` tells bio-based devices (no request queue)
    /// from request-based ones.
    pub fn new(bio_based: BioBasedFn) -> Tracker {
        Tracker {
            pending: HashMap::with_capacity_and_hasher(1024, FxBuildHasher::default()),
            kinds: HashMap::default(),
            bio_based,
            stats: TrackerStats::default(),
        }
    }

    /// What the tracker counted so far.
    pub fn stats(&self) -> TrackerStats {
        self.stats
    }

    /// Requests seen but not completed (in flight now, or whose completion
    /// was lost).
    pub fn in_flight(&self) -> usize {
        self.pending.values().map(|s| s.as_slice().len()).sum()
    }

    fn is_bio_based(&mut self, dev: Dev) -> bool {
        let f = &self.bio_based;
        *self.kinds.entry(dev).or_insert_with(|| f(dev))
    }

    /// Processes one event; returns the request it completed, if any.
    pub fn on_event(&mut self, ev: &BlockEvent) -> Option<BioRequest> {
        match ev.kind {
            EventKind::BioQueue => {
                if self.is_bio_based(ev.dev) {
                    let mut p = self.new_pending(ev, Origin::BioQueue);
                    p.stage = Stage::Issued;
                    p.req.issue_ns = Some(ev.ts_ns);
                    self.push(Key::of(ev), p);
                }
                None
            }
            EventKind::BioComplete => {
                if self.is_bio_based(ev.dev) {
                    self.complete(ev)
                } else {
                    None
                }
            }
            EventKind::IoStart => {
                let p = self.new_pending(ev, Origin::IoStart);
                self.push(Key::of(ev), p);
                None
            }
            EventKind::RqInsert => {
                let key = Key::of(ev);
                match self.find(key, |p| p.stage == Stage::Queued && !p.inserted) {
                    Some(p) => p.inserted = true,
                    None => {
                        let mut p = self.new_pending(ev, Origin::Insert);
                        p.inserted = true;
                        self.push(key, p);
                    }
                }
                None
            }
            EventKind::RqIssue => {
                let key = Key::of(ev);
                if self.find(key, |p| p.stage == Stage::Queued).is_none() {
                    let p = self.new_pending(ev, Origin::Issue);
                    self.push(key, p);
                }
                let p = self.find(key, |p| p.stage == Stage::Queued)?;
                p.stage = Stage::Issued;
                p.req.issue_ns = Some(ev.ts_ns);
                p.req.nr_sector = ev.nr_sector;
                p.req.rwbs = ev.rwbs;
                None
            }
            EventKind::RqComplete => self.complete(ev),
            EventKind::RqRequeue => {
                if let Some(p) = self.find(Key::of(ev), |p| p.stage == Stage::Issued) {
                    p.stage = Stage::Queued;
                    p.inserted = false;
                    p.req.issue_ns = None;
                    p.req.requeues = p.req.requeues.saturating_add(1);
                    self.stats.requeues += 1;
                }
                None
            }
            EventKind::RqMerge => {
                if self
                    .take(Key::of(ev), |p| p.stage == Stage::Queued)
                    .is_some()
                {
                    self.stats.merged_requests += 1;
                }
                None
            }
            EventKind::BioFrontmerge => {
                let from = Key {
                    sector: ev.sector + u64::from(ev.nr_sector),
                    ..Key::of(ev)
                };
                if let Some(mut p) = self.take(from, |p| p.stage == Stage::Queued) {
                    p.req.sector = ev.sector;
                    self.push(Key::of(ev), p);
                }
                None
            }
        }
    }

    fn new_pending(&self, ev: &BlockEvent, origin: Origin) -> Pending {
        Pending {
            stage: Stage::Queued,
            inserted: false,
            done: 0,
            req: BioRequest {
                dev: ev.dev,
                sector: ev.sector,
                nr_sector: ev.nr_sector,
                rwbs: ev.rwbs,
                comm: ev.comm,
                tid: ev.tid,
                pid: ev.tid,
                queue_ns: (origin != Origin::Issue).then_some(ev.ts_ns),
                issue_ns: None,
                complete_ns: 0,
                requeues: 0,
                error: 0,
                origin,
            },
        }
    }

    fn complete(&mut self, ev: &BlockEvent) -> Option<BioRequest> {
        let key = Key::of(ev);
        // An empty pre-flush write is never issued itself: it completes
        // when the flush it waited for does.
        let found = self
            .take(key, |p| p.stage == Stage::Issued)
            .or_else(|| self.take(key, |p| p.stage == Stage::Queued && p.req.nr_sector == 0));
        let Some(mut p) = found else {
            self.stats.unmatched_completions += 1;
            self.stats.unmatched_sectors += u64::from(ev.nr_sector);
            return None;
        };
        let remaining = p.req.nr_sector.saturating_sub(p.done);
        if ev.nr_sector > 0 && ev.nr_sector < remaining && ev.kind == EventKind::RqComplete {
            self.stats.partial_completions += 1;
            p.done += ev.nr_sector;
            let next = Key {
                sector: ev.sector + u64::from(ev.nr_sector),
                ..key
            };
            self.push(next, p);
            return None;
        }
        p.req.complete_ns = ev.ts_ns;
        p.req.error = ev.error;
        Some(p.req)
    }

    fn push(&mut self, key: Key, p: Pending) {
        match self.pending.entry(key) {
            Entry::Vacant(v) => {
                v.insert(Slot::One(p));
            }
            Entry::Occupied(mut o) => o.get_mut().push(p),
        }
    }

    /// The oldest pending request at `key` matching `pred`.
    fn find(&mut self, key: Key, pred: impl Fn(&Pending) -> bool) -> Option<&mut Pending> {
        self.pending
            .get_mut(&key)?
            .as_mut_slice()
            .iter_mut()
            .find(|p| pred(p))
    }

    /// Removes and returns the oldest pending request at `key` matching `pred`.
    fn take(&mut self, key: Key, pred: impl Fn(&Pending) -> bool) -> Option<Pending> {
        let Entry::Occupied(mut o) = self.pending.entry(key) else {
            return None;
        };
        let i = o.get().as_slice().iter().position(pred)?;
        match o.get_mut() {
            Slot::Many(v) if v.len() > 1 => Some(v.remove(i)),
            _ => match o.remove() {
                Slot::One(p) => Some(p),
                Slot::Many(mut v) => v.pop(),
            },
        }
    }
}

/// The requests pending at one key: almost always one, so it is stored
/// inline (no allocation per request); sharing requests go to a Vec.
#[derive(Debug)]
enum Slot {
    One(Pending),
    Many(Vec<Pending>),
}

impl Slot {
    fn as_slice(&self) -> &[Pending] {
        match self {
            Slot::One(p) => std::slice::from_ref(p),
            Slot::Many(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Pending] {
        match self {
            Slot::One(p) => std::slice::from_mut(p),
            Slot::Many(v) => v,
        }
    }

    fn push(&mut self, p: Pending) {
        // Vec::new() does not allocate: the swap is free.
        *self = match std::mem::replace(self, Slot::Many(Vec::new())) {
            Slot::One(first) => Slot::Many(vec![first, p]),
            Slot::Many(mut v) => {
                v.push(p);
                Slot::Many(v)
            }
        };
    }
}

#[cfg(test)]
#[path = "tracker_tests.rs"]
mod tests;
