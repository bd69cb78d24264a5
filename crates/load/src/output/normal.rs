//! fio's normal report (`--output-format=normal`, fio 3.33's layout): what
//! people paste into bug reports and compare by eye. Rendered from a
//! document in fio's JSON layout — iolab's own (`json.rs`) or fio's (with
//! `--with-fio`) — so one renderer serves both.
//!
//! Numbers are formatted as fio formats them: `num2str` with 4 significant
//! figures (IOPS=12.0k, BW=47.0MiB/s (49.3MB/s)), latencies in the unit
//! fio picks from their range, percentiles four to a line.

use std::fmt::Write as _;

use iolab_sys::cast;
use serde_json::Value;

/// fio's `sig_figs` default.
const SIG_FIGS: usize = 4;

/// fio's `num2str`: `num` shortened to at most `maxlen` digits with a
/// k/M/G (or Ki/Mi/Gi with `pow2`) prefix, keeping a decimal where it
/// fits, followed by `unit`.
pub fn num2str(mut num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefixes = if pow2 { IEC } else { SI };
    let thousand = if pow2 { 1024 } else { 1000 };
    let mut post = 0;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < prefixes.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let digits = num.to_string().len();
    if maxlen.saturating_sub(digits) <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefixes[post]);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefixes[post])
}

/// A map's entries in numeric key order (`">=64"` last), whatever order a
/// document that went through `serde_json::Value` kept them in.
fn numeric(m: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let key = |k: &str| {
        k.strip_prefix(">=")
            .map_or_else(|| k.parse::<f64>().unwrap_or(f64::MAX), |_| f64::INFINITY)
    };
    let mut v: Vec<_> = m.iter().collect();
    v.sort_by(|a, b| key(a.0).total_cmp(&key(b.0)));
    v
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_f64().map(cast::floor_u64))
        .unwrap_or(0)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// Renders the document (`jobs`, `disk_util`, optionally `iolab notes`).
pub fn render(doc: &Value) -> String {
    render_with(doc, &[])
}

/// An entry's clones and the thread id fio's header names (`jobs=N`,
/// `pid=N`), and its `significant_figures`, which fio's JSON does not
/// carry.
pub type Members = (u32, i32, Style);

/// How an entry's numbers are written: fio's `significant_figures` and
/// `kb_base` (1000: decimal units first, binary in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Significant figures (fio's sig_figs, default 4).
    pub sig: usize,
    /// kb_base=1000.
    pub si: bool,
    /// unit_base=1: bandwidths in bits (fio's N2S_BITPERSEC: the value
    /// times 8, "bit/s").
    pub bits: bool,
}

impl Style {
    /// A bandwidth in this style's unit.
    fn bw(self, bytes_per_s: u64, pow2: bool) -> String {
        if self.bits {
            num2str(bytes_per_s.saturating_mul(8), self.sig, pow2, "bit/s")
        } else {
            num2str(bytes_per_s, self.sig, pow2, "B/s")
        }
    }
}

impl Default for Style {
    fn default() -> Style {
        Style {
            sig: SIG_FIGS,
            si: false,
            bits: false,
        }
    }
}

/// [`render`], with each entry's [`Members`] where known; without, an
/// entry counts `numjobs` clones under `group_reporting` and one
/// otherwise, and names this process.
pub fn render_with(doc: &Value, members: &[Members]) -> String {
    let mut out = String::new();
    let jobs = doc["jobs"].as_array().cloned().unwrap_or_default();
    let time = doc["time"].as_str().unwrap_or("");
    for (i, j) in jobs.iter().enumerate() {
        let who = members.get(i).copied().unwrap_or_else(|| guess_members(j));
        job(&mut out, j, who, &jobs, time);
    }
    let mut groups: Vec<u64> = jobs.iter().map(|j| u(&j["groupid"])).collect();
    groups.dedup();
    for g in groups {
        // fio's group takes its last member's (rs->sig_figs = ts->sig_figs,
        // rs->kb_base = ts->kb_base).
        let style = jobs
            .iter()
            .enumerate()
            .rfind(|(_, j)| u(&j["groupid"]) == g)
            .and_then(|(i, _)| members.get(i))
            .map_or(Style::default(), |m| m.2);
        group(&mut out, g, &jobs, style);
    }
    if let Some(disks) = doc["disk_util"].as_array().filter(|d| !d.is_empty()) {
        out.push_str("\nDisk stats (read/write):\n");
        for d in disks {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
                d["name"].as_str().unwrap_or("?"),
                u(&d["read_ios"]),
                u(&d["write_ios"]),
                u(&d["read_merges"]),
                u(&d["write_merges"]),
                u(&d["read_ticks"]),
                u(&d["write_ticks"]),
                u(&d["in_queue"]),
                f(&d["util"])
            );
        }
    }
    if let Some(notes) = doc["iolab notes"].as_array() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "note: {}", n.as_str().unwrap_or(""));
        }
    }
    out
}

