//! `iolab load` — the workload engine's command line.
//!
//! Flags only collect what the user typed (as fio option names and text),
//! and fio's command-line dialect is translated here (`--KEY=VALUE` for any
//! fio option, repeated `--name` jobs, `--with-fio`'s split); the session
//! (`iolab_experiment::load_session::command`) checks every value, runs
//! the load and writes its report, for job files and flags alike, so both
//! give the same errors.

use clap::Args;
use iolab_experiment::load_session::command::{self, Command, JobSource};
use iolab_load::Override;

/// `iolab load` arguments: what to run (a job file, a workload name,
/// readers/writers or flags) and how to report it.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP, disable_version_flag = true)]
pub struct LoadArgs {
    /// A job file (fio-style INI) or a named workload: idle, 1r, 1w, 1r1w,
    /// 10r-seq, 5r5w-seq, 10r-rand, 5r5w-rand. Write ./NAME for a file
    /// named like a workload. Flags below override every job's options.
    #[arg(value_name = "JOBFILE|WORKLOAD")]
    pub spec: Option<String>,

    #[command(flatten)]
    pub job: JobFlags,

    /// S-style shorthand: N sequential/random reader threads.
    #[arg(long, value_name = "N")]
    pub readers: Option<u32>,

    /// S-style shorthand: M writer threads (sequential, looping like dd).
    #[arg(long, value_name = "M")]
    pub writers: Option<u32>,

    /// Readers' pattern for --readers/--writers: seq (1 MiB reads) or rand
    /// (4 KiB reads).
    #[arg(long, value_name = "seq|rand")]
    pub pattern: Option<String>,

    /// Run in lab NAME's filesystem (made by `iolab lab up`): sets
    /// --directory to its mount point.
    #[arg(long, value_name = "NAME", conflicts_with = "directory")]
    pub lab: Option<String>,

    /// I/O priority of the load's threads: rt:N, be:N (N 0-7, 0 highest)
    /// or idle.
    #[arg(long, value_name = "CLASS:LEVEL")]
    pub ioprio: Option<String>,

    /// Print fio-style JSON (jobs[].read.bw_bytes ...) instead of tables
    /// (the same as --output-format json).
    #[arg(long)]
    pub json: bool,

    /// normal (fio's report layout), terse (fio's terse v3), json, json+
    /// (with fio's latency bins), table (iolab's compact tables); several
    /// separated by commas.
    #[arg(long = "output-format", value_name = "FORMAT")]
    pub output_format: Option<String>,

    /// Write the report to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,

    /// fio's --max-jobs: refuse a run of more than N jobs in all (numjobs
    /// clones counted), before anything runs. fio's test harness passes it
    /// on every invocation.
    #[arg(long = "max-jobs", value_name = "N")]
    pub max_jobs: Option<u32>,

    /// fio's --aux-path: the directory for the files a run keeps beside
    /// its report (verify_state_save's states); default each job's
    /// directory.
    #[arg(long = "aux-path", value_name = "DIR")]
    pub aux_path: Option<std::path::PathBuf>,

    /// Allow writing to block devices (destroys their contents).
    #[arg(long)]
    pub force: bool,

    /// fio's --readonly: refuse, before anything runs, any job that writes.
    #[arg(long)]
    pub readonly: bool,

    /// fio's --debug=TYPE[,TYPE]: `random` prints each clone's random
    /// seeds (fio's rand_seeds[] lines) before the report; fio's other
    /// types are accepted and print nothing.
    #[arg(long, value_name = "TYPE")]
    pub debug: Option<String>,

    /// fio's --status-interval: while the load runs, write each job's
    /// progress every T (seconds, or 500ms ...): a JSON document per status
    /// with a JSON format, a line per job otherwise.
    #[arg(long = "status-interval", value_name = "T")]
    pub status_interval: Option<String>,

    /// fio's --bandwidth-log: write the aggregate bandwidth logs
    /// agg-read_bw.log and agg-write_bw.log (msec, KiB/s, dir, 0, 0 every
    /// 500 ms, all jobs together) in the current directory.
    #[arg(long = "bandwidth-log")]
    pub bandwidth_log: bool,

