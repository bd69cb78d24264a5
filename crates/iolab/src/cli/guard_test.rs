//! `iolab guard-test` (hidden): a test seam that makes real changes through
//! the guard, prints `ready`, then holds, fails or panics, so the tests can
//! kill it mid-way (SIGKILL, SIGTERM) and check what the next run restores.
//! It exists only for crates/iolab/tests/guard_restore.rs.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use iolab_guard::{Guard, Throttle};
use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

/// Arguments of the hidden guard test command.
#[derive(Debug, Args)]
pub struct GuardTestArgs {
    /// Changes to make, in order: scheduler:DEV:NAME, iosched:DEV:P:V,
    /// queue:DEV:ATTR:V, sysctl:NAME:V, bdi:DEV:BYTES, throttle:DEV:KIND:V, cgroup:PATH,
    /// trace:NAME, loop:FILE, mount:SRC:DIR:FSTYPE, zram:SIZE, mkdir:PATH,
    /// pgroup (a `sleep` in its own process group).
    #[arg(long = "change")]
    pub changes: Vec<String>,
    /// After the changes: hold | fail | panic | exit.
    #[arg(long, default_value = "hold")]
    pub then: String,
}

/// Applies the changes and then does what `--then` says.
pub fn run(a: GuardTestArgs) -> anyhow::Result<()> {
    super::require_root("iolab guard-test")?;
    let guard = Guard::new();
    for c in &a.changes {
        apply(&guard, c).with_context(|| format!("change {c:?}"))?;
    }
    println!("ready");
    match a.then.as_str() {
        "hold" => {
            while !iolab_guard::stop_requested() {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(())
        }
        "fail" => bail!("failing on purpose after the changes"),
        "panic" => panic!("panicking on purpose after the changes"),
        "exit" => Ok(()),
        other => {
            Err(UsageError::new(format!("--then {other:?}: expected hold|fail|panic|exit")).into())
        }
    }
}

fn apply(g: &Guard, spec: &str) -> anyhow::Result<()> {
    let p: Vec<&str> = spec.split(':').collect();
    match p.as_slice() {
        ["scheduler", dev, name] => g.set_scheduler(&BlockDev::from_name(dev)?, name)?,
        ["iosched", dev, k, v] => g.set_iosched_param(&BlockDev::from_name(dev)?, k, v)?,
        ["queue", dev, k, v] => g.set_queue_attr(&BlockDev::from_name(dev)?, k, v)?,
        ["sysctl", k, v] => g.set_sysctl(k, v)?,
        ["bdi", dev, bytes] => g.set_bdi_dirty_limit(&BlockDev::from_name(dev)?, bytes.parse()?)?,
        ["throttle", dev, kind, v] => {
            let kind = match *kind {
                "read_bps" => Throttle::ReadBps,
                "write_bps" => Throttle::WriteBps,
                "read_iops" => Throttle::ReadIops,
                "write_iops" => Throttle::WriteIops,
                _ => bail!(UsageError::new(
                    "throttle kind: read_bps|write_bps|read_iops|write_iops"
                )),
            };
            g.set_throttle(&BlockDev::from_name(dev)?, kind, v.parse()?)?
        }
        ["cgroup", path] => g.create_cgroup(Path::new(path))?,
        ["trace", name] => {
            g.create_trace_instance(name)?;
        }
        ["loop", file] => {
            let dev = g.attach_loop(Path::new(file), true)?;
            println!("loop {}", dev.name);
        }
        ["mount", src, dir, fstype] => g.mount(src, Path::new(dir), fstype, "")?,
        ["zram", size] => {
            let dev = g.add_zram(iolab_sys::units::parse_size(size)?, None)?;
            println!("zram {}", dev.name);
        }
        ["mkdir", path] => g.mkdir_all(Path::new(path))?,
        ["pgroup"] => {
            use std::os::unix::process::CommandExt;
            let child = std::process::Command::new("sleep")
                .arg("1000")
                .process_group(0)
                .spawn()?;
            g.track_process_group(
                rustix::process::Pid::from_child(&child)
                    .as_raw_nonzero()
                    .get(),
            )?;
            println!("pgroup {}", child.id());
        }
        _ => bail!(UsageError::new(format!("unknown change spec {spec:?}"))),
    }
    Ok(())
}
