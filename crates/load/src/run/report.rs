//! What a load measured: per fio report entry (a clone, or with
//! `group_reporting` a reporting group) and in total, plus the devices' own counters. Pure
//! data; `json` and `table` render it.

use std::time::{Duration, Instant, SystemTime};

use iolab_sys::cast;
use iolab_sys::diskstats::DiskStat;

use crate::job::model::Job;
use crate::run::clone::result::Continued;
use crate::run::clone::{CloneResult, Failure};
use crate::run::plan::PlannedJob;
use crate::run::sinks::cpu::CpuUse;
use crate::run::sinks::fio_stats::{DepthMaps, SampleStats};
use crate::run::sinks::stats::{DirAcc, Latency};

/// One direction of a job.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DirReport {
    /// Bytes transferred while measuring.
    pub io_bytes: u64,
    /// Completed I/Os.
    pub total_ios: u64,
    /// I/Os that moved fewer bytes than asked.
    pub short_ios: u64,
    /// Measured time (0 when the direction had no I/O).
    pub runtime: Duration,
    /// Latency from submission to completion; `None` without I/O.
    pub lat: Option<Latency>,
    /// fio's latency bins with I/Os in them: `(bin value ns, count)`
    /// (json+).
    pub bins: Vec<(u64, u64)>,
    /// I/Os per fio latency bucket (`latency_ns/us/ms`).
    pub lat_buckets: [u64; crate::run::sinks::fio_stats::LAT_BUCKETS],
    /// A queueing engine's submission and completion latencies (fio's
    /// slat and clat) with their json+ bins; `None` for the blocking
    /// engines, whose clat is their whole latency.
    pub split: Option<Box<SplitReport>>,
    /// cmdprio: each ioprio with samples, its latency and json+ bins
    /// (fio's `prios`), by ioprio value.
    pub prios: Vec<PrioReport>,
    /// Bandwidth samples, KiB/s (fio's `bw_min` ...).
    pub bw_samples: SampleStats,
    /// IOPS samples (fio's `iops_min` ...).
    pub iops_samples: SampleStats,
}

/// One I/O priority's share of a direction (cmdprio): its ioprio value
/// and latency.
pub type PrioReport = (u16, LatBins);

/// fio's slat and clat of a queueing engine's I/Os.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SplitReport {
    /// Preparation to the submit's return.
    pub slat: LatBins,
    /// The submit's return to completion.
    pub clat: LatBins,
}

/// A latency with its json+ bins and how many I/Os it holds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LatBins {
    /// Timed I/Os.
    pub n: u64,
    /// The summary; `None` without I/O.
    pub lat: Option<Latency>,
    /// fio's bins with I/Os in them.
    pub bins: Vec<(u64, u64)>,
}

impl LatBins {
    fn of(acc: &DirAcc, list: Option<&[f64]>) -> LatBins {
        LatBins {
            n: acc.ios - acc.untimed,
            lat: latency_of(acc, list),
            bins: bins_of(acc),
        }
    }
}

/// An accumulator's latency at `list` (fio's default percentiles without).
fn latency_of(acc: &DirAcc, list: Option<&[f64]>) -> Option<Latency> {
    match list {
        Some(l) => acc.latency_with(l),
        None => acc.latency(),
    }
}

/// fio's latency bins with I/Os in them: `(bin value ns, count)`.
fn bins_of(acc: &DirAcc) -> Vec<(u64, u64)> {
    acc.plat
        .as_ref()
        .map(|p| {
            p.iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (crate::run::sinks::plat::val(i), *c))
                .collect()
        })
        .unwrap_or_default()
}

