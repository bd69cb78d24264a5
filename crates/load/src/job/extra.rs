//! The fio options beyond a job's core (see [`crate::job::model::Job`]): where
//! offsets start and how they move, randomness, buffers, verify, rate
//! floors, flow between jobs, stop conditions, reporting and fio's logs.
//! Field names follow fio's options; defaults are fio's.

use std::time::Duration;

use iolab_sys::ioprio::IoPrio;

use crate::job::distribution::Distribution;
use crate::job::kinds::DirPair;
use crate::job::verify::VerifyOpts;

/// fio options beyond the core ones.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Extra {
    /// `rw=read:N` with a sequential pattern: bytes added after each I/O
    /// (negative walks backwards).
    pub seq_add: i64,
    /// `rw=randread:N`: a new random offset every N I/Os.
    pub rand_every: u32,
    /// `rw_sequencer=identical`: repeat the random offset instead of going
    /// on sequentially.
    pub identical: bool,
    /// `offset`: where the region starts in the file.
    pub offset: u64,
    /// `offset_increment`: added to `offset` per clone.
    pub offset_increment: u64,
    /// `io_size` (`io_limit`): bytes per pass, when not `size`.
    pub io_size: Option<u64>,
    /// `number_ios`: stop after this many I/Os per clone.
    pub number_ios: Option<u64>,
    /// `filesize`: the file's size (a range picks one per file).
    pub filesize: Option<(u64, u64)>,
    /// `fill_device` (`fill_fs`): write until the filesystem is full; a
    /// full disk ends the job without error.
    pub fill_device: bool,
    /// `norandommap`: random offsets with replacement.
    pub norandommap: bool,
    /// `random_generator=lfsr`: every block once per pass even with
    /// `norandommap` (fio's LFSR walks a full period without a map; iolab's
    /// keyed permutation does the same).
    pub lfsr: bool,
    /// `randseed`: the seed of every random choice.
    pub randseed: Option<u64>,
    /// `random_distribution`.
    pub distribution: Distribution,
    /// `random_sequence_stride`: a `sequence` distribution strides on
    /// each round (kept here for either option order).
    pub sequence_stride: bool,
    /// `filename_format`: names of files iolab creates for the job.
    pub filename_format: Option<String>,
    /// `filename=a:b:c`: every file of the job, when it names several.
    pub filenames: Vec<std::path::PathBuf>,
    /// `nrfiles`: files per clone (default 1).
    pub nrfiles: u32,
    /// `file_service_type`: which file each I/O goes to.
    pub file_service: crate::job::kinds::FileService,
    /// `create_on_open`: create the file when the job opens it (no layout
    /// beforehand).
    pub create_on_open: bool,
    /// `unlink`: remove the job's files when it ends.
    pub unlink: bool,
    /// `allow_file_create=0`: refuse to create files.
    pub no_create: bool,
    /// How write buffers are filled.
    pub buffer: BufferFill,
    /// `dedupe_percentage` (with `dedupe_mode`,
    /// `dedupe_working_set_percentage`): that share of write buffers
    /// repeats an earlier one.
    pub dedupe: Option<Dedupe>,
    /// `refill_buffers`: new contents for every write.
    pub refill_buffers: bool,
    /// `verify` and its options.
    pub verify: Option<VerifyOpts>,
    /// `ratemin`: bytes/s below which the job fails, per direction.
    pub ratemin: DirPair<Option<u64>>,
    /// `rate_iops_min`.
    pub rate_iops_min: DirPair<Option<u64>>,
    /// `ratecycle`: the window over which `ratemin` is checked.
    pub ratecycle: Duration,
    /// `rate_process=poisson`: rate-limited I/Os arrive as a Poisson
    /// process (exponential gaps with the rate's mean) instead of evenly.
    pub rate_poisson: bool,
    /// `flow`: this job's weight against other jobs with the same
    /// `flow_id` (0 = no flow control).
    pub flow: i64,
    /// `flow_id`.
    pub flow_id: u32,
    /// `flow_sleep`: how long a job ahead of its share waits.
    pub flow_sleep: Duration,
    /// `sync_file_range=FLAGS:N`: every N writes, with these flags.
    pub sync_file_range: Option<(u32, u32)>,
    /// `thinktime`: pause after `thinktime_blocks` I/Os.
    pub thinktime: Duration,
    /// `thinktime_spin`: part of `thinktime` spent busy.
    pub thinktime_spin: Duration,
    /// `thinktime_blocks`.
    pub thinktime_blocks: u32,
    /// `startdelay`: wait before starting (a range draws one).
    pub startdelay: (Duration, Duration),
    /// `wait_for`: start when this job has ended.
    pub wait_for: Option<String>,
    /// `exitall`: when this job ends, end the others (see `exit_what`).
    pub exitall: bool,
    /// `exit_what`: which jobs `exitall` ends.
    pub exit_what: ExitWhat,
    /// `new_group`: start a new reporting group.
    pub new_group: bool,
    /// `group_reporting`: report the group's jobs as one.
    pub group_reporting: bool,
    /// `latency_target` (with `latency_window`, `latency_percentile`,
    /// `latency_run`): the deepest queue under a latency.
    pub latency_target: Option<Duration>,
    /// `latency_window` (fio's default 0: judged every turn).
    pub latency_window: Duration,
    /// `latency_percentile` (default 100).
    pub latency_percentile: f64,
    /// `latency_run`: keep adjusting the depth.
    pub latency_run: bool,
    /// `continue_on_error`: fio's error classes a job continues past
    /// (bits: 1 read, 2 write, 4 verify; 0 none).
    pub continue_on_error: u32,
    /// `steadystate`: stop when the metric settles.
    pub steadystate: Option<SteadyState>,
    /// `percentile_list`.
    pub percentile_list: Option<Vec<f64>>,
    /// `unified_rw_reporting`: 0 none, 1 `mixed` (reads, writes and trims
    /// reported only as one), 2 `both` (as one and each on its own).
    pub unified_rw_reporting: u8,
    /// `read_iolog`: the log to replay instead of the job's pattern.
    #[serde(skip)]
    pub read_iolog: Option<std::sync::Arc<crate::job::replay::Replay>>,
    /// `write_iolog`: where to record the issued I/O.
    pub write_iolog: Option<std::path::PathBuf>,
    /// `zonemode=strided`: `(zonerange, zonesize, zoneskip)`; with
    /// `zonemode=zbd`, `zonesize` is the zone size and this stays set
    /// only to carry it (see [`Extra::zbd`]).
    pub strided: Option<(u64, u64, u64)>,
    /// `zonemode=zbd`: I/O follows each zone's write pointer.
    pub zbd: bool,
    /// The `zonemode` given, if one was (fio checks zonesize against it).
    pub zone_mode_given: Option<&'static str>,
    /// The options of `zonemode=zbd` (kept whatever the zone mode, as fio
    /// keeps them; they apply only with it).
    pub zbd_opts: ZbdOpts,
    /// Sizes given in zones (`size=8z`), resolved by the plan.
    pub zone_units: ZoneUnits,
    /// `significant_figures` of the normal report's numbers (fio's
    /// sig_figs, 1-10, default 4).
    pub sig_figs: u8,
    /// `kb_base`: 1024 (binary units first in the normal report) or 1000.
    pub kb_base: u32,
    /// `unit_base=1`: the normal report's bandwidths in bits.
    pub bits: bool,
    /// `ignore_error`: per class (read, write, verify) the errors that do
    /// not stop the job (`None`: fio's default, EIO and EILSEQ).
    pub ignore_error: [Option<Vec<i32>>; 3],
    /// fio's `--aux-path`: where verify states go (default: the job's
    /// directory).
    pub aux_path: Option<std::path::PathBuf>,
    /// `serialize_overlap`: an I/O overlapping one in flight waits for it.
    pub serialize_overlap: bool,
    /// `replay_no_stall`: replay as fast as possible.
    pub replay_no_stall: bool,
    /// `replay_time_scale`: percent of the logged rate.
    pub replay_scale: u32,
    /// `clat_percentiles` (default on), `lat_percentiles` and
    /// `slat_percentiles` (default off): which of the JSON's latencies
    /// carry percentiles.
    pub percentiles_in: (bool, bool, bool),
    /// `disable_slat`: a queueing engine's latency is not split into slat
    /// and clat.
    pub no_slat: bool,
    /// `cmdprio_*`: priorities per I/O (libaio, io_uring).
    pub cmdprio: crate::job::cmdprio::CmdPrio,
    /// `gtod_reduce` / `disable_lat`: no per-I/O clock reads, no latency.
    pub no_latency: bool,
    /// fio's logs.
    pub logs: LogOpts,
    /// `iodepth_batch_submit` (`iodepth_batch`): queue this many before
    /// submitting (0/1 = submit each as it comes... fio submits what is
    /// queued, up to iodepth).
    pub batch_submit: u32,
    /// `iodepth_batch_complete_min`: wait for at least this many.
    pub batch_complete_min: u32,
    /// `iodepth_batch_complete_max`: reap at most this many per call.
    pub batch_complete_max: u32,
    /// `userspace_reap` (libaio): read completions from the ring mapped
    /// into user space.
    pub userspace_reap: bool,
    /// `hipri` (pvsync2, io_uring): polled I/O.
    pub hipri: bool,
    /// `nowait` (pvsync2): RWF_NOWAIT.
    pub nowait: bool,
    /// `uncached` (pvsync2): RWF_DONTCACHE.
    pub uncached: bool,
    /// `prio`/`prioclass`: this job's I/O priority.
    pub prio: Option<IoPrio>,
    /// `prioclass` alone (level from `prio`, default 4).
    pub prioclass: Option<u8>,
    /// `prio` level alone.
    pub priolevel: Option<u8>,
    /// Options taken with a meaning the user should know about.
    pub notes: Vec<String>,
}