    /// fio's --version: print the fio release whose options, output and
    /// logs `iolab load` follows (`fio-3.33`), as `fio --version` does, so
    /// a program that checks its fio's version accepts it; on a terminal,
    /// iolab's own version follows on stderr.
    #[arg(long, short = 'v')]
    pub version: bool,

    /// fio's --inflate-log: expand a log written with
    /// log_store_compressed=1 (PREFIX_TYPE.log.fz) to standard output.
    #[arg(long = "inflate-log", value_name = "FILE")]
    pub inflate_log: Option<std::path::PathBuf>,

    /// Hand the job, unchanged, to the installed fio (job files and fio
    /// options iolab does not build run too); iolab reads fio's status
    /// every second (a job that stops moving bytes is reported) and puts
    /// the devices' own byte counts next to fio's, under "iolab" in JSON.
    #[arg(long = "with-fio")]
    pub with_fio: bool,

    /// The arguments for fio under --with-fio (set by iolab).
    #[arg(long = "fio-argv", hide = true)]
    pub fio_argv: Option<String>,

    /// Jobs of a fio command line with --name (set by iolab).
    #[arg(long = "fio-cmdline-jobs", hide = true)]
    pub cmdline_jobs: Option<String>,

    /// The collectors that observe the load, from the registry (`--cpu`,
    /// `--trace bio`, ...): their lines after the results, their documents
    /// under their names in --json. Those that follow a target's
    /// processes are refused: a load has none.
    #[command(flatten)]
    pub observe: super::observe::ObserveArgs,
}

const AFTER_HELP: &str = "\
Named workloads (the thesis's and the S suite's loads; all run until stopped
unless --runtime is given):
  idle          nothing
  1r, 1w, 1r1w  one sequential reader / writer / both
  10r-seq       10 sequential readers      5r5w-seq   5 sequential readers + 5 writers
  10r-rand      10 random readers          5r5w-rand  5 random readers + 5 writers
A reader reads its own laid-out file reader.N.0 with buffered 1 MiB reads (seq)
or 4 KiB reads (rand); a writer rewrites its file writer.N.0 from the start in
buffered 1 MiB writes, like a looping dd. Files are 512 MiB, or smaller to fit
the directory's free space (--size sets it).

Examples:
  iolab load 1r1w --lab phone --runtime 30
  iolab load jobs.fio --runtime 10 --json
  iolab load --rw randread --bs 4k --size 1g --direct --ioengine io_uring --iodepth 32 --runtime 10
  iolab load --readers 5 --writers 5 --pattern rand --directory /mnt/lab --ioprio idle";

