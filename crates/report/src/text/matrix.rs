//! The workload × scheduler table, S's time table done better: one row per
//! workload (the idle baseline last), one column per scheduler, each cell
//! `mean ± ci95 (×ratio to idle)`. Censored runs are never hidden:
//! - half or more timed out: `>T [k/n]` (the median is only a lower bound);
//! - fewer: `med M [k/n]` (the median is known, the mean is not);
//! - ratios that are bounds print as `×≥r` or `×≤r`;
//! - `*` marks a cell with MAD outliers (listed in the JSON);
//! - `[f/n failed]`, `[i/n invalid]`: starts that are not samples (the
//!   target failed; the cell's load had ended), `!` when they are more
//!   than a fifth of the cell's starts.
//!
//! One table per target when an experiment timed several.

use iolab_results::ExperimentKind;
use iolab_store::{CellReport, IDLE_WORKLOAD};

/// The table title for an experiment kind: `startup` → `start-up time [s]`.
pub fn title_for_kind(kind: &ExperimentKind) -> String {
    match kind {
        ExperimentKind::Startup => "start-up time [s]".to_string(),
        other => format!("{other} time [s]"),
    }
}

/// Renders the matrix of `cells` under a title line such as
/// `"start-up time [s]"`, followed by the legend lines it needs.
pub fn render_matrix(cells: &[CellReport], title: &str) -> String {
    let mut targets: Vec<&str> = Vec::new();
    for c in cells {
        if !targets.contains(&c.target.as_str()) {
            targets.push(&c.target);
        }
    }
    let mut out = format!("{title}: mean ± 95% CI (×mean/idle)\n");
    for target in &targets {
        let mine: Vec<&CellReport> = cells.iter().filter(|c| c.target == *target).collect();
        if targets.len() > 1 {
            out.push_str(&format!("\ntarget: {target}\n"));
        }
        out.push_str(&grid(&mine));
    }
    out.push_str(&legend(cells));
    // Macrobenchmark's figures, min / median / max, for whoever reads a
    // start-up as Jetpack and Perfetto report it.
    out.push_str(&format!("\n{title}: min / median / max\n"));
    for target in &targets {
        let mine: Vec<&CellReport> = cells.iter().filter(|c| c.target == *target).collect();
        if targets.len() > 1 {
            out.push_str(&format!("\ntarget: {target}\n"));
        }
        let d = table_decimals(mine.iter().copied());
        out.push_str(&workload_grid(&mine, |c| spread_text(c, d)));
    }
    out
}

/// The text of one cell with `d` decimals (see the module docs for the
/// notation; [`table_decimals`] picks `d` for a whole table).
pub fn cell_text(cell: &CellReport, d: usize) -> String {
    let s = &cell.stats;
    let (Some(mean), Some(median)) = (s.mean, s.median) else {
        return match not_samples(cell) {
            n if n.is_empty() => "-".to_string(),
            n => format!("-{n}!"),
        };
    };
    let mut text = if s.median_is_lower_bound {
        format!(">{}", trimmed(median, d))
    } else if s.censored > 0 {
        format!("med {}", fixed(median, d))
    } else {
        match &s.ci95 {
            Some(ci) => format!("{} ± {}", fixed(mean, d), fixed(ci.half_width, d)),
            None => fixed(mean, d),
        }
    };
    if let Some(r) = &cell.ratio_to_idle {
        let sign = super::bound_sign(r.bound);
        text.push_str(&format!(" (×{sign}{:.2})", r.value));
    }
    if s.censored > 0 {
        text.push_str(&format!(" [{}/{}]", s.censored, s.n));
    }
    if !s.outliers.is_empty() {
        text.push('*');
    }
    text.push_str(&not_samples(cell));
    if cell.flagged {
        text.push('!');
    }
    text
}

/// `min / median / max` of a cell's samples with `d` decimals; a value
/// that is only a lower bound (a start cut off at the timeout) as `>v`.
pub fn spread_text(cell: &CellReport, d: usize) -> String {
    let s = &cell.stats;
    let one = |v: Option<f64>, bound: bool| match v {
        Some(v) if bound => format!(">{}", trimmed(v, d)),
        Some(v) => fixed(v, d),
        None => "-".to_string(),
    };
    if s.n == 0 {
        return "-".to_string();
    }
    format!(
        "{} / {} / {}",
        one(s.min, s.min_is_lower_bound),
        one(s.median, s.median_is_lower_bound),
        one(s.max, s.max_is_lower_bound)
    )
}

/// ` [f/n failed]` and ` [i/n invalid]`, n counting every start of the cell.
fn not_samples(cell: &CellReport) -> String {
    let n = cell.stats.n + cell.failed + cell.invalid;
    let mut out = String::new();
    if cell.failed > 0 {
        out.push_str(&format!(" [{}/{n} failed]", cell.failed));
    }
    if cell.invalid > 0 {
        out.push_str(&format!(" [{}/{n} invalid]", cell.invalid));
    }
    out
}

fn grid(cells: &[&CellReport]) -> String {
    let d = table_decimals(cells.iter().copied());
    workload_grid(cells, |c| cell_text(c, d))
}

