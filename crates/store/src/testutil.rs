//! A run record for unit tests of the store and of the crates that render
//! its reports (feature `test-util`, or this crate's own tests).

use serde_json::json;

use crate::stored::{RunOutcome, RunRecord};

/// A run for tests: `secs` seconds, censored when ≥ 60.
pub fn run(scheduler: &str, workload: &str, rep: u32, secs: f64) -> RunRecord {
    RunRecord {
        scheduler: scheduler.into(),
        workload: workload.into(),
        rep,
        target: "app".into(),
        started_at: "2025-11-22T03:04:05.000Z".into(),
        duration_ns: iolab_sys::cast::floor_u64(secs * 1e9),
        censored: secs >= 60.0,
        timeout_ns: 60_000_000_000,
        exit_code: if secs >= 60.0 { None } else { Some(0) },
        signal: if secs >= 60.0 { Some(9) } else { None },
        overhead_ns: Some(150_000),
        background: None,
        config: json!({"scheduler": scheduler}),
        extra: json!({}),
        outcome: if secs >= 60.0 {
            RunOutcome::Censored
        } else {
            RunOutcome::Ok
        },
        reason: None,
        variant: None,
    }
}

/// A finished experiment of `kind` for tests: id 1, no configuration.
pub fn experiment(kind: iolab_results::ExperimentKind) -> crate::stored::Experiment {
    crate::stored::Experiment {
        id: crate::stored::ExperimentId(1),
        created: String::new(),
        kind,
        command_line: String::new(),
        status: crate::stored::Status::Done,
        config: serde_json::Value::Null,
        environment: serde_json::Value::Null,
        origin: None,
    }
}
