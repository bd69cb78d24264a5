//! `iolab prefetch`'s text report: what was read, what the devices saw,
//! what is cached now, and per file or per device on request.

use std::fmt::Write as _;

use iolab_sys::text::align_columns;
use iolab_sys::units::{format_bytes, format_rate};

use super::PrefetchReport;

/// The report: a summary (files, bytes, time, the wait), the devices'
/// reads, residency; the files (all with `verbose`, else those that
/// failed) and the devices' diskstats (`diskstats`) as tables.
pub fn report_text(r: &PrefetchReport, verbose: bool, diskstats: bool) -> String {
    let mut out = summary(r);
    let rows: Vec<Vec<String>> = r
        .per_file
        .iter()
        .filter(|f| verbose || f.error.is_some())
        .map(|f| {
            let opt = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
            vec![
                f.file.display().to_string(),
                format_bytes(f.bytes_requested),
                f.pages_requested.to_string(),
                opt(f.cached_pages_before),
                opt(f.cached_pages_after),
                // No error: an empty cell.
                f.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        let mut all = vec![["FILE", "BYTES", "PAGES", "BEFORE", "AFTER", "ERROR"]
            .map(String::from)
            .to_vec()];
        all.extend(rows);
        out.push_str(&align_columns(&all, 1));
    }
    if diskstats {
        out.push_str(&diskstats_table(r));
    }
    out
}

/// The summary lines.
fn summary(r: &PrefetchReport) -> String {
    let mut out = String::new();
    let failed = if r.files_failed > 0 {
        format!(" ({} failed)", r.files_failed)
    } else {
        String::new()
    };
    let waited = match r.wait {
        Some(w) => format!(", waited {:.3} s: {}", r.wait_s, w.as_str()),
        None => ", no wait".to_string(),
    };
    let _ = writeln!(
        out,
        "prefetched {} files{failed}, {} requested in {:.3} s ({}, {} threads; submitted in {:.3} s{waited})",
        r.files,
        format_bytes(r.bytes_requested),
        r.duration_s,
        r.method,
        r.threads,
        r.submit_s,
    );
    let per_dev: Vec<String> = r
        .devices
        .iter()
        .map(|d| format!("{} {}", d.device, format_bytes(d.read_bytes)))
        .collect();
    if per_dev.is_empty() {
        out.push_str("device reads: none measured (files on no block device)\n");
    } else {
        let _ = writeln!(
            out,
            "device reads: {} at {} ({})",
            format_bytes(r.device_read_bytes),
            format_rate(r.device_read_bytes_per_s),
            per_dev.join(", ")
        );
    }
    match (r.cached_pages_after, r.residency_percent) {
        (Some(after), Some(pct)) => {
            let before = r
                .cached_pages_before
                .map(|b| format!(", {b} before"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "residency: {pct:.1} % of {} requested pages cached ({after}){before}",
                r.pages_requested
            );
        }
        _ => out.push_str("residency: unknown (the kernel describes the cache of some files only to their owner or root)\n"),
    }
    out
}

/// Every diskstats counter's difference, per device.
fn diskstats_table(r: &PrefetchReport) -> String {
    let mut all = vec![[
        "DEVICE",
        "READS",
        "MERGED",
        "READ",
        "READ_MS",
        "WRITES",
        "WRITTEN",
        "IN_FLIGHT",
        "IO_MS",
    ]
    .map(String::from)
    .to_vec()];
    for d in &r.devices {
        let s = &d.diskstats;
        all.push(vec![
            d.device.clone(),
            s.reads.to_string(),
            s.reads_merged.to_string(),
            format_bytes(s.read_bytes()),
            s.read_ms.to_string(),
            s.writes.to_string(),
            format_bytes(s.write_bytes()),
            s.in_flight.to_string(),
            s.io_ms.to_string(),
        ]);
    }
    align_columns(&all, 1)
}
