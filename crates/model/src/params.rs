//! What the modelled device is: bandwidths, per-request service time,
//! queue depth and the cost of a cache flush, from a named profile and
//! explicit overrides. The figures of each profile and where they come
//! from are in docs/device-models.md; keep the two in step.

use std::time::Duration;

use iolab_sys::UsageError;
use serde::{Deserialize, Serialize};

/// A device model's parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelParams {
    /// Profile it started from (`emmc`, `sd`, `ufs`, `hdd`, or `custom`).
    pub profile: String,
    /// Sequential read transfer rate, bytes/s.
    pub read_bw: u64,
    /// Sequential write transfer rate, bytes/s.
    pub write_bw: u64,
    /// Fixed part of a read's service time (command, flash read), ns.
    pub read_latency_ns: u64,
    /// Fixed part of a write's service time (command, program), ns.
    pub write_latency_ns: u64,
    /// Extra time of a request that does not start where the previous one
    /// ended (a disk's seek and rotation; 0 for flash), ns.
    pub seek_ns: u64,
    /// Requests the device serves at once (1: eMMC ≤ 5.0 and SD without a
    /// command queue; 32: UFS/NVMe-class).
    pub queue_depth: u32,
    /// Cost of a cache flush (fsync, FUA), ns.
    pub flush_ns: u64,
    /// Reads and writes transfer independently, each at its own rate (the
    /// blkio throttle's semantics: separate read and write budgets), rather
    /// than sharing one channel as a real device does. Set for the `rate`
    /// model of `--bw`/`--iops`, so a lab falls back to the model with the
    /// meaning `--bw` has on the throttle.
    #[serde(default)]
    pub duplex: bool,
}

const MB: u64 = 1_000_000;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;

impl ModelParams {
    /// A named profile; see docs/device-models.md for the sources.
    pub fn profile(name: &str) -> Result<ModelParams, UsageError> {
        Ok(match name {
            // eMMC 4.5/5.0 (no command queue: JESD84-B50 has none, CMDQ came
            // with 5.1): the phones of the thesis's era.
            "emmc" => ModelParams {
                profile: "emmc".into(),
                read_bw: 80 * MB,
                write_bw: 30 * MB,
                read_latency_ns: 350 * US,
                write_latency_ns: 1_800 * US,
                seek_ns: 0,
                queue_depth: 1,
                flush_ns: 5 * MS,
                duplex: false,
            },
            // SD card, UHS-I, Application Performance Class A1 minimums
            // (1500 read / 500 write IOPS at 4 KiB, 10 MB/s sustained write).
            "sd" => ModelParams {
                profile: "sd".into(),
                read_bw: 80 * MB,
                write_bw: 10 * MB,
                read_latency_ns: 615 * US,
                write_latency_ns: 1_590 * US,
                seek_ns: 0,
                queue_depth: 1,
                flush_ns: 10 * MS,
                duplex: false,
            },
            // UFS 2.1 (a command queue of 32).
            "ufs" => ModelParams {
                profile: "ufs".into(),
                read_bw: 800 * MB,
                write_bw: 200 * MB,
                read_latency_ns: 90 * US,
                write_latency_ns: 60 * US,
                seek_ns: 0,
                queue_depth: 32,
                flush_ns: MS,
                duplex: false,
            },
            // A 7200 rpm disk, served one request at a time.
            "hdd" => ModelParams {
                profile: "hdd".into(),
                read_bw: 150 * MB,
                write_bw: 150 * MB,
                read_latency_ns: 100 * US,
                write_latency_ns: 100 * US,
                seek_ns: 12_500 * US,
                queue_depth: 1,
                flush_ns: 10 * MS,
                duplex: false,
            },
            other => {
                return Err(UsageError::new(format!(
                    "unknown device model {other:?}: expected emmc, sd, ufs or hdd"
                )))
            }
        })
    }

    /// Checks the figures: rates and depth above zero, times below a
    /// minute (a longer "service time" is a hang, not a device).
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.read_bw == 0 || self.write_bw == 0 {
            return Err(UsageError::new(
                "a device-model bandwidth of 0 would never complete a request: expected a rate such as 40MiB/s",
            ));
        }
        if self.queue_depth == 0 || self.queue_depth > 1024 {
            return Err(UsageError::new(format!(
                "device-model queue depth {}: expected 1 (eMMC, SD) to 1024",
                self.queue_depth
            )));
        }
        let minute = 60 * 1_000 * MS;
        for (what, ns) in [
            ("read latency", self.read_latency_ns),
            ("write latency", self.write_latency_ns),
            ("seek time", self.seek_ns),
            ("flush time", self.flush_ns),
        ] {
            if ns > minute {
                return Err(UsageError::new(format!(
                    "device-model {what} of {} s: expected less than a minute",
                    ns / 1_000_000_000
                )));
            }
        }
        Ok(())
    }

    /// Time to serve one request of `bytes` once it starts (no seek).
    pub fn service(&self, write: bool, bytes: u64) -> Duration {
        let (bw, fixed) = if write {
            (self.write_bw, self.write_latency_ns)
        } else {
            (self.read_bw, self.read_latency_ns)
        };
        Duration::from_nanos(fixed + transfer_ns(bytes, bw))
    }

    /// The throughput a stream of `bytes`-sized sequential requests reaches
    /// at queue depth 1: what a benchmark should measure (bytes/s).
    pub fn stream_rate(&self, write: bool, bytes: u64) -> f64 {
        bytes as f64 / self.service(write, bytes).as_secs_f64()
    }
}

/// ns to move `bytes` at `bw` bytes/s (rounded up).
pub fn transfer_ns(bytes: u64, bw: u64) -> u64 {
    let ns = u128::from(bytes) * 1_000_000_000;
    u64::try_from(ns.div_ceil(u128::from(bw.max(1)))).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_valid_and_unknown_ones_named() {
        for p in ["emmc", "sd", "ufs", "hdd"] {
            ModelParams::profile(p).unwrap().validate().unwrap();
        }
        let e = ModelParams::profile("nvme").unwrap_err().to_string();
        assert!(e.contains("emmc, sd, ufs or hdd"), "{e}");
    }

    #[test]
    fn sd_matches_the_a1_class_minimums() {
        // A1: at least 1500 random 4 KiB reads/s and 500 writes/s.
        let sd = ModelParams::profile("sd").unwrap();
        let iops = |w| 1.0 / sd.service(w, 4096).as_secs_f64();
        assert!((1450.0..1550.0).contains(&iops(false)), "{}", iops(false));
        assert!((480.0..520.0).contains(&iops(true)), "{}", iops(true));
    }

    #[test]
    fn zero_rates_and_depths_are_refused() {
        let mut p = ModelParams::profile("emmc").unwrap();
        p.read_bw = 0;
        assert!(p
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bandwidth of 0"));
        let mut p = ModelParams::profile("emmc").unwrap();
        p.queue_depth = 0;
        assert!(p.validate().is_err());
    }
}
