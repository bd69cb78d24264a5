//! A measured run as the store keeps it: one `RunRecord` (fio's field
//! names in `extra`, so `jq '.runs[].extra.bw_bytes'` reads like fio's
//! JSON) and its documents: the full fio-style load report, and the CPU,
//! pressure and block-latency series when they were measured.

use serde_json::{json, Value};

use iolab_load::json::to_fio_json;
use iolab_store::{BackgroundIo, RunRecord};

use super::config::SweepConfig;
use super::measure::Measured;
use super::plan::RunPlan;
use super::sizing::Sizing;

/// The record and its artifacts (`kind`, document) for one run on `target`.
pub fn record(
    run: &RunPlan,
    m: &Measured,
    target: &str,
    cfg: &SweepConfig,
    sizing: &Sizing,
    tunables: &[(String, String)],
) -> (RunRecord, Vec<(&'static str, Value)>) {
    let fio = to_fio_json(&m.report);
    let (dir, dir_report) = if run.kind.reads() {
        ("read", &m.report.total.read)
    } else {
        ("write", &m.report.total.write)
    };
    let fio_dir = if run.kind.reads() {
        &fio.total.read
    } else {
        &fio.total.write
    };
    let disk = m.report.disks.first();
    let mut extra = serde_json::to_value(fio_dir).unwrap_or_default();
    if let Some(obj) = extra.as_object_mut() {
        obj.insert("dir".into(), json!(dir));
        obj.insert("usr_cpu".into(), json!(fio.total.usr_cpu));
        obj.insert("sys_cpu".into(), json!(fio.total.sys_cpu));
        // The runtime cap ended the run before it moved its bytes: the
        // throughput is still right, over fewer bytes.
        obj.insert(
            "capped".into(),
            json!(dir_report.io_bytes < sizing.total_bytes),
        );
        obj.insert(
            "disk_util".into(),
            fio.disk_util
                .first()
                .map(|d| serde_json::to_value(d).unwrap_or_default())
                .unwrap_or(Value::Null),
        );
        obj.insert("bio".into(), bio_summary(m));
        obj.insert(
            "cpu_all".into(),
            m.cpu
                .as_ref()
                .and_then(|s| s.cpu.average.as_ref())
                .map(|a| serde_json::to_value(a.all()).unwrap_or_default())
                .unwrap_or(Value::Null),
        );
    }
    let record = RunRecord {
        scheduler: run.scheduler.clone(),
        workload: run.workload(),
        rep: run.rep,
        target: target.to_string(),
        started_at: m.started_at.clone(),
        duration_ns: u64::try_from(dir_report.runtime.as_nanos()).unwrap_or(u64::MAX),
        censored: false,
        timeout_ns: (cfg.runtime_cap_s() * 1e9) as u64,
        exit_code: None,
        signal: None,
        overhead_ns: None,
        // The device's own counters over the measured window: all of it is
        // the job's I/O (plus the filesystem's metadata).
        background: disk.map(|d| BackgroundIo {
            read_bytes: d.delta.read_bytes(),
            write_bytes: d.delta.write_bytes(),
            seconds: d.elapsed.as_secs_f64(),
        }),
        config: json!({
            "scheduler": run.scheduler,
            "iosched_tunables": tunables,
            "rw": run.kind.rw().as_str(),
            "numjobs": run.pattern.numjobs,
            "iodepth": run.pattern.iodepth,
            "bs": cfg.bs_bytes,
            "size_per_job": sizing.per_job(run.pattern.numjobs),
            "fs": cfg.fs,
            "job": m.job,
        }),
        extra,
        outcome: iolab_store::RunOutcome::Ok,
        reason: None,
        variant: None,
    };
    let mut docs = vec![("load", serde_json::to_value(&fio).unwrap_or_default())];
    if let Some(s) = &m.cpu {
        docs.push(("cpu", serde_json::to_value(&s.cpu).unwrap_or_default()));
        docs.push(("psi", serde_json::to_value(&s.psi).unwrap_or_default()));
    }
    if let Some(h) = &m.latency_hist {
        docs.push(("latency_hist", serde_json::to_value(h).unwrap_or_default()));
    }
    (record, docs)
}

/// The device's own view of the run's requests (biolatency's issue →
/// complete), one object per operation seen, with the trace's counters:
/// `{"lost_events": 0, "requests": 80, "R": {"count": 80, "p50_us": ..}}`.
fn bio_summary(m: &Measured) -> Value {
    let Some(h) = &m.latency_hist else {
        return json!({ "error": m.trace_error });
    };
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
