//! fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`,
//! `write_hist_log`), in fio 3.33's format and with its windows, so fio's
//! plotting tools (fio_generate_plots, fiologparser.py,
//! fiologparser_hist.py, fio2gnuplot) read them and draw what they draw
//! for fio:
//!
//! ```text
//! time (ms), value, direction (0 read, 1 write), block size[, offset], priority
//! ```
//!
//! Times are milliseconds from the end of the ramp (fio's epoch, reset
//! by `reset_all_stats`). Latency logs hold nanoseconds:
//! `PREFIX_lat.N.log` (preparation to completion), `PREFIX_clat.N.log`
//! and `PREFIX_slat.N.log`. For the queueing engines slat is the
//! submission and clat the rest, as in fio; the blocking engines' clat is
//! their whole latency and their slat log stays empty, as fio's does for
//! its synchronous engines.
//!
//! A log without `log_avg_msec` (or stored compressed: fio's
//! `per_unit_log`) has a line per I/O; for bandwidth that I/O's bytes over
//! its clat (`bytes * 10^6 / clat_ns`, fio's `add_bw_sample`) and for
//! IOPS the value 1, as fio writes them. With `log_avg_msec` the
//! bandwidth and IOPS lines are the periodic samples that also make
//! fio's `bw_*`/`iops_*` statistics (see `fio_stats::Sampler`), and the
//! latency lines windows' means (see [`window`]). The histogram log is
//! described in [`hist`]. N numbers clones across the load from 1, as
//! fio numbers its threads. Files are streamed through a buffer, so long
//! runs use no memory for them.

mod hist;
mod sink;
mod window;

use std::path::PathBuf;
use std::time::Instant;

pub use sink::inflate;

use iolab_sys::cast;

use crate::job::extra::LogOpts;
#[cfg(test)]
use crate::run::sinks::plat;
use hist::Hist;
use sink::Sink;
use window::{Format, Log, PerIo};

/// Which periodic sample a rate log line carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// KiB/s.
    Bw,
    /// I/Os per second.
    Iops,
}

/// The logs of one clone.
pub struct CloneLogs {
    opts: LogOpts,
    fmt: Format,
    epoch: Instant,
    /// The priority column of a per-I/O line, already formatted.
    prio: String,
    /// lat, clat and slat.
    lat: Option<[Log; 3]>,
    bw: Option<Log>,
    iops: Option<Log>,
    hist: Option<Hist>,
    error: Option<String>,
}

impl CloneLogs {
    /// Opens the files a job asks for; `n` is the clone's number in the
    /// load (from 1).
    pub fn open(
        opts: &LogOpts,
        n: usize,
        start: Instant,
        prio: String,
    ) -> Result<Option<CloneLogs>, String> {
        if !opts.any() {
            return Ok(None);
        }
        let shared = opts.shared;
        let z = opts.compressed;
        let name = |prefix: &str, kind: &str| {
            PathBuf::from(if shared {
                format!("{prefix}_{kind}.log")
            } else {
                format!("{prefix}_{kind}.{n}.log")
            })
        };
        let avg = opts.avg_msec;
        let every = opts.sample_every();
        let lat = match &opts.lat {
            Some(p) => Some([
                Log::new(Sink::create(name(p, "lat"), z)?, avg, true),
                Log::new(Sink::create(name(p, "clat"), z)?, avg, true),
                Log::new(Sink::create(name(p, "slat"), z)?, avg, true),
            ]),
            None => None,
        };
        // A windowed rate log's window is its sampling interval (init.c:
        // `min(log_avg_msec, bw_avg_time)`).
        let rate_log = |p: &Option<String>, kind: &str, every: Option<u64>| {
            p.as_deref()
                .map(|p| {
                    Ok::<_, String>(Log::new(
                        Sink::create(name(p, kind), z)?,
                        every.unwrap_or(avg),
                        false,
                    ))
                })
                .transpose()
        };
        Ok(Some(CloneLogs {
            fmt: Format {
                max_value: opts.max_value,
                both: opts.both,
                offset: opts.offset,
                issue_time: opts.issue_time,
                window_prio: if opts.prio {
                    "0x0000".into()
                } else {
                    "0".into()
                },
            },
            opts: opts.clone(),
            epoch: start,
            prio,
            lat,
            bw: rate_log(&opts.bw, "bw", every[0])?,
            iops: rate_log(&opts.iops, "iops", every[1])?,
            hist: opts
                .hist
                .as_deref()
                .map(|p| Sink::create(name(p, "clat_hist"), z))
                .transpose()?
                .map(|s| Hist::new(s, opts.hist_msec, opts.hist_coarseness)),
            error: None,
        }))
    }

