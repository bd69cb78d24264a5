//! `iolab boot` (seed 001): boot time under each boot prefetch variant,
//! over real boots. The first boot records what the boot reads (`iolab
//! boot-init --record`, its list written into a copy of the root image);
//! then every variant is booted N times, interleaved (each round in its
//! own shuffled order, so a drift of the host is spread over all), each a
//! new machine with a cold page cache, the root disk throttled by qemu
//! and every write thrown away (snapshot), so every boot starts from the
//! same disk. Each boot is stored as it ends, as a run: its time from
//! kernel start to the boot-done marker (the guest's CLOCK_BOOTTIME), the
//! host's clock over the same span (the outside check), what the boot
//! disk read by diskstats, and the prefetch's own report.
//!
//! It runs on the experiment engine as a body (`body.rs`) whose place is a
//! machine iolab restarts (`Place::Machine`: no device of this host, the
//! boot disk's schedulers part of the variants): one guard (qemu's
//! process group recorded, so a killed iolab's next run ends it), every
//! run committed before the next starts, Ctrl-C stops cleanly and
//! `--resume ID` continues.

pub mod board;
mod body;
pub mod calibrate;
pub mod disk;
pub mod explain;
pub mod guest;
mod judge;
pub mod qmp;
pub use iolab_results::boot as variant;

use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_guard::Guard;
use iolab_store::{RunOutcome, RunRecord};
use iolab_sys::{cast, UsageError};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::engine::{Finished, RunOptions};
use crate::ExperimentError;
use body::Images;

/// The host's and the guest's clocks over one boot may differ by this
/// much before the boot is not trusted: /proc/uptime's 10 ms steps at
/// both ends, and the serial console's delivery of two lines.
pub const CLOCK_BOUND_S: f64 = 0.1;

/// What defines a boot experiment (stored, so `--resume` runs the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootConfig {
    /// The guest (vmlinuz, initramfs.cpio.gz, root.img), as
    /// scripts/guest/boot-build.sh makes it; iolab writes its copy of the
    /// root image there too.
    pub guest: PathBuf,
    /// The variants compared; `none` first.
    pub variants: Vec<String>,
    /// Boots per variant.
    pub boots: u32,
    /// qemu's throttle of the root disk, bytes/s.
    pub bw_bytes: Option<u64>,
    /// qemu's throttle of the root disk, requests/s (what makes a
    /// scattered layout cost more than a contiguous one).
    #[serde(default)]
    pub iops: Option<u64>,
    /// Guest memory, MiB.
    pub memory_mib: u32,
    /// Longest one boot may take, s.
    pub timeout_s: f64,
    /// Seed of the boot order.
    pub seed: u64,
    /// Plain boots before the measured ones, stored apart (0 or 1).
    #[serde(default = "one")]
    pub warmup_boots: u32,
    /// A board to boot over ssh instead of the guest (its prefetch and
    /// marker units installed: docs/boot.md).
    #[serde(default)]
    pub ssh: Option<SshTarget>,
    /// The root disk served by the device model (`--disk`), calibrated;
    /// then no throttle.
    #[serde(default)]
    pub disk: Option<disk::ModelDisk>,
    /// How the guest's boot reads: in large blocks (dd, cat, md5sum: the
    /// first boot guest) or by page faults on mapped files with CPU
    /// between them, as Android's does (androidboot).
    #[serde(default)]
    pub workload: Workload,
    /// CPU time per touched page of the faulting boot, µs of the guest's
    /// own clock.
    #[serde(default)]
    pub cpu_us: Option<f64>,
    /// The difference from none each comparison must be able to tell at
    /// 80 % power (Holm's strictest level), as a fraction of none's mean
    /// (`--resolve 2%`).
    #[serde(default)]
    pub resolve: Option<f64>,
    /// `--boots auto`: rounds are added after `boots` until every
    /// comparison resolves `resolve`, or this many rounds.
    #[serde(default)]
    pub max_boots: Option<u32>,
    /// Each variant booted once more with the boot's processes under
    /// `iolab explain` in the guest (stored apart, not compared).
    #[serde(default)]
    pub explain: bool,
}

/// How far the boots a comparison needs are searched.
const SEARCH_BOOTS: usize = 200;

