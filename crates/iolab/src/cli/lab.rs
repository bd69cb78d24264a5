//! `iolab lab up|down|status|list` — disposable lab devices. Flags are
//! taken as text and parsed by `iolab_lab::LabSpec::from_text`, so every
//! bad value gets the same one-line error naming the flag (exit 2).

use clap::{Args, Subcommand};

use iolab_lab::{LabError, LabSpec, LabStatus, SpecText};

/// Lab subcommands.
// Parsed once per run: the size of `Up` (many text flags) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Make a lab: image file → loop device (direct I/O) → filesystem →
    /// mount, or a zram device. With --bw/--iops the lab emulates slow
    /// storage: a throttled lower loop device under the device under test.
    Up(UpArgs),
    /// Remove a lab: undo exactly what `lab up` made (files of your own
    /// next to the image stay).
    Down(DownArgs),
    /// Show a lab's devices, scheduler and tunables, throttle, filesystem,
    /// mount options and free space (all labs when no NAME is given).
    Status(StatusArgs),
    /// List labs with device, mount point and size.
    List(ListArgs),
}

/// Arguments of `iolab lab up`.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Lab name (names the image, mount point and journal).
    #[arg(long, default_value = "default")]
    pub name: String,
    /// Device size, e.g. 512MiB, 4GiB.
    #[arg(long, default_value = "4GiB")]
    pub size: String,
    /// Filesystem: ext4, xfs, btrfs, erofs (read-only image of --from DIR;
    /// --size is then ignored), or none (raw device).
    #[arg(long, default_value = "ext4")]
    pub fs: String,
    /// I/O scheduler of the device under test (none, mq-deadline, kyber, bfq).
    #[arg(long)]
    pub scheduler: Option<String>,
    /// Emulated bandwidth for reads and for writes, e.g. 20MiB/s.
    #[arg(long)]
    pub bw: Option<String>,
    /// Emulated IOPS limit for reads and for writes.
    #[arg(long)]
    pub iops: Option<String>,
    /// Driver queue depth of the device under test: requests beyond it wait
    /// in the scheduler [default: 4 with --bw/--iops, else the driver's 128].
    #[arg(long)]
    pub queue_depth: Option<String>,
    /// Dirty page-cache limit of the lab's filesystem (bdi max_bytes), e.g.
    /// 64MiB [default: 2 s of bandwidth, at least 16MiB, with --bw/--iops;
    /// else the kernel's global limits].
    #[arg(long, value_name = "SIZE")]
    pub dirty_limit: Option<String>,
    /// read_ahead_kb of the device under test [default: 128, the kernel's
    /// and Android's after boot, not what the loop device inherits from
    /// the disk under its image].
    #[arg(long, value_name = "KB")]
    pub read_ahead_kb: Option<u32>,
    /// Directory for the image file [default: /var/tmp/iolab; on Android
    /// /data/local/tmp/iolab/images].
    #[arg(long)]
    pub dir: Option<String>,
    /// A zram device (RAM speed, no scheduler) instead of an image file.
    #[arg(long)]
    pub zram: bool,
    /// --fs erofs: the directory whose files the image holds.
    #[arg(long, value_name = "DIR")]
    pub from: Option<String>,
    /// --fs erofs: compressor for mkfs.erofs, ALG[,LEVEL], e.g. lz4hc
    /// [default: uncompressed].
    #[arg(long, value_name = "ALG")]
    pub compress: Option<String>,
    #[command(flatten)]
    pub model: super::model_args::ModelArgs,
    /// Print the lab's status as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `iolab lab down`.