/// An entry's members as fio's JSON lets them be guessed.
fn guess_members(j: &Value) -> Members {
    let opts = &j["job options"];
    let grouped = opts
        .get("group_reporting")
        .is_some_and(|v| v.as_str() != Some("0"));
    let n = opts["numjobs"]
        .as_str()
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|_| grouped)
        .unwrap_or(1);
    (n, std::process::id() as i32, Style::default())
}

fn job(out: &mut String, j: &Value, (members, pid, style): Members, all: &[Value], time: &str) {
    let moved = ["read", "write", "trim"]
        .iter()
        .any(|d| u(&j[d]["io_bytes"]) > 0 || u(&j[d]["total_ios"]) > 0);
    let err = j["error"].as_i64().unwrap_or(0);
    // fio leaves out an entry that moved nothing (show_thread_status_normal:
    // a zbd reader of an empty device); iolab keeps one that failed, so
    // its error is printed where the numbers would be.
    if !moved && err == 0 {
        return;
    }
    match j["error_message"].as_str() {
        Some(m) if err != 0 => {
            let _ = writeln!(
                out,
                "{}: (groupid={}, jobs={members}): err={err:2} ({m}): pid={pid}: {time}",
                j["jobname"].as_str().unwrap_or("?"),
                u(&j["groupid"])
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "{}: (groupid={}, jobs={members}): err={err:2}: pid={pid}: {time}",
                j["jobname"].as_str().unwrap_or("?"),
                u(&j["groupid"])
            );
        }
    }
    if !moved {
        return;
    }
    let group_agg = |d: &str| -> f64 {
        all.iter()
            .filter(|o| o["groupid"] == j["groupid"])
            .map(|o| f(&o[d]["bw_bytes"]))
            .sum()
    };
    if j.get("mixed").is_some_and(|m| !m.is_null()) {
        ddir(
            out,
            "mixed",
            &j["mixed"],
            group_agg("read"),
            &Value::Null,
            style,
        );
    } else {
        for d in ["read", "write", "trim"] {
            if u(&j[d]["io_bytes"]) > 0 {
                ddir(out, d, &j[d], group_agg(d), &j["zone_resets"], style);
            }
        }
    }
    latencies(out, j);
    if u(&j["sync"]["lat_ns"]["N"]) > 0 {
        let s = &j["sync"]["lat_ns"];
        // fio 3.33 names the calls this way (later releases add syncfs).
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat(out, "sync", s);
        if let Some(p) = s["percentile"].as_object() {
            percentiles(out, "sync", p);
        }
    }
    let _ = writeln!(
        out,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}",
        f(&j["usr_cpu"]),
        f(&j["sys_cpu"]),
        u(&j["ctx"]),
        u(&j["majf"]),
        u(&j["minf"])
    );
    let dist = |k: &str| -> String {
        j[k].as_object()
            .map(|m| {
                numeric(m)
                    .into_iter()
                    .map(|(k, v)| format!("{k}={:.1}%", f(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let _ = writeln!(out, "  IO depths    : {}", dist("iodepth_level"));
    let _ = writeln!(out, "     submit    : {}", dist("iodepth_submit"));
    let _ = writeln!(out, "     complete  : {}", dist("iodepth_complete"));
    let tot = |k: &str| {
        ["read", "write", "trim"]
            .iter()
            .map(|d| u(&j[d][k]).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let _ = writeln!(
        out,
        "     issued rwts: total={},0 short={},0 dropped={},0",
        tot("total_ios"),
        tot("short_ios"),
        tot("drop_ios")
    );
    if let Some(n) = j["total_err"].as_u64() {
        // An errno: a value past i32 is as malformed as a missing one.
        let first = j["first_error"]
            .as_i64()
            .and_then(|e| i32::try_from(e).ok())
            .unwrap_or(0);
        let _ = writeln!(
            out,
            "     errors    : total={n}, first_error={first}/<{}>",
            strerror(first)
        );
    }
    let _ = writeln!(
        out,
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
        u(&j["latency_target"]),
        u(&j["latency_window"]),
        f(&j["latency_percentile"]),
        u(&j["latency_depth"])
    );
}

fn ddir(out: &mut String, name: &str, d: &Value, group_bw: f64, zone_resets: &Value, style: Style) {
    let (sig, i2p) = (style.sig, !style.si);
    let runtime = u(&d["runtime"]).max(1);
    let bytes = u(&d["io_bytes"]);
    let bw = bytes * 1000 / runtime;
    let iops = u(&d["total_ios"]) * 1000 / runtime;
    // fio 3.33 ends every write line with its zone resets, zbd or not
    // (stat.c: zbd_write_status).
    let post = if name == "write" {
        format!("; {} zone resets", u(zone_resets))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{}msec){post}",
        num2str(iops, sig, false, ""),
        style.bw(bw, i2p),
        style.bw(bw, !i2p),
        num2str(bytes, sig, i2p, "B"),
        u(&d["runtime"])
    );
    for (label, key) in [("slat", "slat_ns"), ("clat", "clat_ns"), (" lat", "lat_ns")] {
        if u(&d[key]["N"]) > 0 {
            display_lat(out, label, &d[key]);
        }
    }
    for (label, key) in [("slat", "slat_ns"), ("clat", "clat_ns"), ("lat", "lat_ns")] {
        if let Some(p) = d[key]["percentile"].as_object() {
            percentiles(out, label, p);
        }
    }
    if u(&d["bw_samples"]) > 0 {
        let (mut min, mut max, mut mean, mut dev) = (
            u(&d["bw_min"]) as f64,
            u(&d["bw_max"]) as f64,
            f(&d["bw_mean"]),
            f(&d["bw_dev"]),
        );
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            for v in [&mut min, &mut max, &mut mean, &mut dev] {
                *v /= 1024.0;
            }
            unit = "MiB";
        }
        let per = if group_bw > 1024.0 {
            (f(&d["bw_mean"]) * 100.0 / (group_bw / 1024.0)).min(100.0)
        } else {
            100.0
        };
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={:5}, max={:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            cast::floor_u64(min),
            cast::floor_u64(max),
            u(&d["bw_samples"])
        );
    }
    if u(&d["iops_samples"]) > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            u(&d["iops_min"]),
            u(&d["iops_max"]),
            f(&d["iops_mean"]),
            f(&d["iops_stddev"]),
            u(&d["iops_samples"])
        );
    }
}

/// One latency line, in the unit fio picks from the values' range.
fn display_lat(out: &mut String, label: &str, l: &Value) {
    let (mut min, mut max, mut mean, mut dev) =
        (u(&l["min"]), u(&l["max"]), f(&l["mean"]), f(&l["stddev"]));
    let mut base = "(nsec)";
    for (div, name, lo, hi) in [
        (1_000_000u64, "(msec)", 2_000_000u64, 99_999_999u64),
        (1_000, "(usec)", 2_000, 99_999),
    ] {
        if min > lo && max > hi {
            min /= div;
            max /= div;
            mean /= div as f64;
            dev /= div as f64;
            base = name;
            break;
        }
    }
    let _ = writeln!(
        out,
        "    {label} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, "")
    );
}

fn percentiles(out: &mut String, label: &str, p: &serde_json::Map<String, Value>) {
    let vals: Vec<(f64, u64)> = numeric(p)
        .into_iter()
        .map(|(k, v)| (k.parse().unwrap_or(0.0), u(v)))
        .collect();
    if vals.is_empty() {
        return;
    }
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let (unit, scale) = if minv > 2_000_000 && maxv > 99_999_999 {
        ("msec", 2)
    } else if minv > 2000 && maxv > 99_999 {
        ("usec", 1)
    } else {
        ("nsec", 0)
    };
    let divisor = 1000u64.pow(scale);
    let width = cast::usize_of(cast::floor_u64(((maxv / divisor).max(1) as f64).log10())) + 1;
    let width = width.max(5);
    let per_line = (80 - 7) / (2 + 10 + width);
    let _ = write!(out, "    {label} percentiles ({unit}):\n     |");
    for (j, (pct, v)) in vals.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let mut v = *v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = j == vals.len() - 1;
        let _ = write!(
            out,
            " {pct:5.2}th=[{v:width$}]{}",
            if last { '\n' } else { ',' }
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// `lat (nsec)   : 750=0.01%, ...`, five to a line, non-zero buckets only.
fn latencies(out: &mut String, j: &Value) {
    for (key, unit) in [
        ("latency_ns", "nsec"),
        ("latency_us", "usec"),
        ("latency_ms", "msec"),
    ] {
        let Some(m) = j[key].as_object() else {
            continue;
        };
        let shown: Vec<String> = numeric(m)
            .into_iter()
            .filter(|(_, v)| f(v) > 0.0)
            .map(|(k, v)| format!("{k}={:.2}%", f(v)))
            .collect();
        for chunk in shown.chunks(5) {
            let _ = writeln!(out, "  lat ({unit})   : {}", chunk.join(", "));
        }
    }
}

fn group(out: &mut String, g: u64, jobs: &[Value], style: Style) {
    let (sig, i2p) = (style.sig, !style.si);
    let _ = writeln!(out, "\nRun status group {g} (all jobs):");
    let mine: Vec<&Value> = jobs.iter().filter(|j| u(&j["groupid"]) == g).collect();
    for (label, d) in [
        ("   READ", "read"),
        ("  WRITE", "write"),
        ("   TRIM", "trim"),
    ] {
        let runs: Vec<u64> = mine
            .iter()
            .filter(|j| u(&j[d]["runtime"]) > 0)
            .map(|j| u(&j[d]["runtime"]))
            .collect();
        if runs.is_empty() {
            continue;
        }
        let io: u64 = mine.iter().map(|j| u(&j[d]["io_bytes"])).sum();
        let max_run = runs.iter().copied().max().unwrap_or(0).max(1);
        let min_run = runs.iter().copied().min().unwrap_or(0);
        let agg = io * 1000 / max_run;
        // fio's min_bw/max_bw: each entry's bytes over its whole
        // milliseconds (stat.c, `io_bytes * 1000 / runtime`).
        let bws: Vec<u64> = mine
            .iter()
            .filter(|j| u(&j[d]["io_bytes"]) > 0 && u(&j[d]["runtime"]) > 0)
            .map(|j| u(&j[d]["io_bytes"]) * 1000 / u(&j[d]["runtime"]))
            .collect();
        let (lo, hi) = (
            bws.iter().copied().min().unwrap_or(0),
            bws.iter().copied().max().unwrap_or(0),
        );
        let n = |v: u64, p2: bool, unit: &str| num2str(v, sig, p2, unit);
        let _ = writeln!(
            out,
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={min_run}-{max_run}msec",
            style.bw(agg, i2p),
            style.bw(agg, !i2p),
            style.bw(lo, i2p),
            style.bw(hi, i2p),
            style.bw(lo, !i2p),
            style.bw(hi, !i2p),
            n(io, i2p, "B"),
            n(io, !i2p, "B"),
        );
    }
}

/// The C library's text for an errno, as fio prints it (`strerror`).
fn strerror(e: i32) -> String {
    let text = std::io::Error::from_raw_os_error(e).to_string();
    // Rust appends " (os error N)".
    text.split(" (os error").next().unwrap_or("").to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn num2str_matches_fios_strings() {
        // Pairs from fio 3.33's own report of one run (see the module).
        assert_eq!(num2str(12030, 4, false, ""), "12.0k");
        assert_eq!(num2str(49_283_000, 4, false, "B/s"), "49.3MB/s");
        assert_eq!(num2str(49_283_000, 4, true, "B/s"), "47.0MiB/s");
        assert_eq!(num2str(98_566_144, 4, true, "B"), "94.0MiB");
        assert_eq!(num2str(1_308_403, 6, false, ""), "1308.4k");
        assert_eq!(num2str(22_681_000, 6, false, ""), "22681k");
        assert_eq!(num2str(1618, 6, false, ""), "1618");
        assert_eq!(num2str(999, 4, false, ""), "999");
    }

    #[test]
    fn a_report_has_fios_lines() {
        let doc = serde_json::json!({
            "time": "Fri Nov 27 02:37:50 2026",
            "jobs": [{
                "jobname": "j", "groupid": 0, "error": 0,
                "job options": {"name": "j"},
                "read": {"io_bytes": 98_566_144u64, "total_ios": 24070, "runtime": 2001,
                         "bw_bytes": 49_258_442u64, "short_ios": 0, "drop_ios": 0,
                         "slat_ns": {"N": 0}, "lat_ns": {"N": 0},
                         "clat_ns": {"N": 24070, "min": 504, "max": 22_681_000u64,
                                     "mean": 132_475.39, "stddev": 309_697.29,
                                     "percentile": {"1.000000": 28_000, "50.000000": 112_000,
                                                    "99.990000": 22_152_000u64}},
                         "bw_samples": 3, "bw_min": 45320, "bw_max": 54602,
                         "bw_mean": 49142.0, "bw_dev": 4852.95,
                         "iops_samples": 3, "iops_min": 11330, "iops_max": 13650,
                         "iops_mean": 12285.33, "iops_stddev": 1212.96},
                "write": {"io_bytes": 0}, "trim": {"io_bytes": 0},
                "sync": {"total_ios": 0, "lat_ns": {"N": 0}},
                "usr_cpu": 4.5, "sys_cpu": 32.85, "ctx": 13827, "majf": 0, "minf": 16,
                "iodepth_level": {"1": 0.1, "2": 0.1, "4": 99.8},
                "iodepth_submit": {"0": 0.0, "4": 100.0},
                "iodepth_complete": {"0": 0.0, "4": 100.0},
                "latency_ns": {"750": 0.01}, "latency_us": {"50": 4.78, "100": 27.69},
                "latency_ms": {"2": 0.0},
                "latency_depth": 4, "latency_target": 0, "latency_percentile": 100.0,
                "latency_window": 0
            }],
            "disk_util": [{"name": "vda", "read_ios": 21541, "write_ios": 21677,
                           "read_merges": 19, "write_merges": 104, "read_ticks": 2156,
                           "write_ticks": 3718, "in_queue": 5895, "util": 70.85}]
        });
        let t = render(&doc);
        assert!(t.starts_with("j: (groupid=0, jobs=1): err= 0: pid="), "{t}");
        assert!(
            t.contains("  read: IOPS=12.0k, BW=47.0MiB/s (49.3MB/s)(94.0MiB/2001msec)\n"),
            "{t}"
        );
        assert!(
            t.contains("    clat (nsec): min=504, max=22681k, avg=132475.39, stdev=309697.29\n"),
            "{t}"
        );
        assert!(t.contains("    clat percentiles (usec):\n     |  1.00th=[   28], 50.00th=[  112], 99.99th=[22152]\n"), "{t}");
        assert!(t.contains("   bw (  KiB/s): min=45320, max=54602, per=100.00%, avg=49142.00, stdev=4852.95, samples=3\n"), "{t}");
        assert!(t.contains("  lat (usec)   : 50=4.78%, 100=27.69%\n"), "{t}");
        assert!(
            t.contains("  cpu          : usr=4.50%, sys=32.85%, ctx=13827, majf=0, minf=16\n"),
            "{t}"
        );
        assert!(
            t.contains("     issued rwts: total=24070,0,0,0 short=0,0,0,0 dropped=0,0,0,0\n"),
            "{t}"
        );
        assert!(t.contains("\nRun status group 0 (all jobs):\n   READ: bw=47.0MiB/s (49.3MB/s), 47.0MiB/s-47.0MiB/s (49.3MB/s-49.3MB/s), io=94.0MiB (98.6MB), run=2001-2001msec\n"), "{t}");
        assert!(t.contains("\nDisk stats (read/write):\n  vda: ios=21541/21677, merge=19/104, ticks=2156/3718, in_queue=5895, util=70.85%\n"), "{t}");
    }
}
