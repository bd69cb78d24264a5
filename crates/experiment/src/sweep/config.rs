//! The configuration of a sweep, stored as JSON with the experiment so
//! `--resume ID` continues the same matrix with the same per-run sizes.

use serde::{Deserialize, Serialize};

use iolab_sys::UsageError;

use super::plan::{Kind, Pattern};

/// Where the sweep runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SweepPlace {
    /// A temporary lab (no filesystem of its own: every run makes one),
    /// removed when the sweep ends.
    NewLab {
        /// Device size in bytes.
        size_bytes: u64,
        /// Emulated bandwidth in bytes/s for reads and writes (`None`:
        /// unthrottled, the host disk's speed).
        bw_bytes: Option<u64>,
        /// How the lab is slowed (`None`: chosen when it is made).
        #[serde(default)]
        backend: Option<iolab_lab::Backend>,
        /// The device model, for a model lab.
        #[serde(default)]
        model: Option<iolab_model::ModelParams>,
    },
    /// A real device: formatted before every run, so everything on it is
    /// destroyed.
    Device {
        /// Device path or kernel name, as given.
        device: String,
    },
}

/// Everything that defines a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    /// Where it runs.
    pub place: SweepPlace,
    /// Schedulers to compare, in column order; empty = every one the
    /// device offers (resolved when the sweep starts).
    pub schedulers: Vec<String>,
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
    pub fs: String,
}

/// Refuses a `--schedulers` list naming one scheduler twice.
pub(crate) fn unique_schedulers(list: &[String]) -> Result<(), UsageError> {
    let mut seen = Vec::new();
    for s in list {
        if seen.contains(&s) {
            return Err(UsageError::new(format!(
                "--schedulers lists {s} twice: give each scheduler once"
            )));
        }
        seen.push(s);
    }
    Ok(())
}

impl SweepConfig {
    /// Checks what needs no system access.
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.reps == 0 {
            return Err(UsageError::new("--reps must be at least 1"));
        }
        if self.kinds.is_empty() {
            return Err(UsageError::new(
                "--rw needs at least one of read, write, randread, randwrite",
            ));
        }
        if self.patterns.is_empty() {
            return Err(UsageError::new(
                "--patterns needs at least one NUMJOBS/IODEPTH pair, e.g. 1/1,4/4",
            ));
        }
        if !self.runtime_s.is_finite() || self.runtime_s <= 0.0 {
            return Err(UsageError::new(
                "--runtime must be a positive duration, e.g. 1s or 500ms",
            ));
        }
        if self.bs_bytes == 0 || self.bs_bytes % 4096 != 0 {
            return Err(UsageError::new(format!(
                "block size {} is not a positive multiple of 4KiB (O_DIRECT needs aligned blocks): use e.g. 1M",
                self.bs_bytes
            )));
        }
        use iolab_lab::Fs;
        if !matches!(Fs::parse(&self.fs)?, Fs::Ext4 | Fs::Xfs | Fs::Btrfs) {
            return Err(UsageError::new(format!(
                "--fs {}: the sweep makes a writable filesystem before every run; use ext4, xfs or btrfs",
                self.fs
            )));
        }
        unique_schedulers(&self.schedulers)
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
mod tests {
    use super::*;
    use crate::sweep::plan::SEED_PATTERNS;

    pub(crate) fn cfg() -> SweepConfig {
        SweepConfig {
            place: SweepPlace::NewLab {
                size_bytes: 1 << 30,
                bw_bytes: Some(40 << 20),
                backend: None,
                model: None,
            },
            schedulers: vec![],
            kinds: Kind::ALL.to_vec(),
            patterns: SEED_PATTERNS.to_vec(),
            reps: 3,
            bs_bytes: 1 << 20,
            size_bytes: None,
            runtime_s: 1.0,
            fs: "ext4".into(),
        }
    }

    #[test]
    fn validation_names_the_flag() {
        assert!(cfg().validate().is_ok());
        let mut c = cfg();
        c.reps = 0;
        assert!(c.validate().unwrap_err().0.contains("--reps"));
        let mut c = cfg();
        c.fs = "none".into();
        assert!(c.validate().unwrap_err().0.contains("--fs none"));
        let mut c = cfg();
        c.schedulers = vec!["bfq".into(), "bfq".into()];
        assert!(c.validate().unwrap_err().0.contains("twice"));
        let mut c = cfg();
        c.runtime_s = 0.0;
        assert!(c.validate().unwrap_err().0.contains("--runtime"));
    }

    #[test]
    fn config_round_trips_through_json() {
        let c = cfg();
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["place"]["kind"], "new_lab");
        assert_eq!(v["kinds"][1], "randread");
        let back: SweepConfig = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn cap_is_generous() {
        let mut c = cfg();
        assert_eq!(c.runtime_cap_s(), 10.0);
        c.runtime_s = 4.0;
        assert_eq!(c.runtime_cap_s(), 20.0);
    }
}
