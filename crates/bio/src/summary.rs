//! Per-process summary: for each (process, disk, operation) the requests,
//! bytes, how sequential they were and their latency percentiles.
//!
//! Sequential means the request starts at the sector where the same
//! thread's previous request of the same operation on that disk ended
//! (requests taken in the order they were queued). Threads rather than
//! whole processes: the threads of one process each reading their own file
//! sequentially would otherwise interleave into "random". A thread's first
//! request counts as random: nothing precedes it.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::event::{Dev, Op};
use crate::hist::Percentiles;
use crate::request::BioRequest;

/// One row: a process's requests of one operation on one disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessRow {
    /// Task name of the queueing thread(s).
    pub comm: String,
    /// Process id (thread-group id).
    pub pid: i32,
    /// Disk name.
    pub disk: String,
    /// Operation letter (R, W, D, F, N).
    pub op: String,
    /// Requests.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Requests that continued where the thread's previous one ended.
    pub sequential: u64,
    /// The others.
    pub random: u64,
    /// `sequential / count × 100`.
    pub sequential_pct: f64,
    /// Device latency (issue → complete).
    pub lat: Percentiles,
    /// Queue time (insert → issue).
    pub que: Percentiles,
}

/// Summarises requests per (comm, pid, disk, op), sorted by disk, pid,
/// comm and R/W/D/F/N.
pub fn summarize(requests: &[BioRequest], name: &mut impl FnMut(Dev) -> String) -> Vec<ProcessRow> {
    let mut order: Vec<&BioRequest> = requests.iter().collect();
    order.sort_by_key(|r| r.start_ns());
    let mut last_end: HashMap<(i32, Dev, Op), u64> = HashMap::new();
    type GroupKey = (Dev, i32, String, Op);
    let mut groups: BTreeMap<GroupKey, (Vec<&BioRequest>, u64)> = BTreeMap::new();
    for r in order {
        let stream = (r.tid, r.dev, r.op());
        let seq = last_end.insert(stream, r.end_sector()) == Some(r.sector);
        let g = groups
            .entry((r.dev, r.pid, r.comm.as_str().into_owned(), r.op()))
            .or_default();
        g.0.push(r);
        g.1 += u64::from(seq);
    }
    let mut rows: Vec<(String, ProcessRow)> = groups
        .into_iter()
        .map(|((dev, pid, comm, op), (rs, sequential))| {
            let count = rs.len() as u64;
            let mut lat: Vec<u64> = rs.iter().map(|r| r.lat_ns()).collect();
            let mut que: Vec<u64> = rs.iter().map(|r| r.que_ns()).collect();
            let disk = name(dev);
            let row = ProcessRow {
                comm,
                pid,
                disk: disk.clone(),
                op: op.letter().to_string(),
                count,
                bytes: rs.iter().map(|r| r.bytes()).sum(),
                sequential,
                random: count - sequential,
                sequential_pct: sequential as f64 * 100.0 / count as f64,
                lat: Percentiles::of_ns(&mut lat),
                que: Percentiles::of_ns(&mut que),
            };
            (disk, row)
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The summary as an aligned table (latencies in ms, like biosnoop).
pub fn render(rows: &[ProcessRow]) -> String {
    let ms = |us: f64| format!("{:.3}", us / 1000.0);
    let mut table = vec![[
        "COMM",
        "PID",
        "DISK",
        "T",
        "COUNT",
        "BYTES",
        "SEQ%",
        "RAND%",
        "QUE p50(ms)",
        "LAT p50(ms)",
        "p90",
        "p99",
        "max",
    ]
    .map(String::from)
    .to_vec()];
    for r in rows {
        table.push(vec![
            r.comm.clone(),
            r.pid.to_string(),
            r.disk.clone(),
            r.op.clone(),
            r.count.to_string(),
            iolab_sys::units::format_bytes(r.bytes),
            format!("{:.1}", r.sequential_pct),
            format!("{:.1}", 100.0 - r.sequential_pct),
            ms(r.que.p50_us),
            ms(r.lat.p50_us),
            ms(r.lat.p90_us),
            ms(r.lat.p99_us),
            ms(r.lat.max_us),
        ]);
    }
    iolab_sys::text::align_columns(&table, 4)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::{Comm, Rwbs};
    use crate::request::Origin;
    use crate::testutil::LOOP0;

    fn req(tid: i32, pid: i32, comm: &str, op: &str, sector: u64, start: u64) -> BioRequest {
        BioRequest {
            dev: LOOP0,
            sector,
            nr_sector: 8,
            rwbs: Rwbs::parse(op.as_bytes()),
            comm: Comm::new(comm.as_bytes()),
            tid,
            pid,
            queue_ns: Some(start),
            issue_ns: Some(start + 10),
            complete_ns: start + 1010,
            requeues: 0,
            error: 0,
            origin: Origin::IoStart,
        }
    }

    #[test]
    fn sequential_share_follows_each_threads_stream() {
        // Two threads of pid 10 each read sequentially, interleaved; a third
        // process reads randomly. Completion order is scrambled on purpose.
        let rs = vec![
            req(11, 10, "load", "R", 0, 0),
            req(12, 10, "load", "R", 1000, 1),
            req(11, 10, "load", "R", 8, 2),
            req(12, 10, "load", "R", 1008, 3),
            req(11, 10, "load", "R", 16, 4),
            req(20, 20, "rand", "R", 500, 5),
            req(20, 20, "rand", "R", 64, 6),
            req(20, 20, "rand", "R", 72, 7),
        ];
        let mut rev = rs.clone();
        rev.reverse();
        let rows = summarize(&rev, &mut |_| "loop0".into());
        assert_eq!(rows.len(), 2);
        let load = &rows[0];
        assert_eq!(
            (load.comm.as_str(), load.pid, load.count, load.bytes),
            ("load", 10, 5, 5 * 4096)
        );
        assert_eq!((load.sequential, load.random), (3, 2));
        assert!((load.sequential_pct - 60.0).abs() < 1e-9);
        let rand = &rows[1];
        assert_eq!((rand.sequential, rand.random), (1, 2));
        assert_eq!(rand.lat.p50_us, 1.0);
    }

    #[test]
    fn reads_and_writes_are_separate_rows_and_streams() {
        let rs = vec![
            req(1, 1, "db", "R", 0, 0),
            req(1, 1, "db", "W", 8, 1),
            req(1, 1, "db", "R", 8, 2),
        ];
        let rows = summarize(&rs, &mut |_| "loop0".into());
        let ops: Vec<(&str, u64)> = rows.iter().map(|r| (r.op.as_str(), r.sequential)).collect();
        assert_eq!(ops, [("R", 1), ("W", 0)]);
        let table = render(&rows);
        assert!(table.starts_with("COMM"), "{table}");
        assert!(table.contains("db"), "{table}");
    }
}
