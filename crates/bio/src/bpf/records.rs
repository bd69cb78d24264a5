//! Per-request records from the kernel: bio.bpf.c with `records` set puts
//! each completed request (its times, size, flags, status and the task
//! that queued it) into BPF ring buffers (one per CPU), which this side
//! drains on its own clock (the programs never wake it). The records
//! become the same [`BioRequest`]s the tracefs tracker makes, so
//! biosnoop's lines, `--summary`, `--perfetto` and `--hist` from records
//! do not care which tracer made them.
//!
//! What the kernel side does not do that iolab's tracefs tracker does:
//! it keeps one request per device and start sector (the tracker keeps
//! several), and it needs raw tracepoints (CO-RE, the kernel's BTF): on a
//! kernel without them this path is refused with the reason, never
//! quietly replaced.

use std::collections::{BTreeMap, HashMap};

use aya::maps::{MapData, RingBuf};

use super::{
    BpfUnavailable, Loaded, Tracepoints, C_LOST, C_MERGED, C_PARTIAL, C_REQUEUE, C_START_FULL,
};
use super::{C_NO_SLOT, C_UNMATCHED};
use crate::disks::Disk;
use crate::event::{Comm, Dev, Op, Rwbs};
use crate::request::{BioRequest, Origin};
use crate::result::BioTrace;
use crate::tracker::TrackerStats;

/// What the records path is asked for.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Only requests queued by this process (or thread) id.
    pub pid: Option<i32>,
    /// Keep every request in the returned trace (for --summary,
    /// --perfetto, --hist); a stream of lines keeps none.
    pub keep_requests: bool,
    /// The ring buffers' size in bytes, shared among the rings the CPUs
    /// use (one per CPU up to 8), each at least 4 MiB (~52k records, 110 ms
    /// at 464k IOPS on one CPU) unless this is smaller: 16 MiB is 8 MiB per
    /// ring on 2 CPUs, 4 MiB per ring (32 MiB) on 8 or more. iolab drains
    /// them every 50 ms.
    pub ring_bytes: u32,
}

impl Default for RecordOptions {
    fn default() -> RecordOptions {
        RecordOptions {
            pid: None,
            keep_requests: false,
            ring_bytes: 16 << 20,
        }
    }
}

/// `struct rec` of bio.bpf.c, as bytes.
const REC_SIZE: usize = 72;

/// One record, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rec {
    queue_ns: u64,
    issue_ns: u64,
    complete_ns: u64,
    sector: u64,
    dev: u32,
    nr_sector: u32,
    tid: u32,
    pid: u32,
    comm: [u8; 16],
    requeues: u16,
    origin: u8,
    op: u8,
    flags: u8,
    status: u8,
}

impl Rec {
    /// From the ring buffer's bytes (native order: the kernel wrote them
    /// on this machine); `None` for a record of another size.
    fn parse(b: &[u8]) -> Option<Rec> {
        if b.len() < REC_SIZE {
            return None;
        }
        let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]));
        let mut comm = [0u8; 16];
        comm.copy_from_slice(&b[48..64]);
        Some(Rec {
            queue_ns: u64_at(0),
            issue_ns: u64_at(8),
            complete_ns: u64_at(16),
            sector: u64_at(24),
            dev: u32_at(32),
            nr_sector: u32_at(36),
            tid: u32_at(40),
            pid: u32_at(44),
            comm,
            requeues: u16::from_ne_bytes([b[64], b[65]]),
            origin: b[66],
            op: b[67],
            flags: b[68],
            status: b[69],
        })
    }

    /// The request it describes, on `disk` (a partition's records name
    /// their disk); `errno_status`: the status byte is the low byte of a
    /// negative errno (block_rq_complete's argument before 5.17), not a
    /// blk_status_t.
    fn request(&self, disk: Dev, errno_status: bool) -> BioRequest {
        let origin = match self.origin {
            0 => Origin::BioQueue,
            1 => Origin::IoStart,
            2 => Origin::Insert,
            _ => Origin::Issue,
        };
        let op = match self.op {
            b'R' => Op::Read,
            b'W' => Op::Write,
            b'D' => Op::Discard,
            b'F' => Op::Flush,
            _ => Op::Other,
        };
        let tid = i32::try_from(self.tid).unwrap_or(i32::MAX);
        BioRequest {
            dev: disk,
            // A flush has no position: the kernel's (sector_t)-1, which
            // the tracefs tracker keeps as 0.
            sector: if op == Op::Flush { 0 } else { self.sector },
            nr_sector: self.nr_sector,
            rwbs: Rwbs {
                op,
                flags: self.flags,
            },
            comm: Comm::new(&self.comm),
            tid,
            pid: i32::try_from(self.pid).unwrap_or(tid),
            queue_ns: (origin != Origin::Issue).then_some(self.queue_ns),
            // 0: completed without being issued itself (an empty
            // pre-flush write), as the tracefs tracker's None.
            issue_ns: (self.issue_ns != 0).then_some(self.issue_ns),
            complete_ns: self.complete_ns,
            requeues: self.requeues,
            error: if errno_status {
                i32::from(i8::from_ne_bytes([self.status]))
            } else {
                errno_of_status(self.status)
            },
            origin,
        }
    }
}

