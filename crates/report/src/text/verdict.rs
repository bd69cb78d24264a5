//! The verdict table of a plan with points: one per workload, ranked by
//! start-up gain per background cost, `*` on the Pareto front.

use iolab_sys::units::format_rate;

use super::matrix::align_columns;
use crate::view::verdict::{name, BgSource, VerdictView, CACHE_GAP};

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
        "verdict: what protects the start-up, and what it costs the background at the disk (baseline: {})\n",
        v.baseline
    );
    for l in &v.sources {
        out.push_str(&format!("source: {l}\n"));
    }
    for l in &v.inert {
        out.push_str(&format!("inert, run as the point without it: {l}\n"));
    }
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    for t in &v.tables {
        out.push_str(&format!(
            "\nunder {} ({} comparisons with the baseline; intervals simultaneous at 95 %, each at {:.1} %; told apart by Holm):\n",
            t.workload,
            t.family,
            t.interval_level * 100.0
        ));
        let mut rows = vec![vec![
            "rank".to_string(),
            "scheduler".into(),
            "point".into(),
            "start-up [s]".into(),
            "×idle".into(),
            "gain [s] (CI)".into(),
            "p (Holm)".into(),
            "bg at disk".into(),
            "load's own".into(),
            "bg cost (CI)".into(),
            "writes load/target".into(),
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
            let p = r.p_holm.map_or("-".into(), |p| format!("{p:.3}"));
            let disk = match r.disk_bytes_per_s {
                Some(d) => format!("{} (n={})", format_rate(d), r.disk_windows),
                None => "-".into(),
            };
            let load = match (r.load_bytes_per_s, r.load_over_disk) {
                (Some(l), Some(g)) => format!(
                    "{} {g:.2}×{}",
                    format_rate(l),
                    if r.cache_filling { " !" } else { "" }
                ),
                (Some(l), None) => format_rate(l),
                _ => "-".into(),
            };
            let cost = match &r.bg_ratio {
                _ if r.baseline => "-".to_string(),
                Some(x) => {
                    let from = match r.bg_source {
                        BgSource::Disk => "",
                        BgSource::Load => " (load's)",
                    };
                    match &x.ci95 {
                        Some(c) => format!(
                            "{:+.0}% [{:+.0}%, {:+.0}%]{from}",
                            (1.0 - x.value) * 100.0,
                            (1.0 - c.high) * 100.0,
                            (1.0 - c.low) * 100.0
                        ),
                        None => format!("{:+.0}%{from}", (1.0 - x.value) * 100.0),
                    }
                }
                None => "-".into(),
            };
            let shares = match (r.load_write_share, r.target_write_share) {
                (Some(l), Some(tg)) => format!("{}/{}", pct(l), pct(tg)),
                _ => "-".into(),
            };
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
                p,
                disk,
                load,
                cost,
                shares,
                if r.pareto { "*".into() } else { String::new() },
            ]);
        }
        out.push_str(&align_columns(&rows));
        if let Some((a, b)) = &t.best_two_alike {
            out.push_str(&format!(
                "the two best are not distinguishable at 95 % (Welch): {a} and {b}; {a} costs the background less\n"
            ));
        } else if let Some(best) = t.rows.first().filter(|r| !r.baseline && r.distinguishable) {
            out.push_str(&format!("best: {}\n", name(best)));
        } else {
            out.push_str(
                "no point starts faster than the baseline by more than the family's noise\n",
            );
        }
        let filling: Vec<String> = t
            .rows
            .iter()
            .filter(|r| r.cache_filling)
            .map(name)
            .collect();
        if !filling.is_empty() {
            out.push_str(&format!(
                "! the load counted more than {CACHE_GAP}× what the disk sustained (the page cache took it; the cost is the disk's): {}\n",
                filling.join(", ")
            ));
        }
    }
    out.push_str(
        "\ngain: baseline mean − this mean, with its simultaneous interval (Welch, Bonferroni over the family; ≈: Holm's adjusted p ≥ 0.05, not told apart); ×idle: start-up / idle start-up at the same point (95 %, log scale); bg at disk: /proc/diskstats over each cell window (load start to writeback flushed) less the target group's bytes, n windows; load's own: the load's rate during the starts, and that / the disk's (!: above 1.25×, a page cache filling); bg cost: 1 − bg / the baseline's (log-scale simultaneous interval); writes load/target: share of the disk's writes charged to each iolab group (io.stat / blkio); rank: gains told apart first, by gain; cost is the second axis; front *: no other row starts faster and leaves the background more\n",
    );
    Some(out)
}
