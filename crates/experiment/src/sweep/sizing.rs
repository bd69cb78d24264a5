//! How many bytes each run moves. Seed 002 used a fixed 32 GiB per run;
//! on a phone-class lab that is a quarter of an hour per run, so here the
//! size is derived from the device: its bandwidth × `--runtime`, at most
//! half its capacity, or `--size` as given.

use serde::{Deserialize, Serialize};

use iolab_load::{job_from_options, run_to_completion, StartOptions};
use iolab_sys::block::BlockDev;
use iolab_sys::units::{format_bytes, format_rate};
use iolab_sys::UsageError;

use super::config::SweepConfig;
use crate::ExperimentError;

/// How much every run moves, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// Bytes per run, all jobs together (each of N jobs moves 1/N).
    pub total_bytes: u64,
    /// Capacity of the device.
    pub capacity_bytes: u64,
    /// The bandwidth the size was scaled from, bytes/s (`None` with `--size`).
    pub bw_bytes: Option<f64>,
    /// Where that bandwidth came from.
    pub bw_source: String,
    /// One sentence for the user: what was scaled, from what, and why.
    pub note: String,
}

impl Sizing {
    /// Bytes of each of `numjobs` files.
    pub fn per_job(&self, numjobs: u32) -> u64 {
        self.total_bytes / u64::from(numjobs.max(1))
    }
}

/// Seed 002 moved 32 GiB per run (1 × 32 GiB or 4 × 8 GiB), half of its
/// 64 GB SD card.
pub const SEED_TOTAL_BYTES: u64 = 32 << 30;