/// The kernel's blk_status_to_errno (block/blk-core.c's table), as the
/// block_rq_complete tracepoint prints it.
fn errno_of_status(s: u8) -> i32 {
    let e = match s {
        0 => return 0,
        1 => libc::EOPNOTSUPP,
        2 => libc::ETIMEDOUT,
        3 => libc::ENOSPC,
        4 => libc::ENOLINK,
        5 => libc::EREMOTEIO,
        6 => libc::EBADE,
        7 => libc::ENODATA,
        8 => libc::EILSEQ,
        9 => libc::ENOMEM,
        10 => libc::EIO,
        11 => libc::EREMCHG,
        12 => libc::EAGAIN,
        13 => libc::EOVERFLOW,
        14 => libc::EBUSY,
        15 => libc::EINVAL,
        _ => libc::EIO,
    };
    -e
}

/// The records collector, attached.
pub struct BioBpfRecords {
    loaded: Loaded,
    /// One ring buffer per CPU (bio.bpf.c's `records_rb0` …).
    rings: Vec<RingBuf<MapData>>,
    /// What one poll drained from the rings, put in completion order.
    batch: Vec<Rec>,
    opts: RecordOptions,
    start_ns: u64,
    /// A traced device (disk or partition) → its disk's number and name,
    /// whether the status of its completions is an errno, and the reads
    /// and writes (by the kernel's stat groups) recorded on it before the
    /// pid filter: what /proc/diskstats is checked against.
    disk_of: HashMap<u32, (Dev, String, bool, [u64; 2])>,
    names: BTreeMap<Dev, String>,
    requests: Vec<BioRequest>,
    completed: u64,
    filtered_out: u64,
    /// Records read, and records of a size this side does not know.
    read: u64,
    malformed: u64,
}

impl BioBpfRecords {
    /// Loads and attaches the programs for `disks` (every disk when
    /// empty) with per-request records on (tracefs mounted through
    /// `guard` where it is not).
    pub fn start(
        guard: &iolab_guard::Guard,
        disks: &[Disk],
        opts: RecordOptions,
    ) -> Result<BioBpfRecords, BpfUnavailable> {
        BioBpfRecords::start_with(guard, disks, opts, Tracepoints::from_env()?)
    }

