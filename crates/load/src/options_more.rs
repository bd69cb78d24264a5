//! The rest of fio's option table: offsets, randomness, block-size
//! distributions, files, buffers, verify, rate floors, flow, stop
//! conditions, reporting, logs and engine knobs; and the options iolab
//! refuses, each with the reason. Nothing is ignored: an option either
//! changes what runs, asks for what iolab does anyway (said in a note when
//! it is not obvious), or is refused with exit 2.

use std::time::Duration;

use iolab_sys::ioprio::IoPrio;

use crate::distribution::Distribution;
use crate::extra::{BufferFill, ExitWhat, SsMetric, SteadyState};
use crate::job::Job;
use crate::options::{boolean, count, number, pair, percent, size, time};
use crate::sizes;
use crate::verify::{self, VerifyKind, VerifyOpts};

/// The options of this table.
pub const MORE: &[&str] = &[
    "rw_sequencer",
    "bssplit",
    "bsrange",
    "blocksize_range",
    "blockalign",
    "ba",
    "blocksize_unaligned",
    "bs_unaligned",
    "offset",
    "fileoffset",
    "offset_increment",
    "io_size",
    "io_limit",
    "number_ios",
    "filesize",
    "fill_device",
    "fill_fs",
    "norandommap",
    "randseed",
    "random_generator",
    "random_distribution",
    "nrfiles",
    "nr_files",
    "openfiles",
    "file_service_type",
    "filename_format",
    "create_on_open",
    "create_serialize",
    "unlink",
    "allow_file_create",
    "fallocate",
    "buffer_pattern",
    "zero_buffers",
    "refill_buffers",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "verify",
    "do_verify",
    "verify_fatal",
    "verify_backlog",
    "verify_interval",
    "verify_pattern",
    "verify_dump",
    "verify_async",
    "verify_write_sequence",
    "ratemin",
    "rate_min",
    "rate_iops_min",
    "ratecycle",
    "rate_cycle",
    "rate_process",
    "flow",
    "flow_id",
    "flow_watermark",
    "flow_sleep",
    "sync_file_range",
    "fsync_on_close",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "startdelay",
    "wait_for",
    "exitall",
    "exit_what",
    "exitwhat",
    "new_group",
    "thread",
    "threads",
    "group_reporting",
    "steadystate",
    "ss",
    "steadystate_duration",
    "ss_dur",
    "steadystate_ramp_time",
    "ss_ramp",
    "steadystate_check_interval",
    "ss_interval",
    "percentile_list",
    "clat_percentiles",
    "lat_percentiles",
    "unified_rw_reporting",
    "gtod_reduce",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "disable_bw",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_max_value",
    "log_window_value",
    "log_issue_time",
    "log_offset",
    "log_prio",
    "per_job_logs",
    "experimental_verify",
    "serialize_overlap",
    "verify_state_save",
    "verify_state_load",
    "log_compression",
    "log_store_compressed",
    "slat_percentiles",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "userspace_reap",
    "hipri",
    "nowait",
    "uncached",
    "io_submit_mode",
    "prio",
    "prioclass",
    "error_dump",
    "zonemode",
    "zonerange",
    "zonesize",
    "zoneskip",
];

