//! A Chrome JSON trace (opens in ui.perfetto.dev and chrome://tracing):
//! one track per task, each listed stall a slice named by its cause (the
//! blocked part) followed by a `runnable` slice (waiting for a CPU after
//! the wakeup). Times are µs from the start of the window.

use serde_json::{json, Value};

use crate::attribution::Attribution;

/// The trace document.
pub fn render(a: &Attribution) -> Value {
    let us = |ns: u64| ns.saturating_sub(a.start_ns) as f64 / 1000.0;
    let mut events = vec![json!({
        "ph": "M", "name": "process_name", "pid": a.root_pid, "tid": a.root_pid,
        "args": {"name": format!("iolab explain: pid {}", a.root_pid)},
    })];
    for t in &a.tasks {
        events.push(json!({
            "ph": "M", "name": "thread_name", "pid": a.root_pid, "tid": t.tid,
            "args": {"name": format!("{}:{}", t.comm, t.tid)},
        }));
    }
    let mut stalls: Vec<_> = a.stalls.iter().collect();
    stalls.sort_by_key(|s| (s.tid, s.ts_ns));
    for s in stalls {
        events.push(json!({
            "ph": "X",
            "name": s.cause,
            "cat": "stall",
            "pid": a.root_pid,
            "tid": s.tid,
            "ts": us(s.ts_ns),
            "dur": s.blocked_ns as f64 / 1000.0,
            "args": {
                "state": s.state,
                "site": s.site,
                "lock": s.lock,
                "syscall": s.syscall,
                "waker": s.waker,
                "waker_site": s.waker_site,
                "blocked_ms": s.blocked_ns as f64 / 1e6,
                "runnable_ms": s.runnable_ns as f64 / 1e6,
                "stack": s.stack.join(" <- "),
            },
        }));
        if s.runnable_ns > 0 {
            events.push(json!({
                "ph": "X",
                "name": "runnable",
                "cat": "runnable",
                "pid": a.root_pid,
                "tid": s.tid,
                "ts": us(s.ts_ns + s.blocked_ns),
                "dur": s.runnable_ns as f64 / 1000.0,
            }));
        }
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ms" })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::report::text::tests::sample;

    #[test]
    fn stalls_become_slices_on_their_task() {
        let v = render(&sample());
        let ev = v["traceEvents"].as_array().unwrap();
        let slice = ev
            .iter()
            .find(|e| e["ph"] == "X" && e["cat"] == "stall")
            .unwrap();
        assert_eq!(slice["name"], "page-cache read I/O");
        assert_eq!(slice["tid"], 11);
        assert_eq!(slice["ts"], 100_000.0);
        assert_eq!(slice["dur"], 500_000.0);
        let run = ev.iter().find(|e| e["cat"] == "runnable").unwrap();
        assert_eq!(run["ts"], 600_000.0);
        assert!(ev
            .iter()
            .any(|e| e["name"] == "thread_name" && e["tid"] == 11));
    }
}
