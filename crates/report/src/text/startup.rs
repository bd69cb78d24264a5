//! The text of a startup experiment, the same whether it just ran
//! (`iolab startup`, `iolab demo`) or is read back (`iolab results show`):
//! the matrix of plain starts, the background throughput the load actually
//! achieved during the starts, the prefetch comparison, where the extra
//! time went, and every start that is not a sample with its reason.

use iolab_store::{CellReport, ExperimentReport};
use iolab_sys::units::format_rate;

use super::matrix::{render_matrix, title_for_kind, workload_grid};
use crate::view::startup::StartupView;
use crate::view::ExperimentView;

/// Every table of a startup experiment, in reading order.
pub fn render(report: &ExperimentReport) -> String {
    let view = ExperimentView::of(report);
    let cells: Vec<CellReport> = view
        .startup
        .as_ref()
        .map_or_else(Vec::new, |s: &StartupView| {
            s.cells.iter().map(|c| c.cell.clone()).collect()
        });
    let points = view.startup.as_ref().map_or(&[][..], |s| &s.points[..]);
    let title = title_for_kind(&iolab_results::ExperimentKind::Startup);
    let mut out = String::new();
    if points.is_empty() {
        out.push_str(&render_matrix(&cells, &title));
    } else {
        // One matrix per plan point, each against its own idle.
        for (i, p) in points.iter().enumerate() {
            let mine: Vec<CellReport> = cells
                .iter()
                .filter(|c| {
                    iolab_results::variant::point_of(c.variant.as_deref()).as_deref() == Some(p)
                })
                .cloned()
                .collect();
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&format!("at {p}\n"));
            out.push_str(&render_matrix(&mine, &title));
        }
    }
    // The background grid keeps the points apart by naming them.
    let labelled: Vec<CellReport> = cells
        .iter()
        .filter(|c| c.workload != iolab_store::IDLE_WORKLOAD)
        .map(|c| {
            let mut c = c.clone();
            if let Some(w) = crate::view::plain_workload(&c.workload, c.variant.as_deref()) {
                c.workload = w;
            }
            c
        })
        .collect();
    for t in [
        super::verdict::render(view.verdict.as_ref()),
        super::verdict::render_applied(&view.applied),
        super::main_thread::render_display(view.display.as_ref()),
        render_background(&labelled),
        super::prefetch::render(&view.prefetch),
        super::explain::render_causes(&view.causes),
        super::main_thread::render(view.main_thread.as_ref()),
        super::observed::render(view.observed.as_ref()),
        render_cold(report),
        render_device(report),
        render_not_samples(report),
    ]
    .into_iter()
    .flatten()
    {
        out.push('\n');
        out.push_str(&t);
    }
    out
}

/// Background read/write throughput during the starts of each loaded cell
/// (by the load's own counters, mean over the cell's samples).
pub fn render_background(cells: &[CellReport]) -> Option<String> {
    let loaded: Vec<&CellReport> = cells
        .iter()
        .filter(|c| c.bg_read_bw_bytes.is_some() && c.workload != iolab_store::IDLE_WORKLOAD)
        .collect();
    if loaded.is_empty() {
        return None;
    }
    let grid = workload_grid(&loaded, |c| {
        format!(
            "{} / {}",
            format_rate(c.bg_read_bw_bytes.unwrap_or(0.0)),
            format_rate(c.bg_write_bw_bytes.unwrap_or(0.0))
        )
    });
    Some(format!(
        "background throughput during the starts (read / write, by the load's own counters):\n{grid}"
    ))
}

/// How cold the starts began: the share of the target's files still
/// cached after each cold step (measured, see `extra.cold`), as one line.
pub fn render_cold(report: &ExperimentReport) -> Option<String> {
    let checks: Vec<&serde_json::Value> = report
        .runs
        .iter()
        .map(|r| &r.extra["cold"])
        .filter(|c| c.is_object())
        .collect();
    let last = checks.last()?;
    let mut shares: Vec<f64> = checks
        .iter()
        .map(|c| {
            let cached = c["cached_bytes"].as_u64().unwrap_or(0);
            let before = c["mapped_before_bytes"].as_u64().unwrap_or(0);
            let bytes = c["bytes"].as_u64().unwrap_or(0).max(1);
            cached.saturating_sub(before) as f64 / bytes as f64
        })
        .collect();
    shares.sort_by(f64::total_cmp);
    let not_cold = report
        .runs
        .iter()
        .filter(|r| {
            r.reason
                .as_deref()
                .is_some_and(|w| w.starts_with("not cold"))
        })
        .count();
    Some(format!(
        "cold check: of the target's {} in {} file(s), still cached after the cold step: median {:.1} %, max {:.1} % over {} start(s); {} not cold\n",
        iolab_sys::units::format_bytes(last["bytes"].as_u64().unwrap_or(0)),
        last["files"].as_u64().unwrap_or(0),
        shares[shares.len() / 2] * 100.0,
        shares[shares.len() - 1] * 100.0,
        shares.len(),
        not_cold
    ))
}

/// What the phone did around an activity's starts: a background dexopt
/// that changed the compiled code between cells (flagged: comparisons
/// across it mix compilation states) and screens woken before starts.
pub fn render_device(report: &ExperimentReport) -> Option<String> {
    let mut out = String::new();
    let mut states: Vec<(&str, &iolab_store::RunRecord)> = Vec::new();
    for r in &report.runs {
        if let Some(d) = r.config["dexopt"].as_str() {
            if states.last().is_none_or(|(s, _)| *s != d) {
                states.push((d, r));
            }
        }
    }
    if states.len() > 1 {
        out.push_str("! dexopt changed during this experiment: comparisons across a change mix compilation states\n");
        for (i, (d, r)) in states.iter().enumerate() {
            out.push_str(&format!(
                "  {} {} / {} rep {} on: {d}\n",
                if i == 0 { "from" } else { "then from" },
                r.scheduler,
                r.workload,
                r.rep
            ));
        }
    }
    let woken = report
        .runs
        .iter()
        .filter(|r| r.extra["screen"].is_object())
        .count();
    if woken > 0 {
        out.push_str(&format!(
            "screen: the device was asleep before {woken} start(s): woken and its keyguard dismissed before each, outside its window\n"
        ));
    }
    (!out.is_empty()).then_some(out)
}

/// Every failed or invalid start, with its reason and the target's last
/// output lines; flagged cells first named.
pub fn render_not_samples(report: &ExperimentReport) -> Option<String> {
    super::not_samples::render(report, "starts", |r| {
        format!("{} {} rep {}", r.scheduler, r.workload, r.rep)
    })
}
