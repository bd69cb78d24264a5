//! A live block trace: which tracepoints to enable (filtered in the kernel
//! by device where possible), decoding, tracking, owner lookup.

use std::collections::{BTreeMap, HashMap};

use iolab_guard::Guard;
use iolab_sys::UsageError;
use iolab_trace::{EventRequest, SessionConfig, TraceSession};

use crate::decode::{DecodeError, Decoder};
use crate::disks::{Disk, Disks};
use crate::event::{Dev, EventKind};
use crate::fxhash::FxBuildHasher;
use crate::request::BioRequest;
use crate::result::BioTrace;
use crate::tracker::Tracker;

/// Why a block trace failed.
#[derive(Debug, thiserror::Error)]
pub enum BioError {
    /// The trace session failed.
    #[error(transparent)]
    Trace(#[from] iolab_trace::TraceError),
    /// The kernel's block events do not have the fields iolab needs.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// Bad input (device, pid).
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// The background tracing thread died.
    #[error("the block tracing thread panicked: {0}")]
    Thread(String),
}

/// What to trace.
#[derive(Debug, Clone)]
pub struct BioOptions {
    /// Disks to trace; empty traces every disk (bio-based ones present at
    /// the start).
    pub disks: Vec<Disk>,
    /// Keep only requests queued by this process (thread-group id) or
    /// thread.
    pub pid: Option<i32>,
    /// Keep every completed request in the [`BioTrace`] (histograms,
    /// summaries and Perfetto traces need them; a plain stream does not).
    pub keep_requests: bool,
    /// Ring buffer per CPU, KiB.
    pub buffer_kib_per_cpu: u32,
}

impl Default for BioOptions {
    fn default() -> Self {
        BioOptions {
            disks: Vec::new(),
            pid: None,
            keep_requests: true,
            // ~80 bytes per event, 4 events per request: 32 MiB holds
            // 100k requests per CPU between two reads, far more than the
            // 20 ms read interval needs even at 500k IOPS.
            buffer_kib_per_cpu: 32 * 1024,
        }
    }
}

/// Request-queue tracepoints every request-based trace needs.
const REQUEST_EVENTS: [&str; 4] = [
    "block_rq_issue",
    "block_rq_complete",
    "block_rq_requeue",
    "block_rq_merge",
];

/// `dev == a || dev == b …` for a tracepoint filter.
fn dev_filter(devs: &[Dev]) -> String {
    let parts: Vec<String> = devs.iter().map(|d| format!("dev == {}", d.0)).collect();
    parts.join(" || ")
}

/// The tracepoints (with filters) for `disks`; every disk when empty, with
/// `present_bio` the bio-based disks on the machine now. With
/// `block_io_start` (`has_io_start`, kernels ≥ 6.5) a request is queued when
/// it is made, so `block_rq_insert` adds nothing but one more event per
/// request on the I/O path and is left off; without it, insert is the
/// queue time.
pub fn event_requests(
    disks: &[Disk],
    present_bio: &[Disk],
    has_io_start: bool,
) -> Vec<EventRequest> {
    let mut out = Vec::new();
    let (rq, bio): (Vec<&Disk>, Vec<&Disk>) = if disks.is_empty() {
        (Vec::new(), present_bio.iter().collect())
    } else {
        disks.iter().partition(|d| !d.bio_based)
    };
    let with_parts = |ds: &[&Disk]| -> Vec<Dev> {
        ds.iter()
            .flat_map(|d| std::iter::once(d.dev).chain(d.partitions.iter().copied()))
            .collect()
    };
    let filtered = |name: &str, devs: &[Dev]| {
        let e = EventRequest::new("block", name);
        if devs.is_empty() {
            e
        } else {
            e.filter(&dev_filter(devs))
        }
    };
    if disks.is_empty() || !rq.is_empty() {
        let disk_devs: Vec<Dev> = rq.iter().map(|d| d.dev).collect();
        // Request events name the whole disk; bio merges name the partition.
        let start = if has_io_start {
            "block_io_start"
        } else {
            "block_rq_insert"
        };
        for name in std::iter::once(start).chain(REQUEST_EVENTS) {
            out.push(filtered(name, &disk_devs));
        }
        out.push(filtered("block_bio_frontmerge", &with_parts(&rq)));
    }
    if !bio.is_empty() {
        let devs = with_parts(&bio);
        out.push(filtered("block_bio_queue", &devs));
        out.push(filtered("block_bio_complete", &devs));
    }
    out
}

/// A running block trace, polled by its owner.
pub struct BioSession {
    session: TraceSession,
    state: State,
}

/// Everything but the trace session, so a poll callback can borrow it.
struct State {
    decoder: Decoder,
    tracker: Tracker,
    opts: BioOptions,
    disks: Disks,
    names: BTreeMap<Dev, String>,
    disk_of: HashMap<Dev, Dev, FxBuildHasher>,
    /// The last bio device looked up in `disk_of` and its disk.
    last_bio: (Dev, Dev),
    tgids: HashMap<i32, i32, FxBuildHasher>,
    requests: Vec<BioRequest>,
    completed: u64,
    filtered_out: u64,
    events: u64,
}

impl BioSession {
    /// Enables the block tracepoints in a private instance and starts
    /// reading.
    pub fn start(guard: &Guard, opts: BioOptions) -> Result<BioSession, BioError> {
        let disks = Disks::default();
        let present_bio: Vec<Disk> = if opts.disks.is_empty() {
            disks.all().into_iter().filter(|d| d.bio_based).collect()
        } else {
            Vec::new()
        };
        let config = SessionConfig {
            buffer_kib_per_cpu: opts.buffer_kib_per_cpu,
            ..SessionConfig::new(event_requests(
                &opts.disks,
                &present_bio,
                iolab_trace::has_event("block", "block_io_start"),
            ))
        };
        let session = TraceSession::start(guard, config)?;
        let decoder = Decoder::new(session.formats())?;
        let lookup = Disks::default();
        let tracker = Tracker::new(Box::new(move |d| lookup.is_bio_based(d)));
        let mut disk_of = HashMap::default();
        for d in &opts.disks {
            disk_of.insert(d.dev, d.dev);
            for p in &d.partitions {
                disk_of.insert(*p, d.dev);
            }
        }
        let state = State {
            decoder,
            tracker,
            opts,
            disks,
            names: BTreeMap::new(),
            disk_of,
            // No device is numbered u32::MAX (its major would be 4095).
            last_bio: (Dev(u32::MAX), Dev(u32::MAX)),
            tgids: HashMap::default(),
            requests: Vec::new(),
            completed: 0,
            filtered_out: 0,
            events: 0,
        };
        Ok(BioSession { session, state })
    }

