//! The job model: one fio-style job, as parsed from a job file, built from
//! command-line flags or generated for a named workload. Field names and
//! defaults follow fio's options of the same name (fio(1), "JOB
//! PARAMETERS") so a fio user reads them without a manual.

use std::path::PathBuf;
use std::time::Duration;

use crate::job::extra::Extra;
use crate::job::kinds::{CpuMode, DirPair, IoEngine, Rw};
use crate::job::sizes::BlockSizes;

/// One job. `numjobs` clones of it run as threads, each on its own file
/// unless `filename` names a shared one.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Job {
    /// `name`: the section name; also names the job's files.
    pub name: String,
    /// `description`: free text, reported back.
    pub description: Option<String>,
    /// `filename`: one file or block device shared by all clones (relative
    /// to `directory` when both are set).
    pub filename: Option<PathBuf>,
    /// `directory`: where the clones' files `NAME.CLONE.0` live (default:
    /// the current directory, like fio).
    pub directory: Option<PathBuf>,
    /// `rw`: the I/O pattern.
    pub rw: Rw,
    /// `rwmixread`: percentage of reads in mixed patterns (default 50).
    pub rwmixread: u8,
    /// `bs`: the largest block size in bytes (default 4 KiB); buffers are
    /// this big. `sizes` says how each I/O picks its size.
    pub bs: u64,
    /// `bs=R,W`, `bssplit`, `bsrange`, `blockalign`, `blocksize_unaligned`.
    pub sizes: BlockSizes,
    /// `size`: bytes per loop and per file; `None` means the existing file
    /// or device size.
    pub size: Option<u64>,
    /// `numjobs`: clones (threads) of this job.
    pub numjobs: u32,
    /// `iodepth`: I/Os in flight per clone (io_uring only).
    pub iodepth: u32,
    /// `ioengine`.
    pub ioengine: IoEngine,
    /// `direct` (and the inverse `buffered`): O_DIRECT.
    pub direct: bool,
    /// `runtime`: stop after this long (excluding `ramp_time`).
    pub runtime: Option<Duration>,
    /// `time_based`: keep going (wrapping around the file) until `runtime`
    /// ends or, without a runtime, until the load is stopped.
    pub time_based: bool,
    /// `ramp_time`: run this long before measuring.
    pub ramp_time: Duration,
    /// `rate`: bytes per second, per clone, for reads and writes.
    pub rate: DirPair<Option<u64>>,
    /// `rate_iops`: I/Os per second, per clone, for reads and writes.
    pub rate_iops: DirPair<Option<u64>>,
    /// `fsync`: fsync after every N writes (0 = never).
    pub fsync: u32,
    /// `fdatasync`: fdatasync after every N writes (0 = never).
    pub fdatasync: u32,
    /// `end_fsync`: fsync the file when the job ends.
    pub end_fsync: bool,
    /// `loops`: passes over the file (default 1).
    pub loops: u32,
    /// `invalidate`: drop the file's cached pages before each pass
    /// (default on, as in fio).
    pub invalidate: bool,
    /// `ioscheduler`: switch the device holding the file to this scheduler
    /// (through the guard; restored when the guard restores).
    pub ioscheduler: Option<String>,
    /// `cpuload`: percentage of each cycle the cpuio engine burns.
    pub cpuload: Option<u8>,
    /// `cpumode`: how cpuio burns CPU.
    pub cpumode: CpuMode,
    /// `cpuchunks`: length of one cpuio busy+idle cycle.
    pub cpuchunks: Duration,
    /// `stonewall`: wait for all earlier jobs to finish before starting.
    pub stonewall: bool,
    /// `randrepeat`: the same random offsets on every run (default on, as
    /// in fio); off seeds from the clock.
    pub randrepeat: bool,
    /// iolab: when `size` is unset and the file does not exist yet, derive
    /// a size that fits the directory's free space (named workloads).
    pub auto_size: bool,
    /// Everything else fio job files say (offsets, randomness, verify,
    /// logs, flow, stop conditions ...): see [`Extra`].
    pub x: Extra,
    /// The options as written (`key`, `value`), reported as fio's
    /// `job options`.
    pub options: Vec<(String, String)>,
}

impl Job {
    /// A job with fio's defaults.
    pub fn new(name: impl Into<String>) -> Job {
        Job {
            name: name.into(),
            description: None,
            filename: None,
            directory: None,
            rw: Rw::Read,
            rwmixread: 50,
            bs: 4096,
            sizes: BlockSizes::fixed(4096),
            size: None,
            numjobs: 1,
            iodepth: 1,
            ioengine: IoEngine::Psync,
            direct: false,
            runtime: None,
            time_based: false,
            ramp_time: Duration::ZERO,
            rate: DirPair::default(),
            rate_iops: DirPair::default(),
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            loops: 1,
            invalidate: true,
            ioscheduler: None,
            cpuload: None,
            cpumode: CpuMode::Noop,
            cpuchunks: Duration::from_micros(50_000),
            stonewall: false,
            randrepeat: true,
            auto_size: false,
            x: Extra::default(),
            options: Vec::new(),
        }
    }

