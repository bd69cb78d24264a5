//! The histogram log (`write_hist_log`), as fio 3.33 writes it (stat.c,
//! `add_clat_sample`; iolog.c, `flush_hist_samples`): per direction, once
//! `log_hist_msec` has passed since the last line, a line with the
//! completion latencies (clat) of the I/Os since then in fio's bins —
//! the I/O that closes the interval included and its block size in the
//! line — `time, direction, block size, bin0, ..., binN`. The interval
//! starts at the first I/O completed at 1 ms or later (fio takes a last
//! time of 0 as unset), each next one exactly an interval on, and the
//! I/Os of an unfinished last interval are never written. With
//! `log_hist_coarseness=N` each column sums 2^N adjacent bins. Without
//! `log_hist_msec` fio writes nothing, and neither does iolab.

use std::io::Write;

use super::sink::Sink;
use crate::run::sinks::plat;

pub(super) struct Hist {
    pub(super) sink: Sink,
    every: u64,
    stride: usize,
    now: [Vec<u64>; 3],
    last: [u64; 3],
}

impl Hist {
    pub(super) fn new(sink: Sink, every: u64, coarseness: u32) -> Hist {
        Hist {
            sink,
            every,
            stride: 1 << coarseness.min(6),
            now: [vec![0; plat::NR], vec![0; plat::NR], vec![0; plat::NR]],
            last: [0; 3],
        }
    }

    /// One completion: its clat, block size, and time in ms from the
    /// epoch.
    pub(super) fn add(&mut self, dir: usize, clat_ns: u64, bs: u64, t: u64) -> Result<(), String> {
        self.now[dir][plat::idx(clat_ns)] += 1;
        if self.every == 0 {
            return Ok(());
        }
        if self.last[dir] == 0 {
            self.last[dir] = t;
        }
        let this = t.saturating_sub(self.last[dir]);
        if this < self.every {
            return Ok(());
        }
        let mut text = format!("{t}, {dir}, {bs}");
        for chunk in self.now[dir].chunks(self.stride) {
            text.push_str(", ");
            text.push_str(&chunk.iter().sum::<u64>().to_string());
        }
        text.push('\n');
        self.now[dir].iter_mut().for_each(|c| *c = 0);
        self.last[dir] = t - (this - self.every);
        self.sink
            .w
            .write_all(text.as_bytes())
            .map_err(|e| format!("writing {}: {e}", self.sink.path.display()))
    }
}
