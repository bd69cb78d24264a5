//! One decoded block-layer tracepoint: the small, copyable value the
//! request tracker consumes. Decoding from raw trace records lives in
//! `decode.rs`; everything downstream sees only these types, so the tracker
//! and the outputs are tested with synthetic sequences.

use std::fmt;

/// A device number as the block tracepoints store it: the kernel's internal
/// `dev_t`, `major << 20 | minor` (`MINORBITS` = 20 in include/linux/kdev_t.h),
/// which is also what an event `filter` such as `dev == N` compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dev(pub u32);

impl Dev {
    /// From a major and minor number.
    pub fn new(major: u32, minor: u32) -> Dev {
        Dev((major << 20) | (minor & 0xf_ffff))
    }
    /// The major number.
    pub fn major(self) -> u32 {
        self.0 >> 20
    }
    /// The minor number.
    pub fn minor(self) -> u32 {
        self.0 & 0xf_ffff
    }
}

impl fmt::Display for Dev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major(), self.minor())
    }
}

/// The operation of a request, from the op letter of `rwbs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `R`
    Read,
    /// `W`
    Write,
    /// `D` (discard, `DE` secure erase)
    Discard,
    /// `F` as the op: an empty cache flush (REQ_OP_FLUSH)
    Flush,
    /// Anything else (`N`, zone operations, ...).
    Other,
}

impl Op {
    /// The one-letter name biosnoop's `T` column uses (`R`, `W`) and iolab
    /// extends (`D`, `F`, `N`).
    pub fn letter(self) -> char {
        match self {
            Op::Read => 'R',
            Op::Write => 'W',
            Op::Discard => 'D',
            Op::Flush => 'F',
            Op::Other => 'N',
        }
    }
    /// Parses a [`Op::letter`].
    pub fn from_letter(c: char) -> Option<Op> {
        Some(match c {
            'R' => Op::Read,
            'W' => Op::Write,
            'D' => Op::Discard,
            'F' => Op::Flush,
            'N' => Op::Other,
            _ => return None,
        })
    }
}

/// The `rwbs` string of a block tracepoint, parsed. The kernel writes it in
/// `blk_fill_rwbs()` (kernel/trace/blktrace.c): an optional `F` for
/// REQ_PREFLUSH, the op letter, then `F` (FUA), `A` (readahead), `S` (sync),
/// `M` (metadata), in that order. The flush request the flush machinery
/// issues itself reads `FF` (PREFLUSH + REQ_OP_FLUSH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rwbs {
    /// The operation.
    pub op: Op,
    /// Bit set of the `RWBS_*` flags.
    pub flags: u8,
}

/// REQ_PREFLUSH: flush the cache before this request.
pub const RWBS_PREFLUSH: u8 = 1;
/// REQ_FUA: write through the cache.
pub const RWBS_FUA: u8 = 2;
/// REQ_RAHEAD: readahead.
pub const RWBS_AHEAD: u8 = 4;
/// REQ_SYNC: someone waits for it.
pub const RWBS_SYNC: u8 = 8;
/// REQ_META: filesystem metadata.
pub const RWBS_META: u8 = 16;

impl Rwbs {
    /// Parses the text (a NUL-padded `char rwbs[10]` is fine: parsing stops
    /// at the first NUL).
    pub fn parse(text: &[u8]) -> Rwbs {
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        let t = &text[..end];
        let is_op = |b: u8| matches!(b, b'W' | b'D' | b'F' | b'R' | b'N' | b'Z');
        let (mut flags, rest) = match t {
            [b'F', second, ..] if is_op(*second) => (RWBS_PREFLUSH, &t[1..]),
            _ => (0, t),
        };
        let op = match rest.first() {
            Some(b'R') => Op::Read,
            Some(b'W') => Op::Write,
            Some(b'D') => Op::Discard,
            Some(b'F') => Op::Flush,
            _ => Op::Other,
        };
        for &b in rest.iter().skip(1) {
            flags |= match b {
                b'F' => RWBS_FUA,
                b'A' => RWBS_AHEAD,
                b'S' => RWBS_SYNC,
                b'M' => RWBS_META,
                _ => 0,
            };
        }
        Rwbs { op, flags }
    }

    /// True for the given `RWBS_*` flag.
    pub fn has(self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// True for a request that carries no data and only flushes the cache.
    pub fn is_flush(self) -> bool {
        self.op == Op::Flush
    }
}

impl fmt::Display for Rwbs {
    /// The kernel's spelling back (secure erase and zone ops, folded into
    /// `D` and `N` when parsed, print as those).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(6);
        if self.has(RWBS_PREFLUSH) {
            s.push('F');
        }
        s.push(self.op.letter());
        for (flag, c) in [
            (RWBS_FUA, 'F'),
            (RWBS_AHEAD, 'A'),
            (RWBS_SYNC, 'S'),
            (RWBS_META, 'M'),
        ] {
            if self.has(flag) {
                s.push(c);
            }
        }
        f.write_str(&s)
    }
}

/// A task name, `TASK_COMM_LEN` (16) bytes, NUL padded: fixed size so the
/// hot path never allocates.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    /// From bytes (truncated to 15 and NUL padded like the kernel does).
    pub fn new(bytes: &[u8]) -> Comm {
        let mut c = [0u8; 16];
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        let n = end.min(15);
        c[..n].copy_from_slice(&bytes[..n]);
        Comm(c)
    }
    /// The name as text (lossy for non-UTF-8 names).
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..end])
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

