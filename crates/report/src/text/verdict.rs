//! The verdict table of a plan with points: one per workload, ranked by
//! start-up gain per background cost, `*` on the Pareto front.

use iolab_sys::units::format_rate;

use super::matrix::align_columns;
use crate::view::verdict::{name, VerdictView, FREE_COST};

/// Each loaded cell's settings as the kernel read them back, and its
/// groups' bytes against the disk's; `None` without a plan.
pub fn render_applied(cells: &[crate::view::applied::AppliedCell]) -> Option<String> {
    if cells.is_empty() {
        return None;
    }
    let mib = |b: u64| format!("{:.1}", b as f64 / 1_048_576.0);
    let pair = |p: Option<(u64, u64)>| {
        p.map_or("-".to_string(), |(g, d)| format!("{} / {}", mib(g), mib(d)))
    };
    let mut rows = vec![vec![
        "scheduler".to_string(),
        "workload".into(),
        "settings as read back".into(),
        "groups / disk read [MiB]".into(),
        "groups / disk written [MiB]".into(),
    ]];
    for c in cells {
        rows.push(vec![
            c.scheduler.clone(),
            c.workload.clone(),
            applied_text(c),
            pair(c.read_bytes),
            pair(c.write_bytes),
        ]);
    }
    Some(format!(
        "what the kernel held (each setting read back after it was written, `!`: not as asked; the cgroups' bytes against /proc/diskstats over the cell):\n{}",
        align_columns(&rows)
    ))
}

/// A cell's settings as read back; a point that wrote no file (the
/// baseline, or priorities only) shows as its text.
pub fn applied_text(c: &crate::view::applied::AppliedCell) -> String {
    if c.settings.is_empty() {
        format!("(no file written) {}", c.point)
    } else {
        c.settings.join("; ")
    }
}

/// The verdict as text; `None` without one.
pub fn render(v: Option<&VerdictView>) -> Option<String> {
    let v = v?;
    let mut out = format!(
        "verdict: what protects the start-up, and what it costs the background (baseline: {})\n",
        v.baseline
    );
    for t in &v.tables {
        out.push_str(&format!("\nunder {}:\n", t.workload));
        let mut rows = vec![vec![
            "rank".to_string(),
            "scheduler".into(),
            "point".into(),
            "start-up [s]".into(),
            "×idle".into(),
            "gain [s] (95% CI)".into(),
            "background".into(),
            "bg cost".into(),
            "gain/cost".into(),
            "front".into(),
        ]];
        for r in &t.rows {
            let startup = match (r.startup_s, r.startup_ci95_s) {
                (Some(m), Some(h)) => format!("{m:.3} ± {h:.3}"),
                (Some(m), None) => format!("{m:.3}"),
                _ => "-".into(),
            };
            let slowdown = r.slowdown.as_ref().map_or("-".into(), |s| {
                let ci = s
                    .ci95
                    .as_ref()
                    .map_or(String::new(), |c| format!(" [{:.2}, {:.2}]", c.low, c.high));
                format!("{:.2}{ci}", s.value)
            });
            let gain = if r.baseline {
                "baseline".to_string()
            } else {
                match (r.gain_s, r.gain_ci95_s) {
                    (Some(g), Some((lo, hi))) => format!(
                        "{g:+.3} [{lo:+.3}, {hi:+.3}]{}",
                        if r.distinguishable { "" } else { " ≈" }
                    ),
                    (Some(g), None) => format!("{g:+.3}"),
                    _ => "-".into(),
                }
            };
            let bg = r.bg_bytes_per_s.map_or("-".into(), format_rate);
            let cost = r
                .bg_cost
                .map_or("-".into(), |c| format!("{:+.0}%", c * 100.0));
            let gpc = r.gain_per_cost.map_or("-".into(), |g| format!("{g:.2}"));
            rows.push(vec![
                r.rank.to_string(),
                r.scheduler.clone(),
                if r.point.is_empty() {
                    "-".into()
                } else {
                    r.point.clone()
                },
                startup,
                slowdown,
                gain,
                bg,
                cost,
                gpc,
                if r.pareto { "*".into() } else { String::new() },
            ]);
        }
        out.push_str(&align_columns(&rows));
        if let Some((a, b)) = &t.best_two_alike {
            out.push_str(&format!(
                "the two best are not distinguishable at 95 % (Welch): {a} and {b}\n"
            ));
        } else if let Some(best) = t.rows.first().filter(|r| !r.baseline) {
            out.push_str(&format!("best gain per cost: {}\n", name(best)));
        }
        // The rank weighs the background; the fastest start-up is what some
        // readers want instead (it is on the front by definition).
        if let Some(f) = t
            .rows
            .iter()
            .filter(|r| r.startup_s.is_some())
            .min_by(|a, b| {
                a.startup_s
                    .unwrap_or(f64::MAX)
                    .total_cmp(&b.startup_s.unwrap_or(f64::MAX))
            })
        {
            out.push_str(&format!(
                "fastest start-up: {} ({:.3} s, background cost {})\n",
                name(f),
                f.startup_s.unwrap_or(0.0),
                f.bg_cost
                    .map_or("-".into(), |c| format!("{:+.0}%", c * 100.0))
            ));
        }
    }
    out.push_str(&format!(
        "\ngain: baseline mean − this mean (≈: its 95% interval holds 0, not told apart); ×idle: start-up / idle start-up at the same point (Fieller 95%); background: the load's read+write rate during the starts; bg cost: 1 − that / the baseline's; gain/cost: relative gain / max(cost, {:.0}%), the rank's key, gains told apart first; front *: no other row starts faster and leaves the background more\n",
        FREE_COST * 100.0
    ));
    Some(out)
}
