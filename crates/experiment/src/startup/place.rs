//! Resolving where an experiment runs: a temporary lab, a named lab, or a
//! real device (only with `--force`: iolab then writes workload files there).

use std::path::PathBuf;

use iolab_guard::Guard;
use iolab_lab::{Fs, LabSpec};
use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

use super::config::Place;
use super::StartupError;

/// A resolved place: the device under test and a directory on it.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Device whose scheduler is under test.
    pub dev: BlockDev,
    /// Directory for workload files (and the default target files).
    pub dir: PathBuf,
    /// Mount point of the filesystem holding `dir`.
    pub mountpoint: PathBuf,
    /// Human description for messages.
    pub what: String,
}

/// Brings the place up (a new lab is made through `guard` and removed when
/// it restores) and returns where to work.
pub fn resolve(
    guard: &Guard,
    place: &Place,
    force: bool,
    dirty_limit_bytes: Option<u64>,
) -> Result<Resolved, StartupError> {
    match place {
        Place::NewLab {
            size_bytes,
            fs,
            bw_bytes,
            iops,
            backend,
            model,
        } => {
            let spec = LabSpec {
                name: format!("startup-{}", std::process::id()),
                size_bytes: *size_bytes,
                fs: Fs::parse(fs)?,
                bw_bytes: *bw_bytes,
                iops: *iops,
                dirty_limit_bytes,
                backend: *backend,
                model: model.clone(),
                ..LabSpec::default()
            };
            let lab = iolab_lab::up(guard, &spec)?;
            let mnt = lab.mountpoint.clone().ok_or_else(|| {
                UsageError::new("the startup lab needs a filesystem: use --fs ext4|xfs|btrfs")
            })?;
            Ok(Resolved {
                dev: lab.device().clone(),
                dir: mnt.clone(),
                mountpoint: mnt,
                what: format!(
                    "temporary lab {} on {}{}",
                    lab.name,
                    lab.device().name,
                    backend_words(&lab.spec)
                ),
            })
        }
        Place::Lab { name } => {
            let lab = iolab_lab::open(name)?;
            let mnt = lab.mountpoint.clone().ok_or_else(|| {
                UsageError::new(format!(
                    "lab {name} has no filesystem (--fs none): startup needs one to hold workload and target files"
                ))
            })?;
            Ok(Resolved {
                dev: lab.device().clone(),
                dir: mnt.clone(),
                mountpoint: mnt,
                what: format!("lab {name} on {}", lab.device().name),
            })
        }
        Place::Device { device, dir } => {
            let dev = BlockDev::resolve(device)?;
            if !force {
                return Err(UsageError::new(format!(
                    "{device} is not an iolab lab: startup would write workload files in {} and change its scheduler; pass --force if that is intended, or use --lab",
                    dir.display()
                ))
                .into());
            }
            let m = iolab_sys::mounts::containing(dir).ok_or_else(|| {
                UsageError::new(format!(
                    "{} does not exist: --dir must be a directory on {device}",
                    dir.display()
                ))
            })?;
            // The scheduler under test must be the one the directory's I/O
            // goes through, or the matrix would measure nothing it changes.
            let holder = m
                .devno
                .split_once(':')
                .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                .and_then(|(a, b)| BlockDev::from_devno(a, b).ok());
            if holder.as_ref().map(|h| &h.name) != Some(&dev.name) {
                return Err(UsageError::new(format!(
                    "{} is on {} ({}), not on {device}: give a --dir on the device under test",
                    dir.display(),
                    holder.map_or_else(|| m.source.clone(), |h| h.name),
                    m.target.display()
                ))
                .into());
            }
            Ok(Resolved {
                dev,
                dir: dir.clone(),
                mountpoint: m.target,
                what: format!("device {device}"),
            })
        }
    }
}

/// `, device model emmc (--device-model)` or `, throttle backend (...)`.
pub fn backend_words(spec: &LabSpec) -> String {
    match (&spec.backend, &spec.model) {
        (_, Some(m)) => format!(
            ", device model {} ({})",
            m.profile,
            spec.backend_reason.as_deref().unwrap_or("")
        ),
        (Some(b), None) => format!(
            ", {} backend ({})",
            b.name(),
            spec.backend_reason.as_deref().unwrap_or("")
        ),
        (None, None) => String::new(),
    }
}
