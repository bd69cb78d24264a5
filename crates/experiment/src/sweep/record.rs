//! A measured run as the store keeps it: one `RunRecord` (fio's field
//! names in `extra`, so `jq '.runs[].extra.bw_bytes'` reads like fio's
//! JSON) and its documents: the full fio-style load report, and what the
//! collectors saw (CPU and pressure series, block-latency histograms).

use serde_json::{json, Value};

use iolab_load::json::to_fio_json;
use iolab_results::{ArtifactDoc, ArtifactKind};
use iolab_store::{BackgroundIo, RunRecord};
use iolab_sys::cast;

use super::config::SweepConfig;
use super::measure::Measured;
use super::plan::RunPlan;
use super::sizing::Sizing;
use crate::error::to_json;
use crate::ExperimentError;

/// The record and its artifacts for one run on `target`.
pub fn record(
    run: &RunPlan,
    m: Measured,
    target: &str,
    cfg: &SweepConfig,
    sizing: &Sizing,
    tunables: &[(String, String)],
) -> Result<(RunRecord, Vec<ArtifactDoc>), ExperimentError> {
    let fio = to_fio_json(&m.report);
    let (dir, dir_report, fio_dir) = if run.kind.reads() {
        ("read", &m.report.total.read, &fio.total.read)
    } else {
        ("write", &m.report.total.write, &fio.total.write)
    };
    let mut extra = to_json("the run's fio fields", fio_dir)?;
    let fields = [
        ("dir", json!(dir)),
        ("usr_cpu", json!(fio.total.usr_cpu)),
        ("sys_cpu", json!(fio.total.sys_cpu)),
        // The runtime cap ended the run before it moved its bytes: the
        // throughput is still right, over fewer bytes.
        ("capped", json!(dir_report.io_bytes < sizing.total_bytes)),
        (
            "disk_util",
            match fio.disk_util.first() {
                Some(d) => to_json("the disk utilisation", d)?,
                None => Value::Null,
            },
        ),
        // The device's own view of the run's requests (biolatency's issue
        // → complete), or why there is none.
        ("bio", observed_or_error(&m, "bio")),
        ("cpu_all", observed_or_error(&m, "cpu")),
    ];
    if let Some(obj) = extra.as_object_mut() {
        for (k, v) in fields {
            obj.insert(k.into(), v);
        }
    }
    // Any other collector's summary, as in every kind's runs.
    let others: serde_json::Map<String, Value> = m
        .observed
        .summaries
        .iter()
        .filter(|(k, _)| !matches!(**k, "bio" | "cpu"))
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    if !others.is_empty() {
        extra["observed"] = Value::Object(others);
    }
    let record = RunRecord {
        scheduler: run.scheduler.clone(),
        workload: run.workload(),
        rep: run.rep,
        target: target.to_string(),
        started_at: m.started_at.clone(),
        duration_ns: cast::duration_ns(dir_report.runtime),
        censored: false,
        timeout_ns: cast::floor_u64(cfg.runtime_cap_s() * 1e9),
        exit_code: None,
        signal: None,
        overhead_ns: None,
        background: device_io(&m.report),
        config: json!({
            "scheduler": run.scheduler,
            "iosched_tunables": tunables,
            "rw": run.kind.fio_rw(),
            "numjobs": run.pattern.numjobs,
            "iodepth": run.pattern.iodepth,
            "bs": cfg.bs_bytes,
            "size_per_job": sizing.per_job(run.pattern.numjobs),
            "fs": cfg.fs,
            "job": to_json("the job", &m.job)?,
        }),
        extra,
        outcome: iolab_store::RunOutcome::Ok,
        reason: None,
        variant: None,
    };
    let mut docs = vec![ArtifactDoc::of(ArtifactKind::Load, &fio)
        .map_err(ExperimentError::serialise("the load report"))?];
    docs.extend(m.observed.docs);
    Ok((record, docs))
}

/// The device's own counters over a job's measured window: all of it is
/// the job's I/O (plus the filesystem's metadata).
pub(super) fn device_io(report: &iolab_load::LoadReport) -> Option<BackgroundIo> {
    report.disks.first().map(|d| BackgroundIo {
        read_bytes: d.delta.read_bytes(),
        write_bytes: d.delta.write_bytes(),
        seconds: d.elapsed.as_secs_f64(),
    })
}

/// A collector's summary, or `{"error": why}` when it failed.
fn observed_or_error(m: &Measured, name: &str) -> Value {
    match m.observed.summaries.get(name) {
        Some(v) => v.clone(),
        None => match m.observed.failed.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => json!({ "error": why }),
            None => Value::Null,
        },
    }
}
