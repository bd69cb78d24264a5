//! fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`,
//! `write_hist_log`), in fio 3.x's format so fio's plotting tools
//! (fio_generate_plots, fiologparser.py, fiologparser_hist.py, fio-plot)
//! read them:
//!
//! ```text
//! time (ms), value, direction (0 read, 1 write), block size[, offset], priority
//! ```
//!
//! Latency logs hold nanoseconds: `PREFIX_lat.N.log` (preparation to
//! completion), `PREFIX_clat.N.log` and `PREFIX_slat.N.log`. For the
//! queueing engines slat is the submission and clat the rest, as in fio;
//! the blocking engines' clat is their whole latency and their slat log
//! stays empty, as fio's does for its synchronous engines.
//! bandwidth logs KiB/s, IOPS logs I/Os per second. With `log_avg_msec`
//! each line is a window's mean (or maximum, `log_max_value`) per
//! direction, with block size 0 as fio writes it. Histogram logs
//! (`PREFIX_clat_hist.N.log`) hold, every `log_hist_msec`, the fio latency
//! bins (see `plat`) of the I/Os completed in that interval:
//! `time, direction, block size, bin0, ..., bin1855`. N numbers clones
//! across the load from 1, as fio numbers its threads. Files are streamed
//! through a buffer, so long runs use no memory for them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use crate::job::extra::LogOpts;
use crate::run::sinks::plat;

struct Sink {
    w: Out,
    path: PathBuf,
}

/// A log file, plain or zlib-compressed (`log_store_compressed=1`,
/// `PREFIX_TYPE.log.fz`, which `iolab load --inflate-log` expands). The
/// compressed text is iolab's own: fio's `.fz` holds its binary samples, so
/// each tool's `--inflate-log` reads its own files (checked: fio 3.33 prints
/// garbage for iolab's).
enum Out {
    Plain(BufWriter<File>),
    Zlib(flate2::write::ZlibEncoder<BufWriter<File>>),
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Plain(w) => w.write(b),
            Out::Zlib(w) => w.write(b),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Plain(w) => w.flush(),
            // The stream's end, so the file is complete when the log is.
            Out::Zlib(w) => w.try_finish().and_then(|()| w.get_mut().flush()),
        }
    }
}

impl Sink {
    fn create(path: PathBuf, compressed: bool) -> Result<Sink, String> {
        let path = if compressed {
            PathBuf::from(format!("{}.fz", path.display()))
        } else {
            path
        };
        let f = File::create(&path)
            .map_err(|e| format!("cannot create log {}: {e}", path.display()))?;
        let b = BufWriter::with_capacity(1 << 16, f);
        Ok(Sink {
            w: if compressed {
                Out::Zlib(flate2::write::ZlibEncoder::new(
                    b,
                    flate2::Compression::default(),
                ))
            } else {
                Out::Plain(b)
            },
            path,
        })
    }
}

/// Expands a compressed log (`--inflate-log`): one or more zlib streams
/// one after another, written out as text.
pub fn inflate(path: &std::path::Path, out: &mut dyn Write) -> Result<(), String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rest: &[u8] = &data;
    while !rest.is_empty() {
        let mut d = flate2::bufread::ZlibDecoder::new(rest);
        std::io::copy(&mut d, out)
            .map_err(|e| format!("{}: not a zlib-compressed fio log: {e}", path.display()))?;
        let used = d.total_in() as usize;
        if used == 0 {
            break;
        }
        rest = &rest[used..];
    }
    Ok(())
}

#[derive(Default, Clone, Copy)]
struct Window {
    n: u64,
    bytes: u64,
    lat_sum: u128,
    lat_max: u64,
    /// I/Os with a slat/clat split, and their sums and maxima.
    split_n: u64,
    slat_sum: u128,
    slat_max: u64,
    clat_sum: u128,
    clat_max: u64,
}