/// One row per workload (the idle baseline last), one column per
/// scheduler, each cell `text(cell)` (`-` where there is none): the layout
/// of every per-cell table of a startup experiment.
pub fn workload_grid(cells: &[&CellReport], text: impl Fn(&CellReport) -> String) -> String {
    let mut schedulers: Vec<&str> = Vec::new();
    let mut workloads: Vec<&str> = Vec::new();
    for c in cells {
        if !schedulers.contains(&c.scheduler.as_str()) {
            schedulers.push(&c.scheduler);
        }
        if !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    // The baseline goes last, as the line every other row is read against.
    workloads.sort_by_key(|w| *w == IDLE_WORKLOAD);
    let mut rows = vec![std::iter::once("workload")
        .chain(schedulers.iter().copied())
        .map(str::to_string)
        .collect::<Vec<_>>()];
    for w in &workloads {
        let mut row = vec![w.to_string()];
        for s in &schedulers {
            let cell = cells.iter().find(|c| c.workload == *w && c.scheduler == *s);
            row.push(cell.map_or_else(|| "-".to_string(), |c| text(c)));
        }
        rows.push(row);
    }
    align_columns(&rows)
}

/// Left-aligns rows of cells into columns two spaces apart (the layout of
/// every iolab text table).
pub fn align_columns(rows: &[Vec<String>]) -> String {
    iolab_sys::text::align_columns(rows, usize::MAX)
}

fn legend(cells: &[CellReport]) -> String {
    let mut out = String::new();
    if cells.iter().any(|c| c.stats.censored > 0) {
        out.push_str(
            "[k/n]: k of n runs timed out; >T: half or more did (median ≥ T); \
             med: median (the mean is unknown)\n",
        );
    }
    if cells.iter().any(|c| c.failed + c.invalid > 0) {
        out.push_str(
            "[f/n failed]: the target failed (exit status, signal, no ready line); \
             [i/n invalid]: the background load was not running; neither is in the statistics\n",
        );
    }
    if cells.iter().any(|c| c.flagged) {
        out.push_str(
            "!: over 20 % of the cell's starts are not samples: its statistics are biased\n",
        );
    }
    if cells.iter().any(|c| !c.stats.outliers.is_empty()) {
        out.push_str("*: outliers by MAD modified z-score (|M| > 3.5), listed in --json\n");
    }
    out
}

/// One number of decimals for a whole table, so columns compare at a
/// glance: 2 for times of a second or more (S prints 6.28 s), 3 below a
/// second, 4 below 0.1 s, judged by the smallest mean.
pub fn table_decimals<'a>(cells: impl IntoIterator<Item = &'a CellReport>) -> usize {
    let smallest = cells
        .into_iter()
        .filter_map(|c| c.stats.mean)
        .fold(f64::INFINITY, f64::min);
    match smallest {
        v if v < 0.1 => 4,
        v if v < 1.0 => 3,
        _ => 2,
    }
}

fn fixed(x: f64, decimals: usize) -> String {
    format!("{x:.decimals$}")
}

/// A bound such as a timeout: `60`, not `60.00`.
fn trimmed(x: f64, d: usize) -> String {
    let s = fixed(x, d);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_store::cells_from_runs;
    use iolab_store::testutil::run;

    fn table() -> String {
        let mut runs = Vec::new();
        for (rep, (idle, load)) in (0u32..).zip([(6.2, 12.1), (6.3, 12.9), (6.4, 12.5)]) {
            runs.push(run("bfq", "idle", rep, idle));
            runs.push(run("bfq", "1r1w", rep, load));
            runs.push(run("none", "idle", rep, idle));
            runs.push(run("none", "1r1w", rep, if rep == 0 { 40.0 } else { 60.0 }));
        }
        render_matrix(&cells_from_runs(&runs), "start-up time [s]")
    }

    #[test]
    fn matrix_layout() {
        let t = table();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "start-up time [s]: mean ± 95% CI (×mean/idle)");
        assert!(lines[1].starts_with("workload") && lines[1].contains("bfq"));
        assert!(lines[1].find("bfq") < lines[1].find("none"));
        // The idle row comes last.
        // t(0.975, 2) = 4.303, s = 0.4, n = 3 → ±0.99; 12.5 / 6.3 = 1.98.
        assert!(
            lines[2].starts_with("1r1w      12.50 ± 0.99 (×1.98)"),
            "{t}"
        );
        // none: two of three timed out; mean ≥ 160/3 = 53.3 → ×≥8.47.
        assert!(lines[2].ends_with(">60 (×≥8.47) [2/3]"), "{t}");
        assert!(lines[3].starts_with("idle      6.30 ± 0.25"), "{t}");
        assert!(lines[4].starts_with("[k/n]"), "{t}");
    }

    #[test]
    fn minority_censored_shows_the_median() {
        let runs = vec![
            run("bfq", "1r", 0, 10.0),
            run("bfq", "1r", 1, 11.0),
            run("bfq", "1r", 2, 60.0),
        ];
        let cells = cells_from_runs(&runs);
        assert_eq!(cell_text(&cells[0], 2), "med 11.00 [1/3]");
        assert_eq!(table_decimals(&cells), 2);
        // The timed-out start makes the max a bound, not a value.
        assert_eq!(spread_text(&cells[0], 2), "10.00 / 11.00 / >60");
    }

    #[test]
    fn min_median_max_follow_the_mean_table() {
        let t = table();
        let at = t.find("start-up time [s]: min / median / max").expect(&t);
        let rest: Vec<&str> = t[at..].lines().collect();
        assert!(rest[1].starts_with("workload"), "{t}");
        // none/1r1w: 60, 60 (timed out) and 40: median and max are bounds.
        assert!(rest[2].contains(">60 / >60"), "{t}");
    }

    #[test]
    fn formatting_helpers() {
        assert_eq!(trimmed(60.0, 2), "60");
        assert_eq!(trimmed(33.5, 2), "33.5");
        assert_eq!(fixed(0.12345, 3), "0.123");
        assert_eq!(table_decimals(&[]), 2);
        assert_eq!(
            title_for_kind(&ExperimentKind::Startup),
            "start-up time [s]"
        );
        assert_eq!(
            title_for_kind(&ExperimentKind::parse("probe")),
            "probe time [s]"
        );
    }
}