    /// As [`BioBpfRecords::start`], from rung `from` of the ladder down
    /// (records need one of the typed rungs: `Classic` is refused).
    pub fn start_with(
        guard: &iolab_guard::Guard,
        disks: &[Disk],
        opts: RecordOptions,
        from: Tracepoints,
    ) -> Result<BioBpfRecords, BpfUnavailable> {
        let mut loaded = Loaded::start(guard, disks, from, Some(opts.ring_bytes), None)?;
        let mut rings = Vec::with_capacity(super::NR_RINGS);
        for name in super::RINGS {
            let map = loaded
                .ebpf
                .take_map(name)
                .ok_or_else(|| BpfUnavailable(format!("no {name} map")))?;
            rings.push(RingBuf::try_from(map).map_err(|e| BpfUnavailable(format!("{name}: {e}")))?);
        }
        let t = &loaded.table;
        // Before 5.17 block_rq_complete passed a negative errno where it
        // now passes a blk_status_t (bio completions give the bio's status).
        let old_rq = aya::util::KernelVersion::current()
            .is_ok_and(|v| v < aya::util::KernelVersion::new(5, 17, 0));
        let mut disk_of = HashMap::new();
        for i in 0..t.ndevs as usize {
            if let Some(d) = t.disks.get(t.slot[i] as usize) {
                disk_of.insert(
                    t.devs[i],
                    (d.dev, d.name.clone(), old_rq && !d.bio_based, [0; 2]),
                );
            }
        }
        Ok(BioBpfRecords {
            loaded,
            rings,
            batch: Vec::new(),
            opts,
            start_ns: iolab_trace::monotonic_ns(),
            disk_of,
            names: BTreeMap::new(),
            requests: Vec::new(),
            completed: 0,
            filtered_out: 0,
            read: 0,
            malformed: 0,
        })
    }

    /// CLOCK_MONOTONIC ns when the programs were attached.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// How the programs are attached: `tp_btf`, or `raw_tracepoint`
    /// (followed by why not tp_btf when that was tried).
    pub fn attach(&self) -> &str {
        &self.loaded.attach
    }

    /// Drains the ring buffers; `on_request` sees each completed request
    /// (with its disk's name) in completion order within what this poll
    /// found (a CPU's records can still arrive a poll after a later one of
    /// another CPU's, as with one ring buffer; `finish` sorts them all).
    pub fn poll(&mut self, on_request: &mut dyn FnMut(&BioRequest, &str)) {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        for ring in &mut self.rings {
            while let Some(item) = ring.next() {
                self.read += 1;
                match Rec::parse(&item) {
                    Some(rec) => batch.push(rec),
                    None => self.malformed += 1,
                }
            }
        }
        batch.sort_unstable_by_key(|r| r.complete_ns);
        for rec in &batch {
            let Some((disk, name, errno_status, seen)) = self.disk_of.get_mut(&rec.dev) else {
                self.malformed += 1;
                continue;
            };
            let r = rec.request(*disk, *errno_status);
            let (rd, wr) = super::kernel_count::groups(r.op().letter());
            seen[0] += u64::from(rd);
            seen[1] += u64::from(wr);
            if let Some(p) = self.opts.pid {
                if r.pid != p && r.tid != p {
                    self.filtered_out += 1;
                    continue;
                }
            }
            self.completed += 1;
            self.names.entry(*disk).or_insert_with(|| name.clone());
            on_request(&r, name);
            if self.opts.keep_requests {
                self.requests.push(r);
            }
        }
        self.batch = batch;
    }

