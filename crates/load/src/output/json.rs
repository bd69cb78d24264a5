//! `--json`: the report in fio's JSON layout (`fio --output-format=json`,
//! checked against fio 3.33), for the subset iolab measures, so scripts
//! that parse fio's output read ours unchanged.
//!
//! Differences, all additive: top-level `iolab version` instead of `fio
//! version`, a `total` object shaped like a job, and per job an
//! `error_message` when `error` is not 0. Latencies are fio's: for the
//! queueing engines (io_uring, libaio, posixaio) `lat_ns` runs from an
//! I/O's preparation to its completion, `slat_ns` to the return of the
//! submit that carried it and `clat_ns` from there to completion; for the
//! blocking engines `clat_ns` is the whole latency and `slat_ns` has no
//! samples, as in fio.
//! A job's clones are merged, as with fio's `group_reporting`.

use std::collections::BTreeMap;

use iolab_sys::cast;
use serde::Serialize;

use crate::run::report::{DirReport, JobReport, LoadReport};

/// The fio release whose JSON layout iolab writes, under `fio version`:
/// scripts that check that key (and parse `fio-MAJOR.MINOR` from it) take
/// the document as that fio's; `iolab version` says what wrote it.
pub const FIO_VERSION: &str = "fio-3.33";

/// The whole document.
#[derive(Debug, Serialize)]
pub struct FioJson {
    /// The fio JSON layout followed ([`FIO_VERSION`]).
    #[serde(rename = "fio version")]
    pub fio_version: String,
    /// iolab's version.
    #[serde(rename = "iolab version")]
    pub version: String,
    /// Start, seconds since the epoch.
    pub timestamp: u64,
    /// Start, milliseconds since the epoch.
    pub timestamp_ms: u64,
    /// Start, local time as fio prints it (`Sun Nov 22 03:00:50 2026`).
    pub time: String,
    /// One entry per job.
    pub jobs: Vec<FioJob>,
    /// All jobs together (iolab).
    pub total: FioJob,
    /// Per device counters over the load.
    pub disk_util: Vec<FioDisk>,
}

/// One job, with fio's field names.
#[derive(Debug, Serialize)]
pub struct FioJob {
    /// The job name.
    pub jobname: String,
    /// Stonewall group.
    pub groupid: usize,
    /// errno of the first failure, 0 if none.
    pub error: i32,
    /// What failed (iolab; only when `error` is set or setup failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Always 0 (the job has ended).
    pub eta: u64,
    /// Wall time of the job, seconds.
    pub elapsed: u64,
    /// The options as written.
    #[serde(rename = "job options")]
    pub job_options: serde_json::Map<String, serde_json::Value>,
    /// Reads (absent with `unified_rw_reporting=mixed`, as in fio).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<FioDir>,
    /// Writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<FioDir>,
    /// Trims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trim: Option<FioDir>,
    /// `unified_rw_reporting`: reads, writes and trims together (fio's
    /// `mixed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixed: Option<FioDir>,
    /// fsync/fdatasync calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<FioSync>,
    /// Measured time, milliseconds, summed over the job's clones as fio
    /// sums it (so `(usr_cpu + sys_cpu) / 100 * job_runtime` is the job's
    /// CPU time, in both tools).
    pub job_runtime: u64,
    /// User CPU, percent of one CPU per clone.
    pub usr_cpu: f64,
    /// System CPU, percent of one CPU per clone.
    pub sys_cpu: f64,
    /// Context switches.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
    /// Percent of I/Os queued at each depth (1, 2, 4, ... >=64).
    pub iodepth_level: Ordered,
    /// Percent of submit calls by I/Os carried (0, 4, 8, ... >=64).
    pub iodepth_submit: Ordered,
    /// Percent of reaps by completions returned (0, 4, 8, ... >=64).
    pub iodepth_complete: Ordered,
    /// Percent of I/Os by latency, below 1 us (buckets 2 ... 1000 ns).
    pub latency_ns: Ordered,
    /// 1 us to 1 ms.
    pub latency_us: Ordered,
    /// From 1 ms (2 ... 2000, >=2000).
    pub latency_ms: Ordered,
    /// `iodepth`.
    pub latency_depth: u32,
    /// `latency_target`: 0 (not built).
    pub latency_target: u64,
    /// `latency_percentile`.
    pub latency_percentile: f64,
    /// `latency_window`.
    pub latency_window: u64,
    /// With `continue_on_error`: the errors continued past.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_err: Option<u64>,
    /// With `continue_on_error`: the first of them (errno).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<i32>,
    /// With `zonemode=zbd`: the zone resets (fio after 3.33 reports them
    /// here, only in this mode; 3.33 only in its normal output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_resets: Option<u64>,
}