/// Scales the per-run size to the device. Seed 002 used a fixed 32 GiB,
/// which on a phone-class lab would take 15 minutes per run. Here a run
/// moves what the device does in `cfg.runtime_s` at `bw` (so the whole
/// sweep's length is predictable), or `cfg.size_bytes` if given, at most
/// half the device (as 32 GiB was of the seed's SD card) and a multiple of
/// every pattern's numjobs × bs, so all patterns move the same bytes.
pub fn scale(
    cfg: &SweepConfig,
    capacity_bytes: u64,
    bw: Option<(f64, &str)>,
) -> Result<Sizing, UsageError> {
    let lcm = cfg
        .patterns
        .iter()
        .fold(1u64, |acc, p| lcm(acc, u64::from(p.numjobs)));
    let unit = lcm * cfg.bs_bytes;
    let limit = capacity_bytes / 2 / unit * unit;
    if limit == 0 {
        return Err(UsageError::new(format!(
            "the device ({}) is too small: a run needs {} (one {} block for each of {lcm} jobs) in half of it",
            format_bytes(capacity_bytes),
            format_bytes(unit),
            format_bytes(cfg.bs_bytes)
        )));
    }
    let split = |total: u64| {
        let mut parts: Vec<u32> = cfg.patterns.iter().map(|p| p.numjobs).collect();
        parts.sort_unstable();
        parts.dedup();
        parts
            .iter()
            .map(|&n| format!("{n} × {}", format_bytes(total / u64::from(n))))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let seed = format!(
        "seed 002 moved {} per run (half of a 64 GB SD card)",
        format_bytes(SEED_TOTAL_BYTES)
    );
    if let Some(size) = cfg.size_bytes {
        let total = size / unit * unit;
        if total == 0 || total > limit {
            return Err(UsageError::new(format!(
                "--size {}: expected from {} to {} (half of the {} device, a multiple of numjobs × bs)",
                format_bytes(size),
                format_bytes(unit),
                format_bytes(limit),
                format_bytes(capacity_bytes)
            )));
        }
        return Ok(Sizing {
            total_bytes: total,
            capacity_bytes,
            bw_bytes: None,
            bw_source: "--size".into(),
            note: format!(
                "each run moves {} ({}) as --size asked; {seed}",
                format_bytes(total),
                split(total)
            ),
        });
    }
    let (bw, source) = bw.ok_or_else(|| {
        UsageError::new("the device's bandwidth is unknown: give --size to fix the bytes per run")
    })?;
    let want = iolab_sys::cast::floor_u64(bw * cfg.runtime_s);
    let total = (want.min(limit) / unit * unit).max(unit);
    let why = if want > limit {
        format!(
            "capped at half of the {} device",
            format_bytes(capacity_bytes)
        )
    } else {
        format!(
            "--runtime {}s at {} ({source})",
            cfg.runtime_s,
            format_rate(bw)
        )
    };
    Ok(Sizing {
        total_bytes: total,
        capacity_bytes,
        bw_bytes: Some(bw),
        bw_source: source.to_string(),
        note: format!(
            "each run moves {} ({}): {why}; {seed}, which would take {:.0} s per run here",
            format_bytes(total),
            split(total),
            SEED_TOTAL_BYTES as f64 / bw.max(1.0)
        ),
    })
}

fn lcm(a: u64, b: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    a / gcd(a, b) * b
}

/// Measures sequential read bandwidth for one second (1 MiB direct reads,
/// 4 in flight) straight from the device, when nothing says what it is.
/// Writes are not measured (that would need the filesystem the sweep has
/// not made yet); a run that writes slower is bounded by the runtime cap.
pub fn measure_bandwidth(dev: &BlockDev) -> Result<f64, ExperimentError> {
    let opts: Vec<(String, String)> = [
        ("filename", dev.dev_path().to_string_lossy().into_owned()),
        ("rw", "read".into()),
        ("bs", "1M".into()),
        ("direct", "1".into()),
        ("ioengine", "io_uring".into()),
        ("iodepth", "4".into()),
        ("runtime", "1".into()),
        ("time_based", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let job = job_from_options("calibrate", &opts)?;
    let report = run_to_completion(vec![job], StartOptions::default())?;
    let bw = report.total.read.bw_bytes();
    if bw <= 0.0 {
        return Err(UsageError::new(format!(
            "could not read {} to estimate its bandwidth: give --size to fix the bytes per run",
            dev.dev_path().display()
        ))
        .into());
    }
    Ok(bw)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sweep::config::tests::cfg;
    use crate::sweep::plan::SEED_PATTERNS;

    #[test]
    fn size_scales_with_bandwidth_and_runtime() {
        let s = scale(&cfg(), 1 << 30, Some((40.0 * 1048576.0, "lab throttle"))).unwrap();
        assert_eq!(s.total_bytes, 40 << 20);
        assert_eq!(s.per_job(4), 10 << 20);
        assert!(s.note.contains("40MiB"), "{}", s.note);
        assert!(s.note.contains("1 × 40MiB or 4 × 10MiB"), "{}", s.note);
        assert!(s.note.contains("seed 002"), "{}", s.note);
        // Rounded down to a multiple of 4 jobs × 1 MiB.
        let mut c = cfg();
        c.runtime_s = 0.25;
        let s = scale(&c, 1 << 30, Some((42.0 * 1048576.0, "x"))).unwrap();
        assert_eq!(s.total_bytes, 8 << 20);
    }

    #[test]
    fn size_is_capped_by_capacity_and_floored_at_one_block_per_job() {
        let s = scale(&cfg(), 64 << 20, Some((1e10, "fast"))).unwrap();
        assert_eq!(s.total_bytes, 32 << 20);
        assert!(s.note.contains("half of the 64MiB device"), "{}", s.note);
        let s = scale(&cfg(), 1 << 30, Some((1000.0, "slow"))).unwrap();
        assert_eq!(s.total_bytes, 4 << 20);
        assert!(scale(&cfg(), 4 << 20, Some((1e6, "x"))).is_err());
    }

    #[test]
    fn explicit_size_is_checked_against_the_device() {
        let mut c = cfg();
        c.size_bytes = Some(16 << 20);
        let s = scale(&c, 1 << 30, None).unwrap();
        assert_eq!(s.total_bytes, 16 << 20);
        assert_eq!(s.bw_source, "--size");
        c.size_bytes = Some(900 << 20);
        let e = scale(&c, 1 << 30, None).unwrap_err();
        assert!(e.0.contains("half of the 1GiB device"), "{e}");
        // Only 1-job patterns: any whole number of blocks will do.
        c.patterns = vec![SEED_PATTERNS[0], SEED_PATTERNS[2]];
        c.size_bytes = Some(5 << 20);
        assert_eq!(scale(&c, 1 << 30, None).unwrap().total_bytes, 5 << 20);
    }
}
