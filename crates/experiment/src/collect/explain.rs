//! `--explain`: where the target's time went, from its tasks' switch-out
//! stacks (as `iolab explain`), stored as the run's attribution
//! (`explain`). Follows the target's process tree from before its exec.

use iolab_explain::Explainer;
use iolab_results::{ArtifactDoc, ArtifactKind};
use iolab_sys::UsageError;

use super::{Collected, Collector, Entry, Flag, Needs, RunEnd, Scope};
use crate::ExperimentError;

/// The registry entry.
pub const ENTRY: Entry = Entry {
    name: "explain",
    flag: Flag::Switch("explain"),
    help: "attribute every start's stalls to kernel paths (as `iolab explain`); each run stores its attribution (`explain`) and the table gains, per cell, the top causes of the difference from idle",
    needs: Needs::Target,
    start,
};

struct Explain(Explainer);

fn start(scope: &Scope<'_>) -> Result<Box<dyn Collector>, ExperimentError> {
    let pid = scope
        .target
        .ok_or_else(|| UsageError::new("--explain needs a target to follow"))?;
    Ok(Box::new(Explain(Explainer::start(scope.guard, pid)?)))
}

impl Collector for Explain {
    fn follow(&mut self, pid: i32) -> Result<bool, ExperimentError> {
        self.0.follow_late(pid)?;
        Ok(true)
    }

    fn stop(self: Box<Self>, end: &RunEnd) -> Result<Collected, ExperimentError> {
        let attribution = self.0.finish_with_cpu(end.target_cpu_ns)?;
        Ok(Collected {
            docs: vec![ArtifactDoc::of(ArtifactKind::Explain, &attribution)
                .map_err(ExperimentError::serialise("the attribution"))?],
            summary: None,
        })
    }
}
