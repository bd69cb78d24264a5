//! Turning a [`SessionConfig`] into a configured, running instance; shared
//! by live sessions and recordings.

use iolab_guard::Guard;
use iolab_sys::UsageError;

use crate::config::SessionConfig;
use crate::format::Formats;
use crate::instance::Instance;
use crate::page::PageLayout;
use crate::reader::CpuFile;
use crate::TraceError;

/// A configured instance, tracing still off, with its per-CPU files open.
pub(crate) struct Prepared {
    pub(crate) instance: Instance,
    pub(crate) formats: Formats,
    pub(crate) layout: PageLayout,
    pub(crate) header_page: String,
    pub(crate) cpus: Vec<u32>,
    pub(crate) files: Vec<CpuFile>,
    /// Ids of events with a stacktrace trigger.
    pub(crate) triggered: Vec<u16>,
    /// `system/name` of every event enabled.
    pub(crate) enabled: Vec<(String, String)>,
}

impl Prepared {
    /// Sets the pids to follow and switches tracing on; returns the start
    /// time. Called once the reader thread exists, so neither its creation
    /// nor (with `event-fork`, which follows every later fork) the thread
    /// itself is traced.
    pub(crate) fn switch_on(&self, pids: Option<&[i32]>) -> Result<u64, TraceError> {
        if let Some(pids) = pids {
            let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
            self.instance.write("set_event_pid", &list.join(" "))?;
            self.instance.write("options/event-fork", "1")?;
        }
        let start_ns = crate::reader::monotonic_ns();
        self.instance.write("tracing_on", "1")?;
        Ok(start_ns)
    }
}

pub(crate) fn prepare(guard: &Guard, config: &SessionConfig) -> Result<Prepared, TraceError> {
    if config.events.is_empty() {
        return Err(UsageError::new("no events to trace: name at least one tracepoint").into());
    }
    if config.buffer_kib_per_cpu < 64 {
        return Err(UsageError::new(format!(
            "trace buffer of {} KiB per CPU is too small: use at least 64",
            config.buffer_kib_per_cpu
        ))
        .into());
    }
    let mut instance = Instance::create(guard)?;
    instance.write("tracing_on", "0")?;
    instance.write("trace_clock", "mono")?;
    instance.write("options/overwrite", "0")?;
    instance.write("buffer_size_kb", &config.buffer_kib_per_cpu.to_string())?;
    if config.wake_on_event {
        // Readers wake on any data, not when the buffer is half full
        // (Documentation/trace/ftrace.rst, buffer_percent).
        instance.write("buffer_percent", "0")?;
    }

    let events = instance.path.join("events");
    let mut formats = Formats::new();
    let mut triggered = Vec::new();
    let mut enabled = Vec::new();
    for req in &config.events {
        let dir = events.join(&req.system).join(&req.name);
        if !dir.join("format").exists() {
            if req.optional {
                continue;
            }
            return Err(UsageError::new(format!(
                "this kernel has no tracepoint {}/{} (see {}/available_events)",
                req.system,
                req.name,
                crate::instance::TRACEFS
            ))
            .into());
        }
        let id = formats.load(&events, &req.system, &req.name)?.id;
        let rel = format!("events/{}/{}", req.system, req.name);
        if let Some(f) = &req.filter {
            instance.write(&format!("{rel}/filter"), f)?;
        }
        if let Some(t) = req.trigger() {
            instance.add_trigger(&format!("{rel}/trigger"), &t)?;
            triggered.push(id);
        }
        enabled.push((req.system.clone(), req.name.clone()));
    }
    if !triggered.is_empty() {
        formats.load(&events, "ftrace", "kernel_stack")?;
    }
    for (sys, name) in &enabled {
        instance.write(&format!("events/{sys}/{name}/enable"), "1")?;
    }

    let hp_path = events.join("header_page");
    let header_page = crate::instance::read_whole(&hp_path)?;
    let layout = PageLayout::parse(&header_page, instance.page_size(), &hp_path)?;
    let cpus = instance.cpus()?;
    let files = cpus
        .iter()
        .map(|&c| CpuFile::open(&instance.path, c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Prepared {
        instance,
        formats,
        layout,
        header_page,
        cpus,
        files,
        triggered,
        enabled,
    })
}
