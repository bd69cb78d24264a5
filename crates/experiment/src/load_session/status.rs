//! What is written while a load runs: fio's periodic status
//! (`--status-interval`, as JSON documents or a line per job) and its
//! aggregate bandwidth logs (`--bandwidth-log`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use iolab_sys::cast;
use iolab_sys::UsageError;

use iolab_load::{LiveSnapshot, LoadError, RunningLoad};

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
    pub fn watch(&self, load: &RunningLoad, out: &mut dyn std::io::Write) -> Result<(), LoadError> {
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
                    l.sample(t0, now, &last, &snap)
                        .map_err(|e| LoadError::io("agg-read_bw.log/agg-write_bw.log", e))?;
                }
                last = (now, snap);
                next_log += Duration::from_millis(AGG_LOG_MS);
            }
            if let (Some(at), Some((every, fmt))) = (next_status, self.status) {
                if now >= at {
                    let text = status(load, fmt, now - t0);
                    out.write_all(text.as_bytes())
                        .and_then(|()| out.flush())
                        .map_err(|e| LoadError::io("the status output", e))?;
                    next_status = Some(at + every);
                }
            }
        }
        if let Some(l) = &mut logs {
            l.flush()
                .map_err(|e| LoadError::io("agg-read_bw.log/agg-write_bw.log", e))?;
        }
        Ok(())
    }
}

/// One status: per job, what it has moved so far.
fn status(load: &RunningLoad, fmt: StatusFormat, el: Duration) -> String {
    let jobs = load.job_snapshots();
    let ms = cast::duration_ms(el).max(1);
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
                    .map(cast::duration_ms)
                    .unwrap_or(0),
                "status": true,
                "jobs": jobs.iter().map(|(name, s)| serde_json::json!({
                    "jobname": name,
                    "elapsed": el.as_secs(),
                    "read": dir(s.read_bytes, s.read_ios),
                    "write": dir(s.write_bytes, s.write_ios),
                })).collect::<Vec<_>>(),
            });
            // serde_json's alternate form is to_string_pretty's.
            format!("{doc:#}\n")
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
    fn create() -> Result<AggLogs, LoadError> {
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
        let ms = cast::duration_ms(now.saturating_duration_since(last.0)).max(1);
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