#[derive(Debug, Args)]
pub struct DownArgs {
    /// Lab to remove.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Remove every lab made by `iolab lab up`.
    #[arg(long)]
    pub all: bool,
    /// Print what was undone as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `iolab lab status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Lab to show (default: all labs).
    pub name: Option<String>,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `iolab lab list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs a lab subcommand.
pub fn run(c: LabCommand) -> anyhow::Result<()> {
    match c {
        LabCommand::Up(a) => up(a),
        LabCommand::Down(a) => down(a),
        LabCommand::Status(a) => {
            let mut labs = match &a.name {
                Some(n) => vec![iolab_lab::status(n)?],
                None => iolab_lab::list()?,
            };
            kernel_depths(&mut labs)?;
            if a.json {
                match (&a.name, labs.as_slice()) {
                    (Some(_), [one]) => print_json(one)?,
                    _ => print_json(&serde_json::json!({ "labs": labs }))?,
                }
            } else if labs.is_empty() {
                iolab_sys::show!("no labs: make one with `iolab lab up`");
            } else {
                for (i, s) in labs.iter().enumerate() {
                    if i > 0 {
                        iolab_sys::show!();
                    }
                    show_text(&iolab_lab::render::status_text(s));
                }
            }
            Ok(())
        }
        LabCommand::List(a) => {
            let labs = iolab_lab::list()?;
            if a.json {
                print_json(&serde_json::json!({ "labs": labs }))
            } else {
                show_text(&iolab_lab::render::list_text(&labs));
                Ok(())
            }
        }
    }
}

fn up(a: UpArgs) -> anyhow::Result<()> {
    super::require_root("iolab lab up")?;
    let spec = LabSpec::from_text(&SpecText {
        name: &a.name,
        size: &a.size,
        fs: &a.fs,
        scheduler: a.scheduler.as_deref(),
        bw: a.bw.as_deref(),
        iops: a.iops.as_deref(),
        queue_depth: a.queue_depth.as_deref(),
        dirty_limit: a.dirty_limit.as_deref(),
        read_ahead_kb: a.read_ahead_kb,
        dir: &a
            .dir
            .clone()
            .unwrap_or_else(|| iolab_sys::paths::image_dir().display().to_string()),
        zram: a.zram,
        from: a.from.as_deref(),
        compress: a.compress.as_deref(),
        backend: a.model.backend.as_deref(),
        device_model: a.model.device_model.as_deref(),
        model: a.model.text(),
    })?;
    let guard = iolab_guard::Guard::new();
    let lab = iolab_lab::up(&guard, &spec)?;
    if iolab_guard::stop_requested() {
        return Err(LabError::Interrupted.into()); // the guard undoes it
    }
    lab.persist(&guard)?;
    let st = iolab_lab::status(&lab.name)?;
    if a.json {
        return print_json(&st);
    }
    iolab_sys::show!("lab {:?} is up", lab.name);
    show_text(&iolab_lab::render::status_text(&st));
    iolab_sys::show!("remove it with: iolab lab down {}", lab.name);
    if st.backend == Some(iolab_lab::Backend::Throttle) {
        if let Some(w) = iolab_lab::cgroup_warning() {
            iolab_sys::say!("iolab: warning: {w}");
        }
    }
    Ok(())
}

/// Reads each lab's driver depth from the kernel. Only debugfs shows it
/// truthfully (see `LabStatus::queue_depth_kernel`); where it is not
/// mounted, a private mount of it is made for the read (as root) in the
/// machine directory (on Android under /data/local/tmp, the one place
/// iolab writes there), through a guard that unmounts it. Where debugfs
/// cannot be had (a user build of Android has none, SELinux refuses the
/// mount, / is read-only) the depth is "unknown: debugfs unavailable",
/// and the status is still printed.
fn kernel_depths(labs: &mut [LabStatus]) -> anyhow::Result<()> {
    if labs.iter().all(|s| s.device.is_none()) {
        return Ok(());
    }
    let system = std::path::Path::new("/sys/kernel/debug");
    if system.join("block").is_dir() {
        labs.iter_mut()
            .for_each(|s| iolab_lab::read_kernel_depth(s, system));
        return Ok(());
    }
    let unknown = |labs: &mut [LabStatus], why: String| {
        for s in labs.iter_mut().filter(|s| s.device.is_some()) {
            s.queue_depth_kernel_unknown = Some(format!("debugfs unavailable: {why}"));
        }
    };
    if !rustix::process::geteuid().is_root() {
        unknown(labs, "not mounted, and mounting it needs root".into());
        return Ok(());
    }
    let guard = iolab_guard::Guard::new();
    let dir = iolab_sys::paths::machine_dir().join("debugfs");
    let mounted = std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))
        .and_then(|()| {
            guard
                .mount("debugfs", &dir, "debugfs", "")
                .map_err(|e| format!("mount -t debugfs failed: {e}"))
        });
    match mounted {
        Ok(()) => labs
            .iter_mut()
            .for_each(|s| iolab_lab::read_kernel_depth(s, &dir)),
        Err(why) => unknown(labs, why),
    }
    for r in guard.restore() {
        if let Err(e) = r {
            iolab_sys::say!("iolab: warning: {e}");
        }
    }
    let _ = std::fs::remove_dir(&dir);
    Ok(())
}

fn down(a: DownArgs) -> anyhow::Result<()> {
    super::require_root("iolab lab down")?;
    let reports = match &a.name {
        Some(n) => vec![iolab_lab::down(n)?],
        None => iolab_lab::down_all()?,
    };
    if a.json {
        print_json(&serde_json::json!({ "labs": reports }))?;
    } else if reports.is_empty() {
        iolab_sys::show!("no labs to remove");
    }
    let mut failed = 0;
    for r in &reports {
        if !a.json {
            show_text(&iolab_lab::render::down_text(r));
        }
        failed += r.failed.len();
    }
    if failed > 0 {
        anyhow::bail!(
            "{failed} change(s) could not be undone; they stay journaled: run `iolab lab down` again once the cause is fixed"
        );
    }
    Ok(())
}

fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    iolab_sys::show!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// Prints a rendered text (its lines end in newlines; `show!` adds one).
fn show_text(text: &str) {
    iolab_sys::show!("{}", text.trim_end_matches('\n'));
}