    /// Sets the epoch, the instant times count from: the end of the ramp.
    #[inline]
    pub fn begin(&mut self, epoch: Instant) {
        self.epoch = epoch;
    }

    fn ms(&self, t: Instant) -> u64 {
        cast::duration_ms(t.saturating_duration_since(self.epoch))
    }

    fn keep(&mut self, r: Result<(), String>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// Records one completed I/O; a queueing engine's `issue` splits its
    /// latency into slat and clat, and an ioprio of its own (cmdprio) goes
    /// in its priority column as fio writes it (with `log_prio` the value,
    /// else 1 for a real-time one).
    pub fn record(
        &mut self,
        dir: usize,
        lat_ns: u64,
        issue: Issue,
        bytes: u64,
        offset: u64,
        now: Instant,
    ) {
        let t = self.ms(now);
        let clat = lat_ns - issue.slat_ns.unwrap_or(0);
        let own = self.own_prio(issue.prio);
        let prio = own.as_deref().unwrap_or(&self.prio);
        // log_issue_time: when the I/O was issued (its completion less its
        // clat), in ns from the epoch, in the clat and slat logs; fio
        // writes 0 in the others.
        let (issued, zero) = if self.opts.issue_time {
            let at = cast::duration_ns(now.saturating_duration_since(self.epoch));
            (Some(at.saturating_sub(clat)), Some(0))
        } else {
            (None, None)
        };
        let io = |tail| PerIo {
            bs: bytes,
            offset,
            prio,
            tail,
        };
        let f = &self.fmt;
        let mut r = Ok(());
        // The slat log is written at submission (see `slat`).
        if let Some([l, c, _]) = &mut self.lat {
            r = r.and(l.add(f, dir, lat_ns, io(zero), t));
            r = r.and(c.add(f, dir, clat, io(issued), t));
        }
        if let Some(h) = &mut self.hist {
            r = r.and(h.add(dir, clat, bytes, t));
        }
        if self.opts.per_unit() {
            if let Some(b) = &mut self.bw {
                let v = (bytes * 1_000_000).checked_div(clat).unwrap_or(0);
                r = r.and(b.add(f, dir, v, io(zero), t));
            }
            if let Some(s) = &mut self.iops {
                r = r.and(s.add(f, dir, 1, io(zero), t));
            }
        }
        self.keep(r);
    }

    /// True when there is a slat log.
    pub fn wants_slat(&self) -> bool {
        self.lat.is_some()
    }

    /// A queued I/O's submission latency, when its submit returned at
    /// `now` (fio logs slat then, not at completion).
    pub fn slat(
        &mut self,
        dir: usize,
        slat_ns: u64,
        bytes: u64,
        offset: u64,
        prio: u16,
        now: Instant,
    ) {
        let t = self.ms(now);
        let own = self.own_prio(prio);
        let issued = self
            .opts
            .issue_time
            .then(|| cast::duration_ns(now.saturating_duration_since(self.epoch)));
        let io = PerIo {
            bs: bytes,
            offset,
            prio: own.as_deref().unwrap_or(&self.prio),
            tail: issued,
        };
        if let Some([_, _, sl]) = &mut self.lat {
            let r = sl.add(&self.fmt, dir, slat_ns, io, t);
            self.keep(r);
        }
    }

    /// An I/O's own priority column (cmdprio), `None` for the job's.
    fn own_prio(&self, p: u16) -> Option<String> {
        (p != 0).then(|| {
            if self.opts.prio {
                format!("0x{p:04x}")
            } else {
                u32::from(p >> 13 == 1).to_string()
            }
        })
    }

    /// A periodic bandwidth or IOPS sample taken at `at` (the windowed
    /// rate logs' only values).
    pub fn rate(&mut self, kind: Rate, dir: usize, v: u64, at: Instant) {
        let t = self.ms(at);
        let f = &self.fmt;
        let log = match kind {
            Rate::Bw => &mut self.bw,
            Rate::Iops => &mut self.iops,
        };
        if let Some(l) = log {
            let io = PerIo {
                bs: 0,
                offset: 0,
                prio: &f.window_prio,
                tail: f.issue_time.then_some(0),
            };
            let r = l.add(f, dir, v, io, t);
            self.keep(r);
        }
    }

    /// Writes the open windows (fio's `finalize_logs`; the histogram's
    /// unfinished interval is not written, as in fio) and closes the
    /// files; the error names the file that failed.
    pub fn finish(mut self, end: Instant) -> Result<(), String> {
        let t = self.ms(end);
        let f = &self.fmt;
        let mut r = Ok(());
        for l in self
            .lat
            .iter_mut()
            .flatten()
            .chain(self.bw.iter_mut())
            .chain(self.iops.iter_mut())
        {
            r = r.and(l.flush(f, t));
            r = r.and(l.sink.close());
        }
        if let Some(h) = &mut self.hist {
            r = r.and(h.sink.close());
        }
        self.error.take().map_or(r, Err)
    }
}

/// What a queueing engine knows of a completed I/O beyond its latency.
#[derive(Debug, Clone, Copy, Default)]
pub struct Issue {
    /// Its submission latency (fio's slat), when measured.
    pub slat_ns: Option<u64>,
    /// Its own ioprio (cmdprio); 0 for the job's.
    pub prio: u16,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    fn read(prefix: &str, kind: &str, n: usize) -> String {
        std::fs::read_to_string(format!("{prefix}_{kind}.{n}.log")).unwrap()
    }

