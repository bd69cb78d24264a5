//! Chrome JSON trace (the "Trace Event Format") that ui.perfetto.dev and
//! chrome://tracing open. Per disk, a pseudo-process named `disk NAME`
//! holds:
//!
//! - one async slice per request on the device, issue → complete, named by
//!   its operation (`R`, `W` ...), with biosnoop's fields as args; requests
//!   overlap, which async slices allow and thread slices do not;
//! - one async slice per request waiting in the queue (`queued R` ...),
//!   insert/start → issue, on its own track;
//! - counters `depth` with `in_flight` (issued, not completed: the device's
//!   queue depth) and `queued` (waiting in the scheduler).
//!
//! Format reference: "Trace Event Format" (Google, 2016), events `b`/`e`
//! (async nestable, matched by `cat` + `id`), `C` (counter) and `M`
//! (metadata: `process_name`, `thread_name`). Timestamps are µs since the
//! trace started. The document's `otherData` carries the lost-event count.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::json;

use crate::event::Dev;
use crate::request::BioRequest;

/// What a Perfetto trace is made from.
pub struct PerfettoInput<'a> {
    /// Completed requests.
    pub requests: &'a [BioRequest],
    /// Disk names.
    pub disks: &'a BTreeMap<Dev, String>,
    /// Trace start (CLOCK_MONOTONIC ns): time zero.
    pub t0_ns: u64,
    /// Events recorded.
    pub events: u64,
    /// Events the kernel dropped.
    pub lost_events: u64,
}

/// Pseudo pids start here so they cannot be mistaken for real ones.
const PID_BASE: u64 = 1_000_000;

/// Writes the trace.
pub fn write(w: &mut impl Write, input: &PerfettoInput<'_>) -> io::Result<()> {
    let pids: BTreeMap<Dev, u64> = input
        .disks
        .keys()
        .enumerate()
        .map(|(i, d)| (*d, PID_BASE + i as u64))
        .collect();
    let pid_of = |d: Dev| pids.get(&d).copied().unwrap_or(PID_BASE - 1);
    let us = |ns: u64| ns.saturating_sub(input.t0_ns) as f64 / 1000.0;
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(
        &mut *w,
        &json!({
            "tool": "iolab trace bio",
            "requests": input.requests.len(),
            "events": input.events,
            "lost_events": input.lost_events,
        }),
    )?;
    w.write_all(b",\"traceEvents\":[\n")?;
    let mut first = true;
    let mut emit = |w: &mut dyn Write, v: serde_json::Value| -> io::Result<()> {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        serde_json::to_writer(&mut *w, &v)?;
        Ok(())
    };
    for (dev, name) in input.disks {
        let pid = pid_of(*dev);
        emit(
            w,
            json!({"ph":"M","name":"process_name","pid":pid,"tid":0,"args":{"name":format!("disk {name} ({dev})")}}),
        )?;
        emit(
            w,
            json!({"ph":"M","name":"process_sort_index","pid":pid,"tid":0,"args":{"sort_index":pid - PID_BASE}}),
        )?;
        emit(
            w,
            json!({"ph":"M","name":"thread_name","pid":pid,"tid":0,"args":{"name":"requests"}}),
        )?;
    }
    for (i, r) in input.requests.iter().enumerate() {
        let pid = pid_of(r.dev);
        let op = r.op().letter().to_string();
        let args = json!({
            "comm": r.comm.as_str(),
            "pid": r.pid,
            "tid": r.tid,
            "sector": r.sector,
            "bytes": r.bytes(),
            "rwbs": r.rwbs.to_string(),
            "que_ms": r.que_ns() as f64 / 1e6,
            "lat_ms": r.lat_ns() as f64 / 1e6,
        });
        if let (Some(q), Some(is)) = (r.queue_ns, r.issue_ns) {
            if is > q {
                let id = format!("0x{:x}", 2 * i);
                let name = format!("queued {op}");
                emit(
                    w,
                    json!({"ph":"b","cat":"queue","name":name,"id":id,"pid":pid,"tid":0,"ts":us(q),"args":args}),
                )?;
                emit(
                    w,
                    json!({"ph":"e","cat":"queue","name":name,"id":id,"pid":pid,"tid":0,"ts":us(is)}),
                )?;
            }
        }
        let start = r.issue_ns.or(r.queue_ns).unwrap_or(r.complete_ns);
        let id = format!("0x{:x}", 2 * i + 1);
        emit(
            w,
            json!({"ph":"b","cat":"device","name":op,"id":id,"pid":pid,"tid":0,"ts":us(start),"args":args}),
        )?;
        emit(
            w,
            json!({"ph":"e","cat":"device","name":op,"id":id,"pid":pid,"tid":0,"ts":us(r.complete_ns)}),
        )?;
    }
    for (dev, steps) in depth_steps(input.requests) {
        let pid = pid_of(dev);
        for s in steps {
            emit(
                w,
                json!({"ph":"C","name":"depth","pid":pid,"tid":0,"ts":us(s.ts_ns),"args":{"in_flight":s.in_flight,"queued":s.queued}}),
            )?;
        }
    }
    w.write_all(b"\n]}\n")?;
    Ok(())
}