/// Job options as flags, named like fio's options (`--rate-iops` or
/// `--rate_iops`); each overrides the option in every job.
#[derive(Debug, Args)]
pub struct JobFlags {
    /// Job name (for a job built from flags).
    #[arg(long)]
    pub name: Option<String>,
    /// File or block device to use (shared by all threads of a job).
    #[arg(long)]
    pub filename: Option<String>,
    /// Directory for the jobs' files (default: current directory).
    #[arg(long)]
    pub directory: Option<String>,
    /// read, write, randread, randwrite, rw, randrw.
    #[arg(long)]
    pub rw: Option<String>,
    /// Percentage of reads in rw/randrw.
    #[arg(long)]
    pub rwmixread: Option<String>,
    /// Block size, e.g. 4k, 1m.
    #[arg(long)]
    pub bs: Option<String>,
    /// Bytes per file and pass, e.g. 512m.
    #[arg(long)]
    pub size: Option<String>,
    /// Threads per job.
    #[arg(long)]
    pub numjobs: Option<String>,
    /// I/Os in flight per thread (io_uring).
    #[arg(long)]
    pub iodepth: Option<String>,
    /// sync, psync, io_uring or cpuio.
    #[arg(long)]
    pub ioengine: Option<String>,
    /// O_DIRECT (bare flag = 1).
    #[arg(long, num_args = 0..=1, default_missing_value = "1", value_name = "0|1")]
    pub direct: Option<String>,
    /// Inverse of --direct.
    #[arg(long, num_args = 0..=1, default_missing_value = "1", value_name = "0|1")]
    pub buffered: Option<String>,
    /// Stop after this long (seconds, or 500ms, 2m ...).
    #[arg(long)]
    pub runtime: Option<String>,
    /// Keep going until the runtime ends (or until stopped, without one).
    #[arg(long = "time-based", alias = "time_based")]
    pub time_based: bool,
    /// Run this long before measuring.
    #[arg(long = "ramp-time", alias = "ramp_time")]
    pub ramp_time: Option<String>,
    /// Bandwidth limit per thread: RATE or READ,WRITE (bytes/s, e.g. 10m).
    #[arg(long)]
    pub rate: Option<String>,
    /// IOPS limit per thread: N or READ,WRITE.
    #[arg(long = "rate-iops", alias = "rate_iops")]
    pub rate_iops: Option<String>,
    /// fsync after every N writes.
    #[arg(long)]
    pub fsync: Option<String>,
    /// fdatasync after every N writes.
    #[arg(long)]
    pub fdatasync: Option<String>,
    /// fsync the file at the end.
    #[arg(long = "end-fsync", alias = "end_fsync", num_args = 0..=1, default_missing_value = "1", value_name = "0|1")]
    pub end_fsync: Option<String>,
    /// Passes over the file.
    #[arg(long)]
    pub loops: Option<String>,
    /// Drop the file's cache before each pass (default 1).
    #[arg(long, num_args = 0..=1, default_missing_value = "1", value_name = "0|1")]
    pub invalidate: Option<String>,
    /// Switch the device holding the files to this I/O scheduler (restored at exit; root).
    #[arg(long)]
    pub ioscheduler: Option<String>,
    /// cpuio: percent of a CPU to burn.
    #[arg(long)]
    pub cpuload: Option<String>,
    /// cpuio: noop or qsort.
    #[arg(long)]
    pub cpumode: Option<String>,
    /// cpuio: cycle length in microseconds.
    #[arg(long)]
    pub cpuchunks: Option<String>,
    /// Any other fio option as KEY=VALUE (repeatable); `--KEY=VALUE` and a
    /// bare `--KEY` for fio options without a flag of their own are
    /// turned into this, e.g. --norandommap --bssplit=4k/50:64k/50.
    #[arg(long = "opt", value_name = "KEY=VALUE")]
    pub opt: Vec<String>,
}

impl JobFlags {
    /// The options given, in fio's names, excluding `name`.
    fn overrides(&self) -> Vec<Override> {
        let pairs: [(&str, &Option<String>); 24] = [
            ("filename", &self.filename),
            ("directory", &self.directory),
            ("rw", &self.rw),
            ("rwmixread", &self.rwmixread),
            ("bs", &self.bs),
            ("size", &self.size),
            ("numjobs", &self.numjobs),
            ("iodepth", &self.iodepth),
            ("ioengine", &self.ioengine),
            ("direct", &self.direct),
            ("buffered", &self.buffered),
            ("runtime", &self.runtime),
            ("ramp_time", &self.ramp_time),
            ("rate", &self.rate),
            ("rate_iops", &self.rate_iops),
            ("fsync", &self.fsync),
            ("fdatasync", &self.fdatasync),
            ("end_fsync", &self.end_fsync),
            ("loops", &self.loops),
            ("invalidate", &self.invalidate),
            ("ioscheduler", &self.ioscheduler),
            ("cpuload", &self.cpuload),
            ("cpumode", &self.cpumode),
            ("cpuchunks", &self.cpuchunks),
        ];
        let mut v: Vec<Override> = pairs
            .iter()
            .filter_map(|(k, val)| val.as_ref().map(|x| (k.to_string(), x.clone())))
            .collect();
        if self.time_based {
            v.push(("time_based".into(), "1".into()));
        }
        for o in &self.opt {
            let (k, val) = o.split_once('=').unwrap_or((o.as_str(), "1"));
            v.push((k.trim().to_string(), val.to_string()));
        }
        v
    }
}