impl Default for Extra {
    fn default() -> Self {
        Extra {
            seq_add: 0,
            rand_every: 1,
            identical: false,
            offset: 0,
            offset_increment: 0,
            io_size: None,
            number_ios: None,
            filesize: None,
            fill_device: false,
            norandommap: false,
            lfsr: false,
            randseed: None,
            distribution: Distribution::Uniform,
            sequence_stride: false,
            filename_format: None,
            filenames: Vec::new(),
            nrfiles: 1,
            file_service: crate::job::kinds::FileService::RoundRobin(1),
            create_on_open: false,
            unlink: false,
            no_create: false,
            buffer: BufferFill::Random,
            dedupe: None,
            refill_buffers: false,
            verify: None,
            ratemin: DirPair::default(),
            rate_iops_min: DirPair::default(),
            ratecycle: Duration::from_millis(1000),
            rate_poisson: false,
            flow: 0,
            flow_id: 0,
            flow_sleep: Duration::ZERO,
            sync_file_range: None,
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: 1,
            startdelay: (Duration::ZERO, Duration::ZERO),
            wait_for: None,
            exitall: false,
            exit_what: ExitWhat::Group,
            new_group: false,
            group_reporting: false,
            continue_on_error: 0,
            latency_target: None,
            latency_window: Duration::ZERO,
            latency_percentile: 100.0,
            latency_run: false,
            steadystate: None,
            percentile_list: None,
            unified_rw_reporting: 0,
            percentiles_in: (true, false, false),
            no_slat: false,
            cmdprio: crate::job::cmdprio::CmdPrio::default(),
            read_iolog: None,
            write_iolog: None,
            replay_no_stall: false,
            serialize_overlap: false,
            strided: None,
            zbd: false,
            zone_mode_given: None,
            zbd_opts: ZbdOpts::default(),
            zone_units: ZoneUnits::default(),
            aux_path: None,
            ignore_error: Default::default(),
            sig_figs: 4,
            kb_base: 1024,
            bits: false,
            replay_scale: 100,
            no_latency: false,
            logs: LogOpts::default(),
            batch_submit: 1,
            batch_complete_min: 1,
            batch_complete_max: 0,
            userspace_reap: false,
            hipri: false,
            nowait: false,
            uncached: false,
            prio: None,
            prioclass: None,
            priolevel: None,
            notes: Vec::new(),
        }
    }
}