/// One direction.
#[derive(Debug, Serialize)]
pub struct FioDir {
    /// Bytes transferred.
    pub io_bytes: u64,
    /// KiB transferred.
    pub io_kbytes: u64,
    /// Bandwidth, bytes per second.
    pub bw_bytes: u64,
    /// Bandwidth, KiB per second.
    pub bw: u64,
    /// I/Os per second.
    pub iops: f64,
    /// Measured time, milliseconds.
    pub runtime: u64,
    /// Completed I/Os.
    pub total_ios: u64,
    /// I/Os shorter than asked.
    pub short_ios: u64,
    /// Always 0.
    pub drop_ios: u64,
    /// Submission latency (queueing engines only).
    pub slat_ns: FioLat,
    /// Completion latency (the whole latency for a blocking engine).
    pub clat_ns: FioLat,
    /// Total latency.
    pub lat_ns: FioLat,
    /// cmdprio: latency per I/O priority (fio's `prios`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prios: Option<Vec<serde_json::Value>>,
    /// Bandwidth samples (KiB/s, one per 500 ms of a clone): smallest.
    pub bw_min: u64,
    /// Largest.
    pub bw_max: u64,
    /// Mean sample as a percentage of the group's bandwidth.
    pub bw_agg: f64,
    /// Mean.
    pub bw_mean: f64,
    /// Standard deviation.
    pub bw_dev: f64,
    /// Number of samples.
    pub bw_samples: u64,
    /// IOPS samples: smallest.
    pub iops_min: u64,
    /// Largest.
    pub iops_max: u64,
    /// Mean.
    pub iops_mean: f64,
    /// Standard deviation.
    pub iops_stddev: f64,
    /// Number of samples.
    pub iops_samples: u64,
}

/// A latency summary, nanoseconds.
#[derive(Debug, Clone, Serialize, Default)]
pub struct FioLat {
    /// Minimum.
    pub min: u64,
    /// Maximum.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Number of samples.
    #[serde(rename = "N")]
    pub n: u64,
    /// `"99.900000": value` in fio's order, absent without samples (as in
    /// fio).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<Percentiles>,
    /// json+: `"bin value ns": I/Os` for every non-empty fio latency bin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<BTreeMap<u64, u64>>,
}

/// Percentile keys and values, serialised as a map in ascending order.
#[derive(Debug, Clone)]
pub struct Percentiles(pub Vec<(String, u64)>);

impl Serialize for Percentiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// fsync counts.
#[derive(Debug, Serialize)]
pub struct FioSync {
    /// Calls made.
    pub total_ios: u64,
    /// Their latencies.
    pub lat_ns: FioLat,
}

/// A map whose keys keep the order fio writes them in.
#[derive(Debug, Clone)]
pub struct Ordered(pub Vec<(String, f64)>);