/// fio's command-line form: `iolab load --norandommap --bssplit=4k/50:8k/50`.
/// A `--KEY[=VALUE]` after `load` whose KEY is a fio option iolab knows and
/// not one of `load`'s own flags becomes `--opt KEY=VALUE`, so every option
/// of the job-file table is a flag too; anything else is left to clap,
/// which rejects unknown flags with a suggestion.
pub fn fio_flags(argv: Vec<std::ffi::OsString>, cmd: &clap::Command) -> Vec<std::ffi::OsString> {
    let Some(at) = argv.iter().position(|a| a == "load") else {
        return argv;
    };
    let Some(load) = cmd.find_subcommand("load") else {
        return argv;
    };
    let own: Vec<String> = load
        .get_arguments()
        .flat_map(|a| {
            a.get_long()
                .into_iter()
                .chain(a.get_all_aliases().into_iter().flatten())
                .map(str::to_string)
        })
        .collect();
    let known: Vec<&str> = iolab_load::supported_options().collect();
    let mut out: Vec<std::ffi::OsString> = argv[..=at].to_vec();
    // --with-fio: everything but iolab's own flags goes to fio untouched.
    if argv[at + 1..].iter().any(|a| a == "--with-fio") {
        let (kept, fio) = super::load_with_fio::split(&argv[at + 1..]);
        out.extend(kept);
        out.push("--fio-argv".into());
        out.push(fio.into());
        return out;
    }
    // Several --name: fio's command-line jobs, turned into a job file.
    let job_flags: Vec<String> =
        <JobFlags as clap::Args>::augment_args(clap::Command::new("jobflags"))
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect();
    let not_job: Vec<(String, bool)> = load
        .get_arguments()
        .filter(|a| {
            a.get_long()
                .is_some_and(|l| !job_flags.iter().any(|j| j == l))
        })
        .flat_map(|a| {
            let takes = a.get_action().takes_values();
            a.get_long()
                .into_iter()
                .chain(a.get_all_aliases().into_iter().flatten())
                .map(move |l| (l.to_string(), takes))
        })
        .chain([("help".to_string(), false)])
        .collect();
    if let Some((kept, ini)) = super::load_fio::cmdline_jobs(&argv[at + 1..], &not_job) {
        out.extend(kept);
        out.push("--fio-cmdline-jobs".into());
        out.push(ini.into());
        return out;
    }
    for a in &argv[at + 1..] {
        let s = a.to_string_lossy();
        if let Some(flag) = s.strip_prefix("--") {
            let (k, v) = flag.split_once('=').unwrap_or((flag, "1"));
            // Every `--KEY` that is not one of load's own flags goes to the
            // option table, which knows fio's names and suggests the
            // nearest for a misspelled one.
            // clap's own --help is not among the arguments listed.
            if !own.iter().any(|o| o == k)
                && k != "help"
                && !k.is_empty()
                && (known.contains(&k) || !k.contains('-'))
            {
                out.push("--opt".into());
                out.push(format!("{k}={v}").into());
                continue;
            }
        }
        out.push(a.clone());
    }
    out
}

/// Runs a load and prints its report.
pub fn run(a: LoadArgs) -> anyhow::Result<()> {
    let with_fio = if a.with_fio {
        Some(super::load_with_fio::fio_args(a.fio_argv.as_deref())?)
    } else {
        None
    };
    let cmd = Command {
        version: a.version,
        inflate_log: a.inflate_log,
        output_format: a.output_format,
        json: a.json,
        output: a.output,
        with_fio,
        debug: a.debug,
        status_interval: a.status_interval,
        jobs: JobSource {
            overrides: a.job.overrides(),
            spec: a.spec,
            readers: a.readers,
            writers: a.writers,
            pattern: a.pattern,
            lab: a.lab,
            name: a.job.name,
            cmdline_jobs: a.cmdline_jobs,
        },
        aux_path: a.aux_path,
        readonly: a.readonly,
        max_jobs: a.max_jobs,
        ioprio: a.ioprio,
        force: a.force,
        bandwidth_log: a.bandwidth_log,
        observe: a.observe.names(),
    };
    if let Some(why) = command::main(cmd)? {
        anyhow::bail!("{why}");
    }
    Ok(())
}
