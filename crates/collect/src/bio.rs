//! `--trace bio`: every block request on the devices under test, issue to
//! completion (biosnoop's and biolatency's view), stored as the run's
//! latency histograms (`latency_hist`), with p50/p99/max per operation as
//! its summary.

use iolab_bio::{BioHistograms, BioOptions, BioTracer, Disks};
use iolab_results::{ArtifactDoc, ArtifactKind};
use serde_json::{json, Value};

use super::{Collected, Collector, Entry, Flag, Needs, RunEnd, Scope};
use crate::error::to_json;
use crate::CollectError;

/// The registry entry.
pub const ENTRY: Entry = Entry {
    name: "bio",
    flag: Flag::Value {
        long: "trace",
        value: "bio",
    },
    help: "trace every block request on the device under test (as `iolab trace bio`); each run stores its latency histograms (artifact `latency_hist`)",
    needs: Needs::Nothing,
    root: true,
    start,
};

struct Bio(BioTracer);

fn start(scope: &Scope<'_>) -> Result<Box<dyn Collector>, CollectError> {
    let disks = Disks::default();
    let disks = scope
        .devices
        .iter()
        .map(|d| disks.resolve(&d.name))
        .collect::<Result<Vec<_>, _>>()?;
    let tracer = BioTracer::start_with(
        scope.guard,
        BioOptions {
            disks,
            buffer_kib_per_cpu: scope.tuning.trace_buffer_kib,
            ..BioOptions::default()
        },
    )?;
    Ok(Box::new(Bio(tracer)))
}

impl Collector for Bio {
    fn stop(self: Box<Self>, _: &RunEnd) -> Result<Collected, CollectError> {
        let h = self.0.stop()?.histograms();
        Ok(Collected {
            summary: Some(summary(&h)),
            docs: vec![ArtifactDoc::of(ArtifactKind::LatencyHist, &h)
                .map_err(CollectError::serialise("the block latency histograms"))?],
            document: Some(to_json("the block trace", &h)?),
            lines: Some(h.summary_lines()),
        })
    }
}

/// The device's own view of the run's requests (biolatency's issue →
/// complete), one object per operation seen, with the trace's counters:
/// `{"lost_events": 0, "requests": 80, "R": {"count": 80, "lat_p50_us": ..}}`.
fn summary(h: &BioHistograms) -> Value {
    let mut v = json!({
        "lost_events": h.counts.lost_events,
        "requests": h.counts.requests,
    });
    for l in &h.histograms {
        v[l.op.as_str()] = json!({
            "count": l.count,
            "bytes": l.bytes,
            "lat_p50_us": l.lat.p50_us,
            "lat_p99_us": l.lat.p99_us,
            "lat_max_us": l.lat.max_us,
            "que_p50_us": l.que.p50_us,
            "que_p99_us": l.que.p99_us,
        });
    }
    v
}