impl DirReport {
    fn from_acc(acc: &DirAcc, runtime: Duration, list: Option<&[f64]>) -> DirReport {
        DirReport {
            io_bytes: acc.bytes,
            total_ios: acc.ios,
            short_ios: acc.short_ios,
            runtime: if acc.ios > 0 { runtime } else { Duration::ZERO },
            lat: latency_of(acc, list),
            bins: bins_of(acc),
            lat_buckets: acc.lat_buckets,
            prios: {
                let mut v: Vec<_> = acc
                    .prios
                    .iter()
                    .filter(|(_, a)| a.ios > 0)
                    .map(|(k, a)| (*k, LatBins::of(a, list)))
                    .collect();
                v.sort_by_key(|p| p.0);
                v
            },
            split: acc.split.as_ref().map(|s| {
                Box::new(SplitReport {
                    slat: LatBins::of(&s.slat, list),
                    clat: LatBins::of(&s.clat, list),
                })
            }),
            bw_samples: SampleStats::default(),
            iops_samples: SampleStats::default(),
        }
    }

    /// Bandwidth in bytes per second.
    pub fn bw_bytes(&self) -> f64 {
        per_sec(self.io_bytes, self.runtime)
    }

    /// I/Os per second.
    pub fn iops(&self) -> f64 {
        per_sec(self.total_ios, self.runtime)
    }

    /// The measured time in whole milliseconds as fio keeps it: rounded
    /// up (backend.c, `(elapsed_us + 999) / 1000`).
    pub fn fio_runtime_ms(&self) -> u64 {
        cast::duration_us(self.runtime).div_ceil(1000)
    }

    /// Bytes per second as fio computes them from whole milliseconds
    /// (stat.c: `1000 * io_bytes / runtime`), 0 without runtime.
    pub fn fio_bw_bytes(&self) -> u64 {
        match self.fio_runtime_ms() {
            0 => 0,
            // Past u64 only beyond 18 PB/s: saturate, as a derived rate may.
            ms => {
                u64::try_from(u128::from(self.io_bytes) * 1000 / u128::from(ms)).unwrap_or(u64::MAX)
            }
        }
    }

    /// I/Os per second as fio computes them (`1000.0 * total_ios /
    /// runtime`).
    pub fn fio_iops(&self) -> f64 {
        match self.fio_runtime_ms() {
            0 => 0.0,
            ms => 1000.0 * self.total_ios as f64 / ms as f64,
        }
    }
}

fn per_sec(n: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        n as f64 / d.as_secs_f64()
    }
}

/// One job, or the total of all jobs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct JobReport {
    /// Job name (`total` for the total).
    pub name: String,
    /// Stonewall group.
    pub group: usize,
    /// The options as written.
    pub options: Vec<(String, String)>,
    /// Clones (threads).
    pub clones: u32,
    /// Reads.
    pub read: DirReport,
    /// Writes.
    pub write: DirReport,
    /// Trims.
    pub trim: DirReport,
    /// Longest clone measurement (the total: first start to last end).
    pub runtime: Duration,
    /// Sum of the clones' measured times (the CPU percentages' base).
    pub thread_time: Duration,
    /// CPU used by the clones while measuring.
    pub cpu: CpuUse,
    /// fsync/fdatasync calls.
    pub syncs: u64,
    /// The first failure of a clone, if any.
    pub error: Option<Failure>,
    /// `continue_on_error` is set: fio then reports the errors continued
    /// past (`total_err`, `first_error`).
    pub continue_on_error: bool,
    /// The errors the clones continued past.
    pub continued: Continued,
    /// Kernel thread ids of the clones.
    pub thread_ids: Vec<i32>,
    /// The clones' random seeds (`--debug=random`).
    pub seeds: Vec<u64>,
    /// Queue depths (fio's `iodepth_level/submit/complete`).
    pub depth: DepthMaps,
    /// fsync/fdatasync latencies while measuring, and how many.
    pub sync_lat: Option<(u64, Latency)>,
    /// Their json+ bins.
    pub sync_bins: Vec<(u64, u64)>,
    /// `iodepth`, or the depth `latency_target` reached (fio's
    /// `latency_depth`).
    pub iodepth: u32,
    /// `latency_target`: (target, window, percentile), for fio's
    /// `latency_target`, `latency_window`, `latency_percentile`.
    pub latency: Option<(Duration, Duration, f64)>,
    /// `clat_percentiles`, `lat_percentiles`, `slat_percentiles`.
    pub percentiles_in: (bool, bool, bool),
    /// `unified_rw_reporting`: reads, writes and trims as one (fio's
    /// `mixed`).
    pub mixed: Option<DirReport>,
    /// `unified_rw_reporting=mixed`: only `mixed` is reported, as fio
    /// writes it (`both`: the directions too).
    pub mixed_only: bool,
    /// zonemode=zbd: the zone resets its clones made.
    pub zone_resets: Option<u64>,
    /// `significant_figures` of its normal report.
    pub sig_figs: u8,
    /// `kb_base` of its normal report (1024 or 1000).
    pub kb_base: u32,
    /// `unit_base=1`: its normal report's bandwidths in bits.
    pub bits: bool,
}