/// Options iolab knows and refuses, with the reason (said instead of "did
/// you mean").
const REFUSED: &[(&str, &str)] = &[
    ("latency_target", "finding the deepest queue that meets a latency target is not built; run iolab sweep --max or fixed iodepth jobs"),
    ("latency_window", "goes with latency_target, which is not built"),
    ("latency_percentile", "goes with latency_target, which is not built"),
    ("latency_run", "goes with latency_target, which is not built"),
    ("max_open_zones", "zoned block devices: none on this machine, and zonemode=zbd is not supported"),
    ("read_beyond_wp", "zoned block devices: zonemode=zbd is not supported"),
    ("zone_reset_threshold", "zoned block devices: zonemode=zbd is not supported"),
    ("zone_reset_frequency", "zoned block devices: zonemode=zbd is not supported"),
    ("dedupe_percentage", "deduplicable buffers are not supported (buffer_compress_percentage is)"),
    ("dedupe_mode", "deduplicable buffers are not supported"),
    ("dedupe_global", "deduplicable buffers are not supported"),
    ("dedupe_working_set_percentage", "deduplicable buffers are not supported"),
    ("numa_cpu_nodes", "NUMA placement is not supported (this build has no libnuma)"),
    ("numa_mem_policy", "NUMA placement is not supported (this build has no libnuma)"),
    ("atomic", "atomic writes (RWF_ATOMIC) are not supported"),
    ("sprandom", "SPRandom preconditioning is not supported"),
    ("fdp", "NVMe flexible data placement needs an NVMe device and io_uring_cmd, not supported"),
    ("fdp_pli", "NVMe flexible data placement is not supported"),
    ("continue_on_error", "iolab stops a job at its first I/O error and keeps what it measured"),
    ("ignore_error", "iolab stops a job at its first I/O error and keeps what it measured"),
    ("verify_offset", "iolab's verify header has a fixed place at the start of each chunk"),
    ("verify_only", "iolab verifies blocks this job wrote"),
    ("trim_percentage", "trims are not supported"),
    ("unlink_each_loop", "files are removed at the end of the job only (unlink=1)"),
    ("cpus_allowed", "CPU affinity per job is not supported: use taskset on iolab"),
    ("cpumask", "CPU affinity per job is not supported: use taskset on iolab"),
    ("exec_prerun", "iolab runs no commands from job files"),
    ("exec_postrun", "iolab runs no commands from job files"),
    ("include", "put the jobs in one file"),
];

/// Engines iolab knows and refuses, with the reason.
const ENGINES_REFUSED: &[(&str, &str)] = &[
    ("net", "a network engine"),
    ("netsplice", "a network engine"),
    ("rdma", "a network (RDMA) engine"),
    ("http", "a network (HTTP/S3) engine"),
    ("nbd", "a network block device engine (needs libnbd)"),
    ("nfs", "a network engine (needs libnfs)"),
    ("rbd", "a Ceph engine (needs librbd)"),
    ("rados", "a Ceph engine (needs librados)"),
    ("gfapi", "a GlusterFS engine (needs libgfapi)"),
    ("libhdfs", "an HDFS engine"),
    ("dfs", "a DAOS engine"),
    ("libiscsi", "an iSCSI engine"),
    ("libcufile", "a GPU (cuFile) engine"),
    ("libhipfile", "a GPU (hipFile) engine"),
    ("dev-dax", "a persistent-memory engine (needs a DAX device)"),
    ("libpmem", "a persistent-memory engine"),
    ("libzbc", "a zoned-device engine (no zoned devices here)"),
    (
        "io_uring_cmd",
        "an NVMe passthrough engine (needs /dev/ngXnY)",
    ),
    ("xnvme", "an NVMe engine (needs libxnvme)"),
    ("libblkio", "a vendor-library engine (needs libblkio)"),
    ("spdk", "a vendor-library engine"),
    ("sg", "a SCSI generic engine (needs /dev/sgN)"),
    ("mtd", "a raw flash engine (needs /dev/mtdN)"),
    ("ime_psync", "a DDN IME engine"),
    ("ime_psyncv", "a DDN IME engine"),
    ("ime_aio", "a DDN IME engine"),
    ("exec", "runs arbitrary programs"),
    ("e4defrag", "an ext4 online defragmentation engine"),
    ("falloc", "an fallocate engine"),
    ("ftruncate", "an ftruncate engine"),
    ("filecreate", "a file-creation engine"),
    ("filestat", "a stat engine"),
    ("filedelete", "a file-deletion engine"),
    ("dircreate", "a directory engine"),
    ("dirstat", "a directory engine"),
    ("dirdelete", "a directory engine"),
    ("splice", "a splice engine"),
    (
        "sync_file_range",
        "not an engine here: use the sync_file_range option",
    ),
    ("windowsaio", "Windows only"),
    ("solarisaio", "Solaris only"),
    ("guasi", "not built"),
    ("page_fault", "a page-fault engine"),
    ("cpp_null", "an external C++ engine"),
];

