//! How a lab is made slow: the cgroup-v1 blkio throttle on a lower loop
//! device, or the device model served in user space (FUSE). Chosen once,
//! when the lab is made, and stored with it with the reason.
//!
//! The throttle needs a cgroup-v1 blkio hierarchy and this process in its
//! root cgroup (v1 rules are flat: a rule in the root limits only I/O
//! issued from the root). Most distributions mount only cgroup v2, and on
//! hybrid systemd hosts a login shell sits in a child blkio cgroup; there
//! the model is the only backend that works, and it is chosen by itself.
//! `IOLAB_NO_CGROUP_V1=1` makes this code behave as on such a host.

use std::path::Path;

use iolab_model::ModelParams;
use serde::{Deserialize, Serialize};

use crate::spec::{LabSpec, DEFAULT_THROTTLED_DEPTH};
use crate::LabError;

/// The variable that makes the lab behave as on a host without cgroup v1.
pub const NO_CGROUP_V1: &str = "IOLAB_NO_CGROUP_V1";

/// A slow lab's backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// blkio throttle on a lower loop device (cgroup v1).
    Throttle,
    /// The device model served over FUSE.
    Model,
}

impl Backend {
    /// Parses `model` or `throttle`.
    pub fn parse(text: &str) -> Result<Backend, LabError> {
        match text {
            "model" => Ok(Backend::Model),
            "throttle" => Ok(Backend::Throttle),
            other => Err(LabError::usage(format!(
                "unknown backend {other:?}: expected model (a device model served in user space; any Linux with FUSE) or throttle (cgroup-v1 blkio)"
            ))),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Throttle => "throttle",
            Backend::Model => "model",
        }
    }
}

/// Why the cgroup-v1 throttle cannot work here; `None` when it can.
pub fn throttle_unavailable() -> Option<String> {
    if std::env::var(NO_CGROUP_V1).is_ok_and(|v| v == "1") {
        return Some(format!("{NO_CGROUP_V1}=1 says this host has no cgroup v1"));
    }
    let file = Path::new(iolab_guard::BLKIO_ROOT).join("blkio.throttle.read_bps_device");
    if !file.exists() {
        return Some(format!(
            "no cgroup-v1 blkio hierarchy ({} is missing; this host mounts cgroup v2 only)",
            file.display()
        ));
    }
    crate::throttle::cgroup_warning()
        .map(|_| "this process is not in the root blkio cgroup, whose rules are the only ones a v1 throttle here can use".to_string())
}

/// Fills in `backend`, `model` and `backend_reason` of a spec as the user
/// gave it (`--backend`, `--device-model` and the model overrides are
/// already in `spec`).
pub(crate) fn resolve(spec: &LabSpec) -> Result<LabSpec, LabError> {
    let mut s = spec.clone();
    if s.zram {
        return Ok(s);
    }
    let asked_model = s.model.is_some();
    match (s.backend, asked_model) {
        (Some(Backend::Throttle), true) => {
            return Err(LabError::usage(
                "--device-model and the model's flags need --backend model (the throttle has only --bw/--iops)",
            ))
        }
        (Some(Backend::Throttle), false) => {
            if !s.throttled() {
                return Err(LabError::usage(
                    "--backend throttle needs --bw or --iops: the limits it applies",
                ));
            }
            if let Some(why) = throttle_unavailable() {
                return Err(LabError::usage(format!(
                    "--backend throttle cannot work here: {why}; use --backend model"
                )));
            }
            s.backend_reason = Some("--backend throttle".into());
        }
        (Some(Backend::Model), _) | (None, true) => {
            if s.model.is_none() {
                s.model = Some(from_limits(&s)?);
            }
            s.backend = Some(Backend::Model);
            s.backend_reason = Some(if spec.backend.is_some() {
                "--backend model".into()
            } else {
                "--device-model".into()
            });
        }
        (None, false) if s.throttled() => match throttle_unavailable()
            .map(|why| format!("the throttle cannot work: {why}"))
            .or_else(|| {
                s.throttle_unsuitable
                    .as_ref()
                    .map(|why| format!("the throttle would not do: {why}"))
            }) {
            None => {
                s.backend = Some(Backend::Throttle);
                s.backend_reason = Some(
                    "the default where cgroup v1 works (measured the more faithful to --bw here: docs/PERFORMANCE.md)"
                        .into(),
                );
            }
            Some(why) => {
                s.model = Some(from_limits(&s)?);
                s.backend = Some(Backend::Model);
                s.backend_reason = Some(why);
            }
        },
        (None, false) => {}
    }
    Ok(s)
}

/// The model of a `--bw`/`--iops` lab: the same rate both ways, the
/// per-request cost of the IOPS limit, the throttled lab's depth.
pub fn from_limits(s: &LabSpec) -> Result<ModelParams, LabError> {
    if !s.throttled() {
        return Err(LabError::usage(
            "--backend model needs --device-model emmc|sd|ufs|hdd or --bw/--iops",
        ));
    }
    let bw = s.bw_bytes.unwrap_or(u64::MAX / 4);
    let fixed = s.iops.map_or(0, |i| 1_000_000_000 / i.max(1));
    Ok(ModelParams {
        profile: "rate".into(),
        read_bw: bw,
        write_bw: bw,
        read_latency_ns: fixed,
        write_latency_ns: fixed,
        seek_ns: 0,
        queue_depth: s.queue_depth.unwrap_or(DEFAULT_THROTTLED_DEPTH),
        flush_ns: 0,
        // The throttle limits reads and writes with separate budgets.
        duplex: true,
    })
}
