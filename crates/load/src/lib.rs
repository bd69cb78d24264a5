//! The workload engine: the background I/O (and CPU) load of every iolab
//! experiment, and `iolab load`'s jobs, run and output (the command's
//! session, which adds the guard, collectors and statuses, is
//! `iolab_experiment::load_session`).
//!
//! Jobs come from fio-style job files ([`jobfile`]: the job in [`job`], the run in [`run`], fio's output formats in [`output`]), from command-line
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

mod error;
pub mod fio_process;
pub mod job;
pub mod output;
pub mod run;

// The paths other crates know, kept as they were before the split into
// job/, run/ and output/.
pub use job::{cmdprio, jobfile, named};
pub use output::{debug, json, normal, render, table, terse};
pub use run::files::iolog;
pub use run::sinks::fio_stats;

pub use error::{LoadError, Origin};
pub use job::kinds::{CpuMode, Dir, DirPair, IoEngine, Rw};
pub use job::model::Job;
pub use job::options::supported as supported_options;
pub use job::spec::{
    apply_overrides, job_from_options, jobs_from_shorthand, jobs_from_spec, Override,
};
pub use run::clone::{clone_seeds, Failure};
pub use run::files::io_file::{clone_paths, devices_of};
pub use run::plan::{NAMED_FILE_SIZE, NAMED_MIN_FILE_SIZE};
pub use run::report::{DirReport, DiskUtil, JobReport, LoadReport};
pub use run::runner::{
    run_to_completion, start, EndedClone, LiveSnapshot, RunningLoad, StartOptions,
};
pub use run::sinks::cpu::CpuUse;
pub use run::sinks::logs::inflate as inflate_log;
pub use run::sinks::stats::{Latency, PERCENTILES};
