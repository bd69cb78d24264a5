//! The whole `iolab load` command, from what was typed (fio's dialect
//! already translated by the command line) to the report written:
//! `--version` and `--inflate-log`, the formats and `--output` checked
//! before anything runs (a long run never ends with nowhere to put its
//! report), the jobs built, the session run, every format rendered, and
//! `--with-fio`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_collect::Observe;
use iolab_load::{named, Job, LoadError, Override};
use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;

use super::status::{Periodic, StatusFormat};
use super::{with_fio, Request};
use crate::ExperimentError;

/// What `iolab load` was given, as typed: values are checked here, in one
/// place, so job files and flags give the same errors.
#[derive(Debug, Default)]
pub struct Command {
    /// `--version`: print fio's version line.
    pub version: bool,
    /// `--inflate-log`: expand a compressed log to stdout.
    pub inflate_log: Option<PathBuf>,
    /// `--output-format`: one or more of the formats, comma separated.
    pub output_format: Option<String>,
    /// `--json`: `--output-format json`.
    pub json: bool,
    /// `--output`: the report's file, else stdout.
    pub output: Option<PathBuf>,
    /// `--with-fio`: the arguments that go to the installed fio.
    pub with_fio: Option<Vec<String>>,
    /// `--debug`: fio's debug types.
    pub debug: Option<String>,
    /// `--status-interval`: a time.
    pub status_interval: Option<String>,
    /// What to run.
    pub jobs: JobSource,
    /// `--aux-path`: the directory for verify states.
    pub aux_path: Option<PathBuf>,
    /// `--readonly`.
    pub readonly: bool,
    /// `--max-jobs`.
    pub max_jobs: Option<u32>,
    /// `--ioprio`: rt:N, be:N or idle.
    pub ioprio: Option<String>,
    /// `--force`: write to block devices.
    pub force: bool,
    /// `--bandwidth-log`.
    pub bandwidth_log: bool,
    /// The collectors asked for, by registry name.
    pub observe: Vec<&'static str>,
}

/// Where the jobs come from: a job file or workload name, S-style
/// readers/writers, fio's command-line jobs, or options alone.
#[derive(Debug, Default)]
pub struct JobSource {
    /// A job file or a named workload.
    pub spec: Option<String>,
    /// `--readers N`.
    pub readers: Option<u32>,
    /// `--writers M`.
    pub writers: Option<u32>,
    /// `--pattern seq|rand` of the readers.
    pub pattern: Option<String>,
    /// `--lab NAME`: its mount point is every job's directory.
    pub lab: Option<String>,
    /// `--name`: the name of a job built from options.
    pub name: Option<String>,
    /// Every job's options given on the command line, in fio's names.
    pub overrides: Vec<Override>,
    /// fio's command-line jobs (repeated `--name`), as a job file's text.
    pub cmdline_jobs: Option<String>,
}

