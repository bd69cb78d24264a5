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
pub mod qmp;
pub use iolab_results::boot as variant;

use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_guard::Guard;
use iolab_store::{RunOutcome, RunRecord};
use iolab_sys::{cast, UsageError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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
    let mut run = judge(v, rep, &seen, cfg.timeout_s);
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
    let mut run = judge(v, rep, &seen, cfg.timeout_s);
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

/// The run a boot makes: its time, outcome and everything seen.
/// A boot as a run: its time to the marker, and every check of it (the
/// clocks, the reboot, what the variant had to leave) that can make it
/// invalid.
fn judge(v: &str, rep: u32, seen: &guest::BootSeen, timeout_s: f64) -> RunRecord {
    let res = |f: &str| std::fs::read_to_string(seen.results.join(f)).ok();
    let mut extra = json!({
        "userspace_start_s": seen.start_s,
        "init_s": seen.init_s,
        "qemu_wall_s": seen.wall.as_secs_f64(),
        "clock_bound_s": CLOCK_BOUND_S,
    });
    let mut problems: Vec<String> = Vec::new();
    check_clocks(seen, &mut extra, &mut problems);
    disk_series(seen, &mut extra);
    check_reboot(seen, &mut extra, &mut problems);
    match res("diskstats").as_deref().and_then(diskstats_read) {
        Some((bytes, ios)) => {
            extra["read_bytes"] = json!(bytes);
            extra["read_ios"] = json!(ios);
        }
        None => extra["warning"] = json!("the guest left no diskstats of its boot disk"),
    }
    io_wait(&res, seen, &mut extra);
    for (key, file) in [
        ("nr_requests", "iolab-boot-nr-requests"),
        ("nr_requests_at_end", "nr-requests-at-end"),
    ] {
        if let Some(n) = res(file).and_then(|t| t.trim().parse::<u64>().ok()) {
            extra[key] = json!(n);
        }
    }
    if let Some(m) = &seen.model {
        // The model's side of the boot disk: what qemu asked of it, to
        // set beside the guest's diskstats (read_bytes).
        extra["model"] = json!({
            "profile": m.params.as_ref().map(|p| p.profile.clone()),
            "reads": m.reads,
            "read_bytes": m.read_bytes,
            "writes": m.writes,
            "write_bytes": m.write_bytes,
            "flushes": m.flushes,
            "busy_s": m.busy_s,
            "queue_wait_s": m.queue_wait_s,
            "max_queue_depth": m.max_queue_depth,
            "overruns": m.overruns,
        });
    }
    if !seen.model_errors.is_empty() {
        problems.push(format!(
            "the modelled disk was not undone: {}",
            seen.model_errors.join("; ")
        ));
    }
    let scheduler = res("iolab-boot-scheduler")
        .and_then(|s| Some(s.split('[').nth(1)?.split(']').next()?.to_string()))
        .unwrap_or_else(|| "?".into());
    if let Some(t) = res("systemd") {
        extra["systemd"] = systemd_times(&t);
    }
    if let Some(w) = res("helper-wait") {
        extra["helper_wait_s"] = json!(w.trim().parse::<f64>().ok().map(|n| n / 10.0));
    }
    let helper: Option<Value> =
        res("iolab-helper.json").and_then(|t| serde_json::from_str(&t).ok());
    check_variant(
        variant::booted(v),
        &res,
        helper.as_ref(),
        &mut extra,
        &mut problems,
    );
    if let Some(h) = helper {
        extra["helper"] = h;
    }
    let (outcome, reason, ns) = match seen.done_s {
        None => {
            extra["console_tail"] = json!(seen.console_tail);
            let why = match seen.exit_ok {
                None => format!("no boot-done marker within {timeout_s:.0} s (qemu stopped)"),
                Some(_) => "qemu exited without a boot-done marker".into(),
            };
            (RunOutcome::Failed, Some(why), cast::duration_ns(seen.wall))
        }
        Some(done) if !problems.is_empty() => (
            RunOutcome::Invalid,
            Some(problems.join("; ")),
            cast::floor_u64(done * 1e9),
        ),
        Some(done) => (RunOutcome::Ok, None, cast::floor_u64(done * 1e9)),
    };
    RunRecord {
        scheduler,
        workload: "boot".into(),
        rep,
        target: "guest".into(),
        started_at: iolab_store::rfc3339_now(),
        duration_ns: ns,
        censored: false,
        timeout_ns: cast::floor_u64(timeout_s * 1e9),
        exit_code: None,
        signal: None,
        overhead_ns: None,
        background: None,
        config: json!({ "variant": v, "init": variant::init_args(v).ok() }),
        extra,
        outcome,
        reason,
        variant: (v != "none").then(|| v.to_string()),
    }
}

/// The outside clock: the host's time between the console's start and
/// done lines against the guest's over the same span.
fn check_clocks(seen: &guest::BootSeen, extra: &mut Value, problems: &mut Vec<String>) {
    if let (Some(a), Some(b), Some(ha), Some(hb)) =
        (seen.start_s, seen.done_s, seen.host_start, seen.host_done)
    {
        let host = (hb - ha).as_secs_f64();
        let diff = (b - a) - host;
        extra["host_span_s"] = json!(host);
        extra["guest_span_s"] = json!(b - a);
        extra["clock_diff_s"] = json!(diff);
        if diff.abs() > CLOCK_BOUND_S {
            problems.push(format!(
                "the guest's clock and the host's disagree by {:.0} ms over the boot (bound {:.0} ms)",
                diff * 1e3,
                CLOCK_BOUND_S * 1e3
            ));
        }
    }
}

/// qemu's count of the root disk's reads, every 100 ms, on the guest's
/// clock (the console's start line pairs the two): the boot chart, and at
/// the marker a second count beside the guest kernel's.
fn disk_series(seen: &guest::BootSeen, extra: &mut Value) {
    if let (Some(hs), Some(gs)) = (seen.host_start, seen.start_s) {
        let t: Vec<f64> = seen
            .disk
            .iter()
            .map(|d| d.at.as_secs_f64() - hs.as_secs_f64() + gs)
            .collect();
        if let (Some(done), false) = (seen.done_s, t.is_empty()) {
            let at_done = t
                .iter()
                .zip(&seen.disk)
                .take_while(|(t, _)| **t <= done)
                .last()
                .map(|(_, d)| d.read_bytes);
            extra["qmp_read_bytes_at_done"] = json!(at_done);
        }
        // qemu's exit ends the monitor too: only a series that stops
        // before the marker lost something.
        let short = seen.done_s.is_some_and(|d| t.last().is_none_or(|l| *l < d));
        if let (true, Some(why)) = (short, &seen.disk_error) {
            extra["qmp_warning"] =
                json!(format!("qemu's disk counters end before the marker: {why}"));
        }
        extra["disk_series"] = json!({
            "t_s": t,
            "read_bytes": seen.disk.iter().map(|d| d.read_bytes).collect::<Vec<_>>(),
            "read_ops": seen.disk.iter().map(|d| d.read_ops).collect::<Vec<_>>(),
            "write_bytes": seen.disk.iter().map(|d| d.write_bytes).collect::<Vec<_>>(),
        });
    }
}

/// A board's reboot really happened: a new boot_id, and an uptime within
/// the host's clock since the reboot was asked.
fn check_reboot(seen: &guest::BootSeen, extra: &mut Value, problems: &mut Vec<String>) {
    if let Some(rb) = &seen.reboot {
        extra["reboot"] = json!(rb);
        if rb.boot_id_after == rb.boot_id_before {
            problems.push("the board's boot_id did not change: it did not reboot".into());
        }
        if rb
            .uptime_at_read_s
            .is_some_and(|u| u > rb.host_since_reboot_s + 0.5)
        {
            problems.push(format!(
                "the board had been up {:.1} s when read, but the reboot was asked {:.1} s before",
                rb.uptime_at_read_s.unwrap_or(0.0),
                rb.host_since_reboot_s
            ));
        }
    }
}

/// What variant `v` had to leave: the recording boot its list, the
/// relayout its report, a prefetch variant its helper's report.
fn check_variant(
    v: &str,
    res: &dyn Fn(&str) -> Option<String>,
    helper: Option<&Value>,
    extra: &mut Value,
    problems: &mut Vec<String>,
) {
    if v == variant::RECORD {
        match res("boot.list") {
            Some(list) => {
                let (files, bytes) = list_size(&list);
                extra["list_files"] = json!(files);
                extra["list_bytes"] = json!(bytes);
                if files == 0 {
                    problems.push("the recording boot wrote an empty list".into());
                }
            }
            None => problems.push("the recording boot wrote no list".into()),
        }
    } else if v == variant::RELAYOUT_WRITE {
        match res("relayout.json").and_then(|t| serde_json::from_str::<Value>(&t).ok()) {
            Some(r) => {
                if r["files"].as_u64().unwrap_or(0) == 0 {
                    problems.push("the relayout rewrote no file".into());
                }
                extra["relayout"] = r;
            }
            None => problems.push(format!(
                "the relayout left no report: {}",
                res("relayout.log")
                    .as_deref()
                    .map_or("it left no relayout.log either", str::trim)
            )),
        }
    } else if variant::is_safety(v) {
        // Its prefetch goes wrong on purpose: what counts is that the
        // boot reached the marker, and when.
        extra["safety"] = json!(variant::safety_what(v));
    } else if !variant::is_plain(v) && v != variant::WARMUP {
        // A prefetch asked for that did not run is not this variant.
        match &helper {
            Some(h) => {
                extra["prefetch_bytes"] = h["bytes_requested"].clone();
                // To its last completed read (boot-init always has the
                // helper wait for its reads), and its submission apart.
                extra["prefetch_s"] = h["duration_s"].clone();
                extra["prefetch_submit_s"] = h["submit_s"].clone();
                extra["prefetch_wait"] = h["wait"].clone();
                if h["wait"]
                    .as_str()
                    .is_some_and(|w| w != "complete" && w != "settled")
                {
                    problems.push(format!(
                        "the prefetch's reads did not finish: its wait ended {}",
                        h["wait"]
                    ));
                }
                extra["prefetch_device_read_bytes"] = h["device_read_bytes"].clone();
                if h["files_failed"].as_u64().unwrap_or(0) > 0 {
                    extra["prefetch_files_failed"] = h["files_failed"].clone();
                }
            }
            None => problems
                .push("the prefetch left no report: it did not run (see the console)".into()),
        }
    }
    // Whatever a prefetch did to the boot disk's scheduler (treadahead
    // -n), killed or not, it is as it was at the end of the boot.
    if let (Some(before), Some(end)) = (res("iolab-boot-scheduler"), res("scheduler-at-end")) {
        extra["scheduler_at_end"] = json!(end.trim());
        if before.trim() != end.trim() {
            problems.push(format!(
                "the boot disk's scheduler was left {:?} at the end of the boot (it was {:?})",
                end.trim(),
                before.trim()
            ));
        }
    }
}

/// The boot's own account of waiting for I/O from init to the marker:
/// PSI's io `some` and `full` (time at least one task, and every task,
/// stalled on I/O) and /proc/stat's iowait share, and each androidboot
/// phase's duration.
fn io_wait(res: &dyn Fn(&str) -> Option<String>, seen: &guest::BootSeen, extra: &mut Value) {
    let span_s = match (seen.init_s, seen.done_s) {
        (Some(i), Some(d)) if d > i => d - i,
        _ => return,
    };
    let psi_total = |text: &str, kind: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        line.split_whitespace()
            .find_map(|w| w.strip_prefix("total="))?
            .parse()
            .ok()
    };
    if let (Some(a), Some(b)) = (res("psi-io-init"), res("psi-io-done")) {
        for kind in ["some", "full"] {
            if let (Some(x), Some(y)) = (psi_total(&a, kind), psi_total(&b, kind)) {
                extra[format!("psi_io_{kind}_share")] = json!((y - x) / 1e6 / span_s);
            }
        }
    }
    let ticks = |t: &str| -> Vec<f64> {
        t.split_whitespace()
            .skip(1)
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    if let (Some(a), Some(b)) = (res("stat-init"), res("stat-done")) {
        let (a, b) = (ticks(&a), ticks(&b));
        if a.len() > 4 && a.len() == b.len() {
            let total: f64 = b.iter().zip(&a).map(|(y, x)| y - x).sum();
            if total > 0.0 {
                extra["iowait_share"] = json!((b[4] - a[4]) / total);
            }
        }
    }
    let mut phases = serde_json::Map::new();
    for f in ["phases-services", "phases-zygote"] {
        for l in res(f).unwrap_or_default().lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if let ["androidboot:", name, start, end] = w[..] {
                if let (Ok(a), Ok(b)) = (start.parse::<f64>(), end.parse::<f64>()) {
                    phases.insert(name.to_string(), json!({"start_s": a, "end_s": b}));
                }
            }
        }
    }
    if !phases.is_empty() {
        extra["phases"] = Value::Object(phases);
    }
}

/// systemd's own timestamps (a systemd guest), seconds since boot.
fn systemd_times(t: &str) -> Value {
    let us = |k: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| *v > 0.0)
            .map(|v| v / 1e6)
    };
    json!({
        "userspace_s": us("UserspaceTimestampMonotonic"),
        "multi_user_s": us("MultiUserMonotonic"),
    })
}

/// (bytes read, reads completed) from a /proc/diskstats line.
fn diskstats_read(line: &str) -> Option<(u64, u64)> {
    let d = iolab_sys::diskstats::parse(line).into_iter().next()?;
    Some((d.read_bytes(), d.reads))
}

/// Files and bytes of a prefetch list (`FILE off:len,...` lines).
fn list_size(list: &str) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    for l in list
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        files += 1;
        let ranges = l.rsplit(' ').next().unwrap_or("");
        bytes += ranges
            .split(',')
            .filter_map(|r| r.split(':').nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    (files, bytes)
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
    fn list_sizes_add_every_range() {
        let l = "/system/framework/boot.art 0:262144,1048576:524288\n/a b/c 0:4096\n\n";
        assert_eq!(list_size(l), (2, 262144 + 524288 + 4096));
    }

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
