//! From what the user typed to a job list: a named workload, a job file,
//! readers/writers shorthand or a single job described by flags, each
//! optionally overridden by `key=value` options (the command line's
//! `--runtime 10 --directory /mnt/lab`, applied to every job).

use std::path::Path;

use crate::error::{LoadError, Origin};
use crate::job::jobfile;
use crate::job::model::Job;
use crate::job::named::{self, Shorthand};
use crate::job::options;

/// An option set on the command line, applied to every job: fio's option
/// name (`runtime`, `rate_iops`) and its value as typed (`1` for flags).
pub type Override = (String, String);

/// Jobs for a workload spec as `iolab load` and `iolab startup
/// --workloads` take it: a named workload (`1r1w`, see [`named::NAMES`]) or
/// the path of a job file. A name wins over a file of the same name; write
/// `./1r` to mean the file.
pub fn jobs_from_spec(spec: &str, overrides: &[Override]) -> Result<Vec<Job>, LoadError> {
    let mut jobs = match named::lookup(spec) {
        Some(s) => named::generate(&s),
        None => jobfile::read(Path::new(spec))?,
    };
    apply_overrides(&mut jobs, overrides)?;
    Ok(jobs)
}

/// Jobs for `--readers N --writers M --pattern P`, overridden.
pub fn jobs_from_shorthand(s: &Shorthand, overrides: &[Override]) -> Result<Vec<Job>, LoadError> {
    let mut jobs = named::generate(s);
    apply_overrides(&mut jobs, overrides)?;
    Ok(jobs)
}

/// One job described entirely by options (fio's command-line jobs).
pub fn job_from_options(name: &str, options: &[Override]) -> Result<Job, LoadError> {
    let mut jobs = vec![Job::new(name)];
    apply_overrides(&mut jobs, options)?;
    Ok(jobs.remove(0))
}

/// Applies every override to every job, then re-checks each job.
pub fn apply_overrides(jobs: &mut [Job], overrides: &[Override]) -> Result<(), LoadError> {
    for job in jobs.iter_mut() {
        for (key, value) in overrides {
            options::apply(job, key, Some(value))
                .map_err(|why| LoadError::at(&Origin::Flag, flag_error(key, &why)))?;
        }
        job.validate()
            .map_err(|why| LoadError::at(&Origin::Flag, format!("job {}: {why}", job.name)))?;
    }
    Ok(())
}

/// Rewrites `bs=x: ...` as `--bs x: ...` so the message matches what the
/// user typed.
fn flag_error(key: &str, why: &str) -> String {
    let flag = format!("--{}", key.replace('_', "-"));
    match why.strip_prefix(&format!("{key}=")) {
        Some(rest) => match rest.split_once(':') {
            Some((value, tail)) => format!("{flag} {value}:{tail}"),
            None => format!("{flag} {rest}"),
        },
        None => format!("{flag}: {why}"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ov(k: &str, v: &str) -> Override {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn named_specs_take_overrides() {
        let jobs =
            jobs_from_spec("1r1w", &[ov("runtime", "5"), ov("directory", "/mnt/lab")]).unwrap();
        assert_eq!(jobs.len(), 2);
        assert!(jobs
            .iter()
            .all(|j| j.runtime == Some(Duration::from_secs(5))));
        assert!(jobs.iter().all(|j| !j.until_stopped()));
        assert!(jobs_from_spec("idle", &[]).unwrap().is_empty());
    }

    #[test]
    fn unknown_specs_explain_both_forms() {
        let e = jobs_from_spec("2r2w", &[]).unwrap_err();
        assert!(iolab_sys::is_usage(&e));
        let msg = e.to_string();
        assert!(msg.contains("2r2w") && msg.contains("5r5w-rand"), "{msg}");
    }

    #[test]
    fn flag_errors_read_like_flags() {
        let e = job_from_options("j", &[ov("bs", "huge")]).unwrap_err();
        assert!(iolab_sys::is_usage(&e));
        assert!(
            e.to_string().starts_with("--bs huge: expected a size"),
            "{e}"
        );
        let e = job_from_options("j", &[ov("ioengine", "cpuio")]).unwrap_err();
        assert!(e.to_string().contains("cpuload"), "{e}");
    }

    #[test]
    fn flag_job() {
        let j = job_from_options(
            "j",
            &[
                ov("rw", "randread"),
                ov("bs", "4k"),
                ov("iodepth", "32"),
                ov("time_based", "1"),
            ],
        )
        .unwrap();
        assert_eq!(j.iodepth, 32);
        assert!(j.time_based);
    }
}
