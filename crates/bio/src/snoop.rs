//! biosnoop's output: one line per completed request, the same columns and
//! widths as bcc's tools/biosnoop.py with `-Q` (`TIME(s) COMM PID DISK T
//! SECTOR BYTES QUE(ms) LAT(ms)`), and the same fields as JSON lines.
//! TIME is the completion time in seconds since tracing started.

use serde::{Deserialize, Serialize};

use crate::request::BioRequest;

/// The header line.
pub fn header() -> String {
    format!(
        "{:<11} {:<14} {:<7} {:<9} {:<1} {:<10} {:<7} {:>7} {:>7}",
        "TIME(s)", "COMM", "PID", "DISK", "T", "SECTOR", "BYTES", "QUE(ms)", "LAT(ms)"
    )
}

/// One request as biosnoop prints it; `t0_ns` is the trace start.
pub fn line(r: &BioRequest, disk: &str, t0_ns: u64) -> String {
    let mut v = Vec::with_capacity(96);
    write_line(&mut v, r, disk, t0_ns);
    v.pop(); // the newline
    String::from_utf8(v).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends `line`'s text and a newline to `out`. A live trace prints a
/// line per request at up to a million a second, so this allocates nothing
/// and uses no `core::fmt`: `format!` with `{:.6}` of an f64 took two thirds
/// of the consumer's CPU, and `write!` with widths a half (padding goes
/// through it a character at a time). Decimals are rounded half up from the
/// nanoseconds.
pub fn write_line(out: &mut Vec<u8>, r: &BioRequest, disk: &str, t0_ns: u64) {
    let mut n = itoa::Buffer::new();
    let mut f = Fixed::new();
    let comm = r.comm.as_str();
    // COMM is cut at 14 characters, on a character boundary.
    let cut = comm.char_indices().nth(14).map_or(comm.len(), |(i, _)| i);
    left(out, f.put(r.complete_ns.saturating_sub(t0_ns), 9, 6), 11);
    left(out, &comm[..cut], 14);
    left(out, n.format(r.pid), 7);
    left(out, disk, 9);
    let mut letter = [0u8; 4];
    left(out, r.op().letter().encode_utf8(&mut letter), 1);
    left(out, n.format(r.sector), 10);
    left(out, n.format(r.bytes()), 7);
    right(out, f.put(r.que_ns(), 6, 2), 7);
    out.push(b' ');
    right(out, f.put(r.lat_ns(), 6, 2), 7);
    out.push(b'\n');
}

/// `s` padded with spaces to `width` characters, then the column gap.
fn left(out: &mut Vec<u8>, s: &str, width: usize) {
    out.extend_from_slice(s.as_bytes());
    let chars = if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    };
    out.resize(out.len() + width.saturating_sub(chars) + 1, b' ');
}

/// `s` right-aligned in `width` characters (ASCII: numbers).
fn right(out: &mut Vec<u8>, s: &str, width: usize) {
    out.resize(out.len() + width.saturating_sub(s.len()), b' ');
    out.extend_from_slice(s.as_bytes());
}

/// A fixed-point decimal formatted on the stack.
struct Fixed {
    buf: [u8; 32],
}

impl Fixed {
    fn new() -> Fixed {
        Fixed { buf: [0; 32] }
    }

    /// `ns` / 10^`exp` with `decimals` digits after the point (0 <
    /// decimals < exp), rounded half up.
    fn put(&mut self, ns: u64, exp: u32, decimals: u32) -> &str {
        let unit = 10u64.pow(exp - decimals);
        let v = ns / unit + u64::from(ns % unit >= unit / 2);
        let scale = 10u64.pow(decimals);
        let mut int = itoa::Buffer::new();
        let int = int.format(v / scale).as_bytes();
        // At most 20 digits, the point and `decimals` (< 10) digits: fits.
        let d = decimals as usize;
        self.buf[..int.len()].copy_from_slice(int);
        self.buf[int.len()] = b'.';
        let mut frac = v % scale;
        for i in (0..d).rev() {
            self.buf[int.len() + 1 + i] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        std::str::from_utf8(&self.buf[..int.len() + 1 + d]).unwrap_or("?")
    }
}

/// One request as a JSON line: biosnoop's columns in lower case with their
/// units (`time_s` … `lat_ms`), then what biosnoop does not show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnoopRecord {
    /// Completion time, seconds since tracing started (TIME(s)).
    pub time_s: f64,
    /// Task that queued the request (COMM).
    pub comm: String,
    /// Its process id (PID).
    pub pid: i32,
    /// Its thread id.
    pub tid: i32,
    /// Disk name (DISK).
    pub disk: String,
    /// Operation letter (T): R, W, D discard, F flush, N other.
    pub t: String,
    /// Start sector (SECTOR).
    pub sector: u64,
    /// Size (BYTES).
    pub bytes: u64,
    /// Queue time, insert → issue (QUE(ms)).
    pub que_ms: f64,
    /// Device time, issue → complete (LAT(ms)).
    pub lat_ms: f64,
    /// The kernel's rwbs flags, e.g. `WS`, `FWFS`, `RA`.
    pub rwbs: String,
    /// Device number, `MAJ:MIN`.
    pub dev: String,
    /// Times the driver requeued it.
    pub requeues: u16,
    /// Completion status (0, or a negative errno).
    pub error: i32,
    /// Event that gave the queue time and owner: io_start, insert,
    /// bio_queue or issue (no queue time seen).
    pub origin: String,
    /// Completion time, CLOCK_MONOTONIC ns.
    pub complete_ns: u64,
}

