//! fio's command-line convention that `iolab load` follows beyond single
//! options: jobs defined by repeated `--name` (fio's command-line job
//! files). `--debug=TYPE` is `iolab_load::debug`'s.

use std::ffi::OsString;
use std::fmt::Write as _;

/// fio's command-line jobs: each `--name` starts a job, the options after
/// it are that job's, and the options before the first are global. The fio
/// options of `args` (what follows `load`) become a job file's text;
/// load's own flags (`own`, with whether each takes a value) stay on the
/// command line. `None` without a `--name` (iolab's own flags, a job file
/// or a named workload).
pub fn cmdline_jobs(args: &[OsString], own: &[(String, bool)]) -> Option<(Vec<OsString>, String)> {
    let is_name = |a: &OsString| {
        let s = a.to_string_lossy();
        s == "--name" || s.starts_with("--name=")
    };
    // One --name is a command-line job too: as a job file's, its options
    // take fio's forms (`--time_based=1`, a repeated `--size` whose last
    // value wins).
    if !args.iter().any(is_name) {
        return None;
    }
    let mut kept = Vec::new();
    let mut ini = String::from("[global]\n");
    let mut i = 0;
    while i < args.len() {
        let s = args[i].to_string_lossy().into_owned();
        i += 1;
        let Some(flag) = s.strip_prefix("--") else {
            kept.push(OsString::from(s));
            continue;
        };
        let (key, inline) = match flag.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (flag.to_string(), None),
        };
        if let Some((_, takes)) = own.iter().find(|(o, _)| *o == key) {
            kept.push(OsString::from(&s));
            if *takes && inline.is_none() && i < args.len() {
                kept.push(args[i].clone());
                i += 1;
            }
            continue;
        }
        // `--rw read` as well as `--rw=read`; a bare `--norandommap`
        // stays bare, as fio lists it (not at all among a job's options).
        let value = match inline {
            Some(v) => Some(v),
            None if i < args.len() && !args[i].to_string_lossy().starts_with("--") => {
                i += 1;
                Some(args[i - 1].to_string_lossy().into_owned())
            }
            None => None,
        };
        let key = key.replace('-', "_");
        match (key.as_str(), value) {
            // A command-line job lists its name among its options, as in
            // fio; a job file's section does not.
            ("name", Some(v)) => {
                let _ = writeln!(ini, "[{v}]\nname={v}");
            }
            (_, Some(v)) => {
                let _ = writeln!(ini, "{key}={v}");
            }
            (_, None) => {
                let _ = writeln!(ini, "{key}");
            }
        }
    }
    Some((kept, ini))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn repeated_names_make_a_job_file() {
        let own = vec![("output".to_string(), true), ("max-jobs".to_string(), true)];
        let (kept, ini) = cmdline_jobs(
            &os(&[
                "--max-jobs=4",
                "--output",
                "x.json",
                "--size=1M",
                "--name=a",
                "--rw",
                "randrw",
                "--name=b",
                "--time-based",
                "--rw=read",
            ]),
            &own,
        )
        .unwrap();
        assert_eq!(kept, os(&["--max-jobs=4", "--output", "x.json"]));
        assert_eq!(
            ini,
            // A command-line job lists its name; a bare flag stays bare (fio
            // lists neither a section's name nor bare flags).
            "[global]\nsize=1M\n[a]\nname=a\nrw=randrw\n[b]\nname=b\ntime_based\nrw=read\n"
        );
        let jobs = iolab_load::jobfile::parse(&ini, std::path::Path::new("cmdline")).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[1].name, "b");
        assert!(jobs[1].time_based);
        assert_eq!(
            jobs[1].options,
            [("name".into(), "b".into()), ("rw".into(), "read".into())]
        );
        assert!(cmdline_jobs(&os(&["--rw=read", "job.fio"]), &own).is_none());
        let (_, one) = cmdline_jobs(&os(&["--name=a", "--size=1M", "--size=2M"]), &own).unwrap();
        assert_eq!(one, "[global]\n[a]\nname=a\nsize=1M\nsize=2M\n");
    }
}