/// The error for an option nobody knows: the nearest known name, or why a
/// known one is refused.
pub fn unknown(key: &str) -> String {
    if let Some((_, why)) = REFUSED.iter().find(|(k, _)| *k == key) {
        return format!("option {key} is not supported: {why} (iolab load --with-fio runs the job with the installed fio)");
    }
    let names = crate::options::supported().chain(REFUSED.iter().map(|r| r.0));
    match nearest(key, names) {
        Some(n) => format!("unknown option {key:?}: did you mean {n}? (iolab load --help lists the options)"),
        None => format!("unknown option {key:?}: not a fio option iolab knows (iolab load --help lists them; --with-fio runs the job with the installed fio)"),
    }
}

/// The error for an engine iolab does not run.
pub fn unknown_engine(v: &str) -> String {
    if let Some((_, why)) = ENGINES_REFUSED.iter().find(|(k, _)| *k == v) {
        return format!(
            "ioengine={v} is not supported: {why}, which iolab does not run; use one of {}",
            crate::job::IoEngine::NAMES
        );
    }
    let names = crate::job::IoEngine::NAMES.split(", ");
    match nearest(v, names) {
        Some(n) => format!(
            "ioengine={v}: unknown engine: did you mean {n}? (expected one of {})",
            crate::job::IoEngine::NAMES
        ),
        None => format!(
            "ioengine={v}: unknown engine: expected one of {}",
            crate::job::IoEngine::NAMES
        ),
    }
}

fn nearest<'a>(key: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .map(|n| (strsim::damerau_levenshtein(key, n), n))
        .filter(|(d, n)| *d <= 2.max(key.len().min(n.len()) / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Applies an option of this table; `None` when the key is not here.
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Option<Result<(), String>> {
    if !MORE.contains(&key) {
        return None;
    }
    Some(apply_known(job, key, value))
}

fn need<'a>(key: &str, value: Option<&'a str>) -> Result<&'a str, String> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v.trim()),
        _ => Err(format!("option {key} needs a value ({key}=...)")),
    }
}

fn note(job: &mut Job, text: String) {
    if !job.x.notes.contains(&text) {
        job.x.notes.push(text);
    }
}

fn verify_opts(job: &mut Job) -> &mut VerifyOpts {
    job.x
        .verify
        .get_or_insert_with(|| VerifyOpts::new(VerifyKind::Crc32c))
}

