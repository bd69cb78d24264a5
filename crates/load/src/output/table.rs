//! The human-readable report: a throughput table and a latency table, one
//! row per job and direction plus the total, then the devices' own view
//! and any failures.

use std::fmt::Write as _;

use iolab_sys::cast;
use iolab_sys::units::{format_bytes, format_rate};

use crate::run::report::{DirReport, JobReport, LoadReport};

/// Renders the report as text.
pub fn render(r: &LoadReport) -> String {
    let mut out = String::new();
    let how = if r.stopped { "stopped" } else { "ended" };
    let _ = writeln!(
        out,
        "iolab load: {} job(s), {:.1}s, {how}",
        r.jobs.len(),
        r.elapsed.as_secs_f64()
    );
    let mut rows = vec![cells(&[
        "JOB", "RW", "THREADS", "IO", "BW", "IOPS", "RUNTIME", "USR%", "SYS%",
    ])];
    let mut lat = vec![cells(&[
        "JOB", "RW", "MIN", "MEAN", "STDDEV", "MAX", "P50", "P90", "P99", "P99.9", "P99.99",
    ])];
    let mut all: Vec<&JobReport> = r.jobs.iter().collect();
    if r.jobs.len() > 1 {
        all.push(&r.total);
    }
    for j in all {
        let dirs = [("read", &j.read), ("write", &j.write), ("trim", &j.trim)];
        let used: Vec<_> = dirs.iter().filter(|(_, d)| d.total_ios > 0).collect();
        if used.is_empty() {
            // cpuio, or a job that did nothing: CPU use only.
            rows.push(throughput_row(j, "-", &DirReport::default()));
        }
        for (name, d) in used {
            rows.push(throughput_row(j, name, d));
            if let Some(l) = &d.lat {
                let p = |q: f64| l.percentile(q).map_or("-".into(), fmt_ns);
                lat.push(vec![
                    j.name.clone(),
                    name.to_string(),
                    fmt_ns(l.min_ns),
                    fmt_ns(cast::floor_u64(l.mean_ns)),
                    fmt_ns(cast::floor_u64(l.stddev_ns)),
                    fmt_ns(l.max_ns),
                    p(50.0),
                    p(90.0),
                    p(99.0),
                    p(99.9),
                    p(99.99),
                ]);
            }
        }
    }
    out.push_str(&align(&rows));
    if lat.len() > 1 {
        out.push_str("latency (submission to completion):\n");
        out.push_str(&align(&lat));
    }
    for d in &r.disks {
        let _ = writeln!(
            out,
            "disk {}: read {} ({} ios), write {} ({} ios), util {:.1}%",
            d.name,
            format_bytes(d.delta.read_bytes()),
            d.delta.reads,
            format_bytes(d.delta.write_bytes()),
            d.delta.writes,
            d.util()
        );
    }
    for w in &r.warnings {
        let _ = writeln!(out, "note: {w}");
    }
    for f in r.failures() {
        let _ = writeln!(out, "error: {}", f.message);
    }
    out
}

fn cells(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn throughput_row(j: &JobReport, dir: &str, d: &DirReport) -> Vec<String> {
    vec![
        j.name.clone(),
        dir.to_string(),
        j.clones.to_string(),
        format_bytes(d.io_bytes),
        format_rate(d.bw_bytes()),
        format!("{:.0}", d.iops()),
        format!("{:.1}s", j.runtime.as_secs_f64()),
        format!("{:.1}", j.usr_cpu()),
        format!("{:.1}", j.sys_cpu()),
    ]
}

/// Nanoseconds with a readable unit: `850ns`, `12.3us`, `4.56ms`, `1.23s`.
pub fn fmt_ns(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{:.1}us", v / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2}ms", v / 1e6)
    } else {
        format!("{:.2}s", v / 1e9)
    }
}

/// Left-aligns the first two columns (job, direction), right-aligns the
/// numbers.
fn align(rows: &[Vec<String>]) -> String {
    iolab_sys::text::align_columns(rows, 2)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn latency_units() {
        assert_eq!(fmt_ns(850), "850ns");
        assert_eq!(fmt_ns(12_345), "12.3us");
        assert_eq!(fmt_ns(4_560_000), "4.56ms");
        assert_eq!(fmt_ns(1_230_000_000), "1.23s");
    }

    #[test]
    fn columns_line_up() {
        let t = align(&[
            cells(&["JOB", "RW", "IO"]),
            cells(&["reader", "read", "1.5GiB"]),
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "JOB     RW        IO");
        assert_eq!(lines[1], "reader  read  1.5GiB");
    }
}
