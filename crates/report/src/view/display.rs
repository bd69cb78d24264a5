//! Time to initial and to full display per cell (TTID, TTFD: Android's
//! "Displayed" and "Fully drawn"; a command's ready line and its
//! `--full-ready-line`), as Macrobenchmark prints them: min, median, max
//! of the starts that have them. Read from every sample run's
//! `extra.ttid_ns` and `extra.ttfd_ns`.

use serde::Serialize;
use serde_json::Value;

use iolab_store::ExperimentReport;

/// Min, median and max of some starts, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Starts.
    pub n: usize,
    /// Fastest.
    pub min: f64,
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Slowest.
    pub max: f64,
}

impl Spread {
    /// Of `v` (seconds), `None` when empty.
    pub fn of(mut v: Vec<f64>) -> Option<Spread> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Spread {
            n: v.len(),
            min: v[0],
            median: iolab_stats::descriptive::median_of_sorted(&v)?,
            max: v[v.len() - 1],
        })
    }
}

/// One cell.
#[derive(Debug, Clone, Serialize)]
pub struct DisplayCell {
    /// Scheduler.
    pub scheduler: String,
    /// Workload.
    pub workload: String,
    /// Variant.
    pub variant: Option<String>,
    /// Time to initial display.
    pub ttid: Option<Spread>,
    /// Time to full display.
    pub ttfd: Option<Spread>,
}

/// Every cell, `None` when no start has a time to full display (the
/// initial display alone is the start-up table's).
pub fn display(r: &ExperimentReport) -> Option<Vec<DisplayCell>> {
    type Key = (String, String, Option<String>);
    let mut cells: Vec<(Key, Vec<f64>, Vec<f64>)> = Vec::new();
    let mut any_full = false;
    for run in r.runs.iter().filter(|x| x.outcome.is_sample()) {
        let secs = |k: &str| {
            run.extra
                .get(k)
                .and_then(Value::as_u64)
                .map(|ns| ns as f64 / 1e9)
        };
        let key = (
            run.scheduler.clone(),
            run.workload.clone(),
            run.variant.clone(),
        );
        let i = match cells.iter().position(|c| c.0 == key) {
            Some(i) => i,
            None => {
                cells.push((key, Vec::new(), Vec::new()));
                cells.len() - 1
            }
        };
        if let Some(s) = secs("ttid_ns") {
            cells[i].1.push(s);
        }
        if let Some(s) = secs("ttfd_ns") {
            cells[i].2.push(s);
            any_full = true;
        }
    }
    any_full.then(|| {
        cells
            .into_iter()
            .map(|((scheduler, workload, variant), id, fd)| DisplayCell {
                scheduler,
                workload,
                variant,
                ttid: Spread::of(id),
                ttfd: Spread::of(fd),
            })
            .collect()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iolab_store::testutil::run;
    use serde_json::json;

    #[test]
    fn spreads_per_cell_from_the_stored_times() {
        let mut runs = Vec::new();
        for (rep, (id, fd)) in (1u32..).zip([(1u64, 3u64), (2, 5), (4, 4)]) {
            let mut r = run("bfq", "1r", rep, 1.0);
            r.extra = json!({"ttid_ns": id * 1_000_000_000, "ttfd_ns": fd * 1_000_000_000});
            runs.push(r);
        }
        let r = ExperimentReport::new(
            iolab_store::testutil::experiment(iolab_results::ExperimentKind::Startup),
            runs,
        );
        let cells = display(&r).unwrap();
        assert_eq!(cells.len(), 1);
        let (id, fd) = (cells[0].ttid.unwrap(), cells[0].ttfd.unwrap());
        assert_eq!((id.min, id.median, id.max), (1.0, 2.0, 4.0));
        assert_eq!((fd.min, fd.median, fd.max), (3.0, 4.0, 5.0));
        assert!(Spread::of(vec![]).is_none());
        assert_eq!(Spread::of(vec![2.0, 1.0]).unwrap().median, 1.5);
    }
}
