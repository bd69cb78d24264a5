//! A live trace session: start, poll records in time order, finish.

use std::sync::{Arc, Condvar, Mutex};

use iolab_guard::Guard;

use crate::config::SessionConfig;
use crate::format::{Format, Formats};
use crate::instance::{CpuCounters, Instance};
use crate::merge::{Merger, StackFormat};
use crate::reader::{monotonic_ns, PageSink, Reader};
use crate::record::{CpuStats, Record, TraceStats};
use crate::TraceError;

/// Records delivered by `poll` lag the reader's last sweep by this much,
/// so an event whose commit was still in flight on another CPU during the
/// sweep is not passed by the merge.
const WATERMARK_MARGIN_NS: u64 = 2_000_000;

/// Pages the reader thread has read and the consumer not yet taken.
#[derive(Default)]
struct Inbox {
    pages: Vec<(usize, Vec<u8>)>,
    /// Start time of the last sweep that read every CPU.
    swept: u64,
}

/// The inbox and the signal that a sweep left pages in it.
#[derive(Default)]
struct Shared {
    inbox: Mutex<Inbox>,
    filled: Condvar,
}

#[derive(Clone, Default)]
struct InboxSink(Arc<Shared>);

impl InboxSink {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.0.inbox.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl PageSink for InboxSink {
    fn page(&mut self, i: usize, page: Vec<u8>) -> Result<(), TraceError> {
        self.lock().pages.push((i, page));
        Ok(())
    }

    fn swept(&mut self, t0: u64) -> Result<(), TraceError> {
        let mut inbox = self.lock();
        inbox.swept = t0;
        if !inbox.pages.is_empty() {
            self.0.filled.notify_all();
        }
        Ok(())
    }
}

/// A running trace of kernel events in a private tracefs instance.
///
/// ```no_run
/// # fn main() -> Result<(), iolab_trace::TraceError> {
/// use iolab_trace::{EventRequest, SessionConfig, TraceSession};
/// let guard = iolab_guard::Guard::new();
/// let config = SessionConfig::new(vec![EventRequest::new("sched", "sched_process_fork")]);
/// let mut session = TraceSession::start(&guard, config)?;
/// session.poll(&mut |r| iolab_sys::show!("{} {} {:?}", r.ts_ns, r.name(), r.u64("child_pid")))?;
/// let stats = session.finish(&mut |_| {})?;
/// iolab_sys::show!("{stats}");
/// # Ok(()) }
/// ```
pub struct TraceSession {
    // Field order is drop order: stop the reader (closing the per-CPU
    // files) before removing the instance.
    reader: Option<Reader<InboxSink>>,
    instance: Instance,
    inbox: InboxSink,
    formats: Formats,
    merger: Merger,
    cpus: Vec<u32>,
    enabled: Vec<(String, String)>,
    start_ns: u64,
    // Keeps the guard (and its journal entry for the instance) alive
    // while the session is.
    _guard: Guard,
}

impl TraceSession {
    /// Creates the instance, enables the events and starts reading.
    pub fn start(guard: &Guard, config: SessionConfig) -> Result<TraceSession, TraceError> {
        let mut p = crate::setup::prepare(guard, &config)?;
        let inbox = InboxSink::default();
        let merger = Merger::new(
            p.layout,
            &p.cpus,
            StackFormat::from_formats(&p.formats),
            p.triggered.clone(),
        );
        let files = std::mem::take(&mut p.files);
        let reader = Reader::spawn(
            files,
            p.layout,
            config.read_interval,
            config.wake_on_event,
            inbox.clone(),
        )?;
        let start_ns = p.switch_on(config.pids.as_deref())?;
        Ok(TraceSession {
            reader: Some(reader),
            instance: p.instance,
            inbox,
            formats: p.formats,
            merger,
            cpus: p.cpus,
            enabled: p.enabled,
            start_ns,
            _guard: guard.clone(),
        })
    }

    /// Formats of the enabled events (resolve fields once here).
    pub fn formats(&self) -> &Formats {
        &self.formats
    }

    /// The format of `system/name`, when it is enabled.
    pub fn format(&self, system: &str, name: &str) -> Option<&Format> {
        self.formats.find(system, name)
    }

    /// True when `system/name` was enabled (false for a missing optional).
    pub fn is_enabled(&self, system: &str, name: &str) -> bool {
        self.enabled.iter().any(|(s, n)| s == system && n == name)
    }

    /// CLOCK_MONOTONIC ns when tracing was switched on.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// The instance directory (for diagnostics).
    pub fn instance_path(&self) -> &std::path::Path {
        &self.instance.path
    }