/// Which tracepoint an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// `block_bio_queue`: a bio entered the block layer (submitter's context).
    BioQueue,
    /// `block_bio_complete`: a bio ended (traced for bio-based devices; the
    /// block layer suppresses it for bios completed as part of a request).
    BioComplete,
    /// `block_bio_frontmerge`: a bio was merged in front of a request, whose
    /// start sector becomes the bio's.
    BioFrontmerge,
    /// `block_io_start`: a request was created from a bio (submitter's
    /// context; kernels ≥ 6.5).
    IoStart,
    /// `block_rq_insert`: a request went into the scheduler or dispatch list.
    RqInsert,
    /// `block_rq_issue`: the driver got the request.
    RqIssue,
    /// `block_rq_complete`: the driver finished `nr_sector` sectors of it.
    RqComplete,
    /// `block_rq_requeue`: the driver gave the request back; it will be
    /// inserted and issued again.
    RqRequeue,
    /// `block_rq_merge`: this request was merged into the request ending
    /// where it starts, and no longer exists on its own.
    RqMerge,
}

impl EventKind {
    /// Every kind with its tracepoint name (system `block`).
    pub const ALL: [(EventKind, &'static str); 9] = [
        (EventKind::BioQueue, "block_bio_queue"),
        (EventKind::BioComplete, "block_bio_complete"),
        (EventKind::BioFrontmerge, "block_bio_frontmerge"),
        (EventKind::IoStart, "block_io_start"),
        (EventKind::RqInsert, "block_rq_insert"),
        (EventKind::RqIssue, "block_rq_issue"),
        (EventKind::RqComplete, "block_rq_complete"),
        (EventKind::RqRequeue, "block_rq_requeue"),
        (EventKind::RqMerge, "block_rq_merge"),
    ];

    /// The tracepoint's name.
    pub fn tracepoint(self) -> &'static str {
        EventKind::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, n)| *n)
            .unwrap_or("?")
    }

    /// From a tracepoint name.
    pub fn from_tracepoint(name: &str) -> Option<EventKind> {
        EventKind::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(k, _)| *k)
    }
}

/// One block event, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEvent {
    /// The tracepoint.
    pub kind: EventKind,
    /// CLOCK_MONOTONIC nanoseconds.
    pub ts_ns: u64,
    /// CPU that recorded it.
    pub cpu: u32,
    /// `common_pid`: the thread running when it fired (a TID).
    pub tid: i32,
    /// Device (for request events the whole disk; for bio events the
    /// device the bio was submitted to).
    pub dev: Dev,
    /// Start sector (512-byte units, absolute on the disk).
    pub sector: u64,
    /// Size in sectors (0 for flushes; for `block_rq_complete` the sectors
    /// finished by this completion).
    pub nr_sector: u32,
    /// The request's operation and flags.
    pub rwbs: Rwbs,
    /// The `comm` field where the event has one, else the current task's
    /// name as the record header gives it (may be empty).
    pub comm: Comm,
    /// The `error` field of completions (0 = success).
    pub error: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_round_trips_major_minor() {
        let d = Dev::new(253, 7);
        assert_eq!((d.major(), d.minor()), (253, 7));
        assert_eq!(d.0, (253 << 20) | 7);
        assert_eq!(d.to_string(), "253:7");
    }

    #[test]
    fn rwbs_parses_kernel_spellings() {
        let r = Rwbs::parse(b"R\0\0\0\0\0\0\0\0\0");
        assert_eq!((r.op, r.flags), (Op::Read, 0));
        let r = Rwbs::parse(b"RA");
        assert_eq!((r.op, r.flags), (Op::Read, RWBS_AHEAD));
        let r = Rwbs::parse(b"WS");
        assert_eq!((r.op, r.flags), (Op::Write, RWBS_SYNC));
        let r = Rwbs::parse(b"FWFS");
        assert_eq!(r.op, Op::Write);
        assert!(r.has(RWBS_PREFLUSH) && r.has(RWBS_FUA) && r.has(RWBS_SYNC));
        let r = Rwbs::parse(b"FF");
        assert_eq!((r.op, r.flags), (Op::Flush, RWBS_PREFLUSH));
        assert!(r.is_flush());
        let r = Rwbs::parse(b"F");
        assert_eq!((r.op, r.flags), (Op::Flush, 0));
        let r = Rwbs::parse(b"DS");
        assert_eq!((r.op, r.flags), (Op::Discard, RWBS_SYNC));
        let r = Rwbs::parse(b"RM");
        assert_eq!((r.op, r.flags), (Op::Read, RWBS_META));
        assert_eq!(Rwbs::parse(b"N").op, Op::Other);
        assert_eq!(Rwbs::parse(b"").op, Op::Other);
    }

    #[test]
    fn rwbs_prints_back() {
        for s in ["R", "RA", "WS", "FWFS", "FF", "DS", "WM"] {
            assert_eq!(Rwbs::parse(s.as_bytes()).to_string(), s);
        }
    }

    #[test]
    fn comm_stops_at_nul_and_truncates() {
        assert_eq!(Comm::new(b"fio\0garbage").as_str(), "fio");
        assert_eq!(
            Comm::new(b"a-very-long-thread-name").as_str(),
            "a-very-long-thr"
        );
    }

    #[test]
    fn tracepoint_names_round_trip() {
        for (k, n) in EventKind::ALL {
            assert_eq!(EventKind::from_tracepoint(n), Some(k));
            assert_eq!(k.tracepoint(), n);
        }
    }
}
