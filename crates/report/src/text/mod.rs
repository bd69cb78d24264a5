//! The terminal renderer: the text `iolab results show`, `startup`,
//! `sweep`, `demo` and `results compare` print, chosen by the experiment's
//! kind in this one place ([`tables`]).

pub mod boot;
pub mod compare;
pub mod explain;
pub mod keyvalue;
pub mod main_thread;
pub mod matrix;
pub mod max;
pub mod not_samples;
pub mod observed;
pub mod prefetch;
pub mod startup;
pub mod sweep;
pub mod verdict;

use iolab_results::ExperimentKind;
use iolab_store::ExperimentReport;

use crate::view::max::MaxTable;
use crate::view::sweep::{Metric, SweepTable};

pub use keyvalue::{key_values, render_key_values};

/// `3 reps`, `1 run`: how many repetitions the largest cell has.
fn count_of(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// A table's header row: `first`, then one column per scheduler.
fn header_row(first: &str, schedulers: &[String]) -> Vec<String> {
    std::iter::once(first.to_string())
        .chain(schedulers.iter().cloned())
        .collect()
}

/// A CSV number: three decimals, empty when unknown.
fn csv_num(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x:.3}"))
}

/// `≥` or `≤` before a ratio that is only a bound (censored starts).
pub fn bound_sign(b: iolab_stats::Bound) -> &'static str {
    match b {
        iolab_stats::Bound::Exact => "",
        iolab_stats::Bound::Lower => "≥",
        iolab_stats::Bound::Upper => "≤",
    }
}

/// `1.234× [1.100, 1.380]`: a ratio with its 95 % interval when known.
pub fn ratio_ci_text(r: &iolab_stats::Ratio) -> String {
    let sign = bound_sign(r.bound);
    match &r.ci95 {
        Some(ci) => format!("{sign}{:.3}× [{:.3}, {:.3}]", r.value, ci.low, ci.high),
        None => format!("{sign}{:.3}×", r.value),
    }
}
pub use matrix::{align_columns, render_matrix, title_for_kind};

/// The tables of one experiment (without its header, config and
/// environment), as its kind shows them.
pub fn tables(report: &ExperimentReport) -> String {
    let kind = &report.experiment.kind;
    if report.cells.is_empty() {
        return "no runs recorded yet\n".to_string();
    }
    match kind {
        ExperimentKind::Sweep => sweep_tables(report, Metric::Bw),
        ExperimentKind::SweepMax => max_tables(report),
        ExperimentKind::Startup => startup::render(report),
        ExperimentKind::Boot => boot::render(report),
        ExperimentKind::Other(_) => render_matrix(&report.cells, &title_for_kind(kind)),
    }
}

/// A stored sweep's tables: throughputs (or `metric`), not times.
pub fn sweep_tables(report: &ExperimentReport, metric: Metric) -> String {
    sweep::render(&SweepTable::from_runs(&report.runs), metric)
}

/// A stored max sweep's tables: IOPS maxima with CPU per I/O.
pub fn max_tables(report: &ExperimentReport) -> String {
    max::render(&MaxTable::from_runs(&report.runs))
}