    /// CLOCK_MONOTONIC ns when tracing started.
    pub fn start_ns(&self) -> u64 {
        self.session.start_ns()
    }

    /// Events lost so far.
    pub fn lost_events(&self) -> Result<u64, BioError> {
        Ok(self.session.stats()?.lost)
    }

    /// Processes what the kernel has recorded so far; `on_request` sees
    /// each completed request (with its disk name) as it completes.
    pub fn poll(&mut self, on_request: &mut dyn FnMut(&BioRequest, &str)) -> Result<(), BioError> {
        let state = &mut self.state;
        self.session
            .poll(&mut |rec| state.on_record(rec, on_request))?;
        Ok(())
    }

    /// Stops tracing, processes the rest and returns the trace.
    pub fn finish(
        self,
        on_request: &mut dyn FnMut(&BioRequest, &str),
    ) -> Result<BioTrace, BioError> {
        let BioSession { session, mut state } = self;
        let start_ns = session.start_ns();
        let stats = session.finish(&mut |rec| state.on_record(rec, on_request))?;
        let end_ns = iolab_trace::monotonic_ns();
        Ok(BioTrace {
            requests: state.requests,
            completed: state.completed,
            disks: state.names,
            start_ns,
            end_ns,
            events: state.events,
            lost_events: stats.lost,
            skipped_program_runs: None,
            diskstats_check: None,
            out_of_order: stats.out_of_order,
            tracker: state.tracker.stats(),
            in_flight_at_end: state.tracker.in_flight() as u64,
            filtered_out: state.filtered_out,
        })
    }
}

impl State {
    #[inline]
    fn on_record(
        &mut self,
        rec: &iolab_trace::Record<'_>,
        on_request: &mut dyn FnMut(&BioRequest, &str),
    ) {
        let Some(mut ev) = self.decoder.decode(rec) else {
            return;
        };
        self.events += 1;
        if matches!(
            ev.kind,
            EventKind::BioQueue | EventKind::BioComplete | EventKind::BioFrontmerge
        ) {
            // Bio events name the partition; requests, the whole disk.
            // One device at a time is the common case: skip the map then.
            if ev.dev != self.last_bio.0 {
                let (disks, dev) = (&self.disks, ev.dev);
                let disk = *self
                    .disk_of
                    .entry(dev)
                    .or_insert_with(|| disks.disk_of(dev));
                self.last_bio = (dev, disk);
            }
            ev.dev = self.last_bio.1;
        }
        let Some(mut r) = self.tracker.on_event(&ev) else {
            return;
        };
        r.pid = tgid_of(&mut self.tgids, r.tid);
        if let Some(p) = self.opts.pid {
            if r.pid != p && r.tid != p {
                self.filtered_out += 1;
                return;
            }
        }
        self.completed += 1;
        let disks = &mut self.disks;
        let name = self.names.entry(r.dev).or_insert_with(|| disks.name(r.dev));
        on_request(&r, name);
        if self.opts.keep_requests {
            self.requests.push(r);
        }
    }
}

/// The thread group (process) of a thread, from /proc/TID/status, cached;
/// the thread id itself when the thread is gone (or is the idle task).
fn tgid_of(cache: &mut HashMap<i32, i32, FxBuildHasher>, tid: i32) -> i32 {
    if tid <= 0 {
        return tid;
    }
    *cache.entry(tid).or_insert_with(|| {
        std::fs::read_to_string(format!("/proc/{tid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Tgid:"))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(tid)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn disk(name: &str, dev: Dev, bio_based: bool, partitions: Vec<Dev>) -> Disk {
        Disk {
            name: name.into(),
            dev,
            bio_based,
            partitions,
        }
    }

    fn names(reqs: &[EventRequest]) -> Vec<(&str, Option<&str>)> {
        reqs.iter()
            .map(|r| (r.name.as_str(), r.filter.as_deref()))
            .collect()
    }

    #[test]
    fn a_request_disk_gets_request_events_filtered_by_device() {
        let vda = disk("vda", Dev::new(254, 0), false, vec![Dev::new(254, 1)]);
        let reqs = event_requests(std::slice::from_ref(&vda), &[], true);
        let n = names(&reqs);
        assert!(
            n.contains(&("block_rq_issue", Some("dev == 266338304"))),
            "{n:?}"
        );
        assert!(
            n.contains(&(
                "block_bio_frontmerge",
                Some("dev == 266338304 || dev == 266338305")
            )),
            "{n:?}"
        );
        assert!(!n.iter().any(|(e, _)| *e == "block_bio_queue"), "{n:?}");
        assert!(
            n.contains(&("block_io_start", Some("dev == 266338304"))),
            "{n:?}"
        );
        assert!(!n.iter().any(|(e, _)| *e == "block_rq_insert"), "{n:?}");
        // Older kernels: the insert gives the queue time.
        let old = event_requests(&[vda], &[], false);
        let n = names(&old);
        assert!(
            n.contains(&("block_rq_insert", Some("dev == 266338304"))),
            "{n:?}"
        );
        assert!(!n.iter().any(|(e, _)| *e == "block_io_start"), "{n:?}");
    }

    #[test]
    fn a_bio_disk_gets_only_bio_events() {
        let z = disk("zram0", Dev::new(252, 0), true, vec![]);
        let n = names(&event_requests(&[z], &[], true))
            .into_iter()
            .map(|(e, f)| (e.to_string(), f.map(String::from)))
            .collect::<Vec<_>>();
        assert_eq!(
            n,
            [
                (
                    "block_bio_queue".to_string(),
                    Some("dev == 264241152".to_string())
                ),
                (
                    "block_bio_complete".to_string(),
                    Some("dev == 264241152".to_string())
                ),
            ]
        );
    }

    #[test]
    fn everything_traces_request_events_unfiltered_and_present_bio_disks() {
        let z = disk("zram0", Dev::new(252, 0), true, vec![]);
        let reqs = event_requests(&[], &[z], true);
        let n = names(&reqs);
        assert!(n.contains(&("block_rq_complete", None)), "{n:?}");
        assert!(
            n.contains(&("block_bio_queue", Some("dev == 264241152"))),
            "{n:?}"
        );
        let none = event_requests(&[], &[], true);
        assert!(!names(&none).iter().any(|(e, _)| *e == "block_bio_queue"));
    }

    #[test]
    fn tgid_of_finds_this_process_and_falls_back_to_the_tid() {
        let mut cache = HashMap::default();
        let me = iolab_sys::process::own_pid();
        assert_eq!(tgid_of(&mut cache, me), me);
        assert_eq!(tgid_of(&mut cache, 0), 0);
        assert_eq!(tgid_of(&mut cache, i32::MAX), i32::MAX);
    }
}
