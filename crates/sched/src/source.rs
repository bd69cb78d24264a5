//! Where events come from: recording raw pages to a trace file through
//! `iolab-trace` (no decoding while recording, so the recorder costs one
//! read and one write per ring-buffer page), and analysing a trace file.

use std::path::Path;
use std::time::Duration;

use iolab_guard::Guard;
use iolab_trace::{
    EventRequest, FileMeta, Kallsyms, Recorder, SessionConfig, TraceFile, TraceStats,
};

use crate::analyze::{Analysis, Analyzer, WakeFrom};
use crate::decode::{Decoder, SCHED_EVENTS, WORKQUEUE_EVENTS};
use crate::work::Symbols;
use crate::SchedError;

/// How to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordOptions {
    /// Also record `workqueue_queue_work` and `workqueue_execute_start`
    /// (work-item latency, delays attributed to the work a worker ran).
    pub workqueue: bool,
    /// Ring buffer per CPU, KiB.
    pub buffer_kib_per_cpu: u32,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            workqueue: false,
            buffer_kib_per_cpu: 16 * 1024,
        }
    }
}

/// The trace session `iolab sched record` asks for.
pub fn session_config(opts: &RecordOptions) -> SessionConfig {
    let wq: &[(&str, &str, bool)] = if opts.workqueue {
        &WORKQUEUE_EVENTS
    } else {
        &[]
    };
    let events = SCHED_EVENTS
        .iter()
        .chain(wq)
        .map(|&(system, name, required)| {
            let e = EventRequest::new(system, name);
            if required {
                e
            } else {
                e.optional()
            }
        })
        .collect();
    SessionConfig {
        events,
        buffer_kib_per_cpu: opts.buffer_kib_per_cpu,
        pids: None,
        read_interval: Duration::from_millis(20),
        wake_on_event: false,
    }
}

/// Starts recording into `out`; [`Recorder::finish`] ends it.
pub fn start_recording(
    guard: &Guard,
    opts: &RecordOptions,
    out: &Path,
) -> Result<Recorder, SchedError> {
    Ok(Recorder::start(guard, session_config(opts), out)?)
}

/// A trace file, analysed.
#[derive(Debug)]
pub struct Loaded {
    /// Tasks, samples, counters.
    pub analysis: Analysis,
    /// The recording's metadata.
    pub meta: FileMeta,
    /// What was decoded and lost.
    pub stats: TraceStats,
    /// Names of the work functions seen.
    pub symbols: Symbols,
    /// Where the names came from: `trace` (stored in the file), `live`
    /// (/proc/kallsyms of this boot, right when the file was recorded on
    /// this boot) or `none`.
    pub symbols_from: &'static str,
}

/// Decodes and analyses every record of the trace file at `path`.
pub fn analyze_file(path: &Path, from: WakeFrom) -> Result<Loaded, SchedError> {
    let file = TraceFile::open(path)?;
    let decoder = Decoder::new(file.formats());
    if !decoder.knows(file.formats(), "sched", "sched_switch") {
        return Err(SchedError::usage(format!(
            "{}: the trace has no sched_switch events: record it with `iolab sched record`",
            path.display()
        )));
    }
    let from = if decoder.knows(file.formats(), "sched", "sched_wakeup") {
        from
    } else {
        WakeFrom::Waking
    };
    let mut analyzer = Analyzer::new(from);
    let stats = file.for_each(&mut |r| {
        if let Some(t) = decoder.decode(r) {
            analyzer.feed(&t);
        }
    })?;
    let analysis = analyzer.finish(stats.lost);
    let (symbols, symbols_from) = work_symbols(&analysis, file.kallsyms());
    Ok(Loaded {
        analysis,
        meta: file.meta().clone(),
        stats,
        symbols,
        symbols_from,
    })
}

/// Names of the work functions in `a`, from the trace's symbols or else
/// this machine's.
fn work_symbols(a: &Analysis, stored: Option<&Kallsyms>) -> (Symbols, &'static str) {
    let mut symbols = Symbols::default();
    if a.works.is_empty() {
        return (symbols, "none");
    }
    let live;
    let (k, from) = match stored {
        Some(k) => (k, "trace"),
        None => match Kallsyms::load() {
            Ok(k) => {
                live = k;
                (&live, "live")
            }
            Err(_) => return (symbols, "none"),
        },
    };
    for w in &a.works {
        if let Some(s) = k.resolve(w.function) {
            if s.offset == 0 {
                symbols.insert(w.function, s.name);
            }
        }
    }
    (symbols, from)
}
