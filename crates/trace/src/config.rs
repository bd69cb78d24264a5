//! What a session traces: events (with filters and stack triggers), buffer
//! size, and the pids to follow.

use std::time::Duration;

/// One tracepoint to enable.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventRequest {
    /// Subsystem, e.g. `block`.
    pub system: String,
    /// Event, e.g. `block_rq_complete`.
    pub name: String,
    /// Kernel filter expression written to the event's `filter` file
    /// (Documentation/trace/events.rst §5), e.g. `dev == 7340032`.
    pub filter: Option<String>,
    /// Record the kernel stack with each event through a `stacktrace`
    /// trigger: `Some("")` for every event, `Some("prev_state & 3")` for
    /// those matching the filter, `None` for no stacks.
    pub stacktrace: Option<String>,
    /// Skip the event (instead of failing) when this kernel lacks it; see
    /// [`crate::TraceSession::is_enabled`].
    pub optional: bool,
}

impl EventRequest {
    /// `system/name`, no filter, no stack, required.
    pub fn new(system: &str, name: &str) -> EventRequest {
        EventRequest {
            system: system.to_string(),
            name: name.to_string(),
            filter: None,
            stacktrace: None,
            optional: false,
        }
    }

    /// Sets the kernel filter.
    pub fn filter(mut self, filter: &str) -> EventRequest {
        self.filter = Some(filter.to_string());
        self
    }

    /// Records a stack with each event matching `filter` ("" for all).
    pub fn stacktrace(mut self, filter: &str) -> EventRequest {
        self.stacktrace = Some(filter.to_string());
        self
    }

    /// Marks the event as optional.
    pub fn optional(mut self) -> EventRequest {
        self.optional = true;
        self
    }

    /// The trigger text for the `trigger` file, if any. The kernel runs
    /// triggers before the event's own filter and writes the stack even
    /// when the filter then discards the event, so the stack would follow
    /// some other record: the event filter is made part of the trigger's.
    pub(crate) fn trigger(&self) -> Option<String> {
        let stack = self.stacktrace.as_deref()?.trim();
        let event = self.filter.as_deref().unwrap_or("").trim();
        Some(match (event.is_empty(), stack.is_empty()) {
            (true, true) => "stacktrace".to_string(),
            (true, false) => format!("stacktrace if {stack}"),
            (false, true) => format!("stacktrace if {event}"),
            (false, false) => format!("stacktrace if ({event}) && ({stack})"),
        })
    }
}

/// How to set up a session or a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// Events to enable.
    pub events: Vec<EventRequest>,
    /// Ring buffer per CPU, KiB (`buffer_size_kb`).
    pub buffer_kib_per_cpu: u32,
    /// Only trace these tasks and the children they fork after the start
    /// (`set_event_pid` + `options/event-fork`); `None` traces everyone.
    pub pids: Option<Vec<i32>>,
    /// Sleep of the reader thread between sweeps of the CPU buffers.
    pub read_interval: Duration,
    /// Wake the reader as soon as any event is written (poll(2) with the
    /// instance's `buffer_percent` at 0), `read_interval` being only an
    /// upper bound: for a watcher that acts on rare events at once,
    /// rather than a sweep every interval. Off for high-rate sessions,
    /// where a wakeup per event would cost more than it gains.
    pub wake_on_event: bool,
}

/// Default ring buffer per CPU: 16 MiB (about 300k typical events, a few
/// seconds of a 100k-IOPS trace), less on machines with many CPUs so the
/// total stays near 256 MiB; never under 2 MiB.
pub fn default_buffer_kib_per_cpu() -> u32 {
    // Saturating: more CPUs than a u32 counts only shrink the share, and
    // the clamp below holds it at the floor either way.
    let cpus = std::thread::available_parallelism()
        .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
    (256 * 1024 / cpus).clamp(2 * 1024, 16 * 1024)
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            events: Vec::new(),
            buffer_kib_per_cpu: default_buffer_kib_per_cpu(),
            pids: None,
            read_interval: Duration::from_millis(20),
            wake_on_event: false,
        }
    }
}

impl SessionConfig {
    /// A config for `events` with the defaults (see
    /// [`default_buffer_kib_per_cpu`], every task).
    pub fn new(events: Vec<EventRequest>) -> SessionConfig {
        SessionConfig {
            events,
            ..SessionConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_buffer_is_bounded() {
        let kib = SessionConfig::default().buffer_kib_per_cpu;
        assert!((2048..=16384).contains(&kib), "{kib}");
    }

    #[test]
    fn trigger_text() {
        let e = EventRequest::new("sched", "sched_switch");
        assert_eq!(e.trigger(), None);
        assert_eq!(
            e.clone().stacktrace("").trigger().as_deref(),
            Some("stacktrace")
        );
        let e = e.stacktrace(" prev_state & 3 ");
        assert_eq!(e.trigger().as_deref(), Some("stacktrace if prev_state & 3"));
        assert_eq!(
            e.filter("prev_pid == 7").trigger().as_deref(),
            Some("stacktrace if (prev_pid == 7) && (prev_state & 3)")
        );
    }
}