impl JobReport {
    /// User CPU in percent of one CPU per clone (fio's `usr_cpu`).
    pub fn usr_cpu(&self) -> f64 {
        100.0 * per_sec_f(self.cpu.usr, self.thread_time)
    }

    /// System CPU in percent of one CPU per clone (fio's `sys_cpu`).
    pub fn sys_cpu(&self) -> f64 {
        100.0 * per_sec_f(self.cpu.sys, self.thread_time)
    }

    /// Bytes read plus written.
    pub fn io_bytes(&self) -> u64 {
        self.read.io_bytes + self.write.io_bytes
    }
}

fn per_sec_f(t: Duration, base: Duration) -> f64 {
    if base.is_zero() {
        0.0
    } else {
        t.as_secs_f64() / base.as_secs_f64()
    }
}

/// A device's counters over the load (fio's `disk_util`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DiskUtil {
    /// Kernel name.
    pub name: String,
    /// `/proc/diskstats` difference, end minus start.
    pub delta: DiskStat,
    /// Time between the two samples.
    pub elapsed: Duration,
}

impl DiskUtil {
    /// Percentage of the time the device had I/O in flight.
    pub fn util(&self) -> f64 {
        let ms = self.elapsed.as_secs_f64() * 1000.0;
        if ms <= 0.0 {
            0.0
        } else {
            (self.delta.io_ms as f64 / ms * 100.0).min(100.0)
        }
    }
}

/// Everything a load measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LoadReport {
    /// fio's report entries, in thread order: one per clone, or per
    /// reporting group with `group_reporting` (see [`assemble`]).
    pub jobs: Vec<JobReport>,
    /// All jobs together.
    pub total: JobReport,
    /// The devices holding the jobs' files.
    pub disks: Vec<DiskUtil>,
    /// Wall time from start to end of the load.
    pub elapsed: Duration,
    /// True when stopped (stop(), Ctrl-C) rather than ending on its own.
    pub stopped: bool,
    /// Notes for the user (options without effect, jobs never started).
    pub warnings: Vec<String>,
    /// When the load started.
    pub started_at: SystemTime,
}

impl LoadReport {
    /// Bytes read while measuring, all jobs.
    pub fn read_bytes(&self) -> u64 {
        self.total.read.io_bytes
    }

    /// Bytes written while measuring, all jobs.
    pub fn write_bytes(&self) -> u64 {
        self.total.write.io_bytes
    }

    /// The failures of jobs that stopped early (disk full, I/O errors).
    pub fn failures(&self) -> impl Iterator<Item = &Failure> {
        self.jobs.iter().filter_map(|j| j.error.as_ref())
    }
}