/// How write buffers are filled.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum BufferFill {
    /// Random bytes (incompressible).
    Random,
    /// `zero_buffers`: zeros.
    Zero,
    /// `buffer_pattern`: this pattern repeated.
    Pattern(Vec<u8>),
    /// `buffer_compress_percentage=P` (`buffer_compress_chunk=C`): each
    /// chunk is P % zeros and the rest random, so it compresses by ~P %.
    Compressible {
        /// Percent that compresses.
        percent: u8,
        /// Chunk bytes.
        chunk: usize,
    },
}

/// fio's deduplicable buffers (io_u.c, `get_buf_state`): each write
/// buffer is, with `percent` % chance, a copy of an earlier one — the
/// last unique buffer (`repeat`), or one of the first
/// `working_set_percent` % of the file's worth of unique buffers
/// (`working_set`) — and otherwise new.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Dedupe {
    /// `dedupe_percentage`.
    pub percent: u8,
    /// `dedupe_mode=working_set`.
    pub working_set: bool,
    /// `dedupe_working_set_percentage` (fio's default 5).
    pub working_set_percent: u8,
    /// `dedupe_global`: the working set spans every clone of the load.
    pub global: bool,
}

/// Which jobs `exitall` ends (`exit_what`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExitWhat {
    /// The jobs of the same stonewall group (fio's default, `group`).
    Group,
    /// The jobs of the stonewall group and the ones after it.
    Stonewall,
    /// Every job.
    All,
}

