//! What a clone thread is given ([`CloneSpec`]) and the random seeds it
//! derives from it.

use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use iolab_sys::cast;
use iolab_sys::ioprio::IoPrio;

use crate::job::model::Job;
use crate::run::live::{Control, Gate, LiveCounters};
use crate::run::shared::Shared;

/// Everything a clone thread needs.
pub struct CloneSpec {
    /// Index of the job in the load.
    pub job_idx: usize,
    /// Clone number within the job.
    pub clone: u32,
    /// The job.
    pub job: Arc<Job>,
    /// Where the clone's region starts in its files (`offset`,
    /// `offset_increment`, moved to a zone boundary with zonemode=zbd).
    pub base: u64,
    /// Bytes of the region the clone works in.
    pub size: u64,
    /// Bytes per pass (`io_size`, default `size`).
    pub io_size: u64,
    /// The clone's number across the load, from 1 (names fio's logs).
    pub number: usize,
    /// The files or devices (`nrfiles` of them; none for cpuio).
    pub targets: Vec<PathBuf>,
    /// zonemode=zbd: the zones of the clone's file.
    pub zbd: Option<Arc<crate::run::files::zbd::ZbdFile>>,
    /// I/O priority for this thread.
    pub ioprio: Option<IoPrio>,
    /// Load-wide stop.
    pub ctl: Arc<Control>,
    /// What the load's jobs share (stop flags, flow, steadystate).
    pub shared: Arc<Shared>,
    /// Live counters of this clone.
    pub live: Arc<LiveCounters>,
    /// Start gate of the clone's group.
    pub gate: Arc<Gate>,
    /// Setup outcome, with the job index: the thread id, or why setup
    /// failed.
    pub ready: mpsc::Sender<(usize, Result<i32, String>)>,
}

/// The clone's random seed: `randseed` if given, else fixed per job name
/// and clone with `randrepeat` (runs repeat their offsets), else from the
/// clock.
pub fn seed_for(spec: &CloneSpec) -> u64 {
    seed_of(&spec.job, spec.job_idx, spec.clone)
}

/// Clone `clone` of job `job_idx`'s seed (see [`seed_for`]).
pub fn seed_of(job: &Job, job_idx: usize, clone: u32) -> u64 {
    let base = if let Some(s) = job.x.randseed {
        s
    } else if job.randrepeat {
        // FNV-1a of the name: stable across runs and builds.
        job.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    } else {
        // randrepeat=0: new every run, but one value for the whole run, so
        // each of the clone's streams and the reported seed agree.
        static RUN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let run = *RUN.get_or_init(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(cast::duration_ns)
                .unwrap_or(0)
                ^ u64::from(std::process::id()) << 40
        });
        run ^ job_idx as u64
    };
    base ^ (u64::from(clone) << 32)
}

/// The seeds of a clone's random streams (`--debug=random` prints them as
/// fio's `rand_seeds[]`): offsets, pacing and start delay use the first;
/// the read/write mix and buffer contents the second.
pub fn clone_seeds(seed: u64) -> [u64; 2] {
    [seed, seed ^ 0x5eed]
}