    #[test]
    fn issue_time_columns_as_fio_3_36_with_slat_at_submission() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("y").to_string_lossy().into_owned();
        let t0 = Instant::now();
        let opts = LogOpts {
            lat: Some(prefix.clone()),
            offset: true,
            issue_time: true,
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 1, t0, "0".into()).unwrap().unwrap();
        // Submitted (5 us of slat) 2.98 ms in, completed 3 ms in after 20
        // us of clat.
        let sub = t0 + Duration::from_micros(2980);
        l.slat(0, 5_000, 4096, 8192, 0, sub);
        let split = Issue {
            slat_ns: Some(5_000),
            prio: 0,
        };
        l.record(0, 25_000, split, 4096, 8192, at(t0, 3));
        l.finish(at(t0, 4)).unwrap();
        assert_eq!(
            read(&prefix, "clat", 1),
            "3, 20000, 0, 4096, 8192, 0, 2980000\n"
        );
        assert_eq!(
            read(&prefix, "slat", 1),
            "2, 5000, 0, 4096, 8192, 0, 2980000\n"
        );
        assert_eq!(read(&prefix, "lat", 1), "3, 25000, 0, 4096, 8192, 0, 0\n");
    }

    #[test]
    fn per_io_lines_carry_fios_rates() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("x").to_string_lossy().into_owned();
        let t0 = Instant::now();
        let opts = LogOpts {
            lat: Some(prefix.clone()),
            bw: Some(prefix.clone()),
            iops: Some(prefix.clone()),
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 3, t0, "0".into()).unwrap().unwrap();
        l.record(1, 5000, Issue::default(), 4096, 0, at(t0, 2));
        l.record(0, 8000, Issue::default(), 4096, 8192, at(t0, 5));
        l.finish(at(t0, 6)).unwrap();
        let text = read(&prefix, "lat", 3);
        assert_eq!(text, "2, 5000, 1, 4096, 0\n5, 8000, 0, 4096, 0\n");
        assert_eq!(text, read(&prefix, "clat", 3));
        // add_bw_sample: bytes * 10^6 / clat ns; add_iops_sample: 1.
        assert_eq!(
            read(&prefix, "bw", 3),
            "2, 819200, 1, 4096, 0\n5, 512000, 0, 4096, 0\n"
        );
        assert_eq!(
            read(&prefix, "iops", 3),
            "2, 1, 1, 4096, 0\n5, 1, 0, 4096, 0\n"
        );
    }

    #[test]
    fn a_window_closes_with_the_io_that_fills_it_and_the_rest_is_flushed() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("w").to_string_lossy().into_owned();
        let t0 = Instant::now();
        let opts = LogOpts {
            lat: Some(prefix.clone()),
            avg_msec: 100,
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 1, t0, "0".into()).unwrap().unwrap();
        for (ns, ms) in [(1000, 10), (3000, 20), (5001, 103), (7000, 150)] {
            l.record(0, ns, Issue::default(), 4096, 0, at(t0, ms));
        }
        l.finish(at(t0, 160)).unwrap();
        // The I/O at 103 ms counts in the first window, stamped 103; the
        // mean rounds half up; the open window is written at the end.
        assert_eq!(
            read(&prefix, "lat", 1),
            "103, 3000, 0, 0, 0\n160, 7000, 0, 0, 0\n"
        );

        let opts = LogOpts {
            lat: Some(prefix.clone()),
            avg_msec: 100,
            both: true,
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 2, t0, "0".into()).unwrap().unwrap();
        for (ns, ms) in [(1000, 10), (3000, 100)] {
            l.record(0, ns, Issue::default(), 4096, 0, at(t0, ms));
        }
        l.finish(at(t0, 100)).unwrap();
        // Mean, then maximum, of the window.
        assert_eq!(read(&prefix, "lat", 2), "100, 2000, 3000, 0, 0, 0\n");
    }

    #[test]
    fn rate_samples_are_the_windowed_rate_logs_lines() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("r").to_string_lossy().into_owned();
        let t0 = Instant::now();
        let opts = LogOpts {
            bw: Some(prefix.clone()),
            iops: Some(prefix.clone()),
            avg_msec: 500,
            prio: true,
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 1, t0, "0x2004".into())
            .unwrap()
            .unwrap();
        // Per-I/O values do not reach a windowed rate log.
        l.record(0, 1000, Issue::default(), 4096, 0, at(t0, 10));
        l.rate(Rate::Bw, 0, 4000, at(t0, 500));
        l.rate(Rate::Iops, 0, 1000, at(t0, 500));
        // A timer a millisecond early still closes the window (fio's slack).
        l.rate(Rate::Bw, 0, 4008, at(t0, 999));
        l.finish(at(t0, 1200)).unwrap();
        assert_eq!(
            read(&prefix, "bw", 1),
            "500, 4000, 0, 0, 0x0000\n999, 4008, 0, 0, 0x0000\n"
        );
        assert_eq!(read(&prefix, "iops", 1), "500, 1000, 0, 0, 0x0000\n");
    }

    #[test]
    fn histogram_lines_as_fio_with_no_unfinished_interval() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("h").to_string_lossy().into_owned();
        let t0 = Instant::now();
        let opts = LogOpts {
            hist: Some(prefix.clone()),
            hist_msec: 100,
            hist_coarseness: 1,
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 1, t0, "0".into()).unwrap().unwrap();
        // The interval starts at 5 ms (a last time of 0 is unset in fio).
        for ms in [0, 5, 50, 104, 105, 150] {
            l.record(0, 1000, Issue::default(), 8192, 0, at(t0, ms));
        }
        l.finish(at(t0, 200)).unwrap();
        let text = read(&prefix, "clat_hist", 1);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let cols: Vec<u64> = lines[0].split(", ").map(|c| c.parse().unwrap()).collect();
        assert_eq!(&cols[..3], &[105, 0, 8192]);
        assert_eq!(cols.len() - 3, plat::NR / 2);
        assert_eq!(cols[3..].iter().sum::<u64>(), 5);
    }
}