impl Serialize for Ordered {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// One device (fio's `disk_util`).
#[derive(Debug, Serialize)]
pub struct FioDisk {
    /// Kernel name.
    pub name: String,
    /// Reads completed.
    pub read_ios: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Reads merged.
    pub read_merges: u64,
    /// Writes merged.
    pub write_merges: u64,
    /// Milliseconds reading.
    pub read_ticks: u64,
    /// Milliseconds writing.
    pub write_ticks: u64,
    /// Weighted milliseconds in queue.
    pub in_queue: u64,
    /// Percent of time busy.
    pub util: f64,
    /// Bytes read (iolab).
    pub read_bytes: u64,
    /// Bytes written (iolab).
    pub write_bytes: u64,
}

/// Builds the document.
pub fn to_fio_json(r: &LoadReport) -> FioJson {
    build(r, false)
}

/// Builds the json+ document: the JSON document plus fio's latency bins
/// under `clat_ns.bins` and `lat_ns.bins` (what `fio_jsonplus_clat2csv`
/// reads).
pub fn to_fio_json_plus(r: &LoadReport) -> FioJson {
    build(r, true)
}

fn build(r: &LoadReport, plus: bool) -> FioJson {
    // bw_agg is a percentage of the group's aggregate bandwidth, fio's
    // `rs->agg`: the group's bytes over its longest runtime, in KiB/s.
    let group_kib = |g: usize, d: usize| -> f64 {
        let dirs = || {
            r.jobs
                .iter()
                .filter(|j| j.group == g)
                .map(move |j| [&j.read, &j.write][d])
        };
        let bytes: u64 = dirs().map(|x| x.io_bytes).sum();
        match dirs().map(DirReport::fio_runtime_ms).max().unwrap_or(0) {
            0 => 0.0,
            ms => (u128::from(bytes) * 1000 / u128::from(ms)) as f64 / 1024.0,
        }
    };
    // fio's `elapsed` is the run's, in seconds rounded up (eta.c), the
    // same in every entry.
    let elapsed = cast::duration_ms(r.elapsed).div_ceil(1000);
    let job = |j: &JobReport| FioJob {
        elapsed,
        ..job(j, plus, [group_kib(j.group, 0), group_kib(j.group, 1)])
    };
    let since = r
        .started_at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    FioJson {
        fio_version: FIO_VERSION.into(),
        version: format!("iolab-{}", env!("CARGO_PKG_VERSION")),
        timestamp: since.as_secs(),
        timestamp_ms: cast::duration_ms(since),
        time: ctime(since.as_secs() as i64),
        jobs: r.jobs.iter().map(job).collect(),
        total: self::job(
            &r.total,
            plus,
            [
                r.total.read.bw_bytes() / 1024.0,
                r.total.write.bw_bytes() / 1024.0,
            ],
        ),
        disk_util: r
            .disks
            .iter()
            .map(|d| FioDisk {
                name: d.name.clone(),
                read_ios: d.delta.reads,
                write_ios: d.delta.writes,
                read_merges: d.delta.reads_merged,
                write_merges: d.delta.writes_merged,
                read_ticks: d.delta.read_ms,
                write_ticks: d.delta.write_ms,
                in_queue: d.delta.weighted_io_ms,
                util: d.util(),
                read_bytes: d.delta.read_bytes(),
                write_bytes: d.delta.write_bytes(),
            })
            .collect(),
    }
}

/// Local time in ctime(3)'s layout, without the newline.
fn ctime(secs: i64) -> String {
    let t: libc::time_t = secs as libc::time_t;
    // SAFETY: localtime_r and strftime write only into the buffers given.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return secs.to_string();
        }
        let mut buf = [0u8; 64];
        let n = libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%a %b %e %H:%M:%S %Y".as_ptr(),
            &tm,
        );
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

