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
    let comm = r.comm.as_str();
    let comm: String = comm.chars().take(14).collect();
    format!(
        "{:<11.6} {:<14} {:<7} {:<9} {:<1} {:<10} {:<7} {:>7.2} {:>7.2}",
        r.complete_ns.saturating_sub(t0_ns) as f64 / 1e9,
        comm,
        r.pid,
        disk,
        r.op().letter(),
        r.sector,
        r.bytes(),
        r.que_ns() as f64 / 1e6,
        r.lat_ns() as f64 / 1e6,
    )
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