/// Runs the command. `Some(message)` when a job (or fio) failed after the
/// report was written: what was measured is not lost, and the command
/// still fails.
pub fn main(cmd: Command) -> Result<Option<String>, ExperimentError> {
    if cmd.version {
        // Exactly fio's line on stdout: clients parse `fio-MAJOR.MINOR`
        // from it. A person at a terminal is told what answered.
        iolab_sys::show!("{}", iolab_load::json::FIO_VERSION);
        if std::io::stderr().is_terminal() {
            iolab_sys::say!(
                "(iolab {}: `iolab load` follows {})",
                env!("CARGO_PKG_VERSION"),
                iolab_load::json::FIO_VERSION
            );
        }
        return Ok(None);
    }
    if let Some(p) = &cmd.inflate_log {
        let mut out = std::io::stdout().lock();
        iolab_load::inflate_log(p, &mut out).map_err(UsageError::new)?;
        return Ok(None);
    }
    let formats = output_formats(cmd.output_format.as_deref(), cmd.json)?;
    let output = match &cmd.output {
        Some(p) => Some((
            p.clone(),
            std::fs::File::create(p).map_err(|e| {
                UsageError::new(format!("--output {}: cannot create it: {e}", p.display()))
            })?,
        )),
        None => None,
    };
    if let Some(fio_args) = &cmd.with_fio {
        return run_with_fio(fio_args, &formats, output);
    }
    let debug = match cmd.debug.as_deref() {
        Some("?") => {
            iolab_sys::show!("{}", iolab_load::debug::list());
            return Ok(None);
        }
        Some(d) => iolab_load::debug::parse(d)?,
        None => Default::default(),
    };
    let status_every = cmd
        .status_interval
        .as_deref()
        .map(status_interval)
        .transpose()?;
    let lab_dir = cmd.jobs.lab.as_deref().map(lab_directory).transpose()?;
    let mut jobs = build_jobs(&cmd.jobs, lab_dir.as_deref())?;
    if let Some(d) = &cmd.aux_path {
        if !d.is_dir() {
            return Err(UsageError::new(format!(
                "--aux-path {}: not a directory (give an existing directory for the verify states)",
                d.display()
            ))
            .into());
        }
        for j in &mut jobs {
            j.x.aux_path = Some(d.clone());
        }
    }
    let json_status = formats.iter().any(|f| f.starts_with("json"));
    let req = Request {
        jobs,
        readonly: cmd.readonly,
        max_jobs: cmd.max_jobs,
        ioprio: cmd
            .ioprio
            .as_deref()
            .map(str::parse::<IoPrio>)
            .transpose()?,
        force: cmd.force,
        progress: std::io::stderr().is_terminal(),
        observe: Observe::of(cmd.observe.iter().copied())?,
        periodic: Periodic {
            status: status_every.map(|d| {
                let fmt = if json_status {
                    StatusFormat::Json
                } else {
                    StatusFormat::Text
                };
                (d, fmt)
            }),
            bandwidth_log: cmd.bandwidth_log,
        },
    };
    // Statuses go where the report goes (fio writes them to its output
    // too).
    let outcome = match &output {
        Some((_, f)) => super::run(req, &mut &*f),
        None => super::run(req, &mut std::io::stdout()),
    }?;
    let mut text = String::new();
    if debug.random {
        text.push_str(&iolab_load::debug::random(&outcome.report));
    }
    for f in &formats {
        text.push_str(&iolab_load::render::render(
            f,
            &outcome.report,
            &outcome.observed.documents,
            &outcome.observed.lines,
        )?);
    }
    // Errors (a closed pipe included) propagate; the binary ends quietly
    // on BrokenPipe.
    write_report(output, &text)?;
    let failed = outcome.report.failures().next().map(|f| f.message.clone());
    Ok(failed)
}

/// `--with-fio`: the job to the installed fio, its report written where
/// ours would be.
fn run_with_fio(
    fio_args: &[String],
    formats: &[String],
    output: Option<(PathBuf, std::fs::File)>,
) -> Result<Option<String>, ExperimentError> {
    let [format] = formats else {
        return Err(
            UsageError::new("--with-fio takes one --output-format: normal, json or json+").into(),
        );
    };
    let run = with_fio::run(fio_args, format)?;
    // fio's own complaints go where fio puts them.
    std::io::stderr()
        .write_all(run.fio_stderr.as_bytes())
        .map_err(|e| LoadError::io("standard error", e))?;
    // The report is written first, also when fio failed: what was
    // measured is not lost.
    write_report(output, &run.text)?;
    Ok(run.failed)
}

/// Writes the report to `--output` or stdout. The I/O error stays in the
/// error's chain, so a closed pipe is recognised.
fn write_report(output: Option<(PathBuf, std::fs::File)>, text: &str) -> Result<(), LoadError> {
    match output {
        Some((path, mut f)) => f
            .write_all(text.as_bytes())
            .map_err(|e| LoadError::io(format!("writing the report to {}", path.display()), e)),
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| LoadError::io("standard output", e)),
    }
}

/// The report formats asked for (`--output-format`, else `--json`, else
/// normal), checked before anything runs.
fn output_formats(spec: Option<&str>, json: bool) -> Result<Vec<String>, UsageError> {
    let spec = match (spec, json) {
        (Some(f), _) => f,
        (None, true) => "json",
        (None, false) => "normal",
    };
    let mut v = Vec::new();
    for f in spec.split(',') {
        let f = f.trim();
        if !iolab_load::render::FORMATS.contains(&f) {
            return Err(UsageError::new(format!(
                "--output-format {f}: expected normal, terse, json, json+ or table (several separated by commas)"
            )));
        }
        v.push(f.to_string());
    }
    Ok(v)
}

