//! The order of runs. Cells are measured one after another — scheduler,
//! then workload — and the background load keeps running across a cell's
//! repetitions, as in the thesis and the S suite: the load is started and
//! warmed up once per cell instead of once per start, which is both what
//! those suites measured and what makes a 4 × 4 × 5 matrix affordable.

use super::config::StartupConfig;
use crate::engine::Cell;

/// Plans the matrix over `schedulers` × the configuration's points ×
/// workloads, skipping repetitions `done` says are complete (`--resume`;
/// it is given the point's text).
pub fn plan(
    schedulers: &[String],
    cfg: &StartupConfig,
    done: impl Fn(&str, &str, u32, Option<&str>) -> bool,
) -> Vec<Cell> {
    let mut cells = Vec::new();
    for s in schedulers {
        let points: Vec<Option<String>> = if cfg.points.is_empty() {
            vec![None]
        } else {
            crate::control::points::for_scheduler(&cfg.points, s)
                .iter()
                .map(|p| Some(p.text()))
                .collect()
        };
        for point in points {
            for w in cfg.workloads_with_idle() {
                let reps: Vec<u32> = (1..=cfg.reps)
                    .filter(|r| !done(s, &w, *r, point.as_deref()))
                    .collect();
                if !reps.is_empty() {
                    cells.push(Cell {
                        scheduler: s.clone(),
                        workload: w,
                        reps,
                        variant: point.clone(),
                    });
                }
            }
        }
    }
    cells
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::config::tests::cfg;
    use super::*;

    fn scheds() -> Vec<String> {
        vec!["none".into(), "bfq".into()]
    }

    fn total_runs(cells: &[Cell]) -> usize {
        cells.iter().map(|c| c.reps.len()).sum()
    }

    #[test]
    fn idle_first_once_and_every_cell_planned() {
        let p = plan(&scheds(), &cfg(), |_, _, _, _| false);
        let names: Vec<_> = p
            .iter()
            .map(|c| format!("{}/{}", c.scheduler, c.workload))
            .collect();
        assert_eq!(
            names,
            [
                "none/idle",
                "none/1r",
                "none/1w",
                "bfq/idle",
                "bfq/1r",
                "bfq/1w"
            ]
        );
        assert_eq!(total_runs(&p), 18);
    }

    #[test]
    fn resume_skips_completed_reps_and_cells() {
        let p = plan(&scheds(), &cfg(), |s, w, r, _| {
            s == "none" && (w == "idle" || (w == "1r" && r < 3))
        });
        assert_eq!(p[0].workload, "1r");
        assert_eq!(p[0].reps, [3]);
        assert_eq!(total_runs(&p), 13);
    }
}