/// A comparison still short of --resolve, in words.
fn short_text(v: &str, n: usize, need: usize, cap: Option<u32>) -> String {
    if need >= SEARCH_BOOTS {
        format!("{v} ({n} boots; its spread needs more than {SEARCH_BOOTS})")
    } else if cap.is_some_and(|c| need > cast::usize_of(u64::from(c))) {
        format!("{v} ({n} boots; its spread needs ~{need}, more than --max-boots)")
    } else {
        format!("{v} ({n} boots, needs ~{need})")
    }
}

/// Whether another round is needed for every comparison to resolve
/// `resolve`: for each variant against its baseline, the boots per side
/// [`iolab_stats::samples_needed`] gives from their spreads so far, at
/// α = 5 % / m (Holm's strictest), 80 % power. Returns the comparisons
/// still short (variant, boots so far, boots needed).
pub fn short_of_resolution(cfg: &BootConfig, runs: &[RunRecord]) -> Vec<(String, usize, usize)> {
    let (Some(resolve), Some(cap)) = (cfg.resolve, cfg.max_boots) else {
        return Vec::new();
    };
    let cap = cast::usize_of(u64::from(cap));
    let times = |v: &str| -> Vec<f64> {
        runs.iter()
            .filter(|r| r.variant.as_deref().unwrap_or("none") == v && r.outcome.is_sample())
            .map(|r| r.duration_ns as f64 / 1e9)
            .collect()
    };
    let sd_mean = |x: &[f64]| -> Option<(f64, f64)> {
        if x.len() < 2 {
            return None;
        }
        let m = x.iter().sum::<f64>() / x.len() as f64;
        let var = x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64;
        Some((var.sqrt(), m))
    };
    let compared: Vec<&String> = cfg
        .variants
        .iter()
        .filter(|v| variant::baseline(v) != **v)
        .collect();
    let per_base = |base: &str| {
        compared
            .iter()
            .filter(|v| variant::baseline(v) == base)
            .count()
    };
    let mut short = Vec::new();
    for v in &compared {
        let base = variant::baseline(v);
        let (x, b) = (times(v), times(&base));
        let n = x.len().min(b.len());
        let needed = match (sd_mean(&x), sd_mean(&b)) {
            (Some((sx, _)), Some((sb, mb))) => iolab_stats::samples_needed(
                sx,
                sb,
                resolve * mb,
                0.05 / per_base(&base).max(1) as f64,
                0.8,
                // Searched past the cap, so the warning can say how many.
                SEARCH_BOOTS.max(cap),
            ),
            _ => cap,
        };
        if n < needed {
            short.push((v.to_string(), n, needed));
        }
    }
    short
}

/// How the boot guest's boot reads what it reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// dd, cat and md5sum in large blocks (scripts/guest/boot/init).
    #[default]
    Reads,
    /// Page faults on mmap'd files, 4 KiB plus read-around, CPU between
    /// them (scripts/guest/boot/androidboot.c).
    Faults,
}

impl BootConfig {
    /// The kernel command line's part every boot of this experiment has:
    /// its workload, and PSI on (Debian's kernel has it off by default)
    /// for the boot's own account of I/O waiting.
    fn cmdline(&self) -> String {
        let mut c = String::from("psi=1");
        if self.workload == Workload::Faults {
            c.push_str(" iolab.workload=faults");
            if let Some(us) = self.cpu_us {
                c.push_str(&format!(" iolab.cpu_us={us}"));
            }
        }
        c
    }
}

/// The modelled disk of `params` for `guest`: its stored calibration, or
/// a new one (two boots) when there is none for this qemu and kernel, or
/// when `again`.
pub fn calibrated_disk(
    guest: &Path,
    params: &iolab_model::ModelParams,
    memory_mib: u32,
    timeout_s: f64,
    again: bool,
) -> Result<calibrate::Calibration, ExperimentError> {
    if !again {
        if let Some(c) = calibrate::Calibration::load(guest, &params.profile) {
            if c.disk.params == *params {
                return Ok(c);
            }
        }
    }
    let guard = Guard::new();
    let work = tempfile::Builder::new()
        .prefix("iolab-calibrate-")
        .tempdir_in(guest)
        .map_err(|e| iolab_sys::SysError::io(guest, e))?;
    calibrate::calibrate(
        guest,
        params,
        memory_mib,
        Duration::from_secs_f64(timeout_s),
        work.path(),
        &guard,
    )
}

