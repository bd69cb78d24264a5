//! fio's command-line conventions that `iolab load` follows beyond single
//! options: jobs defined by repeated `--name` (fio's command-line job
//! files), `--debug=TYPE`, and what is written while the load runs
//! (`--status-interval`, `--bandwidth-log`).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use iolab_load::{LiveSnapshot, RunningLoad};
use iolab_sys::UsageError;

/// fio's `--debug` types (fio 3.33's `debug_levels`).
pub const DEBUG_TYPES: [&str; 19] = [
    "process",
    "file",
    "io",
    "mem",
    "blktrace",
    "verify",
    "random",
    "parse",
    "diskutil",
    "job",
    "mutex",
    "profile",
    "time",
    "net",
    "rate",
    "compress",
    "steadystate",
    "helperthread",
    "zbd",
];

/// What `--debug` asked for that iolab prints: `random` (each clone's
/// seeds, as fio's `rand_seeds[]`). The other types are accepted and print
/// nothing: their subjects are fio's internals.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Debug {
    /// `random`: print the seeds.
    pub random: bool,
}

/// Parses `--debug=TYPE[,TYPE]` (`all` for every type).
pub fn parse_debug(spec: &str) -> Result<Debug, UsageError> {
    let mut d = Debug::default();
    for t in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match t {
            "all" | "random" => d.random = true,
            t if DEBUG_TYPES.contains(&t) => {}
            t => {
                return Err(UsageError::new(format!(
                    "--debug {t}: expected one or more of {}, or all (comma separated)",
                    DEBUG_TYPES.join(", ")
                )))
            }
        }
    }
    Ok(d)
}

/// fio's `--debug=random` lines for every clone, as fio writes them (type,
/// pid, message); random_seed.py and people diffing runs read them.
pub fn debug_random(r: &iolab_load::LoadReport) -> String {
    let pid = std::process::id();
    let mut out = String::new();
    for j in &r.jobs {
        for &seed in &j.seeds {
            let seeds = iolab_load::clone_seeds(seed);
            let _ = writeln!(out, "random   {pid:<6} FIO_RAND_NR_OFFS={}", seeds.len());
            for (i, s) in seeds.iter().enumerate() {
                let _ = writeln!(out, "random   {pid:<6} rand_seeds[{i}]={s}");
            }
        }
    }
    out
}

/// fio's command-line jobs: with `--name` given more than once, each
/// `--name` starts a job, the options after it are that job's, and the
/// options before the first are global. The fio options of `args` (what
/// follows `load`) become a job file's text; load's own flags (`own`, with
/// whether each takes a value) stay on the command line. `None` with fewer
/// than two `--name`s.
pub fn cmdline_jobs(args: &[OsString], own: &[(String, bool)]) -> Option<(Vec<OsString>, String)> {
    let is_name = |a: &OsString| {
        let s = a.to_string_lossy();
        s == "--name" || s.starts_with("--name=")
    };
    if args.iter().filter(|a| is_name(a)).count() < 2 {
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
        // `--rw read` as well as `--rw=read`; a bare `--norandommap` is 1.
        let value = match inline {
            Some(v) => v,
            None if i < args.len() && !args[i].to_string_lossy().starts_with("--") => {
                i += 1;
                args[i - 1].to_string_lossy().into_owned()
            }
            None => "1".into(),
        };
        let key = key.replace('-', "_");
        if key == "name" {
            let _ = writeln!(ini, "[{value}]");
        } else {
            let _ = writeln!(ini, "{key}={value}");
        }
    }
    Some((kept, ini))
}

/// What is written while the load runs.
pub struct Periodic {
    /// `--status-interval`: a status every this long.
    pub status: Option<(Duration, StatusFormat)>,
    /// `--bandwidth-log`: fio's aggregate logs `agg-read_bw.log` and
    /// `agg-write_bw.log` in the current directory.
    pub bandwidth_log: bool,
}

/// How a status is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StatusFormat {
    /// One JSON document per interval, fio's field names.
    Json,
    /// One line per job.
    Text,
}

/// fio's aggregate bandwidth logs sample every 500 ms (`bw_avg_time`).
const AGG_LOG_MS: u64 = 500;

impl Periodic {
    /// True when nothing is asked for.
    pub fn idle(&self) -> bool {
        self.status.is_none() && !self.bandwidth_log
    }