/// Merges clone results into fio's report entries and the total.
///
/// The entries are fio's thread stats (stat.c, `__show_run_stats`): clones
/// in thread order, each its own entry, except that a clone of a job with
/// `group_reporting` joins the entry before it when both are in the same
/// reporting group (a stonewall or new_group starts one). A merged entry
/// takes its name from its first clone and its options from its last, as
/// fio does.
pub fn assemble(jobs: &[PlannedJob], results: &[CloneResult]) -> (Vec<JobReport>, JobReport) {
    let mut rgroup = 0;
    let mut rgroups = Vec::with_capacity(jobs.len());
    for (i, pj) in jobs.iter().enumerate() {
        if i > 0 && (pj.job.stonewall || pj.job.x.new_group) {
            rgroup += 1;
        }
        rgroups.push(rgroup);
    }
    let mut ordered: Vec<&CloneResult> = results.iter().collect();
    ordered.sort_by_key(|r| (r.job_idx, r.number));
    let mut entries: Vec<Vec<&CloneResult>> = Vec::new();
    let mut last_group = None;
    for r in ordered {
        let gr = jobs[r.job_idx].job.x.group_reporting;
        let g = rgroups[r.job_idx];
        match entries.last_mut() {
            Some(e) if gr && last_group == Some(g) => e.push(r),
            _ => entries.push(vec![r]),
        }
        last_group = Some(g);
    }
    let mut all = Merge::default();
    let mut reports = Vec::with_capacity(entries.len());
    for members in &entries {
        let mut m = Merge::default();
        for r in members {
            m.add(r);
            all.add(r);
        }
        let first = &jobs[members[0].job_idx];
        let last = &jobs[members[members.len() - 1].job_idx];
        let mut rep = m.report(&first.job, first.group, m.longest);
        rep.options = last.job.options.clone();
        reports.push(rep);
    }
    let window = all.window();
    let mut total = all.report(&Job::new("total"), 0, window);
    total.error = None;
    (reports, total)
}

#[derive(Default)]
struct Merge {
    dirs: Option<[DirAcc; 3]>,
    cpu: CpuUse,
    syncs: u64,
    clones: u32,
    longest: Duration,
    thread_time: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
    error: Option<Failure>,
    continued: Continued,
    lat_depth: Option<u32>,
    zone_resets: Option<u64>,
    tids: Vec<i32>,
    seeds: Vec<u64>,
    /// Per direction, each clone's bandwidth and IOPS sample statistics.
    samples: [Vec<(SampleStats, SampleStats)>; 2],
    depth: DepthMaps,
    sync_lat: Option<DirAcc>,
}

impl Merge {
    fn add(&mut self, r: &CloneResult) {
        let dirs = self
            .dirs
            .get_or_insert_with(|| [DirAcc::new(false), DirAcc::new(false), DirAcc::new(false)]);
        for (a, b) in dirs.iter_mut().zip(r.dirs.iter()) {
            a.merge(b);
        }
        self.cpu = self.cpu.plus(&r.cpu);
        self.syncs += r.syncs;
        self.clones += 1;
        if let Some((s, e)) = r.measured {
            let d = e.saturating_duration_since(s);
            self.longest = self.longest.max(d);
            self.thread_time += d;
            self.first = Some(self.first.map_or(s, |f| f.min(s)));
            self.last = Some(self.last.map_or(e, |l| l.max(e)));
        }
        if self.error.is_none() {
            self.error = r.failure.clone();
        }
        self.continued.merge(&r.continued);
        // fio reports the last clone's depth (ts->latency_depth).
        if r.lat_depth.is_some() {
            self.lat_depth = r.lat_depth;
        }
        if let Some(n) = r.zone_resets {
            *self.zone_resets.get_or_insert(0) += n;
        }
        if r.tid != 0 {
            self.tids.push(r.tid);
        }
        self.seeds.push(r.seed);
        for d in 0..2 {
            let s = &r.fx.samples[d];
            self.samples[d].push((s.bw.stats(), s.iops.stats()));
        }
        self.depth.merge(&r.fx.depth);
        self.sync_lat
            .get_or_insert_with(|| DirAcc::new(false))
            .merge(&r.fx.sync_lat);
    }