fn job(j: &JobReport, plus: bool, group_kib: [f64; 2]) -> FioJob {
    let stopped_by = j.error.as_ref().or(j.continued.first.as_ref());
    let dir = |d: &DirReport, g: f64| dir(d, plus, j.percentiles_in, g);
    let pct = j.depth.percents();
    let keyed = |keys: &[&str], v: &[f64]| {
        Ordered(
            keys.iter()
                .zip(v)
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
        )
    };
    // Latency buckets are per job, all directions, in percent of its I/Os.
    let mut buckets = [0u64; crate::run::sinks::fio_stats::LAT_BUCKETS];
    for d in [&j.read, &j.write, &j.trim] {
        for (a, b) in buckets.iter_mut().zip(d.lat_buckets.iter()) {
            *a += b;
        }
    }
    let total: u64 = buckets.iter().sum();
    let share: Vec<f64> = buckets
        .iter()
        .map(|&n| {
            if total == 0 {
                0.0
            } else {
                n as f64 * 100.0 / total as f64
            }
        })
        .collect();
    let lat_keys = crate::run::sinks::fio_stats::LAT_KEYS;
    FioJob {
        iodepth_level: keyed(&crate::run::sinks::fio_stats::LEVEL_KEYS, &pct[0]),
        iodepth_submit: keyed(&crate::run::sinks::fio_stats::BATCH_KEYS, &pct[1]),
        iodepth_complete: keyed(&crate::run::sinks::fio_stats::BATCH_KEYS, &pct[2]),
        latency_ns: keyed(&lat_keys[..10], &share[..10]),
        latency_us: keyed(&lat_keys[..10], &share[10..20]),
        latency_ms: keyed(&lat_keys, &share[20..]),
        latency_depth: j.iodepth.max(1),
        // fio keeps the target in ns and the window in us.
        latency_target: j.latency.map_or(0, |l| cast::duration_ns(l.0)),
        latency_percentile: j.latency.map_or(100.0, |l| l.2),
        latency_window: j.latency.map_or(0, |l| cast::duration_us(l.1)),
        jobname: j.name.clone(),
        groupid: j.group,
        // A job that continued past errors reports the first as its
        // error (stat.c: ts->error = td->first_error), though it ran on.
        error: stopped_by.map_or(0, |e| e.errno),
        error_message: stopped_by.map(|e| e.message.clone()),
        total_err: j.continue_on_error.then_some(j.continued.count),
        first_error: j
            .continue_on_error
            .then(|| j.continued.first.as_ref().map_or(0, |e| e.errno)),
        zone_resets: j.zone_resets,
        eta: 0,
        elapsed: j.runtime.as_secs(),
        // As written: fio lists `name` only where an option gave it (a
        // command-line job), not for a job file's section.
        job_options: j
            .options
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
        // unified_rw_reporting=mixed: fio writes `mixed` alone.
        read: (!j.mixed_only).then(|| dir(&j.read, group_kib[0])),
        write: (!j.mixed_only).then(|| dir(&j.write, group_kib[1])),
        trim: (!j.mixed_only).then(|| dir(&j.trim, 0.0)),
        mixed: j
            .mixed
            .as_ref()
            .map(|m| dir(m, group_kib[0] + group_kib[1])),
        sync: (!j.mixed_only).then(|| FioSync {
            total_ios: j.syncs,
            lat_ns: j
                .sync_lat
                .as_ref()
                .map(|(n, l)| lat(l, *n, true, plus.then_some(j.sync_bins.as_slice())))
                .unwrap_or_default(),
        }),
        job_runtime: cast::duration_ms(j.thread_time),
        usr_cpu: j.usr_cpu(),
        sys_cpu: j.sys_cpu(),
        ctx: j.cpu.ctx,
        majf: j.cpu.majf,
        minf: j.cpu.minf,
    }
}

/// One latency object; `pct` says whether it carries percentiles (fio's
/// clat_percentiles/lat_percentiles), `bins` the json+ bins.
fn lat(
    l: &crate::run::sinks::stats::Latency,
    n: u64,
    pct: bool,
    bins: Option<&[(u64, u64)]>,
) -> FioLat {
    FioLat {
        min: l.min_ns,
        max: l.max_ns,
        mean: l.mean_ns,
        stddev: l.stddev_ns,
        n,
        percentile: pct.then(|| {
            Percentiles(
                l.percentiles
                    .iter()
                    .map(|(p, v)| (format!("{p:.6}"), *v))
                    .collect(),
            )
        }),
        bins: if pct {
            bins.map(|b| b.iter().copied().collect())
        } else {
            None
        },
    }
}

