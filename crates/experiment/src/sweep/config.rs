//! The configuration of a sweep, stored as JSON with the experiment so
//! `--resume ID` continues the same matrix with the same per-run sizes.

use serde::{Deserialize, Serialize};

use iolab_lab::Fs;
use iolab_sys::UsageError;

use super::plan::{Kind, Pattern};
use crate::collect::Observe;
use crate::place::Place;
use crate::Schedulers;

/// Everything that defines a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    /// Where it runs: a temporary lab without a filesystem of its own
    /// (every run makes one), or a device of the user's, formatted before
    /// every run.
    pub place: Place,
    /// Schedulers to compare, in column order.
    pub schedulers: Schedulers,
    /// Access kinds (`read`, `write`, `randread`, `randwrite`), one table each.
    pub kinds: Vec<Kind>,
    /// numjobs/iodepth patterns, in row order.
    pub patterns: Vec<Pattern>,
    /// Repetitions of every (scheduler, kind, pattern).
    pub reps: u32,
    /// Block size in bytes (seed 002: 1M).
    pub bs_bytes: u64,
    /// Bytes every run moves, all jobs together (`None`: scaled to the
    /// device, see `sizing::scale`).
    pub size_bytes: Option<u64>,
    /// Seconds a run should take at the device's bandwidth: sets the
    /// scaled size; every run is also stopped after `runtime_cap_s`.
    pub runtime_s: f64,
    /// Filesystem made before every run.
    pub fs: Fs,
    /// Collectors asked for besides the block trace and CPU series every
    /// sweep run keeps (seed 002's biosnoop and mpstat).
    #[serde(default)]
    pub observe: Observe,
}

/// What a sweep and a max sweep both need: a repetition, a kind, and a
/// run time above 0 and at most a day.
pub(crate) fn check_common(reps: u32, kinds: &[Kind], runtime_s: f64) -> Result<(), UsageError> {
    if reps == 0 {
        return Err(UsageError::new("--reps must be at least 1"));
    }
    if kinds.is_empty() {
        return Err(UsageError::new(
            "--rw needs at least one of read, write, randread, randwrite",
        ));
    }
    if !runtime_s.is_finite() || runtime_s <= 0.0 || runtime_s > 86_400.0 {
        return Err(UsageError::new(
            "--runtime must be a positive duration of at most a day, e.g. 1s or 500ms",
        ));
    }
    Ok(())
}

impl SweepConfig {
    /// Checks what needs no system access.
    pub fn validate(&self) -> Result<(), UsageError> {
        check_common(self.reps, &self.kinds, self.runtime_s)?;
        if self.patterns.is_empty() {
            return Err(UsageError::new(
                "--patterns needs at least one NUMJOBS/IODEPTH pair, e.g. 1/1,4/4",
            ));
        }
        if self.bs_bytes == 0 || self.bs_bytes % 4096 != 0 {
            return Err(UsageError::new(format!(
                "block size {} is not a positive multiple of 4KiB (O_DIRECT needs aligned blocks): use e.g. 1M",
                self.bs_bytes
            )));
        }
        if !matches!(self.fs, Fs::Ext4 | Fs::Xfs | Fs::Btrfs) {
            return Err(UsageError::new(format!(
                "--fs {}: the sweep makes a writable filesystem before every run; use ext4, xfs or btrfs",
                self.fs
            )));
        }
        self.observe.check(false, "sweep")
    }

    /// How long a run may take before it is stopped: generous, because
    /// the bandwidth the size was scaled from is only an estimate (writes
    /// to flash can be several times slower than reads).
    pub fn runtime_cap_s(&self) -> f64 {
        (self.runtime_s * 5.0).max(10.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::sweep::plan::SEED_PATTERNS;

    /// A seed-002 sweep on a 1 GiB, 40 MiB/s lab.
    pub(crate) fn cfg() -> SweepConfig {
        SweepConfig {
            place: Place::NewLab {
                size_bytes: 1 << 30,
                fs: Fs::None,
                bw_bytes: Some(40 << 20),
                iops: None,
                backend: None,
                model: None,
            },
            schedulers: Schedulers::all(),
            kinds: Kind::ALL.to_vec(),
            patterns: SEED_PATTERNS.to_vec(),
            reps: 3,
            bs_bytes: 1 << 20,
            size_bytes: None,
            runtime_s: 1.0,
            fs: Fs::Ext4,
            observe: Observe::default(),
        }
    }

    #[test]
    fn validation_names_the_flag() {
        assert!(cfg().validate().is_ok());
        let mut c = cfg();
        c.reps = 0;
        assert!(c.validate().unwrap_err().0.contains("--reps"));
        let mut c = cfg();
        c.fs = Fs::None;
        assert!(c.validate().unwrap_err().0.contains("--fs none"));
        let mut c = cfg();
        c.runtime_s = 0.0;
        assert!(c.validate().unwrap_err().0.contains("--runtime"));
        let mut c = cfg();
        c.observe = Observe::of(["explain"]).unwrap();
        assert!(c.validate().unwrap_err().0.contains("--explain"));
    }

    #[test]
    fn config_round_trips_through_json_and_reads_v5() {
        let c = cfg();
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["place"]["kind"], "new_lab");
        assert_eq!(v["kinds"][1], "randread");
        let back: SweepConfig = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
        let v5 = serde_json::json!({
            "place": {"kind": "new_lab", "size_bytes": 268435456, "bw_bytes": null,
                      "backend": null, "model": null},
            "schedulers": ["none", "bfq"], "kinds": ["read", "randwrite"],
            "patterns": [{"numjobs": 1, "iodepth": 1}], "reps": 4, "bs_bytes": 1048576,
            "size_bytes": null, "runtime_s": 0.3, "fs": "ext4"
        });
        let old: SweepConfig = serde_json::from_value(v5).unwrap();
        assert_eq!(old.fs, Fs::Ext4);
        old.validate().unwrap();
    }

    #[test]
    fn cap_is_generous() {
        let mut c = cfg();
        assert_eq!(c.runtime_cap_s(), 10.0);
        c.runtime_s = 4.0;
        assert_eq!(c.runtime_cap_s(), 20.0);
    }
}
