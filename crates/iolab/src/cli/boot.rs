//! `iolab boot` — seed 001's question, "does boot prefetch help on this
//! device, with which options?", answered over real boots of the qemu
//! guest scripts/guest/boot-build.sh makes (docs/boot.md).

use anyhow::Context;
use clap::Args;
use iolab_experiment::boot::{self, BootConfig};
use iolab_experiment::engine::{Finished, RunOptions};
use iolab_store::ExperimentId;

const AFTER_HELP: &str = "\
Examples:
  bash scripts/guest/boot-build.sh
  iolab boot --guest target/boot-guest
  iolab boot --guest target/boot-guest --boots 10 --bw 40MiB/s \\
      --variants none,background,before,idle,nice19,sched-none

The first boot records what the boot reads (iolab boot-init --record);
every variant then boots --boots times, interleaved, each a new machine
with a cold page cache on the same (snapshot) disk.";

/// Boot time under boot prefetch variants, over real boots (seed 001).
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct BootArgs {
    /// The boot guest's directory (vmlinuz, initramfs.cpio.gz, root.img),
    /// from scripts/guest/boot-build.sh; iolab's copy of the image goes
    /// there too.
    #[arg(long, value_name = "DIR", required_unless_present_any = ["resume", "ssh"], conflicts_with = "ssh")]
    pub guest: Option<std::path::PathBuf>,
    /// Boot a board over ssh instead (USER@HOST, root; its prefetch and
    /// marker units installed as docs/boot.md says): iolab reboots it,
    /// waits for it through the dropped link, and reads each boot's record.
    #[arg(long, value_name = "USER@HOST")]
    pub ssh: Option<String>,
    /// ssh port.
    #[arg(long, value_name = "PORT", requires = "ssh")]
    pub ssh_port: Option<u16>,
    /// ssh identity file (-i).
    #[arg(long, value_name = "FILE", requires = "ssh")]
    pub ssh_identity: Option<std::path::PathBuf>,
    /// Further ssh option (-o KEY=VALUE), repeatable.
    #[arg(long, value_name = "KEY=VALUE", requires = "ssh")]
    pub ssh_option: Vec<String>,
    /// Variants, comma-separated (the names: --help).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "none,background",
        long_help = format!("Variants, comma-separated: {}.", boot::variant::help())
    )]
    pub variants: Vec<String>,
    /// Boots per variant, or `auto`: 3, then a round more while a
    /// comparison cannot tell --resolve at 80 % power, up to --max-boots.
    #[arg(long, value_name = "N|auto", default_value = "5", value_parser = boots_arg)]
    pub boots: Boots,
    /// The difference from none each comparison should tell (at 80 %
    /// power, Holm-corrected 5 %), as a share of none's boot time: e.g. 2%.
    #[arg(long, value_name = "PCT", value_parser = percent_arg)]
    pub resolve: Option<f64>,
    /// Most boots per variant with --boots auto.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_boots: u32,
    /// Throttle the guest's root disk to this rate (qemu's own
    /// throttling), e.g. 40MiB/s; `0` for none (not for a board); 40MiB/s
    /// unless --disk.
    #[arg(long, value_name = "RATE", value_parser = super::values::rate, conflicts_with = "disk")]
    pub bw: Option<u64>,
    /// Also throttle the root disk to this many requests/s (flash's cost
    /// per request, which a relayout saves).
    #[arg(long, value_name = "N", conflicts_with = "disk")]
    pub iops: Option<u64>,
    /// Serve the guest's root disk by iolab's device model instead of a
    /// throttle: emmc, ufs, sd or hdd (docs/device-models.md), the guest's
    /// queue as deep as the model's, so its scheduler orders what waits.
    /// Calibrated from inside the guest on first use (two boots; the table
    /// is printed and kept in the guest's directory).
    #[arg(long, value_name = "PROFILE", conflicts_with = "ssh")]
    pub disk: Option<String>,
    /// Calibrate --disk's profile again, print the table and stop.
    #[arg(long, requires = "disk")]
    pub calibrate: bool,
    /// The guest's boot: `reads` (dd, cat, md5sum in large blocks) or
    /// `faults` (Android's way: page faults on mapped files, CPU between
    /// them).
    #[arg(long, value_enum, default_value = "reads")]
    pub workload: boot::Workload,
    /// CPU per touched page of the `faults` boot, µs (default 40).
    #[arg(long, value_name = "US", requires = "workload")]
    pub cpu_us: Option<f64>,
    /// The boot disk's I/O scheduler as an axis: every variant boots on
    /// each (named VARIANT@SCHEDULER, compared with none@SCHEDULER):
    /// none, mq-deadline, bfq, kyber.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "ssh"
    )]
    pub schedulers: Vec<String>,
    /// After the timed boots, each variant once more with the boot's
    /// processes under `iolab explain` in the guest: the kernel paths they
    /// waited in, per variant (stored apart, not compared: the tracer
    /// costs time).
    #[arg(long, conflicts_with = "ssh")]
    pub explain: bool,
    /// Guest memory, MiB.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub memory: u32,
    /// Longest one boot may take (then it is stored as failed).
    #[arg(long, value_name = "S", default_value = "300", value_parser = super::values::timeout_secs)]
    pub timeout: f64,
    /// A plain boot before the measured ones, stored apart (the first
    /// boots of a run are slower: the host's caches); 0 for none.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1))]
    pub warmup_boots: u32,
    /// Seed of the interleaved boot order.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub db: super::db::DbArgs,
    #[command(flatten)]
    pub progress: super::values::ProgressArg,
    /// Continue interrupted experiment ID.
    #[arg(long, value_name = "ID")]
    pub resume: Option<ExperimentId>,
    /// Print the full report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `iolab boot`.
