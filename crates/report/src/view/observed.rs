//! What the collectors summarised about each run: every collector may put
//! a `headline` object of numbers in its summary (the run's
//! `extra.observed.NAME.headline`); here they are averaged per cell. The
//! view knows no collector by name, so a new one is shown by every
//! renderer without a change here.

use serde::Serialize;
use serde_json::Value;

use iolab_store::ExperimentReport;

/// One column: a collector's headline number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Column {
    /// The collector (`sched`).
    pub collector: String,
    /// The number (`delay_avg_us`).
    pub field: String,
}

/// One cell's means.
#[derive(Debug, Clone, Serialize)]
pub struct ObservedCell {
    /// Scheduler.
    pub scheduler: String,
    /// Workload.
    pub workload: String,
    /// Variant (e.g. `prefetch:before`).
    pub variant: Option<String>,
    /// Runs with any headline.
    pub n: usize,
    /// Mean over the cell's runs of each column (`None`: no run has it).
    pub means: Vec<Option<f64>>,
}

/// Every headline column and every cell that has one.
#[derive(Debug, Clone, Serialize)]
pub struct ObservedView {
    /// Columns, in the order first seen.
    pub columns: Vec<Column>,
    /// Cells, in the order first seen.
    pub cells: Vec<ObservedCell>,
}

/// One headline number of a run: (collector, field, value).
type Headline = (String, String, f64);

/// The headline numbers of a run.
fn headlines(extra: &Value) -> Vec<Headline> {
    let mut out = Vec::new();
    if let Some(observed) = extra.get("observed").and_then(Value::as_object) {
        for (collector, summary) in observed {
            if let Some(h) = summary.get("headline").and_then(Value::as_object) {
                for (field, v) in h {
                    if let Some(x) = v.as_f64() {
                        out.push((collector.clone(), field.clone(), x));
                    }
                }
            }
        }
    }
    out
}

/// The view of `r`, `None` when no run has a headline.
pub fn observed(r: &ExperimentReport) -> Option<ObservedView> {
    type Key = (String, String, Option<String>);
    let mut columns: Vec<Column> = Vec::new();
    let mut cells: Vec<(Key, Vec<Vec<Headline>>)> = Vec::new();
    for run in r.runs.iter().filter(|x| x.outcome.is_sample()) {
        let h = headlines(&run.extra);
        if h.is_empty() {
            continue;
        }
        for (c, f, _) in &h {
            let col = Column {
                collector: c.clone(),
                field: f.clone(),
            };
            if !columns.contains(&col) {
                columns.push(col);
            }
        }
        let key = (
            run.scheduler.clone(),
            run.workload.clone(),
            run.variant.clone(),
        );
        match cells.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(h),
            None => cells.push((key, vec![h])),
        }
    }
    if columns.is_empty() {
        return None;
    }
    let cells = cells
        .into_iter()
        .map(|((scheduler, workload, variant), runs)| ObservedCell {
            means: columns
                .iter()
                .map(|col| {
                    let vals: Vec<f64> = runs
                        .iter()
                        .flat_map(|h| h.iter())
                        .filter(|(c, f, _)| *c == col.collector && *f == col.field)
                        .map(|(_, _, v)| *v)
                        .collect();
                    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
                })
                .collect(),
            n: runs.len(),
            scheduler,
            workload,
            variant,
        })
        .collect();
    Some(ObservedView { columns, cells })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iolab_store::testutil::run;
    use serde_json::json;

    #[test]
    fn headlines_are_averaged_per_cell_and_other_summaries_ignored() {
        let mut a = run("bfq", "1r", 1, 1.0);
        a.extra = json!({"observed": {
            "sched": {"headline": {"delay_avg_us": 10.0, "wakeups": 4}, "tasks": 2},
            "bio": {"requests": 80}
        }});
        let mut b = run("bfq", "1r", 2, 1.0);
        b.extra =
            json!({"observed": {"sched": {"headline": {"delay_avg_us": 30.0, "wakeups": 6}}}});
        let c = run("bfq", "idle", 1, 1.0);
        let r = ExperimentReport::new(
            iolab_store::testutil::experiment(iolab_results::ExperimentKind::Startup),
            vec![a, b, c],
        );
        let v = observed(&r).unwrap();
        let names: Vec<String> = v
            .columns
            .iter()
            .map(|c| format!("{}.{}", c.collector, c.field))
            .collect();
        assert_eq!(names, ["sched.delay_avg_us", "sched.wakeups"]);
        assert_eq!(v.cells.len(), 1);
        assert_eq!(v.cells[0].means, [Some(20.0), Some(5.0)]);
        assert_eq!(v.cells[0].n, 2);
        let none = ExperimentReport::new(
            iolab_store::testutil::experiment(iolab_results::ExperimentKind::Startup),
            vec![run("bfq", "idle", 1, 1.0)],
        );
        assert!(observed(&none).is_none());
    }
}
