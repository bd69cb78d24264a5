//! An installed fio run as a child process, watched through its own
//! status reports: `--status-interval=1` with JSON output to a file, read
//! as it grows. Used by `iolab load --with-fio` and by startup's background
//! loads with `--with-fio`, so a job file iolab does not build still runs,
//! with iolab's byte accounting and health checks on top.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use iolab_sys::ioprio::IoPrio;
use serde_json::Value;

/// The installed fio, or why there is none (`--with-fio`, `iolab load`'s
/// and startup's).
pub fn fio_path() -> Result<PathBuf, iolab_sys::UsageError> {
    iolab_spawn::resolve("fio").ok_or_else(|| {
        iolab_sys::UsageError::new(
            "--with-fio: no fio in PATH; install it (apt-get install fio) or drop --with-fio",
        )
    })
}

/// A running fio and what its reports said so far.
pub struct FioChild {
    child: Child,
    dir: PathBuf,
    out: PathBuf,
    read_at: u64,
    pending: Vec<u8>,
    last: Option<Value>,
    docs: usize,
    status: Option<ExitStatus>,
    /// Per job (name and index): its bytes and when they last changed.
    moved: HashMap<String, (u64, Instant)>,
    /// Read and written bytes by the newest report whose counts could be
    /// read.
    counted: (u64, u64),
    /// Reports whose counts could not be read, and why (each once).
    warnings: Vec<String>,
}

