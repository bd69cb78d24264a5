//! `iolab load --with-fio`: the job goes, unchanged, to the installed fio,
//! so a job file always runs, even with options iolab does not build.
//! iolab adds what it adds to its own loads: fio's per-second status
//! (`--status-interval=1`, JSON) is read while fio runs, so a job that
//! stops moving bytes is reported, and the devices' own byte counters
//! (/proc/diskstats) are put next to fio's byte counts at the end.

use std::ffi::OsString;
use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context;
use iolab_load::fio_process::{totals, FioChild};
use iolab_sys::UsageError;
use serde_json::{json, Value};

/// Flags that stay with iolab (the rest go to fio), and whether each takes
/// a value.
pub const OWN: [(&str, bool); 8] = [
    ("with-fio", false),
    ("output-format", true),
    ("output", true),
    ("json", false),
    ("status-interval", true),
    ("cpu", false),
    ("trace", true),
    ("force", false),
];

/// Splits the arguments after `load`: iolab's own flags (kept for clap)
/// and fio's, returned as the JSON list the hidden `--fio-argv` carries.
pub fn split(args: &[OsString]) -> (Vec<OsString>, String) {
    let mut kept = Vec::new();
    let mut fio: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let s = args[i].to_string_lossy().into_owned();
        i += 1;
        let key = s
            .strip_prefix("--")
            .map(|f| f.split('=').next().unwrap_or(f));
        match key.and_then(|k| OWN.iter().find(|(o, _)| *o == k)) {
            Some((_, takes)) => {
                kept.push(OsString::from(&s));
                if *takes && !s.contains('=') && i < args.len() {
                    kept.push(args[i].clone());
                    i += 1;
                }
            }
            None => fio.push(s),
        }
    }
    (
        kept,
        serde_json::to_string(&fio).unwrap_or_else(|_| "[]".into()),
    )
}

/// What the watch saw.
struct Watch {
    /// `(ms since start, read bytes, write bytes)` per status.
    samples: Vec<(u64, u64, u64)>,
    /// Spans with fio running and no bytes moving, ms since start.
    stalls: Vec<(u64, u64)>,
}

/// A stall is reported when no byte moved for this long.
const STALL: Duration = Duration::from_secs(3);

/// Runs fio with the user's arguments; `format` is the report asked for
/// (normal, json or json+). Returns the text to print.
pub fn run(fio_args: &[String], format: &str) -> anyhow::Result<String> {
    if !matches!(format, "normal" | "json" | "json+") {
        return Err(UsageError::new(format!(
            "--with-fio --output-format {format}: expected normal, json or json+ (one)"
        ))
        .into());
    }
    let fio = iolab_experiment::startup::fio_path()?;
    let disks_before = disks();
    let t0 = Instant::now();
    let mut child = FioChild::spawn(&fio, fio_args, format == "json+", None)
        .with_context(|| format!("starting {}", fio.display()))?;
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
            let ms = t0.elapsed().as_millis() as u64;
            if watch.samples.last().map(|s| (s.1, s.2)) != Some((r, w)) {
                if ms.saturating_sub(moved_at.0) >= STALL.as_millis() as u64 && moved_at.1 > 0 {
                    watch.stalls.push((moved_at.0, ms));
                }
                moved_at = (ms, r + w);
                watch.samples.push((ms, r, w));
            }
        }
    };
    let ms = t0.elapsed().as_millis() as u64;
    if ms.saturating_sub(moved_at.0) >= STALL.as_millis() as u64 && moved_at.1 > 0 {
        watch.stalls.push((moved_at.0, ms));
    }
    child.poll();
    let err = child.stderr();
    let Some(mut doc) = child.last().cloned() else {
        anyhow::bail!(
            "fio exited with {status} without a report: {}",
            err.trim().lines().last().unwrap_or("no message")
        );
    };
    doc["iolab"] = iolab_part(&doc, &watch, &disks_before, &fio);
    // fio's own complaints go where fio puts them.
    if !err.is_empty() {
        let _ = std::io::stderr().write_all(err.as_bytes());
    }
    let text = if format == "normal" {
        let mut t = iolab_load::normal::render(&doc);
        for (a, b) in &watch.stalls {
            t.push_str(&format!(
                "note: fio moved no bytes from {:.1} s to {:.1} s\n",
                *a as f64 / 1000.0,
                *b as f64 / 1000.0
            ));
        }
        t
    } else {
        serde_json::to_string_pretty(&doc)? + "\n"
    };
    if !status.success() {
        // The report is printed first: what was measured is not lost.
        print!("{text}");
        anyhow::bail!("fio exited with {status}");
    }
    Ok(text)
}

fn disks() -> Vec<iolab_sys::diskstats::DiskStat> {
    iolab_sys::diskstats::parse(&std::fs::read_to_string("/proc/diskstats").unwrap_or_default())
}

/// The `iolab` part of the document: statuses, stalls, and for each disk
/// fio lists, what the device itself counted.
fn iolab_part(
    doc: &Value,
    w: &Watch,
    before: &[iolab_sys::diskstats::DiskStat],
    fio: &std::path::Path,
) -> Value {
    let after = disks();
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
    let (r, wr) = totals(doc);
    json!({
        "version": concat!("iolab-", env!("CARGO_PKG_VERSION")),
        "fio": fio.display().to_string(),
        "fio_read_bytes": r,
        "fio_write_bytes": wr,
        "devices": devices,
        "status": w.samples.iter().map(|(ms, r, wr)| json!({"ms": ms, "read_bytes": r, "write_bytes": wr})).collect::<Vec<_>>(),
        "stalls": w.stalls.iter().map(|(a, b)| json!({"from_ms": a, "to_ms": b})).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn own_flags_stay_and_the_rest_goes_to_fio() {
        let args: Vec<OsString> = [
            "--with-fio",
            "job.fio",
            "--output-format",
            "json",
            "--runtime=2",
            "--output=x",
            "--serialize_overlap=1",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let (kept, fio) = split(&args);
        assert_eq!(
            kept,
            ["--with-fio", "--output-format", "json", "--output=x"]
                .iter()
                .map(OsString::from)
                .collect::<Vec<_>>()
        );
        assert_eq!(fio, r#"["job.fio","--runtime=2","--serialize_overlap=1"]"#);
    }
}
