//! The machine's global dirty-page limits, as the kernel computes them
//! (mm/page-writeback.c, `global_dirtyable_memory` and
//! `domain_dirty_limits`): what a per-device dirty limit is a share of on
//! a kernel without `max_bytes` (before Linux 6.2), and below which such a
//! share is not enforced at all.
//!
//! - dirtyable memory: free pages plus the file LRU (`MemFree`,
//!   `Active(file)`, `Inactive(file)` of /proc/meminfo; the kernel also
//!   takes off its reserves, a few MiB, which meminfo does not show);
//! - the threshold: `vm.dirty_bytes`, or `vm.dirty_ratio` % of it;
//! - the background threshold: `vm.dirty_background_bytes`, or
//!   `vm.dirty_background_ratio` %; at most half the threshold;
//! - below the midpoint of the two ("freerun"), `balance_dirty_pages`
//!   throttles no writer, whatever a device's `max_ratio` says, unless the
//!   device has `strict_limit` (sysfs only since 6.2).

use std::path::Path;

use crate::error::{read_trimmed, SysError};

/// The global limits, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirtyLimits {
    /// Memory the kernel counts as dirtyable.
    pub dirtyable_bytes: u64,
    /// Writers are throttled hard above this (the dirty threshold).
    pub thresh_bytes: u64,
    /// Background writeback starts above this.
    pub background_bytes: u64,
}

impl DirtyLimits {
    /// Reads them from `<proc>/meminfo` and `<proc>/sys/vm/`.
    pub fn read(proc_root: &Path) -> Result<DirtyLimits, SysError> {
        let meminfo = proc_root.join("meminfo");
        let text = std::fs::read_to_string(&meminfo).map_err(|e| SysError::io(&meminfo, e))?;
        let kib = |key: &str| -> Result<u64, SysError> {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
                .map(|k| k.saturating_mul(1024))
                .ok_or_else(|| SysError::Parse {
                    path: meminfo.clone(),
                    text: key.to_string(),
                    why: format!("no `{key}: N kB` line"),
                })
        };
        let dirtyable = kib("MemFree")?
            .saturating_add(kib("Active(file)")?)
            .saturating_add(kib("Inactive(file)")?);
        let vm = |name: &str| -> Result<u64, SysError> {
            let path = proc_root.join("sys/vm").join(name);
            let text = read_trimmed(&path)?;
            text.parse().map_err(|_| SysError::Parse {
                path,
                text,
                why: "expected a whole number".into(),
            })
        };
        Ok(DirtyLimits::compute(
            dirtyable,
            (vm("dirty_bytes")?, vm("dirty_ratio")?),
            (vm("dirty_background_bytes")?, vm("dirty_background_ratio")?),
        ))
    }

    /// `domain_dirty_limits` for the global domain: each limit is its
    /// `_bytes` sysctl when set, else its ratio of `dirtyable`; the
    /// background one at most half the other.
    pub fn compute(dirtyable: u64, dirty: (u64, u64), background: (u64, u64)) -> DirtyLimits {
        let pick = |(bytes, ratio): (u64, u64)| {
            if bytes > 0 {
                bytes
            } else {
                dirtyable.saturating_mul(ratio) / 100
            }
        };
        let thresh = pick(dirty);
        let mut bg = pick(background);
        if bg >= thresh {
            bg = thresh / 2;
        }
        DirtyLimits {
            dirtyable_bytes: dirtyable,
            thresh_bytes: thresh,
            background_bytes: bg,
        }
    }

    /// Below this much dirty memory no writer is throttled, whatever a
    /// device's share (the midpoint of the two thresholds).
    pub fn freerun_bytes(&self) -> u64 {
        self.thresh_bytes / 2 + self.background_bytes / 2
    }

    /// The `max_ratio` (whole percent, 1–100) whose share of the threshold
    /// comes nearest `bytes` from above.
    pub fn ratio_for(&self, bytes: u64) -> u32 {
        if self.thresh_bytes == 0 {
            return 100;
        }
        let pct = u128::from(bytes) * 100;
        let pct = pct.div_ceil(u128::from(self.thresh_bytes)).clamp(1, 100);
        u32::try_from(pct).unwrap_or(100)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn ratios_of_the_dirtyable_memory_and_bytes_when_set() {
        // 20 % and 10 % of 10 GiB: freerun at 15 %.
        let l = DirtyLimits::compute(10 << 30, (0, 20), (0, 10));
        assert_eq!(l.thresh_bytes, 2 << 30);
        assert_eq!(l.background_bytes, 1 << 30);
        assert_eq!(l.freerun_bytes(), 3 << 29);
        // dirty_bytes wins over the ratio; a background limit at or above
        // the threshold is halved, as the kernel does.
        let l = DirtyLimits::compute(10 << 30, (256 * MIB, 20), (0, 10));
        assert_eq!(l.thresh_bytes, 256 * MIB);
        assert_eq!(l.background_bytes, 128 * MIB);
    }

    #[test]
    fn the_ratio_for_a_limit_rounds_up_within_1_to_100() {
        let l = DirtyLimits::compute(10 << 30, (0, 20), (0, 10));
        // 80 MiB of 2 GiB is 3.9 %: 4.
        assert_eq!(l.ratio_for(80 * MIB), 4);
        assert_eq!(l.ratio_for(1), 1);
        assert_eq!(l.ratio_for(u64::MAX), 100);
        assert_eq!(DirtyLimits::compute(0, (0, 20), (0, 10)).ratio_for(5), 100);
    }

    #[test]
    fn reads_a_proc_tree_and_names_what_is_missing() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/vm")).unwrap();
        for (f, v) in [
            ("dirty_bytes", "0"),
            ("dirty_ratio", "20"),
            ("dirty_background_bytes", "0"),
            ("dirty_background_ratio", "10"),
        ] {
            std::fs::write(d.path().join("sys/vm").join(f), format!("{v}\n")).unwrap();
        }
        std::fs::write(
            d.path().join("meminfo"),
            "MemTotal: 100 kB\nMemFree: 1000 kB\nActive(file): 500 kB\nInactive(file): 548 kB\n",
        )
        .unwrap();
        let l = DirtyLimits::read(d.path()).unwrap();
        assert_eq!(l.dirtyable_bytes, 2048 * 1024);
        assert_eq!(l.thresh_bytes, 2048 * 1024 / 5);
        std::fs::write(d.path().join("meminfo"), "MemFree: 1 kB\n").unwrap();
        let e = DirtyLimits::read(d.path()).unwrap_err().to_string();
        assert!(e.contains("Active(file)"), "{e}");
    }

    #[test]
    fn this_machine_has_limits() {
        let l = DirtyLimits::read(Path::new("/proc")).unwrap();
        assert!(l.thresh_bytes > 0 && l.background_bytes <= l.thresh_bytes);
    }
}
