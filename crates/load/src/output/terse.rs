//! `--output-format=terse`: fio's semicolon-separated terse format,
//! version 3 (fio(1), "TERSE OUTPUT"), one line per job, for scripts
//! that cut fields by position. Latencies are in microseconds as fio
//! writes them; a queueing engine's I/Os have a slat and a clat, a
//! blocking engine's clat is their whole latency and their slat is zero,
//! as in fio; the percentiles are lat's with `lat_percentiles`, else
//! clat's with `clat_percentiles`, else none; the bandwidth sample
//! statistics and the iodepth distribution come from `fio_stats`; the
//! latency distribution (2 us ... >=2000 ms) is computed from fio's
//! latency bins of every I/O. Terse v3 has no trim fields.

use std::fmt::Write as _;

use iolab_sys::cast;

use crate::run::report::{DirReport, JobReport, LoadReport};
use crate::run::sinks::stats::Latency;

const LAT_U: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
const LAT_M: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// Renders every job, then the devices, as fio does.
pub fn render(r: &LoadReport) -> String {
    let mut out = String::new();
    for j in &r.jobs {
        job(&mut out, j);
        for d in &r.disks {
            let s = &d.delta;
            let _ = write!(
                out,
                ";{};{};{};{};{};{};{};{};{:.2}%",
                d.name,
                s.reads,
                s.writes,
                s.reads_merged,
                s.writes_merged,
                s.read_ms,
                s.write_ms,
                s.weighted_io_ms,
                d.util()
            );
        }
        // fio adds the errors continued past after the devices.
        if j.continue_on_error {
            let first = j.continued.first.as_ref().map_or(0, |e| e.errno);
            let _ = write!(out, ";{};{first}", j.continued.count);
        }
        out.push('\n');
    }
    out
}

fn job(out: &mut String, j: &JobReport) {
    let _ = write!(
        out,
        "3;iolab-{};{};{};{}",
        env!("CARGO_PKG_VERSION"),
        j.name,
        j.group,
        j.error
            .as_ref()
            .or(j.continued.first.as_ref())
            .map_or(0, |e| e.errno)
    );
    dir(out, &j.read, j.percentiles_in);
    dir(out, &j.write, j.percentiles_in);
    let _ = write!(
        out,
        ";{:.6}%;{:.6}%;{};{};{}",
        j.usr_cpu(),
        j.sys_cpu(),
        j.cpu.ctx,
        j.cpu.majf,
        j.cpu.minf
    );
    for p in j.depth.percents()[0] {
        let _ = write!(out, ";{p:.1}%");
    }
    let total = (j.read.total_ios + j.write.total_ios).max(1) as f64;
    let bins: Vec<(u64, u64)> = j.read.bins.iter().chain(&j.write.bins).copied().collect();
    let share = |lo: u64, hi: u64| -> f64 {
        let n: u64 = bins
            .iter()
            .filter(|(v, _)| *v > lo && *v <= hi)
            .map(|b| b.1)
            .sum();
        100.0 * n as f64 / total
    };
    let mut lo = 0;
    for us in LAT_U {
        let _ = write!(out, ";{:.2}%", share(lo, us * 1000));
        lo = us * 1000;
    }
    for ms in LAT_M {
        let _ = write!(out, ";{:.2}%", share(lo, ms * 1_000_000));
        lo = ms * 1_000_000;
    }
    let _ = write!(out, ";{:.2}%", share(lo, u64::MAX));
}

fn dir(out: &mut String, d: &DirReport, (clat_p, lat_p, _): (bool, bool, bool)) {
    let bw = d.fio_bw_bytes() / 1024;
    let _ = write!(
        out,
        ";{};{};{};{}",
        d.io_bytes / 1024,
        bw,
        cast::floor_u64(d.fio_iops()),
        d.fio_runtime_ms()
    );
    let one = |out: &mut String, l: Option<&Latency>| match l {
        Some(l) => {
            let _ = write!(
                out,
                ";{};{};{:.6};{:.6}",
                l.min_ns / 1000,
                l.max_ns / 1000,
                l.mean_ns / 1000.0,
                l.stddev_ns / 1000.0
            );
        }
        None => out.push_str(";0;0;0.000000;0.000000"),
    };
    let (slat, clat) = match &d.split {
        Some(s) => (s.slat.lat.as_ref(), s.clat.lat.as_ref()),
        None => (None, d.lat.as_ref()),
    };
    one(out, slat);
    one(out, clat);
    let pcts = if lat_p {
        d.lat.as_ref()
    } else if clat_p {
        clat
    } else {
        None
    }
    .map(|l| l.percentiles.clone())
    .unwrap_or_default();
    for i in 0..20 {
        match pcts.get(i) {
            Some((p, v)) => {
                let _ = write!(out, ";{p:.6}%={}", v / 1000);
            }
            None => out.push_str(";0%=0"),
        }
    }
    one(out, d.lat.as_ref());
    // Bandwidth samples (KiB/s): min, max, percent of the job's own
    // bandwidth (the group's, when the job is alone in it), mean, stddev.
    let b = d.bw_samples;
    let kib = d.bw_bytes() / 1024.0;
    let agg = if b.n > 0 && kib > 0.0 {
        (b.mean * 100.0 / kib).min(100.0)
    } else {
        0.0
    };
    let _ = write!(
        out,
        ";{};{};{agg:.6}%;{:.6};{:.6}",
        b.min, b.max, b.mean, b.dev
    );
}