    /// Waits for the load to end, writing statuses to `out` and the
    /// aggregate logs meanwhile.
    pub fn watch(&self, load: &RunningLoad, out: &mut dyn std::io::Write) -> anyhow::Result<()> {
        let t0 = Instant::now();
        let mut logs = if self.bandwidth_log {
            Some(AggLogs::create()?)
        } else {
            None
        };
        let mut next_status = self.status.map(|(d, _)| t0 + d);
        let mut next_log = t0 + Duration::from_millis(AGG_LOG_MS);
        let mut last = (t0, LiveSnapshot::default());
        while !load.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
            let now = Instant::now();
            if logs.is_some() && now >= next_log {
                let snap = load.snapshot();
                if let Some(l) = &mut logs {
                    l.sample(t0, now, &last, &snap)?;
                }
                last = (now, snap);
                next_log += Duration::from_millis(AGG_LOG_MS);
            }
            if let (Some(at), Some((every, fmt))) = (next_status, self.status) {
                if now >= at {
                    out.write_all(status(load, fmt, now - t0).as_bytes())?;
                    out.flush()?;
                    next_status = Some(at + every);
                }
            }
        }
        if let Some(l) = &mut logs {
            l.flush()?;
        }
        Ok(())
    }
}

/// One status: per job, what it has moved so far.
fn status(load: &RunningLoad, fmt: StatusFormat, el: Duration) -> String {
    let jobs = load.job_snapshots();
    let ms = el.as_millis().max(1) as u64;
    match fmt {
        StatusFormat::Json => {
            let dir = |bytes: u64, ios: u64| {
                serde_json::json!({
                    "io_bytes": bytes,
                    "io_kbytes": bytes / 1024,
                    "bw_bytes": bytes * 1000 / ms,
                    "bw": bytes * 1000 / ms / 1024,
                    "iops": ios as f64 * 1000.0 / ms as f64,
                    "runtime": ms,
                    "total_ios": ios,
                })
            };
            let doc = serde_json::json!({
                "fio version": iolab_load::json::FIO_VERSION,
                "iolab version": concat!("iolab-", env!("CARGO_PKG_VERSION")),
                "timestamp_ms": std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis() as u64)
                    .unwrap_or(0),
                "status": true,
                "jobs": jobs.iter().map(|(name, s)| serde_json::json!({
                    "jobname": name,
                    "elapsed": el.as_secs(),
                    "read": dir(s.read_bytes, s.read_ios),
                    "write": dir(s.write_bytes, s.write_ios),
                })).collect::<Vec<_>>(),
            });
            serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
        }
        StatusFormat::Text => {
            let mut t = String::new();
            for (name, s) in &jobs {
                let _ = writeln!(
                    t,
                    "{name}: {:.1}s: read io={} ({} I/Os), write io={} ({} I/Os)",
                    el.as_secs_f64(),
                    iolab_sys::units::format_bytes(s.read_bytes),
                    s.read_ios,
                    iolab_sys::units::format_bytes(s.write_bytes),
                    s.write_ios
                );
            }
            t
        }
    }
}

/// `agg-read_bw.log` and `agg-write_bw.log`: `msec, KiB/s, dir, 0, 0` every
/// 500 ms, all jobs together (fio's aggregate bandwidth logs).
struct AggLogs {
    read: std::io::BufWriter<std::fs::File>,
    write: std::io::BufWriter<std::fs::File>,
}

impl AggLogs {
    fn create() -> anyhow::Result<AggLogs> {
        let open = |p: &str| {
            std::fs::File::create(p)
                .map(std::io::BufWriter::new)
                .map_err(|e| UsageError::new(format!("--bandwidth-log: cannot create {p}: {e}")))
        };
        Ok(AggLogs {
            read: open("agg-read_bw.log")?,
            write: open("agg-write_bw.log")?,
        })
    }

    fn sample(
        &mut self,
        t0: Instant,
        now: Instant,
        last: &(Instant, LiveSnapshot),
        snap: &LiveSnapshot,
    ) -> std::io::Result<()> {
        let ms = now.saturating_duration_since(last.0).as_millis().max(1) as u64;
        let at = now.saturating_duration_since(t0).as_millis();
        let kib = |b: u64, a: u64| b.saturating_sub(a) * 1000 / ms / 1024;
        writeln!(
            self.read,
            "{at}, {}, 0, 0, 0",
            kib(snap.read_bytes, last.1.read_bytes)
        )?;
        writeln!(
            self.write,
            "{at}, {}, 1, 0, 0",
            kib(snap.write_bytes, last.1.write_bytes)
        )
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.read.flush()?;
        self.write.flush()
    }
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
            "[global]\nsize=1M\n[a]\nrw=randrw\n[b]\ntime_based=1\nrw=read\n"
        );
        let jobs = iolab_load::jobfile::parse(&ini, std::path::Path::new("cmdline")).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[1].name, "b");
        assert!(cmdline_jobs(&os(&["--name=a", "--rw=read"]), &own).is_none());
    }

    #[test]
    fn debug_types_are_fios() {
        assert!(parse_debug("random").unwrap().random);
        assert!(parse_debug("all").unwrap().random);
        assert!(!parse_debug("io,file").unwrap().random);
        assert!(parse_debug("bogus").is_err());
    }
}
