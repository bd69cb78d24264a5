//! Waiting until prefetch reads have really finished.
//!
//! readahead(2) and WILLNEED return once the reads are submitted (seed 001:
//! "readahead returns before the reads finish"). A page being read is in
//! the page cache but not yet up to date: cachestat(2) counts it, mincore(2)
//! does not. So a file's reads are over when both agree on its requested
//! ranges — whether or not every page is there: pages dropped again by
//! memory pressure or someone's drop_caches will not come back, and waiting
//! for them (or for the device to go idle, which a machine under background
//! I/O never does) would wait forever. Each poll costs a one-page check
//! per file while its last page is still in flight.
//!
//! Without cachestat (Linux < 6.5) only "every page is in" can be seen;
//! then, and for files the kernel will not describe, the fallback is the
//! devices having nothing in flight and their read counters standing still
//! for a few polls.

use std::path::Path;
use std::time::{Duration, Instant};

use super::devices;
use super::{ListFile, Poll};
use crate::inspect::Probe;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitOutcome {
    /// Every read finished and every requested page is cached.
    Complete,
    /// Every read finished, but some requested pages are not cached (never
    /// read, or dropped again); or, where pages cannot be checked, the
    /// devices went idle and nothing changed for a while.
    Settled,
    /// The timeout passed first.
    TimedOut,
    /// A stop was requested (Ctrl-C).
    Interrupted,
}

impl WaitOutcome {
    /// Its name, as stored (`complete`, `settled`, `timed_out`,
    /// `interrupted`).
    pub fn as_str(self) -> &'static str {
        match self {
            WaitOutcome::Complete => "complete",
            WaitOutcome::Settled => "settled",
            WaitOutcome::TimedOut => "timed_out",
            WaitOutcome::Interrupted => "interrupted",
        }
    }
}

/// Polls without progress (and nothing in flight) that count as settled.
const SETTLE_POLLS: u32 = 3;
const FIRST_POLL: Duration = Duration::from_millis(2);
const MAX_POLL: Duration = Duration::from_millis(10);

/// Waits for `files` (those without errors) to become resident, watching
/// the devices `names`, for at most `timeout`.
pub(crate) fn wait(
    files: &[ListFile],
    names: &[String],
    timeout: Duration,
    proc_root: &Path,
) -> WaitOutcome {
    let start = Instant::now();
    let mut probe = Probe::new();
    let mut pending: Vec<&ListFile> = files.iter().filter(|t| t.error.is_none()).collect();
    let mut incomplete = false;
    let mut last = None;
    let mut still = 0;
    let mut interval = FIRST_POLL;
    loop {
        // Reads seen in flight: the device fallback must not declare them
        // over (requests an I/O scheduler holds back are not "in flight").
        let mut reading = false;
        pending.retain(|t| match t.poll(&mut probe) {
            Poll::Done { complete } => {
                incomplete |= !complete;
                false
            }
            Poll::Reading => {
                reading = true;
                true
            }
            Poll::Unknown => true,
        });
        if pending.is_empty() {
            return if incomplete {
                WaitOutcome::Settled
            } else {
                WaitOutcome::Complete
            };
        }
        let mut progress = pending.len() as u64;
        // Unreadable counters (never seen) leave only the residency to
        // decide when the reads have settled.
        let stats = devices::snapshot(proc_root, names).unwrap_or_else(|_| Vec::new());
        let in_flight: u64 = stats.iter().map(|d| d.in_flight).sum();
        progress += stats.iter().map(|d| d.sectors_read).sum::<u64>();
        let precise = reading && probe.has_cachestat();
        still = if !precise && in_flight == 0 && last == Some(progress) {
            still + 1
        } else {
            0
        };
        last = Some(progress);
        if still >= SETTLE_POLLS {
            return WaitOutcome::Settled;
        }
        if iolab_guard::stop_requested() {
            return WaitOutcome::Interrupted;
        }
        if start.elapsed() >= timeout {
            return WaitOutcome::TimedOut;
        }
        std::thread::sleep(interval);
        interval = (interval * 2).min(MAX_POLL);
    }
}
