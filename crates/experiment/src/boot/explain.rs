//! `iolab boot --explain`: one more boot of each variant with the boot's
//! processes under `iolab explain` inside the guest (the root's init runs
//! its workload under `iolab explain --json -- sh -c '...'`, the
//! workload between two reads of PSI), so the
//! kernel paths the boot waited in come from the guest kernel's own
//! switch-out stacks, per variant. Such a boot carries the tracer's cost
//! (its start and every context switch recorded), so it is stored apart
//! (`explain:VARIANT`) and never compared with the timed boots.

use iolab_explain::{Attribution, Kind};
use serde_json::{json, Value};

/// The file the guest's init leaves with explain's JSON.
pub const REPORT: &str = "explain.json";
/// Its standard error, for a failure's reason.
pub const ERRORS: &str = "explain.err";
/// Causes kept in a boot's summary.
const CAUSES: usize = 8;
/// Frames kept of each cause's heaviest stack (innermost first).
const FRAMES: usize = 8;
/// The switch-out machinery every sleeping stack starts with: not where
/// the task waited.
const SCHEDULING: [&str; 5] = [
    "__schedule",
    "schedule",
    "io_schedule",
    "schedule_timeout",
    "schedule_preempt_disabled",
];

/// What one explained boot shows, small enough for the run's `extra`:
/// where the boot's processes' time went (on a CPU, runnable, blocked
/// outside idle waits, in D-state waiting for I/O), the causes of the
/// blocked time with each one's heaviest stack, and per process name the
/// blocked time (the prefetch is not among them: it is not a descendant
/// of the boot's workload).
pub fn summary(a: &Attribution) -> Value {
    let s = |ns: u64| ns as f64 / 1e9;
    let causes: Vec<Value> = a
        .causes
        .iter()
        .filter(|c| c.kind != Kind::Idle)
        .take(CAUSES)
        .map(|c| {
            let stack = a
                .stacks
                .iter()
                .filter(|st| st.cause == c.cause)
                .max_by_key(|st| st.blocked_ns)
                .map(|st| {
                    st.frames
                        .iter()
                        .filter(|f| !SCHEDULING.contains(&f.as_str()))
                        .take(FRAMES)
                        .cloned()
                        .collect::<Vec<_>>()
                });
            json!({
                "cause": c.cause,
                "kind": c.kind,
                "blocked_s": s(c.blocked_ns),
                "runnable_s": s(c.runnable_ns),
                "stalls": c.stalls,
                "max_ms": c.max_ns as f64 / 1e6,
                "stack": stack,
            })
        })
        .collect();
    let mut by_comm: std::collections::BTreeMap<&str, (u64, u64, u64)> = Default::default();
    for t in &a.tasks {
        let e = by_comm.entry(t.comm.as_str()).or_default();
        e.0 += t.blocked_ns - t.idle_ns.min(t.blocked_ns);
        e.1 += t.d_io_ns;
        e.2 += t.on_cpu_ns;
    }
    let mut processes: Vec<(&str, (u64, u64, u64))> = by_comm.into_iter().collect();
    processes.sort_by_key(|p| std::cmp::Reverse(p.1 .0));
    json!({
        "wall_s": s(a.wall_ns),
        "tasks": a.tasks.len(),
        "on_cpu_s": s(a.on_cpu_ns),
        "runnable_s": s(a.runnable_ns),
        "blocked_s": s(a.blocked_ns - a.idle_ns.min(a.blocked_ns)),
        "d_io_s": s(a.tasks.iter().map(|t| t.d_io_ns).sum()),
        "causes": causes,
        "processes": processes.iter().take(CAUSES).map(|(comm, (b, d, c))| json!({
            "comm": comm, "blocked_s": s(*b), "d_io_s": s(*d), "on_cpu_s": s(*c),
        })).collect::<Vec<_>>(),
        "lost_events": a.trace.lost,
    })
}

/// explain's report from a boot's results, or why there is none.
pub fn read(results: &std::path::Path) -> Result<Attribution, String> {
    let text = std::fs::read_to_string(results.join(REPORT));
    let err = || {
        std::fs::read_to_string(results.join(ERRORS))
            .ok()
            .and_then(|e| {
                e.lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "it wrote no error".into())
    };
    match text {
        Ok(t) if !t.trim().is_empty() => serde_json::from_str(&t)
            .map_err(|e| format!("explain's report in the guest does not parse ({e})")),
        _ => Err(format!("explain in the guest left no report: {}", err())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_report_says_explains_own_error() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(ERRORS),
            "iolab explain: cannot start tracing\n\n",
        )
        .unwrap();
        let e = read(d.path()).unwrap_err();
        assert!(e.contains("cannot start tracing"), "{e}");
        std::fs::write(d.path().join(REPORT), "{").unwrap();
        assert!(read(d.path()).unwrap_err().contains("does not parse"));
    }
}
