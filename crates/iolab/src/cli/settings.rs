//! `iolab settings` — what this machine's block I/O is set to: its I/O
//! cgroups with their values and the disks under a directory with their
//! scheduler, queue and tunables. Read only. On a phone, run through
//! `iolab remote --adb SERIAL -- settings --json > phone.json`, and give
//! the file to `iolab startup --recipe device --device-settings`.

use std::path::PathBuf;

use clap::Args;
use iolab_experiment::control::device::DeviceSettings;

/// `iolab settings` arguments.
#[derive(Debug, Args)]
pub struct SettingsArgs {
    /// The directory whose disks to read (a phone's /data) [default: /data
    /// where it exists, else /].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the settings as JSON (what --device-settings reads).
    #[arg(long)]
    pub json: bool,
}

/// Reads and prints the settings.
pub fn run(a: SettingsArgs) -> anyhow::Result<()> {
    let dir = a.dir.unwrap_or_else(|| {
        let data = PathBuf::from("/data");
        if data.is_dir() {
            data
        } else {
            PathBuf::from("/")
        }
    });
    let s = DeviceSettings::read(&dir)?;
    if a.json {
        iolab_sys::show!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    iolab_sys::show!(
        "kernel {}; {}",
        s.kernel,
        s.hierarchy.as_deref().unwrap_or("no cgroup I/O controller")
    );
    for g in &s.groups {
        let values: Vec<String> = g
            .values
            .iter()
            .map(|(k, v)| format!("{k}={}", v.lines().collect::<Vec<_>>().join(",")))
            .collect();
        iolab_sys::show!(
            "group {}: {}",
            g.path,
            if values.is_empty() {
                "-".to_string()
            } else {
                values.join(" ")
            }
        );
    }
    for d in &s.disks {
        let kv = |m: &std::collections::BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        iolab_sys::show!(
            "disk {} under {}: scheduler {}; {}; {}: {}",
            d.name,
            s.dir,
            d.scheduler,
            kv(&d.queue),
            d.scheduler,
            kv(&d.iosched)
        );
    }
    Ok(())
}
