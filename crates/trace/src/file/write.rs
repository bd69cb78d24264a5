//! Writing trace files: the recorder appends raw pages, decoding nothing.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use iolab_guard::Guard;

use super::{
    section_header, EndSection, FileMeta, END, FORMAT, HEADER_PAGE, KALLSYMS, MAGIC, PAGE, START,
    VERSION,
};
use crate::config::SessionConfig;
use crate::instance::Instance;
use crate::page::{Missed, PageLayout};
use crate::reader::{monotonic_ns, PageSink, Reader};
use crate::record::{CpuStats, TraceStats};
use crate::TraceError;

struct FileSink {
    w: BufWriter<File>,
    path: PathBuf,
    layout: PageLayout,
    per_cpu: Vec<CpuStats>,
}

impl FileSink {
    fn section(&mut self, kind: u32, arg: u32, payload: &[u8]) -> Result<(), TraceError> {
        self.w
            .write_all(&section_header(kind, arg, payload.len() as u64))
            .and_then(|()| self.w.write_all(payload))
            .map_err(|e| TraceError::io(&self.path, e))
    }
}

impl PageSink for FileSink {
    fn page(&mut self, i: usize, page: Vec<u8>) -> Result<(), TraceError> {
        if let Some(s) = self.per_cpu.get_mut(i) {
            s.pages += 1;
            // Only the page header is read: no decoding while recording.
            s.lost += match self.layout.header(&page).missed {
                Missed::None => 0,
                Missed::Unknown => 1,
                Missed::Count(n) => n,
            };
        }
        let cpu_index = u32::try_from(i).map_err(|_| {
            TraceError::io(
                &self.path,
                std::io::Error::other(format!("CPU index {i} does not fit a PAGE section (u32)")),
            )
        })?;
        self.section(PAGE, cpu_index, &page)
    }

    fn swept(&mut self, _t0: u64) -> Result<(), TraceError> {
        Ok(())
    }
}

/// Records raw pages of a trace session into a file.
pub struct Recorder {
    reader: Option<Reader<FileSink>>,
    instance: Instance,
    cpus: Vec<u32>,
    stacks: bool,
    start_ns: u64,
    _guard: Guard,
}

impl Recorder {
    /// Starts tracing `config` into a new file at `out` (replaced if it
    /// exists). The file is the user's output, not system state: it is
    /// kept on every exit path.
    pub fn start(guard: &Guard, config: SessionConfig, out: &Path) -> Result<Recorder, TraceError> {
        let mut p = crate::setup::prepare(guard, &config)?;
        let file = File::create(out).map_err(|e| TraceError::io(out, e))?;
        let mut sink = FileSink {
            w: BufWriter::with_capacity(1 << 20, file),
            path: out.to_path_buf(),
            layout: p.layout,
            per_cpu: p
                .cpus
                .iter()
                .map(|&cpu| CpuStats {
                    cpu,
                    ..CpuStats::default()
                })
                .collect(),
        };
        let mut head = Vec::with_capacity(16);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        sink.w
            .write_all(&head)
            .map_err(|e| TraceError::io(out, e))?;
        let meta = FileMeta {
            version: VERSION,
            clock: "mono".into(),
            layout: p.layout,
            cpus: p.cpus.clone(),
            start_ns: monotonic_ns(),
            events: config
                .events
                .iter()
                .filter(|e| {
                    p.enabled
                        .iter()
                        .any(|(s, n)| *s == e.system && *n == e.name)
                })
                .cloned()
                .collect(),
            end_ns: None,
            stats: None,
        };
        let json = serde_json::to_vec(&meta).map_err(|e| TraceError::file(out, e.to_string()))?;
        sink.section(START, 0, &json)?;
        sink.section(HEADER_PAGE, 0, p.header_page.as_bytes())?;
        for f in p.formats.iter() {
            sink.section(FORMAT, 0, format!("{}\n{}", f.system, f.text).as_bytes())?;
        }
        sink.w.flush().map_err(|e| TraceError::io(out, e))?;
        let stacks = !p.triggered.is_empty();
        let files = std::mem::take(&mut p.files);
        let reader = Reader::spawn(
            files,
            p.layout,
            config.read_interval,
            config.wake_on_event,
            sink,
        )?;
        let start_ns = p.switch_on(config.pids.as_deref())?;
        Ok(Recorder {
            reader: Some(reader),
            instance: p.instance,
            cpus: p.cpus,
            stacks,
            start_ns,
            _guard: guard.clone(),
        })
    }

    /// CLOCK_MONOTONIC ns when tracing was switched on.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Stops tracing, writes the rest of the pages, kernel symbols (when
    /// stacks were recorded) and the END section, removes the instance.
    pub fn finish(mut self) -> Result<TraceStats, TraceError> {
        self.instance.write("tracing_on", "0")?;
        let end_ns = monotonic_ns();
        let Some(reader) = self.reader.take() else {
            return Err(TraceError::io(
                "reader thread",
                std::io::Error::other("gone"),
            ));
        };
        let mut sink = reader.stop()?;
        let counters = self
            .cpus
            .iter()
            .map(|&c| self.instance.counters(c))
            .collect::<Result<Vec<_>, _>>()?;
        let mut per_cpu = std::mem::take(&mut sink.per_cpu);
        for (s, c) in per_cpu.iter_mut().zip(&counters) {
            s.events = c.read;
        }
        let stats = crate::session::combine(per_cpu, &counters, 0);
        if self.stacks {
            let text = std::fs::read_to_string("/proc/kallsyms")
                .map_err(|e| TraceError::io("/proc/kallsyms", e))?;
            let kept: String = text
                .lines()
                .filter(|l| {
                    matches!(
                        l.split_ascii_whitespace().nth(1),
                        Some("t" | "T" | "w" | "W")
                    )
                })
                .flat_map(|l| [l, "\n"])
                .collect();
            sink.section(KALLSYMS, 0, kept.as_bytes())?;
        }
        let end = serde_json::to_vec(&EndSection {
            end_ns,
            stats: stats.clone(),
        })
        .map_err(|e| TraceError::file(&sink.path, e.to_string()))?;
        sink.section(END, 0, &end)?;
        sink.w.flush().map_err(|e| TraceError::io(&sink.path, e))?;
        self.instance.remove()?;
        Ok(stats)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // Not finished: stop the writers so the reader's last sweep ends;
        // the pages read so far stay in the file (without END).
        if self.reader.is_some() {
            let _ = self.instance.write("tracing_on", "0");
        }
    }
}