/// `steadystate=METRIC:LIMIT` (`ss`), `ss_dur`, `ss_ramp`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SteadyState {
    /// iops, bw or lat.
    pub metric: SsMetric,
    /// Slope criterion (`iops_slope`) rather than deviation from the mean.
    pub slope: bool,
    /// The limit: a fraction of the mean when `percent`, else absolute.
    pub limit: f64,
    /// The limit was given in percent.
    pub percent: bool,
    /// Window the criterion looks at.
    pub dur: Duration,
    /// Time before the window starts filling.
    pub ramp: Duration,
    /// Sampling interval (`steadystate_check_interval`, default 1 s).
    pub interval: Duration,
}

/// What steadystate watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SsMetric {
    /// I/Os per second.
    Iops,
    /// Bytes per second.
    Bw,
    /// Mean completion latency.
    Lat,
}

/// fio's `write_*_log` options.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LogOpts {
    /// `write_bw_log=PREFIX`.
    pub bw: Option<String>,
    /// `write_lat_log=PREFIX`.
    pub lat: Option<String>,
    /// `write_iops_log=PREFIX`.
    pub iops: Option<String>,
    /// `write_hist_log=PREFIX`.
    pub hist: Option<String>,
    /// `log_avg_msec`: average over windows of this many ms (0 = every
    /// I/O).
    pub avg_msec: u64,
    /// `log_hist_msec`: histogram log interval. fio's default, 0, writes
    /// no line at all (stat.c samples only with an interval), and so
    /// does iolab.
    pub hist_msec: u64,
    /// `log_hist_coarseness`: each histogram line sums 2^N adjacent bins.
    pub hist_coarseness: u32,
    /// `bw_avg_time`: the bandwidth sampling interval, ms (None: fio's
    /// 500, or `log_avg_msec` with a windowed bandwidth log).
    pub bw_avg_time: Option<u64>,
    /// `iops_avg_time`: the same for IOPS.
    pub iops_avg_time: Option<u64>,
    /// `log_max_value` (`log_window_value=max`): log the window's maximum
    /// instead of its mean.
    pub max_value: bool,
    /// `log_window_value=both`: the window's mean, then its maximum.
    pub both: bool,
    /// `log_issue_time`: a last column with each I/O's issue time (ns
    /// from the job's start) in the clat and slat logs, 0 elsewhere.
    pub issue_time: bool,
    /// `log_offset`: add each I/O's offset (per-I/O logs).
    pub offset: bool,
    /// `log_prio`: add each I/O's priority.
    pub prio: bool,
    /// `per_job_logs=0`: `prefix_type.log`, without the clone number.
    pub shared: bool,
    /// `log_store_compressed=1`: zlib-compressed `.fz` files.
    pub compressed: bool,
}