/// The queue depth of one disk from this moment on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DepthStep {
    /// When it changed.
    pub ts_ns: u64,
    /// Issued and not completed.
    pub in_flight: i64,
    /// Queued and not issued.
    pub queued: i64,
}

/// Depth changes per disk, one step per distinct timestamp.
pub fn depth_steps(requests: &[BioRequest]) -> BTreeMap<Dev, Vec<DepthStep>> {
    // (ts, d_in_flight, d_queued) per disk.
    let mut deltas: BTreeMap<Dev, Vec<(u64, i64, i64)>> = BTreeMap::new();
    for r in requests {
        let d = deltas.entry(r.dev).or_default();
        match (r.queue_ns, r.issue_ns) {
            (Some(q), Some(i)) => {
                d.push((q, 0, 1));
                d.push((i, 1, -1));
            }
            (None, Some(i)) => d.push((i, 1, 0)),
            (Some(q), None) => {
                // Never issued itself: it waits until it completes.
                d.push((q, 0, 1));
                d.push((r.complete_ns, 0, -1));
                continue;
            }
            (None, None) => continue,
        }
        d.push((r.complete_ns, -1, 0));
    }
    deltas
        .into_iter()
        .map(|(dev, mut d)| {
            d.sort_by_key(|x| x.0);
            let mut steps: Vec<DepthStep> = Vec::new();
            let (mut fl, mut qu) = (0i64, 0i64);
            for (ts, df, dq) in d {
                fl += df;
                qu += dq;
                match steps.last_mut() {
                    Some(s) if s.ts_ns == ts => {
                        s.in_flight = fl;
                        s.queued = qu;
                    }
                    _ => steps.push(DepthStep {
                        ts_ns: ts,
                        in_flight: fl,
                        queued: qu,
                    }),
                }
            }
            (dev, steps)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::{Comm, Rwbs};
    use crate::request::Origin;
    use crate::testutil::{LOOP0, ZRAM0};

    fn req(dev: Dev, q: Option<u64>, i: u64, c: u64) -> BioRequest {
        BioRequest {
            dev,
            sector: 8,
            nr_sector: 8,
            rwbs: Rwbs::parse(b"R"),
            comm: Comm::new(b"fio"),
            tid: 5,
            pid: 5,
            queue_ns: q,
            issue_ns: Some(i),
            complete_ns: c,
            requeues: 0,
            error: 0,
            origin: Origin::IoStart,
        }
    }

    #[test]
    fn depth_counts_overlapping_requests() {
        let rs = [
            req(LOOP0, Some(0), 10, 50),
            req(LOOP0, Some(5), 20, 30),
            req(LOOP0, None, 30, 40),
        ];
        let steps = &depth_steps(&rs)[&LOOP0];
        let got: Vec<(u64, i64, i64)> = steps
            .iter()
            .map(|s| (s.ts_ns, s.in_flight, s.queued))
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, 1),
                (5, 0, 2),
                (10, 1, 1),
                (20, 2, 0),
                (30, 2, 0),
                (40, 1, 0),
                (50, 0, 0)
            ]
        );
    }

    #[test]
    fn trace_is_valid_json_with_async_pairs_counters_and_names() {
        let rs = [
            req(LOOP0, Some(1000), 2000, 9000),
            req(ZRAM0, None, 3000, 4000),
        ];
        let disks: BTreeMap<Dev, String> =
            [(LOOP0, "loop0".into()), (ZRAM0, "zram0".into())].into();
        let mut out = Vec::new();
        let input = PerfettoInput {
            requests: &rs,
            disks: &disks,
            t0_ns: 1000,
            events: 7,
            lost_events: 2,
        };
        write(&mut out, &input).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["otherData"]["lost_events"], 2);
        let evs = v["traceEvents"].as_array().unwrap();
        let count = |ph: &str| evs.iter().filter(|e| e["ph"] == ph).count();
        assert_eq!(count("b"), 3);
        assert_eq!(count("e"), 3);
        assert!(count("C") >= 4);
        let names: Vec<&str> = evs
            .iter()
            .filter(|e| e["name"] == "process_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["disk loop0 (7:0)", "disk zram0 (252:0)"]);
        let dev_b = evs
            .iter()
            .find(|e| e["ph"] == "b" && e["cat"] == "device")
            .unwrap();
        assert_eq!(dev_b["ts"], 1.0);
        assert_eq!(dev_b["args"]["comm"], "fio");
        // Every begin has an end with the same id.
        for b in evs.iter().filter(|e| e["ph"] == "b") {
            assert!(evs
                .iter()
                .any(|e| e["ph"] == "e" && e["id"] == b["id"] && e["cat"] == b["cat"]));
        }
    }
}
