//! What a start can record besides its time: `--trace bio` (every block
//! request on the device under test, stored as the run's `latency_hist`),
//! `--cpu` (CPU utilisation and pressure stalls, `cpu` and `psi`) and
//! `--explain` (where the target's time went, `explain`). Each is started
//! just before the launch and stopped after it, so it covers the start-up
//! window, and is stored with the run it belongs to.

use std::time::Duration;

use iolab_bio::{BioTracer, Disks};
use iolab_explain::Explainer;
use iolab_guard::Guard;
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