#[allow(clippy::too_many_lines)]
fn apply_known(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let sz = |v: &str| size(key, v);
    let name = job.name.clone();
    let x = &mut job.x;
    match key {
        "rw_sequencer" => {
            let v = need(key, value)?;
            x.identical = match v.split(':').next().unwrap_or("") {
                "sequential" => false,
                "identical" => true,
                _ => return Err(format!("rw_sequencer={v}: expected sequential or identical")),
            };
        }
        "bssplit" => {
            let v = need(key, value)?;
            let (r, w) = sizes::per_dir(key, v)?;
            job.sizes.read = sizes::parse_split(key, r, sz)?;
            job.sizes.write = sizes::parse_split(key, w, sz)?;
            job.bs = job.sizes.max();
        }
        "bsrange" | "blocksize_range" => {
            let v = need(key, value)?;
            let (r, w) = sizes::per_dir(key, v)?;
            job.sizes.read = sizes::parse_range(key, r, sz)?;
            job.sizes.write = sizes::parse_range(key, w, sz)?;
            job.bs = job.sizes.max();
        }
        "blockalign" | "ba" => {
            let v = need(key, value)?;
            let (r, w) = sizes::per_dir(key, v)?;
            let a = size(key, r)?.max(size(key, w)?);
            if a == 0 {
                return Err(format!("{key}=0: expected an alignment of at least 1 byte"));
            }
            job.sizes.align = Some(a);
        }
        "blocksize_unaligned" | "bs_unaligned" => job.sizes.unaligned = boolean(key, value)?,
        "offset" | "fileoffset" => {
            let v = need(key, value)?;
            if v.ends_with('%') || v.ends_with('z') {
                return Err(format!("{key}={v}: give the offset in bytes, e.g. 1g (percent and zone offsets are not supported)"));
            }
            x.offset = size(key, v)?;
        }
        "offset_increment" => x.offset_increment = size(key, need(key, value)?)?,
        "io_size" | "io_limit" => {
            let s = size(key, need(key, value)?)?;
            x.io_size = (s > 0).then_some(s);
        }
        "number_ios" => {
            let n = number(key, need(key, value)?)?;
            x.number_ios = (n > 0).then_some(n);
        }
        "filesize" => {
            let v = need(key, value)?;
            let (lo, hi) = match v.split_once('-') {
                Some((a, b)) => (size(key, a)?, size(key, b)?),
                None => {
                    let s = size(key, v)?;
                    (s, s)
                }
            };
            if lo == 0 || hi < lo {
                return Err(format!("{key}={v}: expected SIZE or LOW-HIGH with 0 < LOW <= HIGH"));
            }
            x.filesize = Some((lo, hi));
        }
        "fill_device" | "fill_fs" => x.fill_device = boolean(key, value)?,
        "norandommap" => x.norandommap = boolean(key, value)?,
        "randseed" => {
            x.randseed = Some(number(key, need(key, value)?)?);
        }
        "random_generator" => {
            let v = need(key, value)?;
            if !matches!(v, "tausworthe" | "lfsr" | "tausworthe64") {
                return Err(format!("random_generator={v}: expected tausworthe, lfsr or tausworthe64"));
            }
            x.lfsr = v == "lfsr";
            note(job, format!(
                "job {}: random_generator={v}: iolab draws offsets with its own generator (every block once per pass, as lfsr guarantees; with norandommap too when lfsr is asked, as fio)",
                job.name
            ));
        }
        "random_distribution" => {
            let d = Distribution::parse(need(key, value)?, sz)?;
            x.distribution = d;
        }
        "nrfiles" | "nr_files" => x.nrfiles = count(key, need(key, value)?, 1)?,
        "file_service_type" => x.file_service = crate::file_set::FileService::parse(need(key, value)?)?,
        "openfiles" => {
            need(key, value)?;
            note(job, format!("job {}: openfiles: iolab keeps every file of a clone open for the whole job", job.name));
        }
        "filename_format" => x.filename_format = Some(need(key, value)?.to_string()),
        "create_on_open" => x.create_on_open = boolean(key, value)?,
        // iolab lays files out one at a time before any job starts: what
        // create_serialize=1 asks; 0 (parallel layout) is not done.
        "create_serialize" => {
            boolean(key, value)?;
        }
        "unlink" => x.unlink = boolean(key, value)?,
        "allow_file_create" => x.no_create = !boolean(key, value)?,
        "fallocate" => {
            let v = need(key, value)?;
            if !matches!(v, "none" | "0") {
                return Err(format!(
                    "fallocate={v}: iolab lays files out by writing them and does not preallocate; use fallocate=none"
                ));
            }
        }
        "buffer_pattern" => {
            x.buffer = BufferFill::Pattern(verify::parse_pattern(key, need(key, value)?)?);
        }
        "zero_buffers" => {
            if boolean(key, value)? {
                x.buffer = BufferFill::Zero;
            }
        }
        "refill_buffers" => x.refill_buffers = boolean(key, value)?,
        "buffer_compress_percentage" => {
            let p = percent(key, need(key, value)?)?;
            let chunk = match x.buffer {
                BufferFill::Compressible { chunk, .. } => chunk,
                _ => 512,
            };
            x.buffer = BufferFill::Compressible { percent: p, chunk };
        }
        "buffer_compress_chunk" => {
            let c = size(key, need(key, value)?)? as usize;
            if c == 0 {
                return Err(format!("{key}=0: expected a chunk size, e.g. 4k"));
            }
            let percent = match x.buffer {
                BufferFill::Compressible { percent, .. } => percent,
                _ => 0,
            };
            x.buffer = BufferFill::Compressible { percent, chunk: c };
        }
        "verify" => {
            let v = need(key, value)?;
            match VerifyKind::parse(v)? {
                None => x.verify = None,
                Some(k) => verify_opts(job).kind = k,
            }
        }
        // fio's experimental_verify re-derives the written offsets by
        // resetting its random generator instead of keeping a list; iolab
        // keeps the list either way, so the same blocks are checked.
        // Only a queue of depth > 1 can hold overlapping I/O; the
        // queueing engines hold an overlapping I/O back until the one in
        // flight completes.
        "serialize_overlap" => x.serialize_overlap = boolean(key, value)?,
        "experimental_verify" => {
            boolean(key, value)?;
        }
        "verify_state_save" => {
            let b = boolean(key, value)?;
            verify_opts(job).state_save = b;
        }
        "verify_state_load" => {
            let b = boolean(key, value)?;
            verify_opts(job).state_load = b;
        }
        "do_verify" => {
            let b = boolean(key, value)?;
            verify_opts(job).do_verify = b;
        }
        "verify_fatal" => {
            let b = boolean(key, value)?;
            verify_opts(job).fatal = b;
        }
        "verify_backlog" => {
            let n = number(key, need(key, value)?)?;
            verify_opts(job).backlog = n;
        }
        "verify_interval" => {
            let n = size(key, need(key, value)?)?;
            if n < 64 {
                return Err(format!("{key}={n}: expected at least 64 bytes (the header)"));
            }
            verify_opts(job).interval = Some(n);
        }
        "verify_pattern" => {
            let p = verify::parse_pattern(key, need(key, value)?)?;
            let v = verify_opts(job);
            v.pattern = Some(p);
        }
        "verify_dump" => {
            let b = boolean(key, value)?;
            verify_opts(job).dump = b;
        }
        "verify_async" => {
            need(key, value)?;
            note(job, format!("job {}: verify_async: iolab checks blocks in the job's own thread", job.name));
        }
        "verify_write_sequence" => {
            if boolean(key, value)? {
                return Err(format!("{key}=1 is not supported: iolab's verify header has no write sequence number; use {key}=0"));
            }
        }
        "ratemin" | "rate_min" => x.ratemin = pair(key, need(key, value)?, |v| size(key, v))?,
        "rate_iops_min" => x.rate_iops_min = pair(key, need(key, value)?, |v| number(key, v))?,
        "ratecycle" | "rate_cycle" => {
            let ms = number(key, need(key, value)?)?;
            if ms == 0 {
                return Err(format!("{key}=0: expected milliseconds, e.g. 1000"));
            }
            x.ratecycle = Duration::from_millis(ms);
        }
        "rate_process" => {
            x.rate_poisson = match need(key, value)? {
                "linear" => false,
                "poisson" => true,
                v => return Err(format!("rate_process={v}: expected linear or poisson")),
            }
        }
        "flow" => {
            let v = need(key, value)?;
            x.flow = v.parse().map_err(|_| format!("flow={v}: expected a whole-number weight"))?;
        }
        "flow_id" => x.flow_id = count(key, need(key, value)?, 0)?,
        "flow_watermark" => {
            count(key, need(key, value)?, 0)?;
            note(job, format!(
                "job {}: flow_watermark: iolab keeps each flow job within 8 I/Os of its share; the watermark sets nothing else",
                job.name
            ));
        }
        "flow_sleep" => {
            x.flow_sleep = Duration::from_micros(number(key, need(key, value)?)?);
        }
        "sync_file_range" => {
            let v = need(key, value)?;
            let (flags, n) = v
                .rsplit_once(':')
                .ok_or_else(|| format!("{key}={v}: expected FLAGS:N, e.g. wait_before,write:8"))?;
            let mut f = 0u32;
            for part in flags.split(',') {
                f |= match part.trim() {
                    "wait_before" => libc::SYNC_FILE_RANGE_WAIT_BEFORE,
                    "write" => libc::SYNC_FILE_RANGE_WRITE,
                    "wait_after" => libc::SYNC_FILE_RANGE_WAIT_AFTER,
                    p => return Err(format!("{key}={v}: flag {p:?}: expected wait_before, write, wait_after")),
                };
            }
            x.sync_file_range = Some((f, count(key, n, 1)?));
        }
        "fsync_on_close" => job.end_fsync |= boolean(key, value)?,
        "thinktime" => x.thinktime = micros(key, need(key, value)?)?,
        "thinktime_spin" => x.thinktime_spin = micros(key, need(key, value)?)?,
        "thinktime_blocks" => x.thinktime_blocks = count(key, need(key, value)?, 1)?,
        "startdelay" => {
            let v = need(key, value)?;
            x.startdelay = match v.split_once('-') {
                Some((a, b)) => (time(key, a)?, time(key, b)?),
                None => {
                    let t = time(key, v)?;
                    (t, t)
                }
            };
            if x.startdelay.1 < x.startdelay.0 {
                return Err(format!("{key}={v}: expected LOW-HIGH with LOW <= HIGH"));
            }
        }
        "wait_for" => x.wait_for = Some(need(key, value)?.to_string()),
        "exitall" => x.exitall = boolean(key, value)?,
        "exit_what" | "exitwhat" => {
            x.exit_what = match need(key, value)? {
                "group" => ExitWhat::Group,
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                v => return Err(format!("{key}={v}: expected group, stonewall or all")),
            }
        }
        "new_group" => x.new_group = boolean(key, value)?,
        // Clones are always threads of this process: what thread asks.
        "thread" | "threads" => {
            boolean(key, value)?;
        }
        "group_reporting" => x.group_reporting = boolean(key, value)?,
        "steadystate" | "ss" => {
            let v = need(key, value)?;
            let prev = x.steadystate.clone();
            x.steadystate = Some(parse_ss(v, prev)?);
        }
        "steadystate_duration" | "ss_dur" => {
            let t = time(key, need(key, value)?)?;
            ss_mut(x).dur = t;
        }
        "steadystate_ramp_time" | "ss_ramp" => {
            let t = time(key, need(key, value)?)?;
            ss_mut(x).ramp = t;
        }
        "steadystate_check_interval" | "ss_interval" => {
            let t = time(key, need(key, value)?)?;
            if t.is_zero() {
                return Err(format!("{key}=0: expected an interval, e.g. 1s"));
            }
            ss_mut(x).interval = t;
        }
        "percentile_list" => {
            let v = need(key, value)?;
            let mut list = Vec::new();
            for p in v.split(':') {
                let f: f64 = p.trim().parse().ok().filter(|f: &f64| (0.0..=100.0).contains(f)).ok_or_else(|| {
                    format!("{key}={v}: {p:?} is not a percentile from 0 to 100 (list them with ':', e.g. 50:99:99.9)")
                })?;
                list.push(f);
            }
            if list.len() > 20 {
                return Err(format!("{key}={v}: at most 20 percentiles, as in fio"));
            }
            x.percentile_list = Some(list);
        }
        "clat_percentiles" => x.percentiles_in.0 = boolean(key, value)?,
        "lat_percentiles" => x.percentiles_in.1 = boolean(key, value)?,
        "unified_rw_reporting" => {
            x.unified_rw_reporting = match value.unwrap_or("1") {
                "0" | "none" => 0,
                "1" | "mixed" => 1,
                "2" | "both" => 2,
                v => return Err(format!("{key}={v}: expected none, mixed or both (0/1/2)")),
            }
        }
        "gtod_reduce" | "disable_lat" | "disable_clat" => {
            if boolean(key, value)? {
                x.no_latency = true;
            }
        }
        "disable_slat" => x.no_slat = boolean(key, value)?,
        "cmdprio_percentage" | "cmdprio_class" | "cmdprio" | "cmdprio_bssplit" => {
            crate::cmdprio::apply(&mut x.cmdprio, key, need(key, value)?)?;
        }
        // iolab keeps per-second bandwidth samples only when a log asks:
        // disabling them is what is done.
        "disable_bw_measurement" | "disable_bw" => {
            boolean(key, value)?;
        }
        "write_bw_log" => x.logs.bw = Some(log_prefix(&name, value)),
        "write_lat_log" => x.logs.lat = Some(log_prefix(&name, value)),
        "write_iops_log" => x.logs.iops = Some(log_prefix(&name, value)),
        "write_hist_log" => x.logs.hist = Some(log_prefix(&name, value)),
        "log_avg_msec" => x.logs.avg_msec = number(key, need(key, value)?)?,
        "log_hist_msec" => x.logs.hist_msec = number(key, need(key, value)?)?,
        "log_max_value" => x.logs.max_value = boolean(key, value)?,
        // fio 3.36's successor of log_max_value: mean, max or both.
        "log_window_value" => {
            let v = need(key, value)?;
            (x.logs.max_value, x.logs.both) = match v {
                "mean" | "avg" | "0" => (false, false),
                "max" | "1" => (true, false),
                "both" | "2" => (false, true),
                _ => return Err(format!("{key}={v}: expected mean, max or both")),
            };
        }
        "log_issue_time" => x.logs.issue_time = boolean(key, value)?,
        "log_offset" => x.logs.offset = boolean(key, value)?,
        "log_prio" => x.logs.prio = boolean(key, value)?,
        // per_job_logs=0: one file per log kind without the clone number
        // (prefix_bw.log), as fio names it; a job of several clones is
        // checked in validate (their lines would interleave).
        "per_job_logs" => x.logs.shared = !boolean(key, value)?,
        // fio compresses log chunks of this size in memory; iolab streams
        // its logs to the file as it goes, so it holds none to compress.
        "log_compression" => {
            size(key, need(key, value)?)?;
        }
        "log_store_compressed" => x.logs.compressed = boolean(key, value)?,
        // Only the queueing engines have a slat (as in fio).
        "slat_percentiles" => x.percentiles_in.2 = boolean(key, value)?,
        "iodepth_batch" | "iodepth_batch_submit" => x.batch_submit = count(key, need(key, value)?, 0)?.max(1),
        "iodepth_batch_complete" | "iodepth_batch_complete_min" => {
            x.batch_complete_min = count(key, need(key, value)?, 0)?;
        }
        "iodepth_batch_complete_max" => x.batch_complete_max = count(key, need(key, value)?, 0)?,
        "iodepth_low" => {
            count(key, need(key, value)?, 0)?;
            note(job, format!(
                "job {}: iodepth_low: iolab refills the queue as soon as an I/O completes (iodepth_low=iodepth-1)",
                job.name
            ));
        }
        "userspace_reap" => x.userspace_reap = boolean(key, value)?,
        "hipri" => x.hipri = boolean(key, value)?,
        "nowait" => x.nowait = boolean(key, value)?,
        "uncached" => x.uncached = boolean(key, value)?,
        "io_submit_mode" => match need(key, value)? {
            "inline" => {}
            "offload" => note(job, format!(
                "job {}: io_submit_mode=offload: iolab submits from the job's own thread, each I/O when its rate says it is due (what offload is for in rate-paced jobs)",
                job.name
            )),
            v => return Err(format!("io_submit_mode={v}: expected inline or offload")),
        },
        "prio" => {
            let v = need(key, value)?;
            let n = count(key, v, 0)?;
            if n > 7 {
                return Err(format!("prio={n}: expected 0 (highest) to 7"));
            }
            x.priolevel = Some(n as u8);
            x.prio = Some(make_prio(x.prioclass.unwrap_or(2), n as u8)?);
        }
        "prioclass" => {
            let v = need(key, value)?;
            let c = count(key, v, 0)?;
            if c > 3 {
                return Err(format!("prioclass={c}: expected 1 (real-time), 2 (best-effort), 3 (idle) or 0 (none)"));
            }
            x.prioclass = Some(c as u8);
            x.prio = (c != 0).then(|| make_prio(c as u8, x.priolevel.unwrap_or(4))).transpose()?;
        }
        // Errors are always printed, with the file and offset.
        "error_dump" => {
            boolean(key, value)?;
        }
        "zonemode" => match need(key, value)? {
            "none" => x.strided = None,
            "strided" => {
                x.strided.get_or_insert((0, 0, 0));
            }
            v => return Err(format!("zonemode={v} is not supported: zoned block devices (zbd) are not built; use none or strided")),
        },
        // fio: zonerange defaults to zonesize and the reverse; giving
        // zonesize alone also means strided (fio's older spelling).
        "zonerange" | "zonesize" | "zoneskip" => {
            let n = size(key, need(key, value)?)?;
            let z = x.strided.get_or_insert((0, 0, 0));
            match key {
                "zonerange" => z.0 = n,
                "zonesize" => z.1 = n,
                _ => z.2 = n,
            }
        }
        _ => return Err(unknown(key)),
    }
    Ok(())
}

