//! One log file with fio's windows (stat.c, `add_log_sample`): without
//! `log_avg_msec` a line per value; with it, values gather per direction
//! until a window has passed, and the value that closes it counts in it.
//! The closing line is stamped with that value's time, not the window's
//! edge, and the next window starts at the edge below it. The latency
//! logs close a window only when it is full; the rate logs (bandwidth,
//! IOPS) already within fio's 1 ms slack, since their samples arrive on a
//! timer that may fire a millisecond early.

use std::io::Write;

use super::sink::Sink;

/// fio's `LOG_MSEC_SLACK` on Linux.
const SLACK_MS: u64 = 1;

/// How lines are written, shared by a clone's logs.
#[derive(Debug, Clone, Default)]
pub(super) struct Format {
    /// `log_max_value`: a window's maximum instead of its mean.
    pub max_value: bool,
    /// `log_window_value=both` (fio 3.36): the mean, then the maximum.
    pub both: bool,
    /// `log_offset`: an offset column.
    pub offset: bool,
    /// `log_issue_time` (fio 3.36): a last column.
    pub issue_time: bool,
    /// The priority column of a window's line: fio writes priority 0
    /// (`0x0000` with `log_prio`).
    pub window_prio: String,
}

/// What one value carries besides itself, for a line of its own.
#[derive(Debug, Clone, Copy)]
pub(super) struct PerIo<'a> {
    pub bs: u64,
    pub offset: u64,
    pub prio: &'a str,
    pub tail: Option<u64>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Stat {
    n: u64,
    sum: f64,
    max: u64,
}

/// One log file.
pub(super) struct Log {
    pub(super) sink: Sink,
    /// `log_avg_msec` (0: a line per value).
    avg: u64,
    /// fio's `inline_log`: a latency log.
    inline: bool,
    window: [Stat; 3],
    avg_last: [u64; 3],
}

impl Log {
    pub(super) fn new(sink: Sink, avg: u64, inline: bool) -> Log {
        Log {
            sink,
            avg,
            inline,
            window: [Stat::default(); 3],
            avg_last: [0; 3],
        }
    }

    /// Adds `v` of direction `dir` at `t` ms from the epoch.
    pub(super) fn add(
        &mut self,
        f: &Format,
        dir: usize,
        v: u64,
        io: PerIo,
        t: u64,
    ) -> Result<(), String> {
        if self.avg == 0 {
            let off = f.offset.then_some(io.offset);
            return self.line(t, v, None, dir, io.bs, off, io.prio, io.tail);
        }
        let w = &mut self.window[dir];
        w.n += 1;
        w.sum += v as f64;
        w.max = w.max.max(v);
        let last = self.avg_last[dir];
        if t < last {
            return Ok(());
        }
        let this = t - last;
        if this < self.avg && (self.inline || self.avg - this > SLACK_MS) {
            return Ok(());
        }
        let r = self.close(f, dir, t);
        self.avg_last[dir] = t - t % self.avg;
        r
    }

    /// Writes every direction's open window at `t` (fio's
    /// `finalize_logs`).
    pub(super) fn flush(&mut self, f: &Format, t: u64) -> Result<(), String> {
        let mut r = Ok(());
        for d in 0..3 {
            let e = self.close(f, d, t);
            r = r.and(e);
        }
        r
    }

    /// A window's line, if it holds values: the mean rounded half up
    /// (fio's `mean + 0.50`), or the maximum; block size, offset and
    /// priority 0.
    fn close(&mut self, f: &Format, dir: usize, t: u64) -> Result<(), String> {
        let w = std::mem::take(&mut self.window[dir]);
        if w.n == 0 {
            return Ok(());
        }
        let mean = iolab_sys::cast::floor_u64(w.sum / w.n as f64 + 0.5);
        let (v, max) = if f.both {
            (mean, Some(w.max))
        } else if f.max_value {
            (w.max, None)
        } else {
            (mean, None)
        };
        let off = f.offset.then_some(0);
        let tail = f.issue_time.then_some(0);
        self.line(t, v, max, dir, 0, off, &f.window_prio, tail)
    }

    /// One line in fio's column order: time, value, [window maximum],
    /// direction, block size, [offset], priority, [issue time]. Straight
    /// into the buffered writer: a line per I/O allocates nothing.
    #[allow(clippy::too_many_arguments)]
    fn line(
        &mut self,
        t: u64,
        v: u64,
        max: Option<u64>,
        dir: usize,
        bs: u64,
        off: Option<u64>,
        prio: &str,
        tail: Option<u64>,
    ) -> Result<(), String> {
        let w = &mut self.sink.w;
        let r = (|| {
            write!(w, "{t}, {v}")?;
            if let Some(m) = max {
                write!(w, ", {m}")?;
            }
            write!(w, ", {dir}, {bs}")?;
            if let Some(o) = off {
                write!(w, ", {o}")?;
            }
            write!(w, ", {prio}")?;
            if let Some(x) = tail {
                write!(w, ", {x}")?;
            }
            writeln!(w)
        })();
        r.map_err(|e| format!("writing {}: {e}", self.sink.path.display()))
    }
}
