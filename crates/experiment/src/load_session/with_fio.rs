//! `iolab load --with-fio`: the job goes, unchanged, to the installed fio,
//! so a job file always runs, even with options iolab does not build.
//! iolab adds what it adds to its own loads: fio's per-second status
//! (`--status-interval=1`, JSON) is read while fio runs, so a job that
//! stops moving bytes is reported, and the devices' own byte counters
//! (/proc/diskstats) are put next to fio's byte counts at the end.

use std::time::{Duration, Instant};

use iolab_load::fio_process::{fio_path, totals, FioChild};
use iolab_load::LoadError;
use iolab_sys::cast;
use iolab_sys::UsageError;
use serde_json::{json, Value};

/// What the watch saw.
struct Watch {
    /// `(ms since start, read bytes, write bytes)` per status.
    samples: Vec<(u64, u64, u64)>,
    /// Spans with fio running and no bytes moving, ms since start.
    stalls: Vec<(u64, u64)>,
}

/// A stall is reported when no byte moved for this long.
const STALL: Duration = Duration::from_secs(3);

/// What fio's run gave: the report (printed even when fio failed: what
/// was measured is not lost), what fio wrote to stderr, and fio's exit
/// status when it failed.
#[derive(Debug)]
pub struct FioRun {
    /// The report, fio's document with iolab's part, as `format` asked.
    pub text: String,
    /// fio's own complaints, for stderr.
    pub fio_stderr: String,
    /// `Some(status)` when fio exited with a failure.
    pub failed: Option<String>,
}

/// Runs fio with the user's arguments; `format` is the report asked for
/// (normal, json or json+).
pub fn run(fio_args: &[String], format: &str) -> Result<FioRun, LoadError> {
    if !matches!(format, "normal" | "json" | "json+") {
        return Err(UsageError::new(format!(
            "--with-fio --output-format {format}: expected normal, json or json+ (one)"
        ))
        .into());
    }
    let fio = fio_path()?;
    let disks_before = disks()?;
    let t0 = Instant::now();
    let mut child = FioChild::spawn(&fio, fio_args, format == "json+", None)
        .map_err(|e| LoadError::io(&fio, std::io::Error::other(format!("starting it: {e}"))))?;
    let mut watch = Watch {
        samples: Vec::new(),
        stalls: Vec::new(),
    };
    let mut forwarded = false;
    let mut moved_at = (0u64, 0u64);
    let status = loop {
        if let Some(st) = child.exited() {
            break st;
        }
        if iolab_guard::stop_requested() && !forwarded {
            child.interrupt();
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(200));
        if child.poll() > 0 {
            let (r, w) = child.totals();
            let ms = cast::duration_ms(t0.elapsed());
            if watch.samples.last().map(|s| (s.1, s.2)) != Some((r, w)) {
                if ms.saturating_sub(moved_at.0) >= cast::duration_ms(STALL) && moved_at.1 > 0 {
                    watch.stalls.push((moved_at.0, ms));
                }
                moved_at = (ms, r + w);
                watch.samples.push((ms, r, w));
            }
        }
    };
    let ms = cast::duration_ms(t0.elapsed());
    if ms.saturating_sub(moved_at.0) >= cast::duration_ms(STALL) && moved_at.1 > 0 {
        watch.stalls.push((moved_at.0, ms));
    }
    child.poll();
    let err = child.stderr();
    let Some(mut doc) = child.last().cloned() else {
        return Err(LoadError::Fio(format!(
            "fio exited with {status} without a report: {}",
            err.trim().lines().last().unwrap_or("no message")
        )));
    };
    let mut warnings = child.warnings().to_vec();
    doc["iolab"] = iolab_part(&doc, &watch, &disks_before, &fio, &mut warnings)?;
    let text = if format == "normal" {
        let mut t = iolab_load::normal::render(&doc);
        for (a, b) in &watch.stalls {
            t.push_str(&format!(
                "note: fio moved no bytes from {:.1} s to {:.1} s\n",
                *a as f64 / 1000.0,
                *b as f64 / 1000.0
            ));
        }
        for w in &warnings {
            t.push_str(&format!("note: {w}\n"));
        }
        t
    } else {
        serde_json::to_string_pretty(&doc)
            .map_err(|e| LoadError::Fio(format!("serialising fio's report: {e}")))?
            + "\n"
    };
    Ok(FioRun {
        text,
        fio_stderr: err,
        failed: (!status.success()).then(|| format!("fio exited with {status}")),
    })
}

/// /proc/diskstats now; unreadable is an error, not an empty list (the
/// devices' counts would silently vanish from the report).
fn disks() -> Result<Vec<iolab_sys::diskstats::DiskStat>, LoadError> {
    let text = std::fs::read_to_string("/proc/diskstats")
        .map_err(|e| LoadError::io("/proc/diskstats", e))?;
    Ok(iolab_sys::diskstats::parse(&text))
}

/// The `iolab` part of the document: statuses, stalls, and for each disk
/// fio lists, what the device itself counted; `warnings` (fio's reports
/// that could not be counted, the final one's added) go in when any.
fn iolab_part(
    doc: &Value,
    w: &Watch,
    before: &[iolab_sys::diskstats::DiskStat],
    fio: &std::path::Path,
    warnings: &mut Vec<String>,
) -> Result<Value, LoadError> {
    let after = disks()?;
    // fio writes no disk_util when its files are on no disk it knows
    // (tmpfs): then there is no device to count.
    let names: Vec<String> = doc["disk_util"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|x| x["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let devices: Vec<Value> = names
        .iter()
        .filter_map(|n| {
            let a = after.iter().find(|d| &d.name == n)?;
            let b = before.iter().find(|d| &d.name == n)?;
            let d = a.since(b);
            Some(json!({"name": n, "read_bytes": d.read_bytes(), "write_bytes": d.write_bytes()}))
        })
        .collect();
    // Counts fio's final report does not hold are unknown (null), not 0.
    let (r, wr) = match totals(doc) {
        Ok((r, wr)) => (json!(r), json!(wr)),
        Err(why) => {
            warnings.push(format!("fio's final report: {why}"));
            (Value::Null, Value::Null)
        }
    };
    let mut part = json!({
        "version": concat!("iolab-", env!("CARGO_PKG_VERSION")),
        "fio": fio.display().to_string(),
        "fio_read_bytes": r,
        "fio_write_bytes": wr,
        "devices": devices,
        "status": w.samples.iter().map(|(ms, r, wr)| json!({"ms": ms, "read_bytes": r, "write_bytes": wr})).collect::<Vec<_>>(),
        "stalls": w.stalls.iter().map(|(a, b)| json!({"from_ms": a, "to_ms": b})).collect::<Vec<_>>(),
    });
    if !warnings.is_empty() {
        part["warnings"] = json!(warnings);
    }
    Ok(part)
}
