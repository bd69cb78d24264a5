//! The device clock: when each request completes, given when it arrived
//! and what is already in the device. Pure arithmetic on nanoseconds, so
//! it is tested without a kernel.
//!
//! The model: `queue_depth` command slots share one transfer channel. A
//! request takes the slot that frees first; its fixed latency (command,
//! flash access, and a seek when it does not start where the last request
//! ended) overlaps with other slots' work, its transfer (bytes / rate)
//! does not. At depth 1 that is simply one request after another, each
//! taking `latency + bytes / rate`. A flush waits for every slot, then
//! holds the device for its cost.
//!
//! A duplex model (the `rate` model of `--bw`, standing in for
//! blk-throttle) keeps reads and writes apart entirely: each direction has
//! its own `queue_depth` slots and its own channel, as blk-throttle holds
//! reads and writes in separate queues with separate budgets. A write
//! waiting for its channel then never holds a slot a read needs.
//!
//! A request that continues the previous one (same direction, starting
//! where it ended) and arrives while that one is still transferring is
//! its continuation: FUSE splits a loop device's 1 MiB request into
//! 512 KiB pieces that arrive together, and the block layer would have
//! merged two such requests anyway. It pays no second fixed latency.

use crate::params::{transfer_ns, ModelParams};

/// What a request asks of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read `bytes` at `offset`.
    Read {
        /// Byte offset.
        offset: u64,
        /// Length.
        bytes: u64,
    },
    /// Write `bytes` at `offset`.
    Write {
        /// Byte offset.
        offset: u64,
        /// Length.
        bytes: u64,
    },
    /// Discard (trim) `bytes` at `offset`: the blocks' contents are
    /// dropped. The device takes a command slot for its fixed write
    /// latency (the command and the mapping update) and moves no data.
    Discard {
        /// Byte offset.
        offset: u64,
        /// Length.
        bytes: u64,
    },
    /// Make written data durable.
    Flush,
}

impl Op {
    /// The bytes the request moves through the transport (a discard and
    /// a flush move none).
    pub fn bytes(&self) -> u64 {
        match *self {
            Op::Read { bytes, .. } | Op::Write { bytes, .. } => bytes,
            Op::Discard { .. } | Op::Flush => 0,
        }
    }
}

/// When a request starts being served and when it completes, ns on the
/// caller's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Service starts (after waiting for a slot).
    pub start_ns: u64,
    /// Service ends: the reply is due.
    pub done_ns: u64,
}

/// The device's state.
#[derive(Debug, Clone)]
pub struct DeviceClock {
    params: ModelParams,
    free_at: Vec<u64>,
    /// The write slots of a duplex model (`free_at` is then reads').
    write_free_at: Vec<u64>,
    channel_free: u64,
    /// The write channel of a duplex model (`channel_free` is then reads').
    write_channel_free: u64,
    last_end: Option<u64>,
    last_write: bool,
    /// Where the last write ended, in a duplex model (whose reads and
    /// writes are separate streams).
    last_write_end: Option<u64>,
    busy_until: u64,
    /// Time at least one request was in service, ns.
    pub busy_ns: u64,
}

