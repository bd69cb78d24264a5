//! The terminal report: where the time went (on-CPU, runnable, blocked
//! by cause), the top stacks per cause, the longest stalls (seed 000's
//! "> 300 ms" list, for every path) and, for trees, the tasks.

use std::fmt::Write;

use crate::attribution::{Attribution, CauseTime};
use crate::report::{is_entry_frame, ms};
use crate::rules::{Kind, OTHER};

/// What to show.
#[derive(Debug, Clone)]
pub struct TextOptions {
    /// Stacks shown per cause.
    pub stacks_per_cause: usize,
    /// Stalls listed.
    pub stalls: usize,
    /// Tasks listed.
    pub tasks: usize,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            stacks_per_cause: 3,
            stalls: 20,
            tasks: 10,
        }
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// A stack in one line: innermost meaningful frames, `a ← b ← c`.
fn short_stack(frames: &[String], n: usize) -> String {
    let shown: Vec<&str> = frames
        .iter()
        .map(String::as_str)
        .filter(|f| !is_entry_frame(f) && !matches!(*f, "schedule" | "__schedule"))
        .take(n)
        .collect();
    if shown.is_empty() {
        "(no stack)".into()
    } else {
        shown.join(" ← ")
    }
}

fn cause_line(out: &mut String, c: &CauseTime, total: u64) {
    let wakers: Vec<String> = c
        .wakers
        .iter()
        .take(2)
        .map(|w| format!("{} {:.0} %", w.waker, pct(w.blocked_ns, c.blocked_ns)))
        .collect();
    let woken = if wakers.is_empty() {
        String::new()
    } else {
        format!(", woken by {}", wakers.join(", "))
    };
    let _ = writeln!(
        out,
        "    {:<34} {:>10.1} {:>6.1} %   {} sleeps, max {:.1} ms{woken}",
        c.cause,
        ms(c.blocked_ns),
        pct(c.blocked_ns, total),
        c.stalls,
        ms(c.max_ns),
    );
}