pub fn run(a: BootArgs) -> anyhow::Result<()> {
    let ssh = a.ssh.as_ref().map(|dest| boot::SshTarget {
        dest: dest.clone(),
        port: a.ssh_port,
        identity: a.ssh_identity.clone(),
        options: a.ssh_option.clone(),
    });
    let json = a.json;
    let announce = move |line: &str| {
        if !json {
            iolab_sys::say!("iolab: {line}");
        }
    };
    let disk = match (&a.disk, &a.guest) {
        (Some(profile), Some(guest)) if a.resume.is_none() => {
            let params = iolab_model::ModelParams::profile(profile)?;
            let c = boot::calibrated_disk(guest, &params, a.memory, a.timeout, a.calibrate)
                .context("calibrating the boot disk")?;
            if a.calibrate {
                if json {
                    iolab_sys::show!("{}", serde_json::to_string_pretty(&c)?);
                } else {
                    iolab_sys::show!("{}", c.table());
                }
                return Ok(());
            }
            announce(c.table().trim_end());
            Some(c.disk)
        }
        _ => None,
    };
    let bw = match (a.bw, &disk) {
        (Some(b), _) => b,
        (None, Some(_)) => 0,
        (None, None) => 40 << 20,
    };
    // With --ssh the board is the place: no guest directory.
    let cfg = a.resume.is_none().then(|| BootConfig {
        guest: a
            .guest
            .as_ref()
            .map(|g| std::path::absolute(g).unwrap_or_else(|_| g.clone()))
            .unwrap_or_default(),
        variants: if a.schedulers.is_empty() {
            a.variants.clone()
        } else {
            a.schedulers
                .iter()
                .flat_map(|s| a.variants.iter().map(move |v| format!("{v}@{s}")))
                .collect()
        },
        workload: a.workload,
        cpu_us: a.cpu_us,
        boots: a.boots.0.unwrap_or(3),
        resolve: a.resolve,
        max_boots: a.boots.0.is_none().then_some(a.max_boots),
        // A board's disk is what it is: qemu's throttle is the guest's.
        bw_bytes: (bw > 0 && a.ssh.is_none()).then_some(bw),
        disk,
        iops: a.iops.filter(|n| *n > 0 && a.ssh.is_none()),
        memory_mib: a.memory,
        timeout_s: a.timeout,
        seed: a.seed,
        warmup_boots: a.warmup_boots,
        explain: a.explain,
        ssh,
    });
    let opts = RunOptions {
        db: a.db.path()?,
        resume: a.resume,
        force: false,
        progress: a.progress.mode(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let fin = boot::run(cfg, &opts, &announce).context("boot experiment")?;
    print(&fin, json)
}

/// `--boots`: a number, or `auto` (None).
#[derive(Debug, Clone, Copy)]
pub struct Boots(pub Option<u32>);

fn boots_arg(s: &str) -> Result<Boots, String> {
    if s == "auto" {
        return Ok(Boots(None));
    }
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(Boots(Some(n))),
        _ => Err(format!(
            "{s:?}: expected a number of boots (1 or more) or auto"
        )),
    }
}

/// `2%` or `0.02` as a fraction.
fn percent_arg(s: &str) -> Result<f64, String> {
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => s.parse::<f64>(),
    }
    .map_err(|_| format!("{s:?}: expected a share such as 2% or 0.02"))?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("{s:?}: expected a share between 0 and 100 %"))
    }
}

fn print(fin: &Finished<()>, json: bool) -> anyhow::Result<()> {
    use iolab_report::export::{Exporter, JsonExporter};
    if json {
        let bytes = JsonExporter.serialize(&iolab_report::ExperimentView::of(&fin.report))?;
        iolab_sys::show!("{}", String::from_utf8_lossy(&bytes));
    } else {
        iolab_sys::show_part!("{}", iolab_report::text::boot::render(&fin.report));
        iolab_sys::show!("stored as experiment {} in {}", fin.id, fin.db.display());
    }
    for w in &fin.warnings {
        iolab_sys::say!("iolab: {w}");
    }
    super::report::write_and_say(&fin.db, &fin.report, json);
    if fin.interrupted {
        iolab_sys::show!(
            "interrupted: continue with `iolab boot --resume {} --db {}`",
            fin.id,
            fin.db.display()
        );
    }
    Ok(())
}
