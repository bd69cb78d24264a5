//! The main thread by state per cell, as a table (mean seconds per start
//! and their share of the start), then the slow-start reasons each cell's
//! starts were flagged with.

use crate::view::main_thread::MainThreadView;

/// The table, `None` without a split.
pub fn render(v: Option<&MainThreadView>) -> Option<String> {
    let v = v?;
    let mut rows = vec![["scheduler", "workload", "start [s]"]
        .iter()
        .map(|s| s.to_string())
        .chain(v.states.iter().cloned())
        .collect::<Vec<_>>()];
    let mut reasons = Vec::new();
    for c in &v.cells {
        let workload = match &c.variant {
            Some(var) => format!("{} +{var}", c.workload),
            None => c.workload.clone(),
        };
        // A start cut off at the timeout is split up to it: its cell's
        // time is then a lower bound, marked as the matrix marks it.
        let start = match c.censored {
            0 => format!("{:.3}", c.duration_s),
            k => format!(">{:.3} [{k}/{}]", c.duration_s, c.n),
        };
        let mut row = vec![c.scheduler.clone(), workload.clone(), start];
        for s in &c.mean_s {
            let share = if c.duration_s > 0.0 {
                100.0 * s / c.duration_s
            } else {
                0.0
            };
            row.push(format!("{s:.3} {share:>3.0}%"));
        }
        rows.push(row);
        for (r, k) in &c.reasons {
            reasons.push(format!(
                "  {} {workload}: {r} ({k} of {} starts)",
                c.scheduler, c.n
            ));
        }
    }
    let mut out = format!(
        "main thread by state (mean s per start, share of the start; D = uninterruptible sleep, I/O when in io_schedule):\n{}",
        iolab_sys::text::align_columns(&rows, 2)
    );
    if !reasons.is_empty() {
        out.push_str("slow-start reasons (Perfetto's thresholds):\n");
        out.push_str(&reasons.join("\n"));
        out.push('\n');
    }
    Some(out)
}

/// Time to initial and full display per cell (min / median / max), when
/// the starts have both.
pub fn render_display(cells: Option<&Vec<crate::view::display::DisplayCell>>) -> Option<String> {
    let cells = cells?;
    let spread = |s: &Option<crate::view::display::Spread>| match s {
        Some(s) => format!("{:.3} / {:.3} / {:.3}", s.min, s.median, s.max),
        None => "-".to_string(),
    };
    let mut rows = vec![["scheduler", "workload", "initial display", "full display"]
        .map(String::from)
        .to_vec()];
    for c in cells {
        let workload = match &c.variant {
            Some(v) => format!("{} +{v}", c.workload),
            None => c.workload.clone(),
        };
        rows.push(vec![
            c.scheduler.clone(),
            workload,
            spread(&c.ttid),
            spread(&c.ttfd),
        ]);
    }
    Some(format!(
        "time to initial / full display [s]: min / median / max:\n{}",
        iolab_sys::text::align_columns(&rows, 2)
    ))
}
