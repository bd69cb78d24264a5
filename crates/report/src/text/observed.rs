//! The collectors' headline numbers per cell, as a table: one row per
//! cell, one column per collector's number (e.g. `sched delay_p99_us`),
//! each the mean over the cell's starts.

use crate::view::observed::ObservedView;

/// The table, `None` without headlines.
pub fn render(v: Option<&ObservedView>) -> Option<String> {
    let v = v?;
    let mut rows = vec![std::iter::once("scheduler".to_string())
        .chain(std::iter::once("workload".to_string()))
        .chain(
            v.columns
                .iter()
                .map(|c| format!("{} {}", c.collector, c.field)),
        )
        .collect::<Vec<_>>()];
    for c in &v.cells {
        let workload = match &c.variant {
            Some(var) => format!("{} +{var}", c.workload),
            None => c.workload.clone(),
        };
        rows.push(
            [c.scheduler.clone(), workload]
                .into_iter()
                .chain(
                    c.means
                        .iter()
                        .map(|m| m.map_or_else(|| "-".to_string(), number)),
                )
                .collect(),
        );
    }
    Some(format!(
        "observed during the starts (mean per start; the collectors' headline numbers):\n{}",
        iolab_sys::text::align_columns(&rows, 2)
    ))
}

/// Up to three decimals, fewer for large numbers, none for counts.
fn number(x: f64) -> String {
    if x.fract() == 0.0 || x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}
