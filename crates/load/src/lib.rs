//! The workload engine: the background I/O (and CPU) load of every iolab
//! experiment, and `iolab load`.
//!
//! Jobs come from fio-style job files ([`jobfile`]), from command-line
//! options ([`job_from_options`]), from S-style readers/writers shorthand
//! or a named workload ([`named`]); [`jobs_from_spec`] takes either a name
//! or a job-file path, as `iolab startup --workloads` does.
//!
//! ```no_run
//! use iolab_load::{jobs_from_spec, start, StartOptions};
//! # fn main() -> Result<(), iolab_load::LoadError> {
//! let jobs = jobs_from_spec("1r1w", &[("directory".into(), "/mnt/lab".into())])?;
//! let load = start(jobs, StartOptions::default())?; // runs in background threads
//! // ... launch and time the target ...
//! let report = load.stop();                         // stops, returns what was measured
//! iolab_sys::show!("background read {} B, written {} B", report.read_bytes(), report.write_bytes());
//! # Ok(()) }
//! ```
//!
//! Each job's `numjobs` clones are threads of this process. Files are laid
//! out first if missing or short; block devices are written only with
//! `force`; a full disk stops the job that hit it and keeps what it
//! measured; Ctrl-C (`iolab_guard::stop_requested`) stops every job.
#![deny(missing_docs)]

mod buffer;
pub mod cmdprio;
mod coordinator;
mod cpu;
mod distribution;
mod engine;
mod error;
mod extra;
mod file_set;
pub mod fio_process;
pub mod fio_stats;
mod fiolog;
mod io_file;
pub mod iolog;
mod job;
pub mod jobfile;
pub mod json;
mod layout;
mod live;
pub mod named;
pub mod normal;
mod options;
mod options_iolog;
mod options_more;
mod pattern;
mod plan;
mod plat;
mod progress;
mod rate;
mod report;
mod runner;
mod shared;
mod sizes;
mod spec;
mod stats;
mod steady;
pub mod table;
pub mod terse;
mod timeline;
mod verify;
mod verify_state;
mod worker;
mod zones;

pub use cpu::CpuUse;
pub use error::{LoadError, Origin};
pub use fiolog::inflate as inflate_log;
pub use io_file::clone_paths;
pub use job::{CpuMode, Dir, DirPair, IoEngine, Job, Rw};
pub use options::supported as supported_options;
pub use plan::{NAMED_FILE_SIZE, NAMED_MIN_FILE_SIZE};
pub use report::{DirReport, DiskUtil, JobReport, LoadReport};
pub use runner::{run_to_completion, start, EndedClone, LiveSnapshot, RunningLoad, StartOptions};
pub use spec::{apply_overrides, job_from_options, jobs_from_shorthand, jobs_from_spec, Override};
pub use stats::{Latency, PERCENTILES};
pub use worker::{clone_seeds, Failure};