/// A latency of its own (slat, clat, one priority's) as fio writes it.
fn lat_bins(l: &crate::run::report::LatBins, pct: bool, plus: bool) -> FioLat {
    match &l.lat {
        Some(x) => lat(x, l.n, pct, plus.then_some(l.bins.as_slice())),
        None => FioLat::default(),
    }
}

fn dir(d: &DirReport, plus: bool, pct: (bool, bool, bool), group_kib: f64) -> FioDir {
    let (clat_p, lat_p, slat_p) = pct;
    let bins = plus.then_some(d.bins.as_slice());
    let lat_ns = match &d.lat {
        Some(l) => lat(l, d.total_ios, lat_p, bins),
        None => FioLat::default(),
    };
    // A queueing engine's I/O has a slat and a clat of its own (fio's);
    // a blocking engine's clat is its whole latency, and it has no slat.
    let (slat_ns, clat) = match (&d.split, &d.lat) {
        (Some(s), _) => (
            lat_bins(&s.slat, slat_p, plus),
            lat_bins(&s.clat, clat_p, plus),
        ),
        (None, Some(l)) => (FioLat::default(), lat(l, d.total_ios, clat_p, bins)),
        (None, None) => (FioLat::default(), FioLat::default()),
    };
    // cmdprio: each priority's latency, when two or more have samples (as
    // fio writes them): lat with lat_percentiles, else clat.
    let prios = (d.prios.len() >= 2).then(|| {
        let key = if lat_p { "lat_ns" } else { "clat_ns" };
        d.prios
            .iter()
            .map(|(ioprio, l)| {
                serde_json::json!({
                    "prioclass": ioprio >> 13,
                    "prio": ioprio & 0x1fff,
                    key: lat_bins(l, clat_p || lat_p, plus),
                })
            })
            .collect::<Vec<_>>()
    });
    let (b, i) = (d.bw_samples, d.iops_samples);
    let bw = d.fio_bw_bytes();
    FioDir {
        io_bytes: d.io_bytes,
        io_kbytes: d.io_bytes / 1024,
        bw_bytes: bw,
        bw: bw / 1024,
        iops: d.fio_iops(),
        runtime: d.fio_runtime_ms(),
        total_ios: d.total_ios,
        short_ios: d.short_ios,
        drop_ios: 0,
        slat_ns,
        clat_ns: clat,
        prios,
        lat_ns,
        bw_min: b.min,
        bw_max: b.max,
        // fio's convert_agg_kbytes_percent: the mean as an int, capped
        // at 100 %, and 100 % of a group slower than 1 KiB/s.
        bw_agg: if b.n == 0 {
            0.0
        } else if group_kib > 1.0 {
            #[allow(
                clippy::cast_possible_truncation,
                reason = "fio passes the mean to an int parameter: dropping the fraction is its result (and a mean past i32, 2 TiB/s, saturates)"
            )]
            let mean = b.mean as i32;
            (f64::from(mean) * 100.0 / group_kib).min(100.0)
        } else {
            100.0
        },
        bw_mean: b.mean,
        bw_dev: b.dev,
        bw_samples: b.n,
        iops_min: i.min,
        iops_max: i.max,
        iops_mean: i.mean,
        iops_stddev: i.dev,
        iops_samples: i.n,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::run::sinks::stats::DirAcc;
    use std::time::{Duration, SystemTime};

    fn report() -> LoadReport {
        let mut acc = DirAcc::new(true);
        for v in 1..=100 {
            acc.record(4096, 4096, v * 1000);
        }
        let read = DirReport {
            io_bytes: acc.bytes,
            total_ios: acc.ios,
            short_ios: 0,
            runtime: Duration::from_millis(500),
            lat: acc.latency(),
            bins: acc
                .plat
                .as_ref()
                .unwrap()
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (crate::run::sinks::plat::val(i), *c))
                .collect(),
            lat_buckets: acc.lat_buckets,
            ..Default::default()
        };
        let j = JobReport {
            mixed: None,
            mixed_only: false,
            continue_on_error: false,
            latency: None,
            continued: Default::default(),
            zone_resets: None,
            sig_figs: 4,
            kb_base: 1024,
            bits: false,
            sync_bins: Vec::new(),
            name: "r".into(),
            group: 0,
            options: vec![("rw".into(), "randread".into())],
            clones: 1,
            read,
            write: DirReport::default(),
            trim: DirReport::default(),
            runtime: Duration::from_millis(500),
            thread_time: Duration::from_millis(500),
            cpu: Default::default(),
            syncs: 0,
            error: None,
            thread_ids: vec![1],
            seeds: vec![1],
            depth: Default::default(),
            sync_lat: None,
            iodepth: 1,
            percentiles_in: (true, false, false),
        };
        LoadReport {
            jobs: vec![j.clone()],
            total: j,
            disks: vec![],
            elapsed: Duration::from_millis(500),
            stopped: false,
            warnings: vec![],
            started_at: SystemTime::now(),
        }
    }

    #[test]
    fn json_plus_bins_hold_every_io() {
        let doc = serde_json::to_value(to_fio_json_plus(&report())).unwrap();
        let bins = doc["jobs"][0]["read"]["clat_ns"]["bins"]
            .as_object()
            .unwrap();
        let n: u64 = bins.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(n, 100);
        // 1..100 us: every bin value lies within 1/64 of an I/O's latency.
        for k in bins.keys() {
            let v: f64 = k.parse().unwrap();
            assert!((990.0..=101_600.0).contains(&v), "{k}");
        }
        let plain = serde_json::to_value(to_fio_json(&report())).unwrap();
        assert!(plain["jobs"][0]["read"]["clat_ns"].get("bins").is_none());
    }

    #[test]
    fn uses_fio_field_names() {
        let v = serde_json::to_value(to_fio_json(&report())).unwrap();
        let j = &v["jobs"][0];
        assert_eq!(j["jobname"], "r");
        assert_eq!(j["error"], 0);
        assert!(j.get("error_message").is_none());
        assert_eq!(j["job options"]["rw"], "randread");
        let r = &j["read"];
        assert_eq!(r["io_bytes"], 409_600);
        assert_eq!(r["total_ios"], 100);
        assert_eq!(r["runtime"], 500);
        assert_eq!(r["iops"], 200.0);
        assert_eq!(r["bw_bytes"], 819_200);
        assert_eq!(r["bw"], 800);
        assert_eq!(r["lat_ns"]["min"], 1000);
        assert_eq!(r["lat_ns"]["N"], 100);
        for p in [
            "50.000000",
            "90.000000",
            "99.000000",
            "99.900000",
            "99.990000",
        ] {
            assert!(r["clat_ns"]["percentile"][p].as_u64().unwrap() > 0, "{p}");
        }
        // lat_percentiles is off by default, as in fio.
        assert!(r["lat_ns"].get("percentile").is_none());
        // No samples, no percentiles: like fio.
        assert!(j["write"]["lat_ns"].get("percentile").is_none());
        assert!(v["total"]["read"]["io_bytes"].is_u64());
        assert_eq!(j["job_runtime"], 500);
        // Two clones of 500 ms: fio sums their times.
        let mut two = report();
        two.jobs[0].clones = 2;
        two.jobs[0].thread_time = Duration::from_millis(1000);
        let v2 = serde_json::to_value(to_fio_json(&two)).unwrap();
        assert_eq!(v2["jobs"][0]["job_runtime"], 1000);
        assert_eq!(v2["jobs"][0]["read"]["runtime"], 500);
        assert_eq!(ctime(0).len(), 24, "{}", ctime(0));
        let text = serde_json::to_string(&to_fio_json(&report())).unwrap();
        let (five, ten) = (
            text.find("\"5.000000\"").unwrap(),
            text.find("\"10.000000\"").unwrap(),
        );
        assert!(five < ten, "percentiles in fio's order");
    }
}