    /// True when the job reads.
    pub fn reads(&self) -> bool {
        self.ioengine != IoEngine::CpuIo
            && match &self.x.read_iolog {
                Some(r) => r.reads,
                None => self.rw.reads(),
            }
    }

    /// True when the job writes (a replayed log: when the log writes, so
    /// the checks before writing apply to it).
    pub fn writes(&self) -> bool {
        self.ioengine != IoEngine::CpuIo
            && match &self.x.read_iolog {
                Some(r) => r.writes,
                None => self.rw.writes(),
            }
    }

    /// Bytes an I/O buffer must hold: the largest block size, or the
    /// longest I/O of a replayed log.
    pub fn buf_size(&self) -> u64 {
        self.bs
            .max(self.x.read_iolog.as_ref().map_or(0, |r| r.max_len))
    }

    /// True when the job runs until stopped: time-based without a runtime.
    pub fn until_stopped(&self) -> bool {
        self.runtime.is_none() && (self.time_based || self.ioengine == IoEngine::CpuIo)
    }

    /// Files per clone: the names `filename` lists, else `nrfiles` (one
    /// when `filename` names one file).
    pub fn nrfiles(&self) -> usize {
        if !self.x.filenames.is_empty() {
            self.x.filenames.len()
        } else if self.filename.is_some() {
            1
        } else {
            self.x.nrfiles.max(1) as usize
        }
    }

    /// zonemode=zbd's combinations, as fio 3.33 checks them (zbd.c,
    /// init.c) or as iolab does not build them.
    fn validate_zbd(&self) -> Result<(), String> {
        let x = &self.x;
        let z = &x.zbd_opts;
        if self.nrfiles() > 1 {
            return Err(format!(
                "{} files per clone with zonemode=zbd: iolab tracks one zoned file or device per clone; give each job one filename",
                self.nrfiles()
            ));
        }
        if matches!(self.rw, Rw::TrimWrite | Rw::RandTrimWrite) {
            return Err(format!(
                "rw={} with zonemode=zbd: a trim resets a whole zone, so the write after it cannot go to the same block; use rw=trim or randtrim in a job of its own",
                self.rw.as_str()
            ));
        }
        if self.rw.trims() && !self.sizes.is_fixed() {
            return Err("bsrange and bssplit are not allowed for trim with zonemode=zbd (a trim is a zone reset: bs is the zone size)".into());
        }
        if x.verify.is_some() && z.reset_frequency > 0.0 {
            return Err("verify with zone_reset_frequency: a reset zone loses the data verify would read back (fio 3.33 stops on an assertion); drop one of them".into());
        }
        if z.capacity > 0 && x.zbd_zone_size().is_some_and(|s| s > 0 && z.capacity > s) {
            return Err(format!(
                "zonecapacity {} is larger than zonesize {}: a zone holds at most its size",
                z.capacity,
                x.zbd_zone_size().unwrap_or(0)
            ));
        }
        Ok(())
    }

