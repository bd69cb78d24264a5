//! What a lab should be, as the user asked for it, and the checks that need
//! no system access (the "low" half of argument handling: names, sizes,
//! combinations). Checks against the live system happen in `up`.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use iolab_sys::units::format_bytes;
use iolab_sys::UsageError;

/// The filesystem made on a lab device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fs {
    /// ext4, the filesystem of the thesis's phones.
    Ext4,
    /// XFS.
    Xfs,
    /// Btrfs.
    Btrfs,
    /// EROFS, read-only: an image built by mkfs.erofs from `--from DIR`
    /// (compressed with `--compress`), the filesystem of Android's system
    /// partitions (seed 004).
    Erofs,
    /// No filesystem: the raw device, for benchmarks.
    None,
}

impl Fs {
    /// Every choice, in the order the help lists them.
    pub const ALL: [Fs; 5] = [Fs::Ext4, Fs::Xfs, Fs::Btrfs, Fs::Erofs, Fs::None];

    /// Parses `ext4`, `xfs`, `btrfs`, `erofs` or `none`.
    pub fn parse(text: &str) -> Result<Fs, UsageError> {
        Fs::ALL
            .into_iter()
            .find(|f| f.name() == text)
            .ok_or_else(|| {
                UsageError::new(format!(
                    "unknown filesystem {text:?}: expected ext4, xfs, btrfs, erofs or none"
                ))
            })
    }

    /// The name mkfs and mount know it by.
    pub fn name(self) -> &'static str {
        match self {
            Fs::Ext4 => "ext4",
            Fs::Xfs => "xfs",
            Fs::Btrfs => "btrfs",
            Fs::Erofs => "erofs",
            Fs::None => "none",
        }
    }

    /// The smallest device its mkfs accepts: xfsprogs 5.19+ refuses less
    /// than 300 MiB, btrfs-progs says "minimum size for each btrfs device is
    /// 114294784", ext4 needs room for a journal; raw labs need 1 MiB.
    pub fn min_size_bytes(self) -> u64 {
        match self {
            Fs::Ext4 => 16 << 20,
            Fs::Xfs => 300 << 20,
            Fs::Btrfs => 114_294_784,
            // Sized by mkfs.erofs from its source directory: `size` is
            // not used.
            Fs::Erofs => 0,
            Fs::None => 1 << 20,
        }
    }
}

impl fmt::Display for Fs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kernel's minimum for `nr_requests` (BLKDEV_MIN_RQ): a smaller
/// queue depth is silently raised to this.
pub const MIN_QUEUE_DEPTH: u32 = 4;

/// The slowest `--bw` a lab may have (bytes/s).
pub const MIN_BW: u64 = 1 << 20;

/// The queue depth a throttled lab gets unless told otherwise: the
/// shallowest the kernel allows, closest to an SD card or an eMMC without
/// command queueing, so that requests wait in the scheduler under test.
pub const DEFAULT_THROTTLED_DEPTH: u32 = MIN_QUEUE_DEPTH;

