//! CSV export: one row per run (RFC 4180 quoting), every raw sample
//! included, censored ones flagged. Column names follow what users know:
//! times in seconds like S's "Start-up time [sec]" tables; background I/O
//! like fio's JSON (`io_bytes`, `bw_bytes` in bytes/s, `runtime` in ms).
//! The last column, `variant`, names the run's plan point and prefetch
//! mode. Per-run configuration and extra samples stay in the JSON export.

use std::fmt::Write as _;

use super::Exporter;
use crate::view::ExperimentView;
use iolab_store::{RunRecord, StoreError};

/// The header row.
pub const HEADER: &str = "experiment_id,scheduler,workload,target,rep,started_at,duration_s,\
censored,timeout_s,exit_code,signal,harness_overhead_ns,bg_read_io_bytes,bg_write_io_bytes,\
bg_runtime_ms,bg_read_bw_bytes,bg_write_bw_bytes,variant";

/// Exports one row per run.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn serialize(&self, view: &ExperimentView) -> Result<Vec<u8>, StoreError> {
        let mut out = String::from(HEADER);
        out.push('\n');
        for run in &view.stored.runs {
            out.push_str(&row(view.id, run));
            out.push('\n');
        }
        Ok(out.into_bytes())
    }
}

fn row(experiment_id: i64, r: &RunRecord) -> String {
    let opt = |v: Option<String>| v.unwrap_or_default();
    let bg = r.background;
    let bw = |bytes: u64| {
        bg.filter(|b| b.seconds > 0.0)
            .map(|b| format!("{:.0}", bytes as f64 / b.seconds))
    };
    let fields = [
        experiment_id.to_string(),
        quote(&r.scheduler),
        quote(&r.workload),
        quote(&r.target),
        r.rep.to_string(),
        quote(&r.started_at),
        seconds(r.duration_ns),
        u8::from(r.censored).to_string(),
        seconds(r.timeout_ns),
        opt(r.exit_code.map(|c| c.to_string())),
        opt(r.signal.map(|s| s.to_string())),
        opt(r.overhead_ns.map(|o| o.to_string())),
        opt(bg.map(|b| b.read_bytes.to_string())),
        opt(bg.map(|b| b.write_bytes.to_string())),
        opt(bg.map(|b| format!("{:.0}", b.seconds * 1e3))),
        opt(bg.and_then(|b| bw(b.read_bytes))),
        opt(bg.and_then(|b| bw(b.write_bytes))),
        // The plan point and prefetch mode (`wbt_lat_usec=0; prefetch:before`),
        // last so that older readers' columns stay where they were.
        quote(r.variant.as_deref().unwrap_or("")),
    ];
    fields.join(",")
}

/// Nanoseconds as exact decimal seconds (no float rounding).
fn seconds(ns: u64) -> String {
    let mut s = String::new();
    let _ = write!(s, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    s
}

/// RFC 4180: fields holding a comma, quote or line break are quoted, with
/// quotes doubled (targets are command lines and may hold anything).
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds(6_280_000_001), "6.280000001");
        assert_eq!(seconds(60_000_000_000), "60.000000000");
    }

    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(quote("bfq"), "bfq");
        assert_eq!(quote("sh -c \"a,b\""), "\"sh -c \"\"a,b\"\"\"");
    }

    #[test]
    fn header_has_one_name_per_field() {
        let r = iolab_store::testutil::run("bfq", "1r", 0, 6.5);
        assert_eq!(row(1, &r).split(',').count(), HEADER.split(',').count());
    }
}