/// Where a board is, as `iolab remote --ssh` takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SshTarget {
    /// USER@HOST.
    pub dest: String,
    /// Port.
    pub port: Option<u16>,
    /// Identity file.
    pub identity: Option<PathBuf>,
    /// `-o` options.
    pub options: Vec<String>,
}

impl SshTarget {
    fn transport(&self) -> iolab_remote::Transport {
        iolab_remote::Transport::Ssh(iolab_remote::Ssh {
            dest: self.dest.clone(),
            port: self.port,
            identity: self.identity.clone(),
            options: self.options.clone(),
        })
    }
}

impl BootConfig {
    fn image(&self) -> PathBuf {
        self.guest.join("root.img")
    }

    /// Checks what needs no system access.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        if self.ssh.is_some() {
            for v in &self.variants {
                variant::board_line(v)?;
            }
            if self.explain {
                return Err(UsageError::new(
                    "--explain runs iolab explain inside the qemu guest's boot; a board's boot units do not: leave out --explain with --ssh",
                )
                .into());
            }
        }
        for f in ["vmlinuz", "initramfs.cpio.gz", "root.img"] {
            if self.ssh.is_some() {
                break;
            }
            if !self.guest.join(f).is_file() {
                return Err(UsageError::new(format!(
                    "--guest {}: no {f} there; build the boot guest with scripts/guest/boot-build.sh",
                    self.guest.display()
                ))
                .into());
            }
        }
        if self.boots == 0 {
            return Err(UsageError::new("--boots: at least 1").into());
        }
        if self.max_boots.is_some() && self.resolve.is_none() {
            return Err(UsageError::new(
                "--boots auto adds boots until a difference resolves: name it with --resolve, e.g. --resolve 2%",
            )
            .into());
        }
        if self.max_boots.is_some_and(|m| m < self.boots) {
            return Err(UsageError::new(format!(
                "--max-boots: at least the {} boots every variant gets first",
                self.boots
            ))
            .into());
        }
        if self.variants.is_empty() {
            return Err(UsageError::new(format!(
                "--variants: give one or more of {}",
                variant::help()
            ))
            .into());
        }
        for v in &self.variants {
            if variant::is_apart(v) {
                return Err(UsageError::new(format!(
                    "--variants {v}: {} are made once, as needed, and explain: boots by --explain; give {}",
                    variant::MADE_ONCE.join(", "),
                    variant::help()
                ))
                .into());
            }
            variant::init_args(v)?;
        }
        Ok(())
    }
}

/// Runs (or, with `opts.resume` and no `cfg`, resumes) a boot experiment
/// on the engine ([`body::BootBody`]).
pub fn run(
    cfg: Option<BootConfig>,
    opts: &RunOptions,
    announce: &dyn Fn(&str),
) -> Result<Finished<()>, ExperimentError> {
    crate::engine::run::<body::BootBody>(cfg, opts, announce)
}

/// The line said before the boots: where, and how its disk is slowed.
fn announcement(cfg: &BootConfig) -> String {
    format!(
        "{} ({}){}",
        place(cfg),
        match (&cfg.ssh, cfg.bw_bytes) {
            (Some(_), _) => "its own disk".to_string(),
            (None, _) if cfg.disk.is_some() => cfg.disk.as_ref().map_or(String::new(), |d| {
                format!(
                    "root disk on the {} model, the guest's queue {} deep",
                    d.params.profile, d.params.queue_depth
                )
            }),
            (None, None) => "root disk not throttled".to_string(),
            (None, Some(b)) => format!(
                "root disk throttled to {}/s",
                iolab_sys::units::format_bytes(b)
            ),
        },
        if cfg.variants.iter().any(|v| !variant::is_plain(v)) {
            "; the first boot records the list"
        } else {
            ""
        }
    )
}