/// A lab as asked for: `iolab lab up` flags, or built by a caller such as
/// the start-up matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabSpec {
    /// Lab name: letters, digits, `.`, `_`, `-`; names the image, the
    /// mount point and the journal.
    pub name: String,
    /// Device size in bytes.
    pub size_bytes: u64,
    /// Filesystem to make and mount (`none`: raw device only).
    pub fs: Fs,
    /// I/O scheduler for the device under test (`None`: kernel default).
    pub scheduler: Option<String>,
    /// Emulated bandwidth, bytes/s, for reads and for writes.
    pub bw_bytes: Option<u64>,
    /// Emulated IOPS limit, for reads and for writes.
    pub iops: Option<u64>,
    /// Driver queue depth of the device under test (`None`: the loop
    /// driver's 128, or [`DEFAULT_THROTTLED_DEPTH`] when throttled).
    pub queue_depth: Option<u32>,
    /// `read_ahead_kb` of the device under test (`None`:
    /// [`crate::DEFAULT_READ_AHEAD_KB`], not what the bind inherits from
    /// the host's disk; see `presented.rs`).
    #[serde(default)]
    pub read_ahead_kb: Option<u32>,
    /// Dirty page-cache limit of the lab's filesystem in bytes (bdi
    /// `max_bytes` + `strict_limit`); `None`: see
    /// [`LabSpec::effective_dirty_limit`].
    #[serde(default)]
    pub dirty_limit_bytes: Option<u64>,
    /// `dirty_limit_bytes` is the caller's choice (the demo's), not the
    /// user's: on a kernel without a per-device limit in bytes (before
    /// 6.2) the lab gets the nearest share with a warning instead of
    /// being refused (see `dirty.rs`).
    #[serde(default)]
    pub dirty_limit_preferred: bool,
    /// Why the throttle would not do for what this lab is for, where it
    /// could work (a plan's cgroup settings on v1, whose flat throttle
    /// iolab's groups would escape): with no `--backend` asked, the model
    /// is chosen instead, and this is its reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle_unsuitable: Option<String>,
    /// Directory of the image file.
    pub dir: PathBuf,
    /// A zram device (RAM speed, no scheduler) instead of a loop device.
    pub zram: bool,
    /// `--fs erofs`: the directory whose files the image holds.
    #[serde(default)]
    pub from: Option<PathBuf>,
    /// `--fs erofs`: mkfs.erofs compressor, `ALG[,LEVEL]` (e.g. `lz4hc`,
    /// `lz4hc,12`); `None` stores the files uncompressed.
    #[serde(default)]
    pub compress: Option<String>,
    /// How the lab is slowed (`--backend`; resolved by `up`: see
    /// `backend::resolve`). `None`: not slowed.
    #[serde(default)]
    pub backend: Option<crate::backend::Backend>,
    /// The device model (`--device-model` and its overrides, or the model
    /// of `--bw`/`--iops`), when the backend is the model.
    #[serde(default)]
    pub model: Option<iolab_model::ModelParams>,
    /// Why this backend was chosen, in words (shown by `lab status`).
    #[serde(default)]
    pub backend_reason: Option<String>,
}

impl Default for LabSpec {
    fn default() -> Self {
        LabSpec {
            name: "default".into(),
            size_bytes: 4 << 30,
            fs: Fs::Ext4,
            scheduler: None,
            bw_bytes: None,
            iops: None,
            queue_depth: None,
            read_ahead_kb: None,
            dirty_limit_bytes: None,
            dirty_limit_preferred: false,
            throttle_unsuitable: None,
            dir: iolab_sys::paths::image_dir(),
            zram: false,
            from: None,
            compress: None,
            backend: None,
            model: None,
            backend_reason: None,
        }
    }
}

impl LabSpec {
    /// True when the lab emulates slower storage (`--bw` or `--iops`).
    pub fn throttled(&self) -> bool {
        self.bw_bytes.is_some() || self.iops.is_some()
    }

    /// True when the blkio throttle slows this lab (a lower loop device).
    pub fn uses_throttle(&self) -> bool {
        self.backend == Some(crate::backend::Backend::Throttle)
    }

    /// The driver queue depth the top device gets, if it is limited. A
    /// model lab gets the model's depth (at least the kernel's minimum of
    /// 4: up to that many requests wait in the model's FIFO, the rest in
    /// the scheduler under test).
    pub fn effective_queue_depth(&self) -> Option<u32> {
        if let Some(m) = &self.model {
            return Some(
                self.queue_depth
                    .unwrap_or(m.queue_depth)
                    .max(MIN_QUEUE_DEPTH),
            );
        }
        self.queue_depth
            .or_else(|| self.throttled().then_some(DEFAULT_THROTTLED_DEPTH))
    }

