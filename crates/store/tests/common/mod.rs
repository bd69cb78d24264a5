//! Helpers shared by the store's integration tests.
#![allow(dead_code)]

use iolab_store::{BackgroundIo, ExperimentId, RunRecord, Store};
use serde_json::json;

/// A run of `secs` seconds; censored (stopped at the 60 s timeout) when ≥ 60.
pub fn run(scheduler: &str, workload: &str, rep: u32, secs: f64) -> RunRecord {
    let censored = secs >= 60.0;
    RunRecord {
        scheduler: scheduler.into(),
        workload: workload.into(),
        rep,
        target: "iolab app".into(),
        started_at: iolab_store::rfc3339_now(),
        duration_ns: iolab_sys::cast::round_u64(secs * 1e9),
        censored,
        timeout_ns: 60_000_000_000,
        exit_code: (!censored).then_some(0),
        signal: censored.then_some(9),
        overhead_ns: Some(180_000),
        background: (workload != "idle").then_some(BackgroundIo {
            read_bytes: 200 << 20,
            write_bytes: 100 << 20,
            seconds: secs,
        }),
        config: json!({"scheduler": scheduler, "iosched": {"slice_idle": "8"}}),
        extra: json!({"slow_ops": [{"t_ms": 5012, "op": "read", "lat_ms": 412}]}),
        outcome: if censored {
            iolab_store::RunOutcome::Censored
        } else {
            iolab_store::RunOutcome::Ok
        },
        reason: None,
        variant: None,
    }
}

/// A 2-scheduler × 2-workload × 3-rep experiment with one censored run.
pub fn seed(store: &Store) -> ExperimentId {
    let id = store
        .create_experiment(
            &iolab_results::ExperimentKind::Startup,
            "iolab startup --schedulers bfq,none -- iolab app",
            &json!({"reps": 3, "timeout_s": 60}),
            &json!({"kernel": "6.18.0", "cpus": 2}),
        )
        .expect("create");
    let times = [
        ("bfq", "idle", [6.2, 6.4, 6.3]),
        ("bfq", "1r1w", [12.1, 12.9, 12.5]),
        ("none", "idle", [6.1, 6.3, 6.2]),
        ("none", "1r1w", [21.0, 60.0, 23.5]),
    ];
    for (sched, wl, secs) in times {
        for (rep, s) in (0u32..).zip(secs) {
            store
                .record_run(id, &run(sched, wl, rep, s))
                .expect("record");
        }
    }
    id
}