impl FioChild {
    /// Starts `fio` with `args`, JSON (or json+) reports every second to a
    /// file of its own, and the I/O priority `prio` (inherited by the
    /// processes fio forks for its jobs).
    pub fn spawn(
        fio: &Path,
        args: &[String],
        json_plus: bool,
        prio: Option<IoPrio>,
    ) -> std::io::Result<FioChild> {
        let dir = std::env::temp_dir().join(format!(
            "iolab-fio-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let out = dir.join("fio.json");
        let err = File::create(dir.join("stderr"))?;
        let mut cmd = Command::new(fio);
        cmd.args(args)
            .arg(format!(
                "--output-format={}",
                if json_plus { "json+" } else { "json" }
            ))
            .arg("--status-interval=1")
            .arg(format!("--output={}", out.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // A file, not a pipe: a long run's messages never block fio.
            .stderr(Stdio::from(err))
            // Its own process group: a Ctrl-C reaches iolab, which passes
            // one SIGINT on, and fio still writes its report.
            .process_group(0);
        if let Some(p) = prio {
            // SAFETY: ioprio_set is one syscall on the forked child itself.
            unsafe {
                cmd.pre_exec(move || p.set_for(0));
            }
        }
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        Ok(FioChild {
            child,
            dir,
            out,
            read_at: 0,
            pending: Vec::new(),
            last: None,
            docs: 0,
            status: None,
            moved: HashMap::new(),
            counted: (0, 0),
            warnings: Vec::new(),
        })
    }

    /// Reads the reports fio appended since the last call; the number of
    /// complete reports so far.
    pub fn poll(&mut self) -> usize {
        if let Ok(mut f) = File::open(&self.out) {
            if f.seek(SeekFrom::Start(self.read_at)).is_ok() {
                let mut buf = Vec::new();
                if let Ok(n) = f.read_to_end(&mut buf) {
                    self.read_at += n as u64;
                    self.pending.extend_from_slice(&buf);
                }
            }
        }
        // fio may print lines before its JSON (notes): start at a '{'.
        let Some(at) = self.pending.iter().position(|&b| b == b'{') else {
            return self.docs;
        };
        let mut stream =
            serde_json::Deserializer::from_slice(&self.pending[at..]).into_iter::<Value>();
        let mut used = 0;
        let mut new = Vec::new();
        while let Some(Ok(v)) = stream.next() {
            used = stream.byte_offset();
            new.push(v);
        }
        self.pending.drain(..at + used);
        for doc in new {
            self.docs += 1;
            self.count(&doc);
            self.last = Some(doc);
        }
        self.docs
    }

    /// Takes a report's byte counts: each job's (for [`FioChild::quiet_jobs`])
    /// and the read and written totals. A report without them (another
    /// fio's fields) is not counted as moving nothing: it is a warning.
    fn count(&mut self, doc: &Value) {
        let now = Instant::now();
        let jobs = match job_counts(doc) {
            Ok(j) => j,
            Err(why) => return self.warn(&why),
        };
        for (i, ((name, bytes), _)) in jobs.iter().enumerate() {
            let key = format!("{name}#{i}");
            let bytes = bytes.iter().sum();
            let e = self.moved.entry(key).or_insert((bytes, now));
            if e.0 != bytes {
                *e = (bytes, now);
            }
        }
        match read_written(&jobs) {
            Ok(t) => self.counted = t,
            Err(why) => self.warn(&why),
        }
    }

    /// A report that could not be counted, said once (every status would
    /// repeat it), naming fio's output file.
    fn warn(&mut self, why: &str) {
        let tail = format!(": {why}");
        if !self.warnings.iter().any(|k| k.ends_with(&tail)) {
            let n = self.docs;
            self.warnings
                .push(format!("{}: fio's report {n}{tail}", self.out.display()));
        }
    }

    /// Reports whose byte counts could not be read, each naming fio's
    /// output file and what the report lacked.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The newest complete report.
    pub fn last(&self) -> Option<&Value> {
        self.last.as_ref()
    }

    /// Asks fio for a report now (SIGUSR1, fio's "show status") and waits
    /// up to `wait` for it: fresh byte counts between the 1 s reports. Only
    /// once fio reported once, so its handler is installed (before that
    /// the signal's default action would end it).
    pub fn refresh(&mut self, wait: Duration) {
        let had = self.poll();
        if had == 0 || self.exited().is_some() {
            return;
        }
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGUSR1) };
        let until = Instant::now() + wait;
        while Instant::now() < until && self.poll() == had {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Read and written bytes, all jobs, by the newest report whose counts
    /// could be read ((0, 0) before fio's first; [`FioChild::warnings`]
    /// says when a report could not be counted).
    pub fn totals(&self) -> (u64, u64) {
        self.counted
    }

    /// Jobs whose bytes have not changed for `quiet` while fio kept
    /// reporting, with how long.
    pub fn quiet_jobs(&self, quiet: Duration) -> Vec<(String, Duration)> {
        let mut v: Vec<(String, Duration)> = self
            .moved
            .iter()
            .filter(|(_, (_, at))| at.elapsed() >= quiet)
            .map(|(k, (_, at))| {
                // The key is NAME#INDEX; a job's name may hold a '#'.
                let name = k.rsplit_once('#').map_or(k.as_str(), |(n, _)| n);
                (name.to_string(), at.elapsed())
            })
            .collect();
        v.sort();
        v
    }

    /// fio's pid, which is also its process group's id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// fio's exit status once it ended.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// SIGINT to fio: it stops its jobs and writes its final report.
    pub fn interrupt(&self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
    }

    /// What fio printed on stderr so far; when that cannot be read, a
    /// line saying so (fio's complaints must not vanish silently).
    pub fn stderr(&self) -> String {
        let path = self.dir.join("stderr");
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            format!(
                "iolab: could not read fio's stderr ({}): {e}\n",
                path.display()
            )
        })
    }

    /// Stops fio (SIGINT, then after `grace` SIGKILL to its process
    /// group) unless it ended already, and reads its last report.
    pub fn finish(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.exited().is_none() {
            self.interrupt();
            let until = Instant::now() + grace;
            while self.exited().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            if self.exited().is_none() {
                // SAFETY: kill(2) on the process group we created.
                unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
                self.status = self.child.wait().ok();
            }
        }
        self.poll();
        self.status
    }
}

static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Drop for FioChild {
    fn drop(&mut self) {
        if self.exited().is_none() {
            self.finish(Duration::from_secs(5));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A job's name and its read, write and trim bytes.
type JobCount = (String, [u64; 3]);

/// The jobs of a fio report with their byte counts, and whether fio
/// reported the job's directions together (`unified_rw_reporting=mixed`:
/// its bytes are all counted as read, so totals that need the split can
/// refuse it). `Err` says what the report lacks.
fn job_counts(doc: &Value) -> Result<Vec<(JobCount, bool)>, String> {
    let jobs = doc["jobs"].as_array().ok_or("it has no \"jobs\" list")?;
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            let name = j["jobname"]
                .as_str()
                .ok_or_else(|| format!("jobs[{i}] has no jobname"))?;
            let bytes = |d: &str| j[d]["io_bytes"].as_u64();
            match (bytes("read"), bytes("write"), bytes("trim"), bytes("mixed")) {
                (Some(r), Some(w), Some(t), _) => Ok(((name.to_string(), [r, w, t]), false)),
                (_, _, _, Some(m)) => Ok(((name.to_string(), [m, 0, 0]), true)),
                _ => Err(format!(
                    "job {name} has no read, write and trim io_bytes (nor mixed)"
                )),
            }
        })
        .collect()
}

/// Read and written bytes of `jobs`; a job reported unified has no split.
fn read_written(jobs: &[(JobCount, bool)]) -> Result<(u64, u64), String> {
    if let Some(((name, _), _)) = jobs.iter().find(|(_, mixed)| *mixed) {
        return Err(format!(
            "job {name} reports its directions together (unified_rw_reporting): its read and written bytes cannot be told apart"
        ));
    }
    let sum = |d: usize| jobs.iter().map(|((_, b), _)| b[d]).sum();
    Ok((sum(0), sum(1)))
}

/// Read and written bytes of a fio report, all jobs; `Err` says what the
/// report lacks for them.
pub fn totals(doc: &Value) -> Result<(u64, u64), String> {
    read_written(&job_counts(doc)?)
}

/// A job file's text with `overrides` appended to every job section (not
/// `[global]`), so they win over what the file sets, as iolab's own
/// `--load-option`s do; fio's command-line options would only be defaults.
pub fn job_file_with(text: &str, overrides: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut in_job = false;
    let add = |out: &mut String| {
        for (k, v) in overrides {
            out.push_str(&format!("{k}={v}\n"));
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            if in_job {
                add(&mut out);
            }
            in_job = !t[1..t.len() - 1].trim().eq_ignore_ascii_case("global");
        }
        out.push_str(line);
        out.push('\n');
    }
    if in_job {
        add(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_close_every_job_section_and_not_global() {
        let text = "[global]\nsize=1G\n\n[a]\nrw=read\n[b]\nrw=write\nsize=2G\n";
        let got = job_file_with(text, &[("size".into(), "128M".into())]);
        assert_eq!(
            got,
            "[global]\nsize=1G\n\n[a]\nrw=read\nsize=128M\n[b]\nrw=write\nsize=2G\nsize=128M\n"
        );
    }

    #[test]
    fn totals_add_every_job() {
        let doc: Value = serde_json::from_str(
            r#"{"jobs":[{"read":{"io_bytes":5},"write":{"io_bytes":1}},
                        {"read":{"io_bytes":7},"write":{"io_bytes":0}}]}"#,
        )
        .unwrap();
        assert_eq!(totals(&doc), Err("jobs[0] has no jobname".into()));
        let doc: Value = serde_json::from_str(
            r#"{"jobs":[{"jobname":"a","read":{"io_bytes":5},"write":{"io_bytes":1},"trim":{"io_bytes":0}},
                        {"jobname":"b","read":{"io_bytes":7},"write":{"io_bytes":0},"trim":{"io_bytes":2}}]}"#,
        )
        .unwrap();
        assert_eq!(totals(&doc), Ok((12, 1)));
    }

    #[test]
    fn a_report_without_the_counts_is_said_not_counted_as_nothing() {
        let doc: Value =
            serde_json::from_str(r#"{"jobs":[{"jobname":"a","mixed":{"io_bytes":5}}]}"#).unwrap();
        let e = totals(&doc).unwrap_err();
        assert!(e.contains("unified_rw_reporting"), "{e}");
        let doc: Value = serde_json::from_str(r#"{"jobs":[{"jobname":"a"}]}"#).unwrap();
        assert!(totals(&doc).unwrap_err().contains("job a has no read"));
        assert!(totals(&serde_json::json!({})).is_err());
    }
}