    /// The dirty limit the lab gets: the one asked for, or for a throttled
    /// lab 2 s of its bandwidth (at least 16 MiB). A phone has a few hundred
    /// MiB of RAM for dirty data; with this VM's 24 GiB the global limits
    /// would let a writer dirty gigabytes, minutes of writeback at phone
    /// speed, and every `sync` (before a cold start) would wait for them.
    pub fn effective_dirty_limit(&self) -> Option<u64> {
        const MIN: u64 = 16 << 20;
        self.dirty_limit_bytes.or_else(|| {
            let bw = match &self.model {
                // A model lab writes back into FUSE: its dirty pages must
                // stay bounded (2 s of the model's write rate), so
                // writeback never needs more memory than the host has.
                Some(m) => m.write_bw.min(1 << 40),
                None => self.bw_bytes.or_else(|| self.iops.map(|i| i * 4096))?,
            };
            // At most 1 GiB: more is no phone's cache, and the kernel
            // refuses a bdi limit beyond the memory it could let dirty.
            Some(bw.saturating_mul(2).clamp(MIN, 1 << 30))
        })
    }

    /// Checks everything that needs no system access.
    pub fn validate(&self) -> Result<(), UsageError> {
        validate_name(&self.name)?;
        let min = self.fs.min_size_bytes();
        if self.size_bytes < min {
            return Err(UsageError::new(format!(
                "size {} is too small for {}: it needs at least {}",
                format_bytes(self.size_bytes),
                self.fs,
                format_bytes(min)
            )));
        }
        if self.size_bytes % 4096 != 0 {
            return Err(UsageError::new(format!(
                "size {} bytes is not a multiple of 4KiB: use e.g. 512MiB or 4GiB",
                self.size_bytes
            )));
        }
        if self.bw_bytes == Some(0) || self.iops == Some(0) {
            return Err(UsageError::new(
                "a limit of 0 would stop the lab: give --bw (e.g. 20MiB/s) or --iops (e.g. 500) above 0",
            ));
        }
        // A lab slower than this cannot even be set up in reasonable time
        // (mkfs, the mount's own reads, the load's files), and a mount
        // blocked on a throttled read cannot be interrupted: at 1 B/s
        // `iolab demo` hung unkillable in ext4_fill_super.
        if let Some(bw) = self.bw_bytes.filter(|&b| b < MIN_BW) {
            return Err(UsageError::new(format!(
                "--bw {}/s is below iolab's floor of 1MiB/s: a slower lab cannot be formatted and mounted in reasonable time (and a throttled mount cannot be interrupted); give 1MiB/s or more (an eMMC is 40MiB/s and up)",
                format_bytes(bw)
            )));
        }
        if let Some(d) = self.queue_depth {
            if d < MIN_QUEUE_DEPTH {
                return Err(UsageError::new(format!(
                    "queue depth {d} is below the kernel's minimum of {MIN_QUEUE_DEPTH} (BLKDEV_MIN_RQ): use 4 or more"
                )));
            }
        }
        if self.zram {
            self.validate_zram()?;
        }
        if let Some(m) = &self.model {
            m.validate()?;
        }
        self.validate_erofs()
    }

    fn validate_erofs(&self) -> Result<(), UsageError> {
        match (self.fs, &self.from) {
            (Fs::Erofs, None) => Err(UsageError::new(
                "--fs erofs builds a read-only image from a directory: give --from DIR",
            )),
            (Fs::Erofs, Some(_)) if self.zram => Err(UsageError::new(
                "--fs erofs cannot be combined with --zram: the image is a file behind a loop device; drop --zram",
            )),
            (Fs::Erofs, Some(_)) => match self.compress.as_deref() {
                Some(c) if !matches!(c.split(',').next(), Some("lz4" | "lz4hc" | "lzma" | "deflate" | "zstd")) => {
                    Err(UsageError::new(format!(
                        "--compress {c:?}: expected an EROFS compressor, e.g. lz4hc, lz4hc,12, lz4"
                    )))
                }
                _ => Ok(()),
            },
            (_, Some(_)) => Err(UsageError::new(
                "--from DIR is for --fs erofs (an image built from DIR); other filesystems start empty",
            )),
            (_, None) if self.compress.is_some() => Err(UsageError::new(
                "--compress is for --fs erofs: use --fs erofs --from DIR --compress lz4hc",
            )),
            _ => Ok(()),
        }
    }

