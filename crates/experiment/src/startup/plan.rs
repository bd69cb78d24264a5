//! The order of runs. Cells are measured one after another — scheduler,
//! then workload — and the background load keeps running across a cell's
//! repetitions, as in the thesis and the S suite: the load is started and
//! warmed up once per cell instead of once per start, which is both what
//! those suites measured and what makes a 4 × 4 × 5 matrix affordable.

use serde::{Deserialize, Serialize};

use super::config::StartupConfig;

/// One cell of the matrix and the repetitions still to run in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellPlan {
    /// Scheduler.
    pub scheduler: String,
    /// Workload.
    pub workload: String,
    /// Repetition numbers (1-based) still to run.
    pub reps: Vec<u32>,
}

/// Plans the matrix, skipping repetitions `done` says are complete
/// (`--resume`).
pub fn plan(cfg: &StartupConfig, done: impl Fn(&str, &str, u32) -> bool) -> Vec<CellPlan> {
    let mut cells = Vec::new();
    for s in &cfg.schedulers {
        for w in cfg.workloads_with_idle() {
            let reps: Vec<u32> = (1..=cfg.reps).filter(|r| !done(s, &w, *r)).collect();
            if !reps.is_empty() {
                cells.push(CellPlan {
                    scheduler: s.clone(),
                    workload: w,
                    reps,
                });
            }
        }
    }
    cells
}

/// Number of starts in a plan.
pub fn total_runs(cells: &[CellPlan]) -> usize {
    cells.iter().map(|c| c.reps.len()).sum()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::config::*;
    use super::*;

    fn cfg() -> StartupConfig {
        StartupConfig {
            place: Place::Lab { name: "x".into() },
            schedulers: vec!["none".into(), "bfq".into()],
            workloads: vec!["1r".into(), "idle".into(), "1w".into()],
            reps: 3,
            timeout_s: 60.0,
            warmup_s: None,
            cold: Cold::DropCaches,
            evict: vec![],
            iosched_params: vec![],
            ready: ReadyWhen::Exit,
            target_ioprio: None,
            target_nice: None,
            load_ioprio: None,
            load_options: vec![],
            command: vec!["true".into()],
            prepare: None,
            dirty_limit_bytes: None,
            read_ahead_kb: None,
            prefetch: None,
            observe: Default::default(),
            memory_pressure: None,
            am_start: None,
        }
    }

    #[test]
    fn idle_first_once_and_every_cell_planned() {
        let p = plan(&cfg(), |_, _, _| false);
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
        let p = plan(&cfg(), |s, w, r| {
            s == "none" && (w == "idle" || (w == "1r" && r < 3))
        });
        assert_eq!(p[0].workload, "1r");
        assert_eq!(p[0].reps, [3]);
        assert_eq!(total_runs(&p), 13);
    }

    #[test]
    fn warmup_defaults_per_scheduler_and_override() {
        let mut c = cfg();
        assert!(c.warmup("bfq") > c.warmup("none"));
        c.warmup_s = Some(0.5);
        assert_eq!(c.warmup("bfq").as_millis(), 500);
    }
}