    fn window(&self) -> Duration {
        match (self.first, self.last) {
            (Some(f), Some(l)) => l.saturating_duration_since(f),
            _ => Duration::ZERO,
        }
    }

    fn report(&self, job: &Job, group: usize, runtime: Duration) -> JobReport {
        let empty = [DirAcc::new(false), DirAcc::new(false), DirAcc::new(false)];
        let dirs = self.dirs.as_ref().unwrap_or(&empty);
        let list = job.x.percentile_list.as_deref();
        let unified = job.x.unified_rw_reporting;
        let stats = |d: usize| {
            let bw: Vec<SampleStats> = self.samples[d].iter().map(|s| s.0).collect();
            let iops: Vec<SampleStats> = self.samples[d].iter().map(|s| s.1).collect();
            (SampleStats::sum(&bw), SampleStats::sum(&iops))
        };
        let mut read = DirReport::from_acc(&dirs[0], runtime, list);
        let mut write = DirReport::from_acc(&dirs[1], runtime, list);
        (read.bw_samples, read.iops_samples) = stats(0);
        (write.bw_samples, write.iops_samples) = stats(1);
        let trim = DirReport::from_acc(&dirs[2], runtime, list);
        let mixed = (unified > 0).then(|| {
            let mut m = dirs[0].clone();
            m.merge(&dirs[1]);
            m.merge(&dirs[2]);
            let mut d = DirReport::from_acc(&m, runtime, list);
            let (rb, ri) = stats(0);
            let (wb, wi) = stats(1);
            (d.bw_samples, d.iops_samples) =
                (SampleStats::sum(&[rb, wb]), SampleStats::sum(&[ri, wi]));
            d
        });
        JobReport {
            mixed,
            trim,
            depth: self.depth,
            sync_lat: self.sync_lat.as_ref().and_then(|a| {
                a.latency_with(list.unwrap_or(&crate::run::sinks::stats::PERCENTILES))
                    .map(|l| (a.ios, l))
            }),
            sync_bins: self.sync_lat.as_ref().map(bins_of).unwrap_or_default(),
            iodepth: self.lat_depth.unwrap_or(job.iodepth),
            latency: job
                .x
                .latency_target
                .map(|t| (t, job.x.latency_window, job.x.latency_percentile)),
            percentiles_in: job.x.percentiles_in,
            mixed_only: unified == 1,
            name: job.name.clone(),
            group,
            options: job.options.clone(),
            clones: self.clones,
            read,
            write,
            runtime,
            thread_time: self.thread_time,
            cpu: self.cpu,
            syncs: self.syncs,
            error: self.error.clone(),
            continue_on_error: job.x.continue_on_error != 0,
            continued: self.continued.clone(),
            zone_resets: self.zone_resets.or(job.x.zbd.then_some(0)),
            sig_figs: job.x.sig_figs,
            kb_base: job.x.kb_base,
            bits: job.x.bits,
            thread_ids: self.tids.clone(),
            seeds: self.seeds.clone(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rates_from_bytes_and_time() {
        let d = DirReport {
            io_bytes: 10 << 20,
            total_ios: 2560,
            runtime: Duration::from_secs(2),
            ..Default::default()
        };
        assert_eq!(d.bw_bytes(), (5 << 20) as f64);
        assert_eq!(d.iops(), 1280.0);
        assert_eq!(DirReport::default().iops(), 0.0);
    }

    #[test]
    fn disk_util_is_a_percentage() {
        let u = DiskUtil {
            name: "loop0".into(),
            delta: DiskStat {
                io_ms: 500,
                ..Default::default()
            },
            elapsed: Duration::from_secs(1),
        };
        assert!((u.util() - 50.0).abs() < 1e-9);
    }
}