    fn validate_zram(&self) -> Result<(), UsageError> {
        let no = |what: &str| {
            UsageError::new(format!(
                "--zram cannot be combined with {what}: zram is a bio-based device without an I/O scheduler or request queue; use a loop lab (drop --zram) to test schedulers or emulate slow storage"
            ))
        };
        if self.scheduler.as_deref().is_some_and(|s| s != "none") {
            return Err(no("--scheduler"));
        }
        if self.throttled() {
            return Err(no("--bw/--iops"));
        }
        if self.model.is_some() || self.backend.is_some() {
            return Err(no("--backend/--device-model"));
        }
        if self.queue_depth.is_some() {
            return Err(no("--queue-depth"));
        }
        if self.read_ahead_kb.is_some() {
            return Err(no("--read-ahead-kb"));
        }
        Ok(())
    }
}

/// The flags of `iolab lab up` as the user typed them.
#[derive(Debug, Clone, Default)]
pub struct SpecText<'a> {
    /// `--name`.
    pub name: &'a str,
    /// `--size`, e.g. `4GiB`.
    pub size: &'a str,
    /// `--fs`.
    pub fs: &'a str,
    /// `--scheduler`.
    pub scheduler: Option<&'a str>,
    /// `--bw`, e.g. `20MiB/s`.
    pub bw: Option<&'a str>,
    /// `--iops`.
    pub iops: Option<&'a str>,
    /// `--queue-depth`.
    pub queue_depth: Option<&'a str>,
    /// `--dirty-limit`, e.g. `64MiB`.
    pub dirty_limit: Option<&'a str>,
    /// `--read-ahead-kb`.
    pub read_ahead_kb: Option<u32>,
    /// `--dir`.
    pub dir: &'a str,
    /// `--zram`.
    pub zram: bool,
    /// `--from` (erofs).
    pub from: Option<&'a str>,
    /// `--compress` (erofs).
    pub compress: Option<&'a str>,
    /// `--backend`: `model` or `throttle`.
    pub backend: Option<&'a str>,
    /// `--device-model`: `emmc`, `sd`, `ufs` or `hdd`.
    pub device_model: Option<&'a str>,
    /// The model's overrides.
    pub model: ModelText<'a>,
}

/// The device model's flags as typed (`--model-read-bw 80MB/s`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelText<'a> {
    /// `--model-read-bw`.
    pub read_bw: Option<&'a str>,
    /// `--model-write-bw`.
    pub write_bw: Option<&'a str>,
    /// `--model-read-latency`.
    pub read_latency: Option<&'a str>,
    /// `--model-write-latency`.
    pub write_latency: Option<&'a str>,
    /// `--model-queue-depth`.
    pub queue_depth: Option<&'a str>,
    /// `--model-flush`.
    pub flush: Option<&'a str>,
    /// `--model-seek`.
    pub seek: Option<&'a str>,
}