/// One boot of a board over ssh, judged; `None` when interrupted.
fn board_boot(
    t: &iolab_remote::Transport,
    v: &str,
    rep: u32,
    cfg: &BootConfig,
    work: &Path,
    quickest: Option<f64>,
) -> Result<Option<RunRecord>, ExperimentError> {
    // Left alone for 80 % of the quickest boot so far (none before the
    // first): the polls that follow mostly find it booted.
    let quiet = Duration::from_secs_f64(0.8 * quickest.unwrap_or(0.0));
    let line = variant::board_line(v)?;
    let seen = board::boot(
        t,
        &line,
        quiet,
        Duration::from_secs_f64(cfg.timeout_s),
        work,
    )?;
    if seen.interrupted {
        return Ok(None);
    }
    let mut run = judge::judge(v, rep, &seen, cfg.timeout_s);
    // What the board's unit was told, not a guest's init.
    run.config = json!({ "variant": v, "board_line": line });
    Ok(Some(run))
}

/// One boot of the qemu guest, its disk and kernel cached by the host
/// first, judged; `None` when interrupted.
fn guest_boot(
    guard: &Guard,
    v: &str,
    rep: u32,
    cfg: &BootConfig,
    images: &Images,
    work: &Path,
) -> Result<Option<RunRecord>, ExperimentError> {
    for f in ["vmlinuz", "initramfs.cpio.gz"] {
        warm_host_cache(&cfg.guest.join(f))?;
    }
    let root = images.root_of(cfg, v);
    // The guest's disk is the image as the host caches it: read in whole
    // before every boot, so only qemu's throttle sets the disk's speed
    // (the first boots of a fresh copy read it from the host's disk: 20 %
    // slower here).
    let host_cached = warm_host_cache(&root)?;
    let cmdline = format!("{} {}", cfg.cmdline(), variant::cmdline(v));
    let seen = guest::boot(
        &guest::BootSpec {
            dir: &cfg.guest,
            root: &root,
            snapshot: v != variant::RECORD && v != variant::RELAYOUT_WRITE,
            bw_bytes: cfg.bw_bytes,
            iops: cfg.iops,
            disk: cfg.disk.as_ref(),
            init: variant::init_args(v)?,
            cmdline: &cmdline,
            memory_mib: cfg.memory_mib,
            timeout: Duration::from_secs_f64(cfg.timeout_s),
            work,
        },
        guard,
    )?;
    if seen.interrupted {
        return Ok(None);
    }
    let mut run = judge::judge(v, rep, &seen, cfg.timeout_s);
    run.extra["host_cached_before"] = json!(host_cached);
    Ok(Some(run))
}

/// A boot's result in a few words, for progress and warnings.
fn outcome_text(run: &RunRecord) -> String {
    match run.outcome {
        RunOutcome::Ok => format!("{:.2}s", run.duration_ns as f64 / 1e9),
        o => match &run.reason {
            Some(why) => format!("{} ({why})", o.as_str()),
            None => o.as_str().to_string(),
        },
    }
}

fn one() -> u32 {
    1
}

/// Where the boots run, in words.
fn place(cfg: &BootConfig) -> String {
    match &cfg.ssh {
        Some(s) => format!(
            "board ssh {}{}",
            s.dest,
            s.port.map_or(String::new(), |p| format!(" -p {p}"))
        ),
        None => format!("qemu guest {}", cfg.guest.display()),
    }
}

/// Reads `image` into the host's page cache; the share of it that was
/// cached already (by mincore), as a fraction.
fn warm_host_cache(image: &Path) -> Result<f64, ExperimentError> {
    use std::io::Read;
    let before = iolab_sys::pagecache::residency(image)?.fraction();
    let mut f = std::fs::File::open(image).map_err(|e| iolab_sys::SysError::io(image, e))?;
    let mut buf = vec![0u8; 1 << 20];
    while f
        .read(&mut buf)
        .map_err(|e| iolab_sys::SysError::io(image, e))?
        > 0
    {}
    Ok(before)
}

/// Fisher–Yates with a xorshift generator: the same order for the same
/// seed on every machine.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        #[allow(clippy::cast_possible_truncation, reason = "x % (i + 1) <= i, a usize")]
        let j = (x % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_round_is_a_permutation_and_rounds_differ() {
        let base: Vec<u32> = (0..7).collect();
        let mut orders = BTreeSet::new();
        for seed in 1..=10 {
            let mut v = base.clone();
            shuffle(&mut v, seed);
            let mut s = v.clone();
            s.sort_unstable();
            assert_eq!(s, base);
            orders.insert(v);
        }
        assert!(orders.len() > 5, "{orders:?}");
    }
}