    /// Checks the combination of options; the error says what to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.ioengine == IoEngine::CpuIo {
            if self.cpuload.is_none() {
                return Err("ioengine=cpuio needs cpuload=PERCENT (1-100)".into());
            }
            return Ok(());
        }
        if self.direct && self.bs % 512 != 0 {
            return Err(format!(
                "direct=1 needs bs to be a multiple of 512 (the logical block size), got {}",
                self.bs
            ));
        }
        if self.direct {
            self.sizes.check_direct(512)?;
        }
        let x = &self.x;
        let e = self.ioengine;
        if x.zbd {
            self.validate_zbd()?;
        }
        // fio 3.33's fixup_options, in its words.
        let zonesize = x.strided.map_or(0, |s| s.1);
        match x.zone_mode_given {
            Some("none") if zonesize > 0 => {
                return Err("--zonemode=none and --zonesize are not compatible (drop zonesize, or use zonemode=strided)".into());
            }
            Some("strided") if zonesize == 0 => {
                return Err(
                    "--zonesize must be specified when using --zonemode=strided (e.g. zonesize=1m)"
                        .into(),
                );
            }
            _ => {}
        }
        if x.write_iolog.is_some() && self.numjobs > 1 {
            return Err(format!(
                "write_iolog with numjobs={}: the clones' lines would interleave in one log; give each job its own log",
                self.numjobs
            ));
        }
        if x.logs.shared && x.logs.any() && self.numjobs > 1 {
            return Err(format!(
                "per_job_logs=0 with numjobs={}: the clones' lines would interleave in one file; use per_job_logs=1 (prefix_type.N.log)",
                self.numjobs
            ));
        }
        if x.cmdprio.active() && !matches!(e, IoEngine::Libaio | IoEngine::IoUring) {
            return Err(format!(
                "cmdprio options with ioengine={}: per-I/O priorities are options of the libaio and io_uring engines (as in fio); use ioengine=libaio or io_uring, or prio/prioclass for the whole job",
                e.as_str()
            ));
        }
        if iolab_sys::cast::u64_of(self.nrfiles()) > u64::from(crate::job::value::MAX_FILES) {
            return Err(format!(
                "{} files per clone: at most {} (an I/O's offset carries its file's index in 16 bits)",
                self.nrfiles(),
                crate::job::value::MAX_FILES
            ));
        }
        if self.nrfiles() > 1 {
            let why = if e == IoEngine::Mmap {
                Some("ioengine=mmap maps one file per clone; use psync or a queueing engine")
            } else if x.strided().is_some() {
                Some("zonemode=strided walks one file's zones")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(format!(
                    "{} files per clone: {why} (iolab load --with-fio runs the job with the installed fio)",
                    self.nrfiles()
                ));
            }
        }
        if e == IoEngine::Mmap && self.direct {
            return Err("ioengine=mmap with direct=1: a mapping always goes through the page cache; use direct=0".into());
        }
        for (on, name) in [
            (x.hipri, "hipri"),
            (x.nowait, "nowait"),
            (x.uncached, "uncached"),
        ] {
            let ok = match name {
                "hipri" => matches!(e, IoEngine::Pvsync2 | IoEngine::IoUring),
                _ => e == IoEngine::Pvsync2,
            };
            if on && !ok {
                return Err(format!(
                    "{name}=1 applies to ioengine=pvsync2{}; this job uses ioengine={}",
                    if name == "hipri" { " or io_uring" } else { "" },
                    e.as_str()
                ));
            }
        }
        if x.userspace_reap && e != IoEngine::Libaio {
            return Err(format!(
                "userspace_reap=1 applies to ioengine=libaio; this job uses ioengine={}",
                e.as_str()
            ));
        }
        if let Some(v) = &x.verify {
            if v.kind == crate::job::verify::VerifyKind::Pattern && v.pattern.is_none() {
                return Err(
                    "verify=pattern needs verify_pattern=..., e.g. verify_pattern=0xdeadbeef"
                        .into(),
                );
            }
            if !self.writes() && !v.do_verify {
                return Err("verify with do_verify=0 on a job that only reads checks nothing: drop verify or set do_verify=1".into());
            }
        }
        if let Some(size) = self.size {
            if size < self.bs {
                return Err(format!(
                    "size ({size}) is smaller than bs ({}): each pass needs at least one block",
                    self.bs
                ));
            }
        }
        if self.bs > u64::from(u32::MAX) {
            return Err(format!("bs {} is too large: at most 4GiB", self.bs));
        }
        Ok(())
    }
}
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn patterns_know_their_directions() {
        assert!(Rw::Read.reads() && !Rw::Read.writes());
        assert!(Rw::RandRw.reads() && Rw::RandRw.writes() && Rw::RandRw.random());
        assert_eq!(Rw::parse("readwrite"), Some(Rw::ReadWrite));
        assert_eq!(Rw::parse("discard"), None);
        // Trims change data: every check before writing applies to them.
        assert!(Rw::RandTrim.writes() && !Rw::RandTrim.reads() && Rw::RandTrim.trims());
        assert_eq!(Rw::TrimWrite.offsets_as(), Rw::Write);
        assert!(!Rw::Read.trims());
        for name in [
            "read",
            "write",
            "randread",
            "randwrite",
            "rw",
            "randrw",
            "trim",
            "randtrim",
            "trimwrite",
            "randtrimwrite",
        ] {
            assert_eq!(Rw::parse(name).unwrap().as_str(), name);
        }
    }

    #[test]
    fn validation_explains() {
        let mut j = Job::new("a");
        assert!(j.validate().is_ok());
        j.direct = true;
        j.bs = 1000;
        assert!(j.validate().unwrap_err().contains("multiple of 512"));
        let mut c = Job::new("c");
        c.ioengine = IoEngine::CpuIo;
        assert!(c.validate().unwrap_err().contains("cpuload"));
        assert!(c.until_stopped());
        let mut s = Job::new("s");
        s.size = Some(100);
        assert!(s.validate().unwrap_err().contains("smaller than bs"));
    }

    #[test]
    fn several_files_refuse_what_walks_one_file() {
        let mut j = Job::new("m");
        j.x.nrfiles = 3;
        assert!(j.validate().is_ok());
        j.ioengine = IoEngine::Mmap;
        let e = j.validate().unwrap_err();
        assert!(e.contains("3 files per clone") && e.contains("mmap"), "{e}");
        j.ioengine = IoEngine::Psync;
        j.filename = Some("one".into());
        assert_eq!(j.nrfiles(), 1);
        assert!(j.validate().is_ok());
    }

    #[test]
    fn files_per_clone_stay_within_the_offsets_file_index() {
        let mut j = Job::new("m");
        j.x.nrfiles = 1 << 16;
        assert!(j.validate().is_ok());
        // File 65536 would be file 0 again (its index shifted out).
        j.x.nrfiles += 1;
        let e = j.validate().unwrap_err();
        assert!(e.contains("65537 files per clone: at most 65536"), "{e}");
    }
}