impl ModelText<'_> {
    fn any(&self) -> bool {
        [
            self.read_bw,
            self.write_bw,
            self.read_latency,
            self.write_latency,
            self.queue_depth,
            self.flush,
            self.seek,
        ]
        .iter()
        .any(Option::is_some)
    }

    /// `base` with the overrides applied; each error names its flag.
    fn apply(
        &self,
        mut base: iolab_model::ModelParams,
    ) -> Result<iolab_model::ModelParams, UsageError> {
        let rate = |flag: &str, t: &str| {
            iolab_sys::units::parse_rate(t).map_err(|e| UsageError::new(format!("{flag}: {e}")))
        };
        let dur = |flag: &str, t: &str| {
            iolab_sys::units::parse_duration(t)
                .map(iolab_sys::cast::duration_ns)
                .map_err(|e| UsageError::new(format!("{flag}: {e}")))
        };
        let custom = self.any();
        if let Some(t) = self.read_bw {
            base.read_bw = rate("--model-read-bw", t)?;
        }
        if let Some(t) = self.write_bw {
            base.write_bw = rate("--model-write-bw", t)?;
        }
        if let Some(t) = self.read_latency {
            base.read_latency_ns = dur("--model-read-latency", t)?;
        }
        if let Some(t) = self.write_latency {
            base.write_latency_ns = dur("--model-write-latency", t)?;
        }
        if let Some(t) = self.flush {
            base.flush_ns = dur("--model-flush", t)?;
        }
        if let Some(t) = self.seek {
            base.seek_ns = dur("--model-seek", t)?;
        }
        if let Some(t) = self.queue_depth {
            base.queue_depth = t.trim().parse().map_err(|_| {
                UsageError::new(format!(
                    "--model-queue-depth: invalid number {t:?}: expected 1 (eMMC, SD) or more (UFS: 32)"
                ))
            })?;
        }
        if custom {
            base.profile = format!("{}+overrides", base.profile);
        }
        base.validate()?;
        Ok(base)
    }
}

impl LabSpec {
    /// Parses and validates typed flags; each error names the flag.
    pub fn from_text(t: &SpecText<'_>) -> Result<LabSpec, UsageError> {
        let flag = |name: &str, e: UsageError| UsageError::new(format!("{name}: {e}"));
        let count = |name: &str, text: &str| {
            text.trim().parse::<u64>().map_err(|_| {
                UsageError::new(format!(
                    "{name}: invalid number {text:?}: expected a whole number such as 500"
                ))
            })
        };
        let queue_depth = match t.queue_depth {
            Some(d) => Some(
                u32::try_from(count("--queue-depth", d)?)
                    .map_err(|_| UsageError::new(format!("--queue-depth: {d} is too large")))?,
            ),
            None => None,
        };
        let dir = PathBuf::from(t.dir);
        if t.dir.is_empty() {
            return Err(UsageError::new(
                "--dir: empty path: give the directory for the image, e.g. /var/tmp/iolab",
            ));
        }
        let spec = LabSpec {
            name: t.name.to_string(),
            size_bytes: iolab_sys::units::parse_size(t.size).map_err(|e| flag("--size", e))?,
            fs: Fs::parse(t.fs).map_err(|e| flag("--fs", e))?,
            scheduler: t.scheduler.map(str::to_string),
            bw_bytes: t
                .bw
                .map(iolab_sys::units::parse_rate)
                .transpose()
                .map_err(|e| flag("--bw", e))?,
            iops: t.iops.map(|i| count("--iops", i)).transpose()?,
            queue_depth,
            read_ahead_kb: t.read_ahead_kb,
            dirty_limit_bytes: t
                .dirty_limit
                .map(iolab_sys::units::parse_size)
                .transpose()
                .map_err(|e| flag("--dirty-limit", e))?,
            dirty_limit_preferred: false,
            throttle_unsuitable: None,
            dir,
            zram: t.zram,
            from: t.from.map(PathBuf::from),
            compress: t.compress.map(str::to_string),
            backend: None,
            model: None,
            backend_reason: None,
        };
        let mut spec = spec;
        (spec.backend, spec.model) = slowing_from_text(&spec, t.backend, t.device_model, &t.model)?;
        spec.validate()?;
        Ok(spec)
    }
}

