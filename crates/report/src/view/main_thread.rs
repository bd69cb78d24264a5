//! The start's main thread by state, per cell (`--explain` runs): the
//! mean time per start in each state (Perfetto's
//! `main_thread_by_task_state`), and how many starts each slow-start
//! reason flagged. Read from every sample run's
//! `extra.observed.explain.main_thread`.

use serde::Serialize;
use serde_json::Value;

use iolab_store::ExperimentReport;

/// The states, bottom of a stacked bar first: (stored field, label).
pub const STATES: [(&str, &str); 5] = [
    ("running_dur_ns", "running"),
    ("runnable_dur_ns", "runnable"),
    ("uninterruptible_io_sleep_dur_ns", "D (I/O)"),
    ("uninterruptible_non_io_sleep_dur_ns", "D (other)"),
    ("interruptible_sleep_dur_ns", "sleeping"),
];

/// One cell.
#[derive(Debug, Clone, Serialize)]
pub struct MainThreadCell {
    /// Scheduler.
    pub scheduler: String,
    /// Workload.
    pub workload: String,
    /// Variant (e.g. `prefetch:before`).
    pub variant: Option<String>,
    /// Starts with a split.
    pub n: usize,
    /// Of those, starts cut off at the timeout: their split runs to it.
    pub censored: usize,
    /// Mean seconds per start in each of [`STATES`], in that order.
    pub mean_s: Vec<f64>,
    /// Mean seconds per start the thread was untraced or not yet alive.
    pub other_s: f64,
    /// Mean start-up time of the same starts, s.
    pub duration_s: f64,
    /// Each slow-start reason, and in how many of the `n` starts.
    pub reasons: Vec<(String, usize)>,
}

/// Every cell with a split, in the order first seen.
#[derive(Debug, Clone, Serialize)]
pub struct MainThreadView {
    /// State labels, in [`STATES`] order.
    pub states: Vec<String>,
    /// Cells.
    pub cells: Vec<MainThreadCell>,
}

/// The view of `r`, `None` when no start has a main-thread split.
pub fn main_thread(r: &ExperimentReport) -> Option<MainThreadView> {
    type Key = (String, String, Option<String>);
    /// A start's split, its duration and whether it was cut off.
    type Start<'a> = (&'a Value, u64, bool);
    let mut cells: Vec<(Key, Vec<Start<'_>>)> = Vec::new();
    for run in r.runs.iter().filter(|x| x.outcome.is_sample()) {
        let Some(m) = run.extra.pointer("/observed/explain/main_thread") else {
            continue;
        };
        let key = (
            run.scheduler.clone(),
            run.workload.clone(),
            run.variant.clone(),
        );
        match cells.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push((m, run.duration_ns, run.censored)),
            None => cells.push((key, vec![(m, run.duration_ns, run.censored)])),
        }
    }
    if cells.is_empty() {
        return None;
    }
    let cells = cells
        .into_iter()
        .map(|((scheduler, workload, variant), runs)| {
            let n = runs.len();
            let mean = |f: &dyn Fn(&Value, u64) -> f64| {
                runs.iter().map(|(m, d, _)| f(m, *d)).sum::<f64>() / n as f64
            };
            let field = |m: &Value, k: &str| {
                m.pointer(&format!("/by_task_state/{k}"))
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
                    / 1e9
            };
            let mean_s = STATES
                .iter()
                .map(|(k, _)| mean(&|m, _| field(m, k)))
                .collect();
            let other_s = mean(&|m, _| field(m, "untraced_dur_ns") + field(m, "not_alive_dur_ns"));
            let mut reasons: Vec<(String, usize)> = Vec::new();
            for (m, _, _) in &runs {
                let list = m.get("slow_start_reasons").and_then(Value::as_array);
                for r in list.into_iter().flatten() {
                    let name = r["reason"].as_str().unwrap_or("").to_string();
                    match reasons.iter_mut().find(|x| x.0 == name) {
                        Some(x) => x.1 += 1,
                        None => reasons.push((name, 1)),
                    }
                }
            }
            MainThreadCell {
                censored: runs.iter().filter(|r| r.2).count(),
                duration_s: mean(&|_, d| d as f64 / 1e9),
                scheduler,
                workload,
                variant,
                n,
                mean_s,
                other_s,
                reasons,
            }
        })
        .collect();
    Some(MainThreadView {
        states: STATES.iter().map(|s| s.1.to_string()).collect(),
        cells,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iolab_store::testutil::run;
    use serde_json::json;

    fn with_split(rep: u32, io_ns: u64, reasons: &[&str]) -> iolab_store::RunRecord {
        let mut r = run("bfq", "1r", rep, 1.0);
        let reasons: Vec<Value> = reasons.iter().map(|r| json!({"reason": r})).collect();
        r.extra = json!({"observed": {"explain": {"main_thread": {
            "by_task_state": {
                "running_dur_ns": 100_000_000u64,
                "uninterruptible_io_sleep_dur_ns": io_ns,
                "not_alive_dur_ns": 10_000_000u64,
            },
            "slow_start_reasons": reasons,
        }}}});
        r
    }

    #[test]
    fn states_are_averaged_per_cell_and_reasons_counted() {
        let r = ExperimentReport::new(
            iolab_store::testutil::experiment(iolab_results::ExperimentKind::Startup),
            vec![
                with_split(
                    1,
                    800_000_000,
                    &["Main Thread - Time spent in Blocking I/O"],
                ),
                with_split(2, 200_000_000, &[]),
                run("bfq", "idle", 1, 1.0),
            ],
        );
        let v = main_thread(&r).unwrap();
        assert_eq!(v.cells.len(), 1);
        let c = &v.cells[0];
        assert_eq!(c.n, 2);
        assert!((c.mean_s[0] - 0.1).abs() < 1e-9);
        assert!((c.mean_s[2] - 0.5).abs() < 1e-9);
        assert!((c.other_s - 0.01).abs() < 1e-9);
        assert_eq!(
            c.reasons,
            [("Main Thread - Time spent in Blocking I/O".to_string(), 1)]
        );
    }
}