impl DeviceClock {
    /// An idle device.
    pub fn new(params: ModelParams) -> DeviceClock {
        let depth = params.queue_depth.max(1) as usize;
        let write_slots = if params.duplex { depth } else { 0 };
        DeviceClock {
            params,
            free_at: vec![0; depth],
            write_free_at: vec![0; write_slots],
            channel_free: 0,
            write_channel_free: 0,
            last_end: None,
            last_write: false,
            last_write_end: None,
            busy_until: 0,
            busy_ns: 0,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &ModelParams {
        &self.params
    }

    /// Admits a request arriving at `now_ns`; returns when it starts and
    /// completes. Requests must be admitted in arrival order.
    pub fn admit(&mut self, now_ns: u64, op: Op) -> Slot {
        self.admit_early(now_ns, op, 0)
    }

    /// [`admit`](Self::admit) where each completion is answered
    /// `early_ns` before the model's time (the server takes the path's
    /// round trip off): a request continues a stream (no fixed latency)
    /// only when it arrived before the previous one's answer left, i.e.
    /// it was queued at the device, not sent after the answer came back.
    pub fn admit_early(&mut self, now_ns: u64, op: Op, early_ns: u64) -> Slot {
        let p = &self.params;
        let slot = match op {
            // blk-throttle, which a duplex model stands in for, holds no
            // flush back: the lab's flush ends at its write-through lower
            // device at once, never waiting for the throttled writes (a
            // flush covers writes already completed, not those queued).
            Op::Flush if p.duplex => Slot {
                start_ns: now_ns,
                done_ns: now_ns + p.flush_ns,
            },
            Op::Flush => {
                let start = self
                    .free_at
                    .iter()
                    .chain(&self.write_free_at)
                    .copied()
                    .max()
                    .unwrap_or(0)
                    .max(now_ns);
                let done = start + p.flush_ns;
                self.free_at.iter_mut().for_each(|f| *f = done);
                self.write_free_at.iter_mut().for_each(|f| *f = done);
                self.channel_free = self.channel_free.max(done);
                self.write_channel_free = self.write_channel_free.max(done);
                Slot {
                    start_ns: start,
                    done_ns: done,
                }
            }
            Op::Discard { .. } => {
                let (i, free) = self.first_free(true);
                let start = free.max(now_ns);
                let done = start.saturating_add(p.write_latency_ns);
                *self.slot_mut(true, i) = done;
                // The next transfer is not a continuation of a discard (in
                // a duplex model only the write stream is broken).
                if self.params.duplex {
                    self.last_write_end = None;
                } else {
                    self.last_end = None;
                }
                Slot {
                    start_ns: start,
                    done_ns: done,
                }
            }
            Op::Read { offset, bytes } | Op::Write { offset, bytes } => {
                let write = matches!(op, Op::Write { .. });
                let (i, free) = self.first_free(write);
                let start = free.max(now_ns);
                let duplex_write = p.duplex && write;
                let channel = if duplex_write {
                    self.write_channel_free
                } else {
                    self.channel_free
                };
                let continues = if duplex_write {
                    self.last_write_end == Some(offset)
                } else {
                    self.last_end == Some(offset) && self.last_write == write
                };
                let continuation = continues && now_ns.saturating_add(early_ns) < channel;
                let seek = if p.seek_ns > 0 && !continues {
                    p.seek_ns
                } else {
                    0
                };
                let (fixed, bw) = if write {
                    (p.write_latency_ns, p.write_bw)
                } else {
                    (p.read_latency_ns, p.read_bw)
                };
                let fixed = if continuation { 0 } else { fixed };
                let transfer_start = (start + fixed + seek).max(channel);
                let done = transfer_start + transfer_ns(bytes, bw);
                if duplex_write {
                    self.write_channel_free = done;
                } else {
                    self.channel_free = done;
                }
                *self.slot_mut(write, i) = done;
                if duplex_write {
                    self.last_write_end = Some(offset.saturating_add(bytes));
                } else {
                    self.last_end = Some(offset.saturating_add(bytes));
                    self.last_write = write;
                }
                Slot {
                    start_ns: start,
                    done_ns: done,
                }
            }
        };
        // Busy time: the union of service intervals, accumulated as they
        // extend past what was already counted.
        let from = slot.start_ns.max(self.busy_until);
        if slot.done_ns > from {
            self.busy_ns += slot.done_ns - from;
        }
        self.busy_until = self.busy_until.max(slot.done_ns);
        slot
    }

    /// The slots a request of this direction takes: a duplex model's
    /// writes have their own.
    fn slots(&self, write: bool) -> &[u64] {
        if write && self.params.duplex {
            &self.write_free_at
        } else {
            &self.free_at
        }
    }

    fn slot_mut(&mut self, write: bool, i: usize) -> &mut u64 {
        if write && self.params.duplex {
            &mut self.write_free_at[i]
        } else {
            &mut self.free_at[i]
        }
    }

    /// The command slot of this direction that frees first, and when.
    fn first_free(&self, write: bool) -> (usize, u64) {
        self.slots(write)
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(_, f)| f)
            .unwrap_or((0, 0))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The server answers 300 µs early (the guest's path): a sequential
    /// read sent after that answer came back is a new command (its fixed
    /// latency again), though it reaches the model before the model's own
    /// completion time; one queued before the answer left continues the
    /// stream.
    #[test]
    fn an_early_answer_does_not_make_the_next_request_a_continuation() {
        let p = ModelParams::profile("emmc").unwrap();
        let early = 300_000;
        let mut d = DeviceClock::new(p.clone());
        let first = d.admit_early(
            0,
            Op::Read {
                offset: 0,
                bytes: 131_072,
            },
            early,
        );
        // Sent after the answer (done - early), arriving 100 µs before done.
        let at = first.done_ns - 100_000;
        let second = d.admit_early(
            at,
            Op::Read {
                offset: 131_072,
                bytes: 131_072,
            },
            early,
        );
        let service = u64::try_from(p.service(false, 131_072).as_nanos()).unwrap();
        assert_eq!(second.done_ns, first.done_ns + service);
        let mut q = DeviceClock::new(p.clone());
        let first = q.admit_early(
            0,
            Op::Read {
                offset: 0,
                bytes: 131_072,
            },
            early,
        );
        let queued = q.admit_early(
            first.done_ns - 2 * early,
            Op::Read {
                offset: 131_072,
                bytes: 131_072,
            },
            early,
        );
        assert_eq!(
            queued.done_ns - first.done_ns,
            transfer_ns(131_072, p.read_bw)
        );
    }

    fn params(depth: u32) -> ModelParams {
        ModelParams {
            profile: "custom".into(),
            read_bw: 100_000_000,
            write_bw: 50_000_000,
            read_latency_ns: 100_000,
            write_latency_ns: 200_000,
            seek_ns: 0,
            queue_depth: depth,
            flush_ns: 1_000_000,
            duplex: false,
        }
    }

    #[test]
    fn depth_one_serves_one_after_another() {
        let mut d = DeviceClock::new(params(1));
        // 1 MB read: 100 µs + 10 ms.
        let a = d.admit(
            0,
            Op::Read {
                offset: 0,
                bytes: 1_000_000,
            },
        );
        assert_eq!(
            a,
            Slot {
                start_ns: 0,
                done_ns: 10_100_000
            }
        );
        // Arrives while the first is served: waits for it.
        let b = d.admit(
            1_000,
            Op::Read {
                offset: 5_000_000,
                bytes: 4096,
            },
        );
        assert_eq!(b.start_ns, 10_100_000);
        assert_eq!(b.done_ns, 10_100_000 + 100_000 + 40_960);
        assert_eq!(d.busy_ns, b.done_ns);
    }

    #[test]
    fn deeper_queues_overlap_latency_not_transfer() {
        let mut d = DeviceClock::new(params(4));
        let slots: Vec<Slot> = (0..4)
            .map(|i| {
                d.admit(
                    0,
                    Op::Read {
                        offset: i * 4096,
                        bytes: 4096,
                    },
                )
            })
            .collect();
        // All start at once; transfers of 40.96 µs follow each other after
        // the shared 100 µs latency.
        assert!(slots.iter().all(|s| s.start_ns == 0));
        let done: Vec<u64> = slots.iter().map(|s| s.done_ns).collect();
        assert_eq!(done, vec![140_960, 181_920, 222_880, 263_840]);
    }

    #[test]
    fn a_duplex_model_moves_reads_and_writes_at_once() {
        let mut p = params(4);
        p.duplex = true;
        p.read_latency_ns = 0;
        p.write_latency_ns = 0;
        let mut d = DeviceClock::new(p);
        // 1 MB each way at the same moment: each at its own rate.
        let r = d.admit(
            0,
            Op::Read {
                offset: 0,
                bytes: 1_000_000,
            },
        );
        let w = d.admit(
            0,
            Op::Write {
                offset: 1 << 30,
                bytes: 1_000_000,
            },
        );
        assert_eq!((r.done_ns, w.done_ns), (10_000_000, 20_000_000));
        // Shared (a real device): the write waits for the read's transfer.
        let mut p = params(4);
        p.read_latency_ns = 0;
        p.write_latency_ns = 0;
        let mut d = DeviceClock::new(p);
        d.admit(
            0,
            Op::Read {
                offset: 0,
                bytes: 1_000_000,
            },
        );
        let w = d.admit(
            0,
            Op::Write {
                offset: 1 << 30,
                bytes: 1_000_000,
            },
        );
        assert_eq!(w.done_ns, 30_000_000);
    }

    /// blk-throttle holds reads and writes in separate queues: a backlog
    /// of writes waiting for their budget never delays a read. So in a
    /// duplex model a write waiting for its channel holds no slot a read
    /// needs, where a shared model's read waits for a slot to free.
    #[test]
    fn a_duplex_models_write_backlog_holds_no_slot_a_read_needs() {
        let admit_after_writes = |duplex: bool| {
            let mut p = params(4);
            p.duplex = duplex;
            let mut d = DeviceClock::new(p);
            for i in 0..4 {
                // 1 MB at 50 MB/s: 20 ms each, one after another.
                d.admit(
                    0,
                    Op::Write {
                        offset: i * 1_000_000,
                        bytes: 1_000_000,
                    },
                );
            }
            d.admit(
                1_000,
                Op::Read {
                    offset: 1 << 30,
                    bytes: 100_000,
                },
            )
        };
        // 100 µs latency + 1 ms transfer, at once.
        assert_eq!(
            admit_after_writes(true),
            Slot {
                start_ns: 1_000,
                done_ns: 1_101_000
            }
        );
        // Shared: the slot the first write frees (its 200 µs + 20 ms).
        assert_eq!(admit_after_writes(false).start_ns, 20_200_000);
    }

    /// On the throttle a flush ends at the lower device at once: a duplex
    /// model's flush neither waits for queued writes nor holds reads back.
    #[test]
    fn a_duplex_models_flush_waits_for_nothing_and_holds_nothing() {
        let mut p = params(4);
        p.duplex = true;
        let mut d = DeviceClock::new(p);
        d.admit(
            0,
            Op::Write {
                offset: 0,
                bytes: 1_000_000,
            },
        );
        let f = d.admit(10, Op::Flush);
        assert_eq!((f.start_ns, f.done_ns), (10, 1_000_010));
        let r = d.admit(
            20,
            Op::Read {
                offset: 1 << 30,
                bytes: 100_000,
            },
        );
        assert_eq!(r.start_ns, 20);
    }

    #[test]
    fn a_discard_takes_a_slot_for_its_command_and_moves_no_data() {
        let mut d = DeviceClock::new(params(1));
        let r = d.admit(
            0,
            Op::Read {
                offset: 0,
                bytes: 1_000_000,
            },
        );
        // 1 GB discarded: the write latency after the read, no transfer.
        let t = d.admit(
            0,
            Op::Discard {
                offset: 0,
                bytes: 1_000_000_000,
            },
        );
        assert_eq!(t.start_ns, r.done_ns);
        assert_eq!(t.done_ns, r.done_ns + 200_000);
        // A read after it where the first ended is no continuation.
        let n = d.admit(
            t.done_ns,
            Op::Read {
                offset: 1_000_000,
                bytes: 4096,
            },
        );
        assert_eq!(n.done_ns, t.done_ns + 100_000 + 40_960);
    }

    #[test]
    fn a_flush_waits_for_everything_and_holds_the_device() {
        let mut d = DeviceClock::new(params(2));
        let w = d.admit(
            0,
            Op::Write {
                offset: 0,
                bytes: 50_000,
            },
        );
        let f = d.admit(10, Op::Flush);
        assert_eq!(f.start_ns, w.done_ns);
        assert_eq!(f.done_ns, w.done_ns + 1_000_000);
        let r = d.admit(
            20,
            Op::Read {
                offset: 0,
                bytes: 0,
            },
        );
        assert!(r.start_ns >= f.done_ns);
    }

    #[test]
    fn a_split_request_pays_its_latency_once() {
        let mut d = DeviceClock::new(params(1));
        let a = d.admit(
            0,
            Op::Read {
                offset: 0,
                bytes: 500_000,
            },
        );
        // The second half arrives with the first: only its transfer.
        let b = d.admit(
            10,
            Op::Read {
                offset: 500_000,
                bytes: 500_000,
            },
        );
        assert_eq!(b.done_ns, a.done_ns + 5_000_000);
        // The next request, after both completed, is a new command.
        let c = d.admit(
            b.done_ns + 1,
            Op::Read {
                offset: 1_000_000,
                bytes: 0,
            },
        );
        assert_eq!(c.done_ns - c.start_ns, 100_000);
    }

    #[test]
    fn a_disk_seeks_only_when_not_sequential() {
        let mut p = params(1);
        p.seek_ns = 5_000_000;
        let mut d = DeviceClock::new(p);
        let a = d.admit(
            0,
            Op::Read {
                offset: 0,
                bytes: 0,
            },
        );
        assert_eq!(a.done_ns, 100_000 + 5_000_000); // first: unknown position
        let b = d.admit(
            a.done_ns,
            Op::Read {
                offset: 0,
                bytes: 0,
            },
        );
        assert_eq!(b.done_ns - b.start_ns, 100_000); // sequential: no seek
        let c = d.admit(
            b.done_ns,
            Op::Read {
                offset: 1 << 30,
                bytes: 0,
            },
        );
        assert_eq!(c.done_ns - c.start_ns, 5_100_000);
    }
}