/// Lab names become file names and mount points: keep them plain.
pub fn validate_name(name: &str) -> Result<(), UsageError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(UsageError::new(format!(
            "invalid lab name {name:?}: use up to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )))
    }
}

/// `--backend`, `--device-model` and the `--model-*` overrides, for a lab
/// whose `--bw`/`--iops`/`--queue-depth` are already in `spec`: the backend
/// asked for (`None`: chosen when the lab is made) and the model, if any.
pub fn slowing_from_text(
    spec: &LabSpec,
    backend: Option<&str>,
    device_model: Option<&str>,
    overrides: &ModelText<'_>,
) -> Result<(Option<crate::Backend>, Option<iolab_model::ModelParams>), UsageError> {
    let backend = backend
        .map(crate::Backend::parse)
        .transpose()
        .map_err(|e| UsageError::new(e.to_string()))?;
    let base = match device_model {
        Some(p) => Some(
            iolab_model::ModelParams::profile(p)
                .map_err(|e| UsageError::new(format!("--device-model: {e}")))?,
        ),
        None if overrides.any() => {
            if !spec.throttled() {
                return Err(UsageError::new(
                    "the --model-* flags adjust a device model: give --device-model emmc|sd|ufs|hdd (or --bw) as well",
                ));
            }
            Some(crate::backend::from_limits(spec).map_err(|e| UsageError::new(e.to_string()))?)
        }
        None => None,
    };
    let model = base.map(|b| overrides.apply(b)).transpose()?;
    Ok((backend, model))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec() -> LabSpec {
        LabSpec {
            size_bytes: 512 << 20,
            ..LabSpec::default()
        }
    }

    #[test]
    fn default_spec_is_valid() {
        LabSpec::default().validate().unwrap();
        assert_eq!(LabSpec::default().effective_queue_depth(), None);
    }

    #[test]
    fn filesystems_parse_and_unknown_ones_say_what_is_valid() {
        assert_eq!(Fs::parse("xfs").unwrap(), Fs::Xfs);
        assert_eq!(Fs::parse("none").unwrap(), Fs::None);
        let e = Fs::parse("zfs").unwrap_err();
        assert!(
            e.0.contains("\"zfs\"") && e.0.contains("ext4, xfs, btrfs"),
            "{e}"
        );
    }

    #[test]
    fn sizes_below_the_filesystem_minimum_are_refused() {
        let s = LabSpec {
            fs: Fs::Xfs,
            size_bytes: 256 << 20,
            ..spec()
        };
        let e = s.validate().unwrap_err();
        assert!(
            e.0.contains("too small for xfs") && e.0.contains("300MiB"),
            "{e}"
        );
        let s = LabSpec {
            fs: Fs::Btrfs,
            size_bytes: 100 << 20,
            ..spec()
        };
        assert!(s.validate().is_err());
        let s = LabSpec {
            size_bytes: (512 << 20) + 512,
            ..spec()
        };
        assert!(s.validate().unwrap_err().0.contains("multiple of 4KiB"));
    }

    #[test]
    fn a_bandwidth_below_the_floor_is_refused_and_the_floor_is_not() {
        let slow = LabSpec {
            bw_bytes: Some(1),
            ..spec()
        };
        let e = slow.validate().unwrap_err();
        assert!(e.0.contains("below iolab's floor of 1MiB/s"), "{e}");
        let floor = LabSpec {
            bw_bytes: Some(MIN_BW),
            ..spec()
        };
        floor.validate().unwrap();
    }

    #[test]
    fn names_must_be_plain() {
        for bad in ["", "../x", "a/b", ".hidden", "-x", "a b", &"n".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["default", "bfq-20MiB", "t_1.2"] {
            validate_name(good).unwrap();
        }
    }

    #[test]
    fn zram_refuses_schedulers_and_throttles() {
        let z = LabSpec {
            zram: true,
            ..spec()
        };
        z.validate().unwrap();
        let e = LabSpec {
            scheduler: Some("bfq".into()),
            ..z.clone()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("--scheduler") && e.0.contains("no"), "{e}");
        LabSpec {
            scheduler: Some("none".into()),
            ..z.clone()
        }
        .validate()
        .unwrap();
        assert!(LabSpec {
            bw_bytes: Some(1 << 20),
            ..z.clone()
        }
        .validate()
        .unwrap_err()
        .0
        .contains("--bw"));
        assert!(LabSpec {
            queue_depth: Some(8),
            ..z
        }
        .validate()
        .is_err());
    }

    fn text() -> SpecText<'static> {
        SpecText {
            name: "t",
            size: "512MiB",
            fs: "ext4",
            dir: "/var/tmp/iolab",
            ..SpecText::default()
        }
    }

    #[test]
    fn typed_flags_parse_into_a_spec() {
        let s = LabSpec::from_text(&SpecText {
            bw: Some("20MiB/s"),
            iops: Some("300"),
            scheduler: Some("bfq"),
            ..text()
        })
        .unwrap();
        assert_eq!(s.size_bytes, 512 << 20);
        assert_eq!(s.bw_bytes, Some(20 << 20));
        assert_eq!(s.iops, Some(300));
        assert_eq!(s.scheduler.as_deref(), Some("bfq"));
    }

    #[test]
    fn bad_numbers_name_the_flag_and_the_expected_form() {
        let e = LabSpec::from_text(&SpecText {
            size: "4 parsecs",
            ..text()
        })
        .unwrap_err();
        assert!(e.0.starts_with("--size: invalid size \"4 parsecs\""), "{e}");
        let e = LabSpec::from_text(&SpecText {
            bw: Some("fast"),
            ..text()
        })
        .unwrap_err();
        assert!(e.0.starts_with("--bw:") && e.0.contains("40MiB/s"), "{e}");
        let e = LabSpec::from_text(&SpecText {
            iops: Some("1.5k"),
            ..text()
        })
        .unwrap_err();
        assert!(e.0.starts_with("--iops: invalid number"), "{e}");
        let e = LabSpec::from_text(&SpecText {
            fs: "ntfs",
            ..text()
        })
        .unwrap_err();
        assert!(e.0.starts_with("--fs: unknown filesystem"), "{e}");
        let e = LabSpec::from_text(&SpecText { size: "", ..text() }).unwrap_err();
        assert!(e.0.starts_with("--size:"), "{e}");
        assert!(!e.0.contains('\n'));
    }

    #[test]
    fn erofs_needs_a_source_directory_and_a_known_compressor() {
        let e = LabSpec {
            fs: Fs::Erofs,
            ..spec()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("--from DIR"), "{e}");
        let ok = LabSpec {
            fs: Fs::Erofs,
            from: Some("/usr/share".into()),
            compress: Some("lz4hc,12".into()),
            ..spec()
        };
        ok.validate().unwrap();
        let e = LabSpec {
            compress: Some("gzip".into()),
            ..ok.clone()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("lz4hc"), "{e}");
        assert!(LabSpec {
            zram: true,
            ..ok.clone()
        }
        .validate()
        .is_err());
        let e = LabSpec {
            from: Some("/usr/share".into()),
            ..spec()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("--fs erofs"), "{e}");
        let e = LabSpec {
            compress: Some("lz4".into()),
            ..spec()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("--fs erofs"), "{e}");
        assert_eq!(Fs::parse("erofs").unwrap(), Fs::Erofs);
    }

    #[test]
    fn throttled_labs_get_a_shallow_queue_unless_told_otherwise() {
        let t = LabSpec {
            bw_bytes: Some(20 << 20),
            ..spec()
        };
        assert_eq!(t.effective_queue_depth(), Some(DEFAULT_THROTTLED_DEPTH));
        let t = LabSpec {
            queue_depth: Some(32),
            ..t
        };
        assert_eq!(t.effective_queue_depth(), Some(32));
        let e = LabSpec {
            queue_depth: Some(1),
            ..spec()
        }
        .validate()
        .unwrap_err();
        assert!(e.0.contains("minimum of 4"), "{e}");
        assert!(LabSpec {
            iops: Some(0),
            ..spec()
        }
        .validate()
        .is_err());
    }
}