    /// Detaches, drains what is left and returns the trace.
    pub fn finish(
        mut self,
        on_request: &mut dyn FnMut(&BioRequest, &str),
    ) -> Result<BioTrace, BpfUnavailable> {
        let (skipped, at_end) = self.loaded.detach()?;
        let end_ns = iolab_trace::monotonic_ns();
        self.poll(on_request);
        let c = self.loaded.counters()?;
        let in_flight = self.loaded.in_flight()?;
        let at = |i: u32| c[i as usize];
        if self.malformed > 0 {
            return Err(BpfUnavailable(format!(
                "{} of {} records from the kernel were not what iolab's programs write",
                self.malformed, self.read
            )));
        }
        let disk_of = &self.disk_of;
        // A disk's devices (it and its partitions), summed.
        let seen = |disk: &str| {
            disk_of
                .values()
                .filter(|d| d.1 == disk)
                .fold((0, 0), |(r, w), d| (r + d.3[0], w + d.3[1]))
        };
        // Losses the counters already hold, not to be counted twice.
        let explained =
            at(C_UNMATCHED) + at(C_LOST) + at(C_START_FULL) + at(C_NO_SLOT) + skipped.unwrap_or(0);
        let kernel = self.loaded.kernel.check(at_end, &seen, explained);
        // Each poll is in completion order, but a CPU's record can arrive
        // a poll after a later one of another CPU's: put them all in
        // completion order, as the tracefs merge delivers them.
        self.requests.sort_by_key(|r| r.complete_ns);
        Ok(BioTrace {
            requests: self.requests,
            completed: self.completed,
            disks: self.names,
            start_ns: self.start_ns,
            end_ns,
            events: self.read + at(C_UNMATCHED) + at(C_PARTIAL) + at(C_REQUEUE) + at(C_MERGED),
            // A record with no room, a request the table could not hold,
            // a device without a slot, an event the kernel did not give
            // the programs: each a request missing.
            lost_events: at(C_LOST)
                + at(C_START_FULL)
                + at(C_NO_SLOT)
                + skipped.unwrap_or(0)
                + kernel.missed,
            skipped_program_runs: skipped,
            diskstats_check: Some(kernel),
            out_of_order: 0,
            tracker: TrackerStats {
                unmatched_completions: at(C_UNMATCHED),
                unmatched_sectors: 0,
                merged_requests: at(C_MERGED),
                requeues: at(C_REQUEUE),
                partial_completions: at(C_PARTIAL),
            },
            in_flight_at_end: in_flight,
            filtered_out: self.filtered_out,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_as_bio_bpf_c_lays_it_out() {
        let mut b = vec![0u8; REC_SIZE];
        b[0..8].copy_from_slice(&100u64.to_ne_bytes());
        b[8..16].copy_from_slice(&150u64.to_ne_bytes());
        b[16..24].copy_from_slice(&400u64.to_ne_bytes());
        b[24..32].copy_from_slice(&2048u64.to_ne_bytes());
        b[32..36].copy_from_slice(&Dev::new(7, 3).0.to_ne_bytes());
        b[36..40].copy_from_slice(&8u32.to_ne_bytes());
        b[40..44].copy_from_slice(&1234u32.to_ne_bytes());
        b[44..48].copy_from_slice(&1200u32.to_ne_bytes());
        b[48..51].copy_from_slice(b"fio");
        b[64..66].copy_from_slice(&1u16.to_ne_bytes());
        b[66] = 2;
        b[67] = b'W';
        b[68] = 8 | 2;
        b[69] = 10;
        let r = Rec::parse(&b).unwrap().request(Dev::new(7, 3), false);
        assert_eq!(r.sector, 2048);
        assert_eq!(r.bytes(), 4096);
        assert_eq!((r.tid, r.pid), (1234, 1200));
        assert_eq!(r.comm.as_str(), "fio");
        assert_eq!(r.origin, Origin::Insert);
        assert_eq!(r.que_ns(), 50);
        assert_eq!(r.lat_ns(), 250);
        assert_eq!(r.rwbs.op, Op::Write);
        assert_eq!(
            r.rwbs.flags,
            crate::event::RWBS_SYNC | crate::event::RWBS_FUA
        );
        assert_eq!(r.error, -libc::EIO);
        assert_eq!(r.requeues, 1);
        assert!(Rec::parse(&b[..40]).is_none());
        // Before 5.17: -EIO's low byte.
        b[69] = (-libc::EIO).to_le_bytes()[0];
        let r = Rec::parse(&b).unwrap().request(Dev::new(7, 3), true);
        assert_eq!(r.error, -libc::EIO);
    }

    #[test]
    fn an_issue_only_record_has_no_queue_time() {
        let mut b = vec![0u8; REC_SIZE];
        b[8..16].copy_from_slice(&150u64.to_ne_bytes());
        b[16..24].copy_from_slice(&400u64.to_ne_bytes());
        b[66] = 3;
        let r = Rec::parse(&b).unwrap().request(Dev::new(7, 3), false);
        assert_eq!(r.queue_ns, None);
        assert_eq!(r.error, 0);
    }
}