fn make_prio(class: u8, level: u8) -> Result<IoPrio, String> {
    let s = match class {
        1 => format!("rt:{level}"),
        3 => "idle".to_string(),
        _ => format!("be:{level}"),
    };
    s.parse().map_err(|e| format!("prio: {e}"))
}

/// fio's thinktime: microseconds unless a unit is given.
fn micros(key: &str, v: &str) -> Result<Duration, String> {
    if v.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Duration::from_micros(number(key, v)?));
    }
    time(key, v)
}

/// A log's prefix; without a value, the job's name — resolved when the
/// job runs (`LogOpts::for_job`), because a bare `write_bw_log` in
/// [global] names each job's logs after that job (fio's t0023).
fn log_prefix(_name: &str, value: Option<&str>) -> String {
    match value.map(str::trim) {
        Some(v) if !v.is_empty() && v != "1" => v.to_string(),
        _ => String::new(),
    }
}

fn ss_mut(x: &mut crate::extra::Extra) -> &mut SteadyState {
    x.steadystate.get_or_insert_with(|| SteadyState {
        metric: SsMetric::Iops,
        slope: false,
        limit: 0.01,
        percent: true,
        dur: Duration::ZERO,
        ramp: Duration::ZERO,
        interval: Duration::from_secs(1),
    })
}