/// `--status-interval`: fio's times, where a bare number is seconds.
fn status_interval(t: &str) -> Result<Duration, UsageError> {
    t.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .or_else(|| iolab_sys::units::parse_duration(t).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            UsageError::new(format!(
                "--status-interval {t}: expected a time such as 1, 2s or 500ms"
            ))
        })
}

/// The mount point of lab `name`.
fn lab_directory(name: &str) -> Result<String, ExperimentError> {
    let lab = iolab_lab::open(name)?;
    let mnt = lab.mountpoint.ok_or_else(|| {
        UsageError::new(format!(
            "lab {name} has no filesystem (--fs none): use --filename /dev/{} --force to load its device",
            lab.top.name
        ))
    })?;
    Ok(mnt.to_string_lossy().into_owned())
}

/// The jobs `src` asks for, with the command line's options over every
/// job's (and a lab's mount point as their directory).
fn build_jobs(src: &JobSource, lab_dir: Option<&str>) -> Result<Vec<Job>, LoadError> {
    let mut overrides = src.overrides.clone();
    if let Some(d) = lab_dir {
        overrides.push(("directory".into(), d.to_string()));
    }
    let usage = |m: &str| LoadError::Usage(UsageError::new(m));
    if let Some(ini) = &src.cmdline_jobs {
        if src.spec.is_some() || src.readers.is_some() || src.writers.is_some() {
            return Err(usage(
                "jobs given with --name go alone: drop the job file, workload or --readers/--writers (or put the jobs in the file)",
            ));
        }
        let mut jobs = iolab_load::jobfile::parse(ini, Path::new("<command line>"))?;
        iolab_load::apply_overrides(&mut jobs, &overrides)?;
        return Ok(jobs);
    }
    let shorthand = src.readers.is_some() || src.writers.is_some();
    if src.name.is_some() && (src.spec.is_some() || shorthand) {
        return Err(usage(
            "--name names a job built from flags; a job file or workload names its own jobs",
        ));
    }
    if src.pattern.is_some() && !shorthand {
        return Err(usage("--pattern goes with --readers N and/or --writers M"));
    }
    match (&src.spec, shorthand) {
        (Some(_), true) => Err(usage(
            "give either a job file/workload name or --readers/--writers, not both",
        )),
        (Some(spec), false) => iolab_load::jobs_from_spec(spec, &overrides),
        (None, true) => {
            let pattern = match src.pattern.as_deref() {
                None => named::Pattern::Seq,
                Some(p) => named::Pattern::parse(p).ok_or_else(|| {
                    usage(&format!("--pattern {p}: expected seq or rand"))
                })?,
            };
            // An absent side is none of that kind (--readers 2 alone has
            // no writers).
            let s = named::Shorthand {
                readers: src.readers.unwrap_or(0),
                writers: src.writers.unwrap_or(0),
                pattern,
            };
            iolab_load::jobs_from_shorthand(&s, &overrides)
        }
        (None, false) if overrides.is_empty() => Err(usage(&format!(
            "nothing to run: give a job file, a workload ({}), --readers/--writers, or job flags such as --rw read --size 1g",
            named::NAMES.join(", ")
        ))),
        (None, false) => {
            let name = src.name.as_deref().unwrap_or("job");
            // fio lists a command-line job's --name among its options.
            if let Some(n) = &src.name {
                overrides.insert(0, ("name".into(), n.clone()));
            }
            Ok(vec![iolab_load::job_from_options(name, &overrides)?])
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_checked_and_json_is_a_shorthand() {
        assert_eq!(output_formats(None, false).unwrap(), ["normal"]);
        assert_eq!(output_formats(None, true).unwrap(), ["json"]);
        assert_eq!(
            output_formats(Some("json, terse"), true).unwrap(),
            ["json", "terse"]
        );
        assert!(output_formats(Some("xml"), false).is_err());
    }

    #[test]
    fn a_status_interval_is_seconds_or_a_time() {
        assert_eq!(status_interval("2").unwrap(), Duration::from_secs(2));
        assert_eq!(
            status_interval("500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert!(status_interval("0").is_err());
        assert!(status_interval("soon").is_err());
    }
}
