//! What a start can record besides its time: `--trace bio` (every block
//! request on the device under test, stored as the run's `latency_hist`),
//! `--cpu` (CPU utilisation and pressure stalls, `cpu` and `psi`) and
//! `--explain` (where the target's time went, `explain`). Each is started
//! just before the launch and stopped after it, so it covers the start-up
//! window, and is stored with the run it belongs to.

use std::time::Duration;

use iolab_bio::{BioTracer, Disks};
use iolab_explain::{describe_diff, Attribution, Explainer, Totals};
use iolab_guard::Guard;
use iolab_store::ExperimentReport;
use iolab_sys::cpustat::CpuMonitor;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StartupError;

/// Start-ups last seconds: sample CPU and pressure often enough to see
/// their shape.
const CPU_INTERVAL: Duration = Duration::from_millis(200);

/// Which observers run with every start (stored with the experiment, so a
/// resumed run observes the same way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observe {
    /// Trace every block request on the device under test.
    #[serde(default)]
    pub trace_bio: bool,
    /// Sample CPU utilisation and pressure stalls.
    #[serde(default)]
    pub cpu: bool,
    /// Attribute the target's stalls to kernel paths.
    #[serde(default)]
    pub explain: bool,
}

/// The observers of one start that run beside it (explain is attached to
/// the held child by the launch itself).
pub(super) struct Observers {
    cpu: Option<CpuMonitor>,
    bio: Option<BioTracer>,
}

impl Observers {
    /// Starts what `o` asks for on device `dev` (a kernel name).
    pub(super) fn start(guard: &Guard, o: Observe, dev: &str) -> Result<Observers, StartupError> {
        let cpu = o.cpu.then(|| CpuMonitor::start(CPU_INTERVAL)).transpose()?;
        let bio = if o.trace_bio {
            let disk = Disks::default().resolve(dev)?;
            Some(BioTracer::start(guard, vec![disk])?)
        } else {
            None
        };
        Ok(Observers { cpu, bio })
    }

    /// Stops them; the run's artifacts as (kind, document).
    pub(super) fn stop(self) -> Result<Vec<(&'static str, Value)>, StartupError> {
        let mut docs = Vec::new();
        if let Some(c) = self.cpu {
            let s = c.stop();
            docs.push(("cpu", serde_json::to_value(&s.cpu).unwrap_or_default()));
            docs.push(("psi", serde_json::to_value(&s.psi).unwrap_or_default()));
        }
        if let Some(b) = self.bio {
            let h = b.stop()?.histograms();
            docs.push(("latency_hist", serde_json::to_value(h).unwrap_or_default()));
        }
        Ok(docs)
    }
}

/// The explain observer for a held child: follows `pid` and its
/// descendants from before exec.
pub(super) fn explain_from(guard: &Guard, pid: i32) -> Result<Explainer, StartupError> {
    Ok(Explainer::start(guard, pid)?)
}

/// Per scheduler and workload, the top causes of the change in time from
/// the same scheduler's idle starts (means over the stored `explain`
/// artifacts), e.g. `mq-deadline  1w  +4.1 s: 62 % journal commit wait`.
/// `None` when no run has an attribution.
pub fn render_causes(report: &ExperimentReport) -> Option<String> {
    use std::collections::BTreeMap;
    let mut by_cell: BTreeMap<(String, String), Vec<Totals>> = BTreeMap::new();
    for a in report.artifacts.iter().filter(|a| a.kind == "explain") {
        if super::prefetch::is_variant(&a.target) {
            continue;
        }
        let Ok(attr) = serde_json::from_value::<Attribution>(a.json.clone()) else {
            continue;
        };
        by_cell
            .entry((a.scheduler.clone(), a.workload.clone()))
            .or_default()
            .push(attr.totals());
    }
    if by_cell.is_empty() {
        return None;
    }
    let mut rows = vec![vec![
        "scheduler".to_string(),
        "workload".to_string(),
        "n".to_string(),
        "time vs idle: top causes of the change".to_string(),
    ]];
    // In the matrix's order: schedulers as run, then workloads.
    let mut order: Vec<(String, String)> = report
        .cells
        .iter()
        .map(|c| (c.scheduler.clone(), c.workload.clone()))
        .filter(|k| by_cell.contains_key(k))
        .collect();
    order.dedup();
    for key in &order {
        let (sched, workload) = key;
        if workload == "idle" {
            continue;
        }
        let (Some(runs), Some(idle)) = (
            by_cell.get(key),
            by_cell.get(&(sched.clone(), "idle".to_string())),
        ) else {
            continue;
        };
        let d = Totals::mean(runs).diff(&Totals::mean(idle));
        let censored = report
            .runs
            .iter()
            .filter(|r| &r.scheduler == sched && &r.workload == workload && r.censored)
            .filter(|r| !super::prefetch::is_variant(&r.target))
            .count();
        // A censored start was killed at the timeout: its attribution ends
        // there, so the change is a lower bound (the matrix's [k/n]).
        let mut text = describe_diff(&d, 3);
        if censored > 0 {
            text.push_str(&format!(" [{censored}/{} timed out]", runs.len()));
        }
        rows.push(vec![
            sched.clone(),
            workload.clone(),
            runs.len().to_string(),
            text,
        ]);
    }
    if rows.len() == 1 {
        return None;
    }
    Some(format!(
        "Where the extra time went (iolab explain, mean per start, vs idle):\n{}",
        iolab_sys::text::align_columns(&rows, usize::MAX)
    ))
}