fn parse_ss(v: &str, prev: Option<SteadyState>) -> Result<SteadyState, String> {
    let bad = || {
        format!("steadystate={v}: expected METRIC:LIMIT with METRIC iops, iops_slope, bw, bw_slope, lat or lat_slope, e.g. iops:10%")
    };
    let (m, lim) = v.split_once(':').ok_or_else(bad)?;
    let (metric, slope) = match m {
        "iops" => (SsMetric::Iops, false),
        "iops_slope" => (SsMetric::Iops, true),
        "bw" => (SsMetric::Bw, false),
        "bw_slope" => (SsMetric::Bw, true),
        "lat" => (SsMetric::Lat, false),
        "lat_slope" => (SsMetric::Lat, true),
        _ => return Err(bad()),
    };
    let (num, percent) = match lim.strip_suffix('%') {
        Some(n) => (n, true),
        None => (lim, false),
    };
    let mut limit: f64 = num
        .trim()
        .parse()
        .ok()
        .filter(|f: &f64| f.is_finite() && *f >= 0.0)
        .ok_or_else(bad)?;
    if percent {
        limit /= 100.0;
    } else if metric == SsMetric::Bw {
        // fio reads an absolute bw limit with size units.
        limit = iolab_sys::units::parse_size(lim).map_err(|_| bad())? as f64;
    }
    let mut ss = prev.unwrap_or(SteadyState {
        metric,
        slope,
        limit,
        percent,
        dur: Duration::ZERO,
        ramp: Duration::ZERO,
        interval: Duration::from_secs(1),
    });
    ss.metric = metric;
    ss.slope = slope;
    ss.limit = limit;
    ss.percent = percent;
    Ok(ss)
}