/// Renders the report.
pub fn render(a: &Attribution, o: &TextOptions) -> String {
    let mut out = String::new();
    let root = a.tasks.iter().find(|t| t.tid == a.root_pid);
    let _ = writeln!(
        out,
        "pid {} ({}): {} task{}, wall {:.3} s, task time {:.3} s",
        a.root_pid,
        root.map_or("?", |t| t.comm.as_str()),
        a.tasks.len(),
        if a.tasks.len() == 1 { "" } else { "s" },
        a.wall_ns as f64 / 1e9,
        a.task_ns as f64 / 1e9,
    );
    let mut trace = format!("trace: {} events, {} lost", a.trace.events, a.trace.lost);
    if a.trace.missing_wakeups + a.trace.inconsistent + a.trace.missing_stacks > 0 {
        let _ = write!(
            trace,
            " ({} wakeups missing, {} stacks missing, {} inconsistent)",
            a.trace.missing_wakeups, a.trace.missing_stacks, a.trace.inconsistent
        );
    }
    let _ = writeln!(out, "{trace}");
    if let Some(c) = &a.on_cpu_check {
        let _ = writeln!(
            out,
            "on-CPU check ({}): traced {:.1} ms, kernel {:.1} ms, difference {:+.2} ms",
            c.source,
            ms(c.traced_ns),
            ms(c.measured_ns),
            c.diff_ns as f64 / 1e6
        );
    }
    let total = a.task_ns;
    let _ = writeln!(out, "\nwhere the time went {:>30} {:>8}", "ms", "%");
    let row = |out: &mut String, name: &str, ns: u64| {
        let _ = writeln!(
            out,
            "  {name:<36} {:>10.1} {:>6.1} %",
            ms(ns),
            pct(ns, total)
        );
    };
    row(&mut out, "on-CPU", a.on_cpu_ns);
    row(&mut out, "runnable (waiting for a CPU)", a.runnable_ns);
    row(&mut out, "blocked", a.blocked_ns - a.idle_ns);
    for c in a.causes.iter().filter(|c| c.kind != Kind::Idle) {
        cause_line(&mut out, c, total);
    }
    if a.idle_ns > 0 {
        row(&mut out, "idle waits (not stalls)", a.idle_ns);
        for c in a.causes.iter().filter(|c| c.kind == Kind::Idle) {
            cause_line(&mut out, c, total);
        }
    }
    if a.untraced_ns > 0 {
        row(&mut out, "untraced", a.untraced_ns);
    }

    let _ = writeln!(out, "\ntop stacks per cause (blocked ms, sleeps)");
    for c in a.causes.iter().filter(|c| c.kind != Kind::Idle) {
        let _ = writeln!(out, "  {}", c.cause);
        let frames = if c.cause == OTHER { 16 } else { 6 };
        for s in a
            .stacks
            .iter()
            .filter(|s| s.cause == c.cause)
            .take(o.stacks_per_cause)
        {
            let _ = writeln!(
                out,
                "    {:>9.1} {:>6}×  {}",
                ms(s.blocked_ns),
                s.count,
                short_stack(&s.frames, frames)
            );
        }
    }

    let _ = writeln!(
        out,
        "\nlongest stalls (>= {:.1} ms: {}, showing {})",
        ms(a.min_stall_ns),
        a.stalls_over_min,
        a.stalls.len().min(o.stalls)
    );
    if !a.stalls.is_empty() {
        let _ = writeln!(
            out,
            "  {:>9} {:>9} {:>9} {:>7} {:<2} {:<20} {:<28} {:<24} waker",
            "time(s)", "dur(ms)", "blocked", "runq", "st", "task", "cause", "site"
        );
    }
    for s in a.stalls.iter().take(o.stalls) {
        let mut site = s.site.clone().unwrap_or_default();
        if let Some(l) = &s.lock {
            site = format!("{site} [{l}]");
        }
        if let Some(sc) = &s.syscall {
            site = format!("{sc}: {site}");
        }
        let mut waker = s.waker.clone().unwrap_or_else(|| "-".into());
        if let Some(ws) = &s.waker_site {
            waker = format!("{waker} ({ws})");
        }
        if s.open {
            waker = "(still asleep at the end)".into();
        }
        let _ = writeln!(
            out,
            "  {:>9.3} {:>9.1} {:>9.1} {:>7.2} {:<2} {:<20} {:<28} {:<24} {waker}",
            s.ts_ns.saturating_sub(a.start_ns) as f64 / 1e9,
            ms(s.duration_ns),
            ms(s.blocked_ns),
            ms(s.runnable_ns),
            s.state,
            format!("{}:{}", s.comm, s.tid),
            s.cause,
            site,
        );
        if s.cause == OTHER {
            let _ = writeln!(out, "      stack: {}", short_stack(&s.stack, 16));
        }
    }

    if a.tasks.len() > 1 {
        let _ = writeln!(
            out,
            "\ntasks {:>24} {:>10} {:>10} {:>10} {:>10}  top stall cause",
            "on-CPU ms", "runq ms", "blocked", "idle ms", "lifetime"
        );
        let mut tasks: Vec<_> = a.tasks.iter().collect();
        tasks.sort_by_key(|t| {
            std::cmp::Reverse(t.blocked_ns - t.idle_ns + t.runnable_ns + t.on_cpu_ns)
        });
        for t in tasks.iter().take(o.tasks) {
            let top = t
                .causes
                .iter()
                .find(|(c, _)| {
                    a.causes
                        .iter()
                        .any(|x| &x.cause == c && x.kind != Kind::Idle)
                })
                .map_or(String::new(), |(c, ns)| format!("{c} ({:.1} ms)", ms(*ns)));
            let _ = writeln!(
                out,
                "  {:<20} {:>9.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}  {top}",
                format!("{}:{}", t.comm, t.tid),
                ms(t.on_cpu_ns),
                ms(t.runnable_ns),
                ms(t.blocked_ns - t.idle_ns),
                ms(t.idle_ns),
                ms(t.end_ns.saturating_sub(t.start_ns)),
            );
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::event::SchedEvent;
    use crate::rules::RuleSet;
    use crate::timeline::{Initial, Tracker, TrackerOptions};

    /// One task (cat:11) that sleeps 500 ms in a cold read and 400 ms in
    /// another, runs 100 ms, then exits.
    pub(crate) fn sample() -> Attribution {
        let mut t = Tracker::new(
            RuleSet::builtin(),
            TrackerOptions {
                window_start_ns: 0,
                min_stall_ns: 1_000_000,
                max_stalls: 10,
            },
        );
        t.follow(11, "cat", 0, Initial::Unknown);
        let frames = || {
            Some(
                [
                    "io_schedule",
                    "folio_wait_bit_common",
                    "filemap_read",
                    "ksys_read",
                    "do_syscall_64",
                    "entry_SYSCALL_64_after_hwframe",
                ]
                .iter()
                .map(|s| (*s).into())
                .collect(),
            )
        };
        let ms = 1_000_000;
        let sw = |ts, prev, state, next, stack| SchedEvent::Switch {
            ts_ns: ts,
            prev_pid: prev,
            prev_comm: if prev == 11 { "cat" } else { "x" },
            prev_state: state,
            next_pid: next,
            next_comm: if next == 11 { "cat" } else { "x" },
            stack,
        };
        let wake = |ts| SchedEvent::Waking {
            ts_ns: ts,
            pid: 11,
            waker_pid: 0,
            context: crate::event::WakerContext::SoftIrq,
            waker_stack: None,
        };
        t.event(sw(0, 99, 1, 11, None));
        t.event(sw(100 * ms, 11, 2, 99, frames()));
        t.event(wake(600 * ms));
        t.event(sw(600 * ms + 5 * ms, 99, 0x100, 11, None));
        t.event(sw(700 * ms, 11, 2, 99, frames()));
        t.event(wake(1100 * ms));
        t.event(sw(1100 * ms, 99, 1, 11, None));
        t.event(sw(1200 * ms, 11, 0x10, 99, None));
        t.into_attribution(11, 1200 * ms)
    }

    #[test]
    fn report_has_causes_stacks_and_stalls() {
        let a = sample();
        let text = render(&a, &TextOptions::default());
        assert!(text.contains("page-cache read I/O"), "{text}");
        assert!(
            text.contains("folio_wait_bit_common ← filemap_read ← ksys_read"),
            "{text}"
        );
        assert!(text.contains("[softirq]"), "{text}");
        assert!(text.contains("read: filemap_read"), "{text}");
        // wall 1.2 s: 100+95+100 ms on CPU ... the blocked line shows 900 ms.
        assert!(text.contains("900.0"), "{text}");
    }
}