/// The logs of one clone.
pub struct CloneLogs {
    opts: LogOpts,
    start: Instant,
    /// The priority column, already formatted.
    prio: String,
    /// lat, clat and slat.
    lat: Option<(Sink, Sink, Sink)>,
    bw: Option<Sink>,
    iops: Option<Sink>,
    hist: Option<Sink>,
    last: [Option<Instant>; 3],
    window_start: u64,
    window: [Window; 3],
    hist_start: u64,
    hist_now: [Vec<u64>; 3],
    hist_bs: [u64; 3],
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
        let lat = match &opts.lat {
            Some(p) => Some((
                Sink::create(name(p, "lat"), z)?,
                Sink::create(name(p, "clat"), z)?,
                Sink::create(name(p, "slat"), z)?,
            )),
            None => None,
        };
        Ok(Some(CloneLogs {
            opts: opts.clone(),
            start,
            prio,
            lat,
            bw: opts
                .bw
                .as_deref()
                .map(|p| Sink::create(name(p, "bw"), z))
                .transpose()?,
            iops: opts
                .iops
                .as_deref()
                .map(|p| Sink::create(name(p, "iops"), z))
                .transpose()?,
            hist: opts
                .hist
                .as_deref()
                .map(|p| Sink::create(name(p, "clat_hist"), z))
                .transpose()?,
            last: [None; 3],
            window_start: 0,
            window: [Window::default(); 3],
            hist_start: 0,
            hist_now: [vec![0; plat::NR], vec![0; plat::NR], vec![0; plat::NR]],
            hist_bs: [0; 3],
            error: None,
        }))
    }

    fn ms(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_millis() as u64
    }

    /// Records one completed I/O.
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
        let slat_ns = issue.slat_ns;
        let t = self.ms(now);
        if self.hist.is_some() {
            let every = self.opts.hist_msec;
            if every > 0 && t >= self.hist_start + every {
                self.flush_hist(t);
            }
            self.hist_now[dir][plat::idx(lat_ns)] += 1;
            self.hist_bs[dir] = bytes;
        }
        let avg = self.opts.avg_msec;
        if avg == 0 {
            let prev = self.last[dir].replace(now);
            let dt = prev
                .map(|p| now.saturating_duration_since(p).as_nanos() as u64)
                .unwrap_or(lat_ns)
                .max(1);
            let bw = bytes * 1_000_000_000 / 1024 / dt;
            let iops = 1_000_000_000 / dt;
            let off = self.opts.offset.then_some(offset);
            let own = (issue.prio != 0).then(|| {
                let p = issue.prio;
                if self.opts.prio {
                    format!("0x{p:04x}")
                } else {
                    u32::from(p >> 13 == 1).to_string()
                }
            });
            let prio = own.as_deref().unwrap_or(&self.prio);
            let clat = lat_ns - slat_ns.unwrap_or(0);
            // log_issue_time: when the I/O was issued (its completion less
            // its clat), in ns from the start; fio writes 0 in the other
            // logs.
            let (issued, zero) = if self.opts.issue_time {
                let at = now.saturating_duration_since(self.start).as_nanos() as u64;
                (Some(at.saturating_sub(clat)), Some(0))
            } else {
                (None, None)
            };
            let ln = |v: u64, tail: Option<u64>| Line {
                t,
                v,
                max: None,
                dir,
                bs: bytes,
                off,
                prio,
                tail,
            };
            let mut err = None;
            if let Some((l, c, sl)) = &mut self.lat {
                err = err.or(ln(lat_ns, zero).write(l).err());
                err = err.or(ln(clat, issued).write(c).err());
                if let Some(v) = slat_ns {
                    err = err.or(ln(v, issued).write(sl).err());
                }
            }
            if let Some(s) = &mut self.bw {
                err = err.or(ln(bw, zero).write(s).err());
            }
            if let Some(s) = &mut self.iops {
                err = err.or(ln(iops, zero).write(s).err());
            }
            if let Some(e) = err {
                self.error.get_or_insert(e);
            }
            return;
        }
        if t >= self.window_start + avg {
            self.flush_window(self.window_start + avg);
            // Idle windows are skipped, as in fio.
            self.window_start = t / avg * avg;
        }
        let w = &mut self.window[dir];
        w.n += 1;
        w.bytes += bytes;
        w.lat_sum += u128::from(lat_ns);
        w.lat_max = w.lat_max.max(lat_ns);
        let clat = lat_ns - slat_ns.unwrap_or(0);
        w.clat_sum += u128::from(clat);
        w.clat_max = w.clat_max.max(clat);
        if let Some(v) = slat_ns {
            w.split_n += 1;
            w.slat_sum += u128::from(v);
            w.slat_max = w.slat_max.max(v);
        }
    }

    fn flush_window(&mut self, t: u64) {
        let avg = self.opts.avg_msec.max(1);
        let prio = self.prio.as_str();
        let off = self.opts.offset.then_some(0);
        let mut err = None;
        for d in 0..3 {
            let w = std::mem::take(&mut self.window[d]);
            if w.n == 0 {
                continue;
            }
            // (value, the window's maximum with log_window_value=both)
            let pick = |max: u64, sum: u128, n: u64| {
                let mean = (sum / u128::from(n.max(1))) as u64;
                if self.opts.both {
                    (mean, Some(max))
                } else if self.opts.max_value {
                    (max, None)
                } else {
                    (mean, None)
                }
            };
            let lat = pick(w.lat_max, w.lat_sum, w.n);
            let clat = pick(w.clat_max, w.clat_sum, w.n);
            let slat = (w.split_n > 0).then(|| pick(w.slat_max, w.slat_sum, w.split_n));
            // A window's bandwidth and IOPS have no maximum of their own:
            // fio writes the same value twice.
            let rate = |v: u64| (v, self.opts.both.then_some(v));
            let bw = rate(w.bytes * 1000 / 1024 / avg);
            let iops = rate(w.n * 1000 / avg);
            let tail = self.opts.issue_time.then_some(0);
            let ln = |(v, max): (u64, Option<u64>)| Line {
                t,
                v,
                max,
                dir: d,
                bs: 0,
                off,
                prio,
                tail,
            };
            if let Some((l, c, sl)) = &mut self.lat {
                err = err.or(ln(lat).write(l).err());
                err = err.or(ln(clat).write(c).err());
                if let Some(v) = slat {
                    err = err.or(ln(v).write(sl).err());
                }
            }
            if let Some(s) = &mut self.bw {
                err = err.or(ln(bw).write(s).err());
            }
            if let Some(s) = &mut self.iops {
                err = err.or(ln(iops).write(s).err());
            }
        }
        if let Some(e) = err {
            self.error.get_or_insert(e);
        }
    }

    fn flush_hist(&mut self, t: u64) {
        let Some(s) = &mut self.hist else { return };
        for d in 0..3 {
            if self.hist_now[d].iter().all(|c| *c == 0) {
                continue;
            }
            let mut text = format!("{t}, {d}, {}", self.hist_bs[d]);
            for c in &self.hist_now[d] {
                text.push_str(", ");
                text.push_str(&c.to_string());
            }
            text.push('\n');
            if let Err(e) = s.w.write_all(text.as_bytes()) {
                self.error
                    .get_or_insert(format!("writing {}: {e}", s.path.display()));
            }
            self.hist_now[d].iter_mut().for_each(|c| *c = 0);
        }
        self.hist_start = t;
    }

    /// Flushes what is pending; the error names the file that failed.
    pub fn finish(mut self, end: Instant) -> Result<(), String> {
        let t = self.ms(end);
        if self.opts.avg_msec > 0 {
            self.flush_window(t);
        }
        if self.hist.is_some() {
            self.flush_hist(t);
        }
        for s in self
            .lat
            .iter_mut()
            .flat_map(|(a, b, c)| [a, b, c])
            .chain(self.bw.iter_mut())
            .chain(self.iops.iter_mut())
            .chain(self.hist.iter_mut())
        {
            if let Err(e) = s.w.flush() {
                self.error
                    .get_or_insert(format!("writing {}: {e}", s.path.display()));
            }
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One log line in fio's column order: time, value, [window maximum],
/// direction, block size, [offset], priority, [issue time].
struct Line<'a> {
    t: u64,
    v: u64,
    max: Option<u64>,
    dir: usize,
    bs: u64,
    off: Option<u64>,
    prio: &'a str,
    tail: Option<u64>,
}

impl Line<'_> {
    fn write(&self, s: &mut Sink) -> Result<(), String> {
        // Straight into the buffered writer: a log line per I/O allocates
        // nothing.
        let w = &mut s.w;
        let r = (|| {
            write!(w, "{}, {}", self.t, self.v)?;
            if let Some(m) = self.max {
                write!(w, ", {m}")?;
            }
            write!(w, ", {}, {}", self.dir, self.bs)?;
            if let Some(o) = self.off {
                write!(w, ", {o}")?;
            }
            write!(w, ", {}", self.prio)?;
            if let Some(x) = self.tail {
                write!(w, ", {x}")?;
            }
            writeln!(w)
        })();
        r.map_err(|e| format!("writing {}: {e}", s.path.display()))
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

    #[test]
    fn window_both_and_issue_time_columns_as_fio_3_36() {
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
        // Completed 3 ms in after 5 us of slat and 20 us of clat: issued
        // 20 us before its completion.
        let split = Issue {
            slat_ns: Some(5_000),
            prio: 0,
        };
        l.record(0, 25_000, split, 4096, 8192, t0 + Duration::from_millis(3));
        l.finish(t0 + Duration::from_millis(4)).unwrap();
        let read = |kind: &str| std::fs::read_to_string(format!("{prefix}_{kind}.1.log")).unwrap();
        assert_eq!(read("clat"), "3, 20000, 0, 4096, 8192, 0, 2980000\n");
        assert_eq!(read("slat"), "3, 5000, 0, 4096, 8192, 0, 2980000\n");
        assert_eq!(read("lat"), "3, 25000, 0, 4096, 8192, 0, 0\n");

        let opts = LogOpts {
            lat: Some(prefix.clone()),
            avg_msec: 100,
            both: true,
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 2, t0, "0".into()).unwrap().unwrap();
        for (ns, ms) in [(1000, 10), (3000, 20)] {
            l.record(
                0,
                ns,
                Issue::default(),
                4096,
                0,
                t0 + Duration::from_millis(ms),
            );
        }
        l.finish(t0 + Duration::from_millis(100)).unwrap();
        // Mean, then maximum, of the window.
        assert_eq!(read2(&prefix, "lat"), "100, 2000, 3000, 0, 0, 0\n");
    }

    fn read2(prefix: &str, kind: &str) -> String {
        std::fs::read_to_string(format!("{prefix}_{kind}.2.log")).unwrap()
    }

    #[test]
    fn per_io_and_windowed_lines() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("x").to_string_lossy().into_owned();
        let t0 = Instant::now();
        let opts = LogOpts {
            lat: Some(prefix.clone()),
            iops: Some(prefix.clone()),
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 3, t0, "0".into()).unwrap().unwrap();
        l.record(
            1,
            5000,
            Issue::default(),
            4096,
            0,
            t0 + Duration::from_millis(2),
        );
        l.record(
            0,
            7000,
            Issue::default(),
            4096,
            8192,
            t0 + Duration::from_millis(5),
        );
        l.finish(t0 + Duration::from_millis(6)).unwrap();
        let text = std::fs::read_to_string(format!("{prefix}_lat.3.log")).unwrap();
        assert_eq!(text, "2, 5000, 1, 4096, 0\n5, 7000, 0, 4096, 0\n");
        assert_eq!(
            text,
            std::fs::read_to_string(format!("{prefix}_clat.3.log")).unwrap()
        );

        let opts = LogOpts {
            bw: Some(prefix.clone()),
            avg_msec: 100,
            ..Default::default()
        };
        let mut l = CloneLogs::open(&opts, 1, t0, "0".into()).unwrap().unwrap();
        for i in 0..10 {
            l.record(
                0,
                1000,
                Issue::default(),
                102_400,
                0,
                t0 + Duration::from_millis(10 * i),
            );
        }
        l.record(
            0,
            1000,
            Issue::default(),
            102_400,
            0,
            t0 + Duration::from_millis(150),
        );
        l.finish(t0 + Duration::from_millis(200)).unwrap();
        let text = std::fs::read_to_string(format!("{prefix}_bw.1.log")).unwrap();
        // 10 x 100 KiB in the first 100 ms window: 10,000 KiB/s.
        assert_eq!(text.lines().next().unwrap(), "100, 10000, 0, 0, 0");
        assert_eq!(text.lines().count(), 2);
    }
}
