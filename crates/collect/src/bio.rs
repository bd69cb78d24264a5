//! `--trace bio`: every block request on the devices under test, issue to
//! completion (biosnoop's and biolatency's view), stored as the run's
//! latency histograms (`latency_hist`), with p50/p99/max per operation as
//! its summary.
//!
//! For a run with a target (a start-up), counted in the kernel by iolab's
//! BPF programs where they run, split by owner there: the app's requests
//! (its processes, followed from the held one) apart from the rest's (the
//! load, the kernel's writeback). Where BPF cannot run, iolab's tracefs
//! trace counts them, whole, and the histograms say why. A run without a
//! target (a sweep, a load) takes the tracer measured the cheaper for its
//! disks (docs/PERFORMANCE.md): BPF on bio-based ones (zram), tracefs on
//! request-based ones.

use iolab_bio::bpf::BioBpf;
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

enum Bio {
    Bpf(Box<BioBpf>),
    /// With why BPF did not run, where it was wanted.
    Tracefs(BioTracer, Option<String>),
}

fn start(scope: &Scope<'_>) -> Result<Box<dyn Collector>, CollectError> {
    let disks = Disks::default();
    let disks = scope
        .devices
        .iter()
        .map(|d| disks.resolve(&d.name))
        .collect::<Result<Vec<_>, _>>()?;
    let bpf = match scope.target {
        Some(app) => Some(BioBpf::start_for_app(scope.guard, &disks, app)),
        None if iolab_bio::bpf::cheaper_for(&disks) => Some(BioBpf::start(scope.guard, &disks)),
        None => None,
    };
    let why = match bpf {
        Some(Ok(b)) => return Ok(Box::new(Bio::Bpf(Box::new(b)))),
        Some(Err(e)) => Some(e.to_string()),
        None => None,
    };
    let tracer = BioTracer::start_with(
        scope.guard,
        BioOptions {
            disks,
            buffer_kib_per_cpu: scope.tuning.trace_buffer_kib,
            ..BioOptions::default()
        },
    )?;
    Ok(Box::new(Bio::Tracefs(tracer, why)))
}

impl Collector for Bio {
    fn follow(&mut self, pid: i32) -> Result<bool, CollectError> {
        match self {
            Bio::Bpf(b) => b
                .follow_app(pid)
                .map_err(|e| CollectError::collector("bio", e)),
            Bio::Tracefs(..) => Ok(false),
        }
    }

    fn stop(self: Box<Self>, _: &RunEnd) -> Result<Collected, CollectError> {
        let h = match *self {
            Bio::Bpf(b) => b.finish().map_err(|e| CollectError::collector("bio", e))?,
            Bio::Tracefs(t, why) => {
                let mut h = t.stop()?.histograms();
                h.tracer = "tracefs".into();
                if let Some(why) = why {
                    h.attach = format!("BPF unavailable: {why}");
                }
                h
            }
        };
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
        "tracer": h.tracer,
    });
    ops(&mut v, &h.histograms);
    if let Some(o) = &h.by_owner {
        match &o.unavailable {
            Some(why) => v["by_owner_unavailable"] = why.as_str().into(),
            None => {
                ops(&mut v["app"], &o.app);
                ops(&mut v["rest"], &o.rest);
            }
        }
    }
    v
}

/// One object per operation into `v`.
fn ops(v: &mut Value, hs: &[iolab_bio::hist::LatencyHist]) {
    if v.is_null() {
        *v = json!({});
    }
    for l in hs {
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
}
