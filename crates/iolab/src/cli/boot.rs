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
    /// Variants, comma-separated: none, or prefetch options joined by +
    /// (background, before, idle, be7, nice19, sched-none, disk-order,
    /// relayout), or a safety boot (safety-missing, safety-corrupt,
    /// safety-stale, safety-kill, safety-full).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "none,background"
    )]
    pub variants: Vec<String>,
    /// Boots per variant.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub boots: u32,
    /// Throttle the guest's root disk to this rate (qemu's own
    /// throttling), e.g. 40MiB/s; `0` for none (not for a board).
    #[arg(long, value_name = "RATE", default_value = "40MiB/s", value_parser = super::values::rate)]
    pub bw: u64,
    /// Also throttle the root disk to this many requests/s (flash's cost
    /// per request, which a relayout saves).
    #[arg(long, value_name = "N")]
    pub iops: Option<u64>,
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
    // With --ssh the board is the place: no guest directory.
    let cfg = a.resume.is_none().then(|| BootConfig {
        guest: a
            .guest
            .as_ref()
            .map(|g| std::path::absolute(g).unwrap_or_else(|_| g.clone()))
            .unwrap_or_default(),
        variants: a.variants.clone(),
        boots: a.boots,
        // A board's disk is what it is: qemu's throttle is the guest's.
        bw_bytes: (a.bw > 0 && a.ssh.is_none()).then_some(a.bw),
        iops: a.iops.filter(|n| *n > 0 && a.ssh.is_none()),
        memory_mib: a.memory,
        timeout_s: a.timeout,
        seed: a.seed,
        warmup_boots: a.warmup_boots,
        ssh,
    });
    let opts = RunOptions {
        db: a.db.path()?,
        resume: a.resume,
        force: false,
        progress: a.progress.mode(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let json = a.json;
    let announce = move |line: &str| {
        if !json {
            iolab_sys::say!("iolab: {line}");
        }
    };
    let fin = boot::run(cfg, &opts, &announce).context("boot experiment")?;
    print(&fin, json)
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