impl SnoopRecord {
    /// From a request.
    pub fn new(r: &BioRequest, disk: &str, t0_ns: u64) -> SnoopRecord {
        SnoopRecord {
            time_s: r.complete_ns.saturating_sub(t0_ns) as f64 / 1e9,
            comm: r.comm.as_str().into_owned(),
            pid: r.pid,
            tid: r.tid,
            disk: disk.to_string(),
            t: r.op().letter().to_string(),
            sector: r.sector,
            bytes: r.bytes(),
            que_ms: r.que_ns() as f64 / 1e6,
            lat_ms: r.lat_ns() as f64 / 1e6,
            rwbs: r.rwbs.to_string(),
            dev: r.dev.to_string(),
            requeues: r.requeues,
            error: r.error,
            origin: r.origin.name().to_string(),
            complete_ns: r.complete_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::{Comm, Rwbs};
    use crate::request::Origin;
    use crate::testutil::LOOP0;

    fn req() -> BioRequest {
        BioRequest {
            dev: LOOP0,
            sector: 123456,
            nr_sector: 8,
            rwbs: Rwbs::parse(b"RS"),
            comm: Comm::new(b"a-long-thread-name"),
            tid: 43,
            pid: 42,
            queue_ns: Some(2_000_000_000),
            issue_ns: Some(2_000_250_000),
            complete_ns: 2_001_250_000,
            requeues: 0,
            error: 0,
            origin: Origin::IoStart,
        }
    }

    #[test]
    fn columns_line_up_with_the_header_like_biosnoop() {
        let h = header();
        assert!(
            h.starts_with(
                "TIME(s)     COMM           PID     DISK      T SECTOR     BYTES   QUE(ms) LAT(ms)"
            ),
            "{h}"
        );
        let l = line(&req(), "loop0", 1_000_000_000);
        assert_eq!(
            l,
            "1.001250    a-long-thread- 42      loop0     R 123456     4096       0.25    1.00"
        );
        assert_eq!(l.find(" R "), h.find(" T "));
    }

    #[test]
    fn decimals_round_like_the_nanoseconds_say_and_comm_is_cut_by_characters() {
        let mut r = req();
        // 1.0000005 s: half a µs rounds up; 4.995 µs of queue rounds to 0.00
        // ms, 5 µs to 0.01 (half up), 123.456789 ms of device time to 123.46.
        r.complete_ns = 1_000_000_500 + 1_000_000_000;
        r.queue_ns = Some(r.complete_ns - 123_456_789 - 4_995);
        r.issue_ns = Some(r.complete_ns - 123_456_789);
        r.comm = Comm::new("éabcdefghijklm".as_bytes()); // 14 characters in 15 bytes
        let l = line(&r, "zram0", 1_000_000_000);
        assert!(l.starts_with("1.000001    éabcdefghijklm 42 "), "{l}");
        assert!(l.ends_with("   0.00  123.46"), "{l}");
        r.queue_ns = Some(r.complete_ns - 123_456_789 - 5_000);
        assert!(line(&r, "zram0", 1_000_000_000).ends_with("   0.01  123.46"));
        // The same values as f64 formatting gives, away from a half.
        for ns in [0u64, 1, 999, 1_234_567, 98_765_432_101] {
            let mut r = req();
            r.queue_ns = None;
            r.issue_ns = Some(1_000);
            r.complete_ns = 1_000 + ns;
            let want = format!("{:>7.2}", ns as f64 / 1e6);
            assert!(
                line(&r, "d", 0).ends_with(&want),
                "{ns}: {}",
                line(&r, "d", 0)
            );
        }
    }

    #[test]
    fn json_record_has_biosnoop_fields() {
        let v = serde_json::to_value(SnoopRecord::new(&req(), "loop0", 1_000_000_000)).unwrap();
        for k in [
            "time_s", "comm", "pid", "disk", "t", "sector", "bytes", "que_ms", "lat_ms",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["t"], "R");
        assert_eq!(v["rwbs"], "RS");
        assert_eq!(v["dev"], "7:0");
        assert!((v["lat_ms"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    }
}