impl LogOpts {
    /// The options with every default prefix (empty) set to the job's
    /// name.
    pub fn for_job(&self, name: &str) -> LogOpts {
        let fix = |p: &Option<String>| {
            p.as_ref().map(|s| {
                if s.is_empty() {
                    name.to_string()
                } else {
                    s.clone()
                }
            })
        };
        LogOpts {
            bw: fix(&self.bw),
            lat: fix(&self.lat),
            iops: fix(&self.iops),
            hist: fix(&self.hist),
            ..self.clone()
        }
    }

    /// True when any log is asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.lat.is_some() || self.iops.is_some() || self.hist.is_some()
    }

    /// fio's `per_unit_log`: a log that takes a value per I/O (with no
    /// window, or stored compressed) rather than the periodic samples.
    pub fn per_unit(&self) -> bool {
        self.avg_msec == 0 || self.compressed
    }

    /// How often the bandwidth and IOPS samples are taken, ms (fio's
    /// `bw_avg_time`/`iops_avg_time`, init.c): `None` when a per-I/O log
    /// of that kind takes a sample per I/O instead, as fio's
    /// `add_bw_sample`/`add_iops_sample` do.
    pub fn sample_every(&self) -> [Option<u64>; 2] {
        let every = |log: &Option<String>, set: Option<u64>| match log {
            Some(_) if self.per_unit() => None,
            Some(_) => Some(set.map_or(self.avg_msec, |s| s.min(self.avg_msec))),
            None => Some(set.unwrap_or(500)),
        };
        [
            every(&self.bw, self.bw_avg_time),
            every(&self.iops, self.iops_avg_time),
        ]
    }
}

/// `zonemode=zbd`'s options (fio 3.33's names in the comments).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct ZbdOpts {
    /// `zonecapacity`: the usable bytes of an emulated zone (0 = its size).
    pub capacity: u64,
    /// `read_beyond_wp`.
    pub read_beyond_wp: bool,
    /// `max_open_zones` (0 = the device's limit, or none).
    pub max_open: u32,
    /// `job_max_open_zones` (0 = none).
    pub job_max_open: u32,
    /// `ignore_zone_limits`.
    pub ignore_limits: bool,
    /// `zone_reset_threshold`.
    pub reset_threshold: f64,
    /// `zone_reset_frequency`.
    pub reset_frequency: f64,
}

impl Extra {
    /// `zonemode=zbd`'s zone size as given (`zonesize`; 0 = the device's).
    pub fn zbd_zone_size(&self) -> Option<u64> {
        self.zbd.then(|| self.strided.map_or(0, |s| s.1))
    }

    /// `zonemode=strided`'s zones, unless the zone mode is zbd.
    pub fn strided(&self) -> Option<(u64, u64, u64)> {
        self.strided
            .filter(|_| !self.zbd && self.zone_mode_given != Some("none"))
    }
}

/// Sizes given in zones (fio's `Nz`: `size_nz`, `io_size_nz`,
/// `start_offset_nz`, `offset_increment_nz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct ZoneUnits {
    /// `size`.
    pub size: Option<u64>,
    /// `io_size`.
    pub io_size: Option<u64>,
    /// `offset`.
    pub offset: Option<u64>,
    /// `offset_increment`.
    pub offset_increment: Option<u64>,
}

impl ZoneUnits {
    /// True when some size is given in zones.
    pub fn any(&self) -> bool {
        self.size.is_some()
            || self.io_size.is_some()
            || self.offset.is_some()
            || self.offset_increment.is_some()
    }
}
