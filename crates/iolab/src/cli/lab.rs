//! `iolab lab up|down|status|list` — disposable lab devices. Flags are
//! taken as text and parsed by `iolab_lab::LabSpec::from_text`, so every
//! bad value gets the same one-line error naming the flag (exit 2).

use clap::{Args, Subcommand};

use iolab_lab::{DownReport, LabError, LabSpec, LabStatus, SpecText};
use iolab_sys::units::{format_bytes, format_rate};
use iolab_sys::UsageError;

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
                Some(n) => vec![iolab_lab::status(n).map_err(lab_err)?],
                None => iolab_lab::list().map_err(lab_err)?,
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
                    print_status(s);
                }
            }
            Ok(())
        }
        LabCommand::List(a) => {
            let labs = iolab_lab::list().map_err(lab_err)?;
            if a.json {
                print_json(&serde_json::json!({ "labs": labs }))
            } else {
                print_list(&labs);
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
    let lab = iolab_lab::up(&guard, &spec).map_err(lab_err)?;
    if iolab_guard::stop_requested() {
        return Err(lab_err(LabError::Interrupted)); // the guard undoes it
    }
    lab.persist(&guard).map_err(lab_err)?;
    let st = iolab_lab::status(&lab.name).map_err(lab_err)?;
    if a.json {
        return print_json(&st);
    }
    iolab_sys::show!("lab {:?} is up", lab.name);
    print_status(&st);
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
        Some(n) => vec![iolab_lab::down(n).map_err(lab_err)?],
        None => iolab_lab::down_all().map_err(lab_err)?,
    };
    if a.json {
        print_json(&serde_json::json!({ "labs": reports }))?;
    } else if reports.is_empty() {
        iolab_sys::show!("no labs to remove");
    }
    let mut failed = 0;
    for r in &reports {
        if !a.json {
            print_down(r);
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

/// Usage errors keep their exit code 2 through anyhow (exit.rs looks for a
/// `UsageError` in the chain, which a transparent wrapper would hide).
fn lab_err(e: LabError) -> anyhow::Error {
    if e.is_usage() {
        UsageError::new(e.to_string()).into()
    } else {
        e.into()
    }
}

fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    iolab_sys::show!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn print_down(r: &DownReport) {
    iolab_sys::show!("lab {:?} removed:", r.name);
    for l in &r.restored {
        iolab_sys::show!("  {l}");
    }
    for l in &r.failed {
        iolab_sys::show!("  FAILED: {l}");
    }
}

fn path_or<P: AsRef<std::path::Path>>(p: &Option<P>, none: &str) -> String {
    p.as_ref()
        .map_or_else(|| none.to_string(), |p| p.as_ref().display().to_string())
}

fn throttle_text(s: &LabStatus) -> String {
    if let Some(m) = &s.model {
        return format!("model {}", model_summary(m));
    }
    let Some(t) = s.throttle.filter(|t| *t != Default::default()) else {
        return "-".into();
    };
    let mut parts = Vec::new();
    if t.read_bps > 0 || t.write_bps > 0 {
        parts.push(format!(
            "read {} write {}",
            format_rate(t.read_bps as f64),
            format_rate(t.write_bps as f64)
        ));
    }
    if t.read_iops > 0 || t.write_iops > 0 {
        parts.push(format!("{}/{} IOPS r/w", t.read_iops, t.write_iops));
    }
    parts.join(", ")
}

fn print_status(s: &LabStatus) {
    let kind = s.kind.map_or("?".to_string(), |k| k.to_string());
    let owner = match (s.persistent, s.owner_pid) {
        (true, _) => "made by `iolab lab up`".to_string(),
        (false, Some(p)) => format!("temporary, belongs to iolab pid {p}"),
        (false, None) => "temporary".to_string(),
    };
    iolab_sys::show!("{} ({kind}, {owner})", s.name);
    let row = |k: &str, v: String| iolab_sys::show!("  {k:<11} {v}");
    row(
        "device",
        format!("{}  (the device under test)", path_or(&s.device, "?")),
    );
    let sched = s.sched.clone().unwrap_or_else(|| "?".into());
    row(
        "scheduler",
        if s.schedulers.is_empty() {
            format!("{sched}  (a bio-based device has no I/O scheduler)")
        } else {
            format!("{sched}  [{}]", s.schedulers.join(" "))
        },
    );
    if !s.iosched.is_empty() {
        let t: Vec<String> = s.iosched.iter().map(|(k, v)| format!("{k}={v}")).collect();
        row("tunables", t.join(" "));
    }
    let mut queue = Vec::new();
    match (s.queue_depth, s.queue_depth_kernel) {
        (_, Some(k)) => queue.push(format!("driver depth {k}")),
        (Some(d), None) => queue.push(format!(
            "driver depth {d} as iolab set it (the kernel's: unknown: {})",
            s.queue_depth_kernel_unknown
                .as_deref()
                .unwrap_or("not read (that needs debugfs, and root)")
        )),
        (None, None) => {
            if let Some(why) = &s.queue_depth_kernel_unknown {
                queue.push(format!("driver depth unknown: {why}"));
            }
        }
    }
    if let Some(n) = s.nr_requests {
        queue.push(format!("nr_requests {n}"));
    }
    if let Some(r) = s.read_ahead_kb {
        queue.push(format!("read_ahead_kb {r}"));
    }
    if let Some(d) = s.dirty_limit_bytes {
        queue.push(format!("dirty limit {}", iolab_sys::units::format_bytes(d)));
    }
    if let Some(d) = s.direct_io {
        queue.push(format!("direct I/O {}", if d { "on" } else { "off" }));
    }
    if !queue.is_empty() {
        row("queue", queue.join(", "));
    }
    if let Some(l) = &s.lower {
        let ls = s.lower_sched.clone().unwrap_or_else(|| "?".into());
        row("lower", format!("{}  (scheduler {ls})", l.display()));
    }
    if let Some(b) = s.backend {
        row(
            "backend",
            format!(
                "{}  ({})",
                b.name(),
                s.backend_reason.as_deref().unwrap_or("")
            ),
        );
    }
    if let Some(m) = &s.model {
        row("model", format!("{} {}", m.profile, model_summary(m)));
    }
    if let Some(st) = &s.model_stats {
        let up = st.uptime_s.max(1e-9);
        row(
            "observed",
            format!(
                "{} reads ({}), {} writes ({}), {} flushes in {:.0} s; busy {:.1} s ({:.0} %), deepest queue {}, {} overruns (server pid {})",
                st.reads,
                format_bytes(st.read_bytes),
                st.writes,
                format_bytes(st.write_bytes),
                st.flushes,
                st.uptime_s,
                st.busy_s,
                100.0 * st.busy_s / up,
                st.max_queue_depth,
                st.overruns,
                st.pid
            ),
        );
    }
    if s.throttle.is_some() && s.model.is_none() {
        row("throttle", throttle_text(s));
    }
    if let Some(img) = &s.image {
        row("image", img.display().to_string());
    }
    if let Some(b) = s.size_bytes {
        row("size", format_bytes(b));
    }
    match (&s.fstype, &s.mountpoint) {
        (Some(fs), Some(mp)) => row("filesystem", format!("{fs} on {}", mp.display())),
        (Some(fs), None) => row("filesystem", format!("{fs} (not mounted)")),
        (None, _) => row("filesystem", "none (raw device)".into()),
    }
    if let Some(o) = &s.mount_options {
        row("options", o.clone());
    }
    if let (Some(size), Some(avail)) = (s.fs_size_bytes, s.fs_avail_bytes) {
        row(
            "space",
            format!(
                "{} available of {}",
                format_bytes(avail),
                format_bytes(size)
            ),
        );
    }
    if let Some(z) = &s.zram {
        row(
            "zram",
            format!(
                "{}, {} stored in {}",
                z.comp_algorithm,
                format_bytes(z.orig_data_size),
                format_bytes(z.mem_used_total)
            ),
        );
    }
    for p in &s.problems {
        row("PROBLEM", p.clone());
    }
}

fn print_list(labs: &[LabStatus]) {
    if labs.is_empty() {
        iolab_sys::show!("no labs: make one with `iolab lab up`");
        return;
    }
    let rows: Vec<[String; 7]> = labs
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                s.kind.map_or("?".into(), |k| k.to_string()),
                path_or(&s.device, "-"),
                s.sched.clone().unwrap_or_else(|| "-".into()),
                throttle_text(s),
                s.size_bytes.map_or("-".into(), format_bytes),
                match (&s.mountpoint, s.problems.first()) {
                    (_, Some(p)) => format!("PROBLEM: {p}"),
                    (Some(mp), None) => mp.display().to_string(),
                    (None, None) => "-".into(),
                },
            ]
        })
        .collect();
    let head = [
        "NAME",
        "KIND",
        "DEVICE",
        "SCHED",
        "THROTTLE",
        "SIZE",
        "MOUNTPOINT",
    ];
    let mut w = head.map(str::len);
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<width$}  ", width = w[i]));
            }
        }
        iolab_sys::show!("{out}");
    };
    line(head);
    for r in &rows {
        line(r.each_ref().map(String::as_str));
    }
}

/// `read 80MB/s write 30MB/s, 350us/1.8ms per request, QD 1, flush 5ms`.
fn model_summary(m: &iolab_model::ModelParams) -> String {
    let d = |ns: u64| {
        if ns >= 1_000_000 {
            format!("{}ms", ns as f64 / 1e6)
        } else {
            format!("{}us", ns as f64 / 1e3)
        }
    };
    let mut s = format!(
        "read {} write {}, {}/{} per request, QD {}, flush {}",
        format_rate(m.read_bw as f64),
        format_rate(m.write_bw as f64),
        d(m.read_latency_ns),
        d(m.write_latency_ns),
        m.queue_depth,
        d(m.flush_ns)
    );
    if m.seek_ns > 0 {
        s.push_str(&format!(", seek {}", d(m.seek_ns)));
    }
    s
}
