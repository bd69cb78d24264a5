//! A private tracefs instance (`instances/iolab-<pid>-<n>`) and its knobs.
//!
//! The instance is created through the guard, which mounts tracefs when
//! needed and journals its removal, so a panic, a signal or a SIGKILL
//! (recovered by the next run) never leaves it behind. Everything iolab
//! writes lives inside the instance: the global buffer is never touched.
//! Knob files are documented in Documentation/trace/ftrace.rst and
//! events.rst.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use iolab_guard::Guard;

use crate::TraceError;

/// Where tracefs is normally mounted.
pub const TRACEFS: &str = "/sys/kernel/tracing";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// An instance directory this process created.
#[derive(Debug)]
pub(crate) struct Instance {
    pub(crate) path: PathBuf,
    /// Trigger files written, cleared before removal.
    triggers: Vec<String>,
    removed: bool,
}

/// Counters of one CPU's ring buffer (`per_cpu/cpuN/stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CpuCounters {
    pub(crate) overrun: u64,
    pub(crate) commit_overrun: u64,
    pub(crate) dropped: u64,
    pub(crate) read: u64,
}

impl Instance {
    /// Creates a uniquely named instance (unique per process and call, so
    /// parallel sessions and tests never share one).
    pub(crate) fn create(guard: &Guard) -> Result<Instance, TraceError> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("iolab-{}-{n}", std::process::id());
        let path = guard.create_trace_instance(&name)?;
        Ok(Instance {
            path,
            triggers: Vec::new(),
            removed: false,
        })
    }

    /// Writes a trigger (e.g. `stacktrace if prev_state & 3`) to `rel`.
    pub(crate) fn add_trigger(&mut self, rel: &str, trigger: &str) -> Result<(), TraceError> {
        self.write(rel, trigger)?;
        self.triggers.push(rel.to_string());
        Ok(())
    }

    /// Writes `value` to the instance file `rel` in one write(2). A refusal
    /// (EINVAL for a bad filter) carries the kernel's `error_log` line.
    pub(crate) fn write(&self, rel: &str, value: &str) -> Result<(), TraceError> {
        let path = self.path.join(rel);
        match std::fs::write(&path, value) {
            Ok(()) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                let log = self.last_error_log();
                let why = if log.is_empty() {
                    e.to_string()
                } else {
                    format!("{e}; error_log: {log}")
                };
                Err(TraceError::refused(&path, value.trim(), why))
            }
            Err(e) => Err(TraceError::io(path, e)),
        }
    }

    /// Reads an instance file.
    pub(crate) fn read(&self, rel: &str) -> Result<String, TraceError> {
        read_whole(&self.path.join(rel))
    }

    /// The kernel's last error_log lines (at most 300 characters); one
    /// that cannot be read says so (kernels before 5.6 have none).
    fn last_error_log(&self) -> String {
        let path = self.path.join("error_log");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => return format!("({} unreadable: {e})", path.display()),
        };
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" | ")
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    }

    /// The CPUs with a `per_cpu/cpuN` directory, ascending.
    pub(crate) fn cpus(&self) -> Result<Vec<u32>, TraceError> {
        let dir = self.path.join("per_cpu");
        let rd = std::fs::read_dir(&dir).map_err(|e| TraceError::io(&dir, e))?;
        let mut cpus: Vec<u32> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        Ok(cpus)
    }

    /// Parses `per_cpu/cpuN/stats`.
    pub(crate) fn counters(&self, cpu: u32) -> Result<CpuCounters, TraceError> {
        let rel = format!("per_cpu/cpu{cpu}/stats");
        let text = self.read(&rel)?;
        Ok(parse_counters(&text))
    }

    /// Bytes per ring-buffer page (`buffer_subbuf_size_kb`, 6.8+; one
    /// system page before that).
    pub(crate) fn page_size(&self) -> usize {
        self.read("buffer_subbuf_size_kb")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or_else(rustix::param::page_size)
    }

    /// Switches events and triggers off and removes the directory. The
    /// guard's journal entry then finds nothing left to undo.
    pub(crate) fn remove(&mut self) -> Result<(), TraceError> {
        if self.removed {
            return Ok(());
        }
        let _ = self.write("tracing_on", "0");
        // Only this session knows which triggers it wrote.
        for t in std::mem::take(&mut self.triggers) {
            let _ = self.write(&t, "!stacktrace");
        }
        iolab_guard::remove_trace_instance(&self.path)?;
        self.removed = true;
        Ok(())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // Best effort: the guard's journal removes it otherwise.
        let _ = self.remove();
    }
}

pub(crate) fn parse_counters(text: &str) -> CpuCounters {
    let mut c = CpuCounters::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v: u64 = v.trim().parse().unwrap_or(0);
        match k.trim() {
            "overrun" => c.overrun = v,
            "commit overrun" => c.commit_overrun = v,
            "dropped events" => c.dropped = v,
            "read events" => c.read = v,
            _ => {}
        }
    }
    c
}

/// Reads a tracefs file whose handler only answers a read at offset 0
/// (`events/header_page` returns 0 for any later offset, so the small
/// first read of `read_to_string` would truncate it): one large read.
pub(crate) fn read_whole(path: &Path) -> Result<String, TraceError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| TraceError::io(path, e))?;
    let mut buf = vec![0u8; 64 * 1024];
    let n = f.read(&mut buf).map_err(|e| TraceError::io(path, e))?;
    buf.truncate(n);
    String::from_utf8(buf).map_err(|e| TraceError::parse(path, &e.to_string(), "expected text"))
}

/// Where `events/` is: the mounted tracefs, or debugfs's `tracing/`.
pub(crate) fn events_dir() -> Option<PathBuf> {
    [TRACEFS, "/sys/kernel/debug/tracing"]
        .iter()
        .map(|p| Path::new(p).join("events"))
        .find(|p| p.join("header_page").exists())
}

/// True when the kernel has tracepoint `system/name`. Reads tracefs when
/// it is mounted; otherwise (nothing may be mounted before the first
/// session) looks for the tracepoint's `__traceiter_<name>` in
/// `/proc/kallsyms`, which every tracepoint defines (the system is then not
/// checked).
pub fn has_event(system: &str, name: &str) -> bool {
    if let Some(dir) = events_dir() {
        return dir.join(system).join(name).join("format").exists();
    }
    let want = format!("__traceiter_{name}");
    std::fs::read_to_string("/proc/kallsyms")
        .map(|t| {
            t.lines()
                .any(|l| l.split_ascii_whitespace().nth(2) == Some(want.as_str()))
        })
        .unwrap_or(false)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse() {
        let c = parse_counters(
            "entries: 17\noverrun: 3\ncommit overrun: 1\nbytes: 1248\noldest event ts:  7723.009204\ndropped events: 9\nread events: 40\n",
        );
        assert_eq!(
            c,
            CpuCounters {
                overrun: 3,
                commit_overrun: 1,
                dropped: 9,
                read: 40
            }
        );
    }

    #[test]
    fn has_event_knows_sched_switch() {
        if !iolab_sys::is_root() {
            iolab_testkit::skip_line("skip has_event_knows_sched_switch: needs root".to_string());
            return;
        }
        assert!(has_event("sched", "sched_switch"));
        assert!(!has_event("sched", "no_such_event_iolab"));
    }
}