    /// Delivers, in timestamp order across CPUs, every record that can no
    /// longer be preceded by one still unread (a few ms behind now).
    /// Returns how many were delivered.
    pub fn poll(&mut self, sink: &mut dyn FnMut(&Record)) -> Result<u64, TraceError> {
        if self.reader.as_ref().is_some_and(|r| r.failed()) {
            if let Some(r) = self.reader.take() {
                // The thread only ends early with an error: report it.
                r.stop()?;
            }
        }
        let swept = self.take_pages();
        let limit = swept.saturating_sub(WATERMARK_MARGIN_NS);
        Ok(self.merger.drain(
            &self.formats,
            limit,
            false,
            monotonic_ns(),
            &mut |_| None,
            sink,
        ))
    }

    /// Waits up to `timeout` for the reader to have read pages not yet
    /// taken (at once with `wake_on_event`); true when there are some.
    pub fn wait(&self, timeout: std::time::Duration) -> bool {
        let inbox = self.inbox.lock();
        if !inbox.pages.is_empty() {
            return true;
        }
        let (inbox, _) = self
            .inbox
            .0
            .filled
            .wait_timeout(inbox, timeout)
            .unwrap_or_else(|p| p.into_inner());
        !inbox.pages.is_empty()
    }

    /// Delivers every record read so far, without waiting for the other
    /// CPUs to be read past it: for a watcher that acts on each event as
    /// soon as it is read, where order across CPUs does not matter (a
    /// record older than one already delivered is counted out of order,
    /// and still delivered). Returns how many were delivered.
    pub fn poll_unordered(&mut self, sink: &mut dyn FnMut(&Record)) -> Result<u64, TraceError> {
        if self.reader.as_ref().is_some_and(|r| r.failed()) {
            if let Some(r) = self.reader.take() {
                r.stop()?;
            }
        }
        self.take_pages();
        Ok(self.merger.drain(
            &self.formats,
            u64::MAX,
            false,
            monotonic_ns(),
            &mut |_| None,
            sink,
        ))
    }

    fn take_pages(&mut self) -> u64 {
        let (pages, swept) = {
            let mut inbox = self.inbox.lock();
            (std::mem::take(&mut inbox.pages), inbox.swept)
        };
        for (i, p) in pages {
            self.merger.push(i, p);
        }
        swept
    }

    /// Counters so far (lost events read from the kernel now). A CPU
    /// whose counters cannot be read is an error: its lost events would
    /// otherwise read as none.
    pub fn stats(&self) -> Result<TraceStats, TraceError> {
        let counters = self
            .cpus
            .iter()
            .map(|&c| self.instance.counters(c))
            .collect::<Result<Vec<CpuCounters>, _>>()?;
        Ok(combine(
            self.merger.cpu_stats(),
            &counters,
            self.merger.out_of_order,
        ))
    }

    /// Stops tracing, delivers everything left, removes the instance and
    /// returns the totals.
    pub fn finish(mut self, sink: &mut dyn FnMut(&Record)) -> Result<TraceStats, TraceError> {
        self.instance.write("tracing_on", "0")?;
        if let Some(r) = self.reader.take() {
            r.stop()?;
        }
        self.take_pages();
        self.merger.drain(
            &self.formats,
            u64::MAX,
            true,
            monotonic_ns(),
            &mut |_| None,
            sink,
        );
        let stats = self.stats()?;
        self.instance.remove()?;
        Ok(stats)
    }
}

impl Drop for TraceSession {
    fn drop(&mut self) {
        // Not finished (an error or a panic in the caller): stop the
        // writers so the reader's last sweep ends; the fields then drop in
        // order (reader joined, instance removed).
        if self.reader.is_some() {
            let _ = self.instance.write("tracing_on", "0");
        }
    }
}

/// Totals from the merge's counts and the kernel's per-CPU counters.
pub(crate) fn combine(
    mut cpus: Vec<CpuStats>,
    counters: &[CpuCounters],
    out_of_order: u64,
) -> TraceStats {
    for (s, c) in cpus.iter_mut().zip(counters) {
        // Overwritten events also show up as missed-event counts on
        // pages; take the larger rather than counting them twice.
        s.lost = s.lost.max(c.overrun) + c.dropped + c.commit_overrun;
    }
    TraceStats {
        events: cpus.iter().map(|c| c.events).sum(),
        lost: cpus.iter().map(|c| c.lost).sum(),
        out_of_order,
        per_cpu: cpus,
    }
}
