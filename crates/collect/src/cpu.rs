//! `--cpu`: CPU utilisation of every CPU (mpstat's columns) and pressure
//! stalls (/proc/pressure) sampled over the run, stored as the `cpu` and
//! `psi` series; the run's average over all CPUs is its summary.

use iolab_results::{ArtifactDoc, ArtifactKind};
use iolab_sys::cpustat::CpuMonitor;

use super::{Collected, Collector, Entry, Flag, Needs, RunEnd, Scope};
use crate::error::to_json;
use crate::CollectError;

/// The registry entry.
pub const ENTRY: Entry = Entry {
    name: "cpu",
    flag: Flag::Switch("cpu"),
    help: "sample CPU utilisation and pressure stalls during every run (as `iolab cpu`); each run stores the series (`cpu`, `psi`)",
    needs: Needs::Nothing,
    root: false,
    start,
};

struct Cpu(CpuMonitor);

fn start(scope: &Scope<'_>) -> Result<Box<dyn Collector>, CollectError> {
    Ok(Box::new(Cpu(CpuMonitor::start(scope.tuning.cpu_interval)?)))
}

impl Collector for Cpu {
    fn stop(self: Box<Self>, _: &RunEnd) -> Result<Collected, CollectError> {
        let s = self.0.stop();
        let summary = match s.cpu.average.as_ref() {
            Some(a) => Some(to_json("the CPU average", a.all())?),
            None => None,
        };
        let ser = CollectError::serialise;
        Ok(Collected {
            docs: vec![
                ArtifactDoc::of(ArtifactKind::Cpu, &s.cpu).map_err(ser("the CPU series"))?,
                ArtifactDoc::of(ArtifactKind::Psi, &s.psi).map_err(ser("the pressure series"))?,
            ],
            summary,
            document: Some(to_json("the CPU series", &s)?),
            lines: Some(format!("{}\n", s.summary_line())),
        })
    }
}
