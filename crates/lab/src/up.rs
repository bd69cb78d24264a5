//! Making a lab: metadata (reserves the name) → image → loop device(s) or
//! zram → mkfs → throttle, queue depth, scheduler → mount → metadata "up".
//! Every step goes through the caller's guard, so an error, Ctrl-C or
//! SIGKILL at any point leaves nothing behind once the guard (or the next
//! run's recovery) undoes the journal.

use iolab_guard::{Guard, GuardError};
use iolab_sys::block::BlockDev;

use crate::meta::{self, LabKind, LabMeta, LabState};
use crate::spec::{Fs, LabSpec};
use crate::{image, throttle, zram, Lab, LabError};

/// Makes the lab `spec` describes, journaling every change in `guard`.
/// The lab lives as long as the guard, unless [`Lab::persist`] hands it
/// over to its own journal.
pub fn up(guard: &Guard, spec: &LabSpec) -> Result<Lab, LabError> {
    // Ctrl-C also reaches mkfs (same process group): report the cause,
    // not the killed child's failure.
    make(guard, spec).map_err(|e| {
        if iolab_guard::stop_requested() {
            LabError::Interrupted
        } else {
            e
        }
    })
}

fn make(guard: &Guard, spec: &LabSpec) -> Result<Lab, LabError> {
    spec.validate()?;
    let spec = &crate::backend::resolve(spec)?;
    if !spec.zram {
        if let Some(s) = &spec.scheduler {
            throttle::precheck_scheduler(s)?;
        }
    }
    let labs = meta::labs_dir();
    // iolab's own bookkeeping beside its journals (Journal::persist makes
    // it the same way), not system state: never journaled, so one lab's
    // undo never tries to remove the directory other labs live in.
    std::fs::create_dir_all(&labs).map_err(|e| LabError::io(&labs, e))?;
    refuse_existing(&spec.name)?;
    let meta_path = meta::meta_path(&spec.name);
    // Exclusive creation reserves the name against a concurrent `up`.
    let mut meta_file = guard.create_file(&meta_path).map_err(|e| match e {
        GuardError::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => {
            exists(&spec.name)
        }
        e => e.into(),
    })?;
    let (owner_pid, owner_start) = iolab_sys::process::me();
    let mut m = LabMeta {
        name: spec.name.clone(),
        state: LabState::Creating,
        kind: if spec.zram {
            LabKind::Zram
        } else {
            LabKind::Loop
        },
        spec: spec.clone(),
        device: None,
        lower: None,
        image: None,
        mountpoint: None,
        queue_depth: None,
        owner_pid,
        owner_start,
        created_unix: unix_now(),
        warnings: Vec::new(),
    };
    meta::write(&mut meta_file, &meta_path, &m)?;

    let (top, lower) = if spec.zram {
        (zram::make(guard, spec.size_bytes)?, None)
    } else {
        let img = image::make(guard, spec)?;
        m.image = Some(img.clone());
        checkpoint("image")?;
        if let Some(params) = &spec.model {
            // The filesystem is made on the image before the model serves
            // it: mkfs through a 30 MB/s model would only cost time.
            mkfs_at(&img, spec.fs, true)?;
            (crate::model::make(guard, &spec.name, &img, params)?, None)
        } else if spec.uses_throttle() {
            let lower = guard.attach_loop(&img, true)?;
            (guard.attach_loop(&lower.dev_path(), true)?, Some(lower))
        } else {
            (guard.attach_loop(&img, true)?, None)
        }
    };
    m.device = Some(top.name.clone());
    m.lower = lower.as_ref().map(|l| l.name.clone());
    meta::write(&mut meta_file, &meta_path, &m)?;
    checkpoint("devices")?;

    // Before the throttle, so mkfs runs at full speed.
    if spec.model.is_none() {
        mkfs(&top, spec.fs, true)?;
    }
    checkpoint("mkfs")?;
    if !spec.zram {
        m.warnings
            .extend(crate::presented::set(guard, spec, &top, lower.as_ref())?);
        m.queue_depth = throttle::configure(guard, spec, &top, lower.as_ref())?;
    }
    if let Some(limit) = spec.effective_dirty_limit() {
        let asked = spec.dirty_limit_bytes.is_some() && !spec.dirty_limit_preferred;
        m.warnings
            .extend(crate::dirty::limit(guard, &top, limit, asked)?);
    }
    checkpoint("queues")?;

    if spec.fs != Fs::None {
        let mp = meta::mountpoint(&spec.name);
        guard.mkdir_all(&mp)?;
        let source = top.dev_path();
        guard.mount(
            &source.to_string_lossy(),
            &mp,
            spec.fs.name(),
            mount_data(spec.fs),
        )?;
        m.mountpoint = Some(mp);
    }
    checkpoint("mount")?;

    m.state = LabState::Up;
    meta::write(&mut meta_file, &meta_path, &m)?;
    Lab::from_meta(&m)
}

/// Makes a fresh filesystem `fs` on `dev` (destroying what it holds) and
/// mounts it on `mountpoint` through `guard`, which creates the mount point
/// if missing and unmounts and removes it when it restores. Used by
/// experiments that start every run on a new filesystem (seed 002's
/// `mkfs` before each fio run). `zeroed` says the device reads as zeros
/// (a lab iolab made): only then may mkfs skip zeroing inode tables and
/// journal. A user's device is never formatted that way: its old contents
/// would show through the new filesystem's uninitialised tables, and
/// ext4lazyinit would write them in the middle of the measurements.
pub fn format_and_mount(
    guard: &Guard,
    dev: &BlockDev,
    fs: Fs,
    mountpoint: &std::path::Path,
    zeroed: bool,
) -> Result<(), LabError> {
    if matches!(fs, Fs::None | Fs::Erofs) {
        return Err(LabError::usage(
            "format_and_mount needs a writable filesystem: ext4, xfs or btrfs",
        ));
    }
    mkfs(dev, fs, zeroed)?;
    guard.mkdir_all(mountpoint)?;
    guard.mount(
        &dev.dev_path().to_string_lossy(),
        mountpoint,
        fs.name(),
        if zeroed { mount_data(fs) } else { "" },
    )?;
    Ok(())
}

fn refuse_existing(name: &str) -> Result<(), LabError> {
    if meta::meta_path(name).exists() || meta::journal_path(name).exists() {
        return Err(exists(name));
    }
    Ok(())
}

fn exists(name: &str) -> LabError {
    let dev = match meta::read(name) {
        Ok(Some(m)) => m
            .device
            .map_or(String::new(), |d| format!(" (device /dev/{d})")),
        Ok(None) => String::new(),
        Err(e) => format!(" (its record cannot be read: {e})"),
    };
    LabError::usage(format!(
        "lab {name:?} already exists{dev}: use it, remove it with `iolab lab down {name}`, or pick another --name"
    ))
}

/// mkfs with the options that make it fast and quiet. On a lab (`zeroed`)
/// the device reads as zeros (fresh fallocate'd image, fresh zram), so
/// ext4 needs neither its inode tables nor its journal zeroed
/// (lazy_*_init=1), and no filesystem needs to discard it: on a loop
/// device a discard punches holes in the image, undoing the fallocate
/// (nodiscard / -K). On any other device everything is initialised now
/// (lazy_*_init=0) and mkfs discards as it normally does.
fn mkfs(dev: &BlockDev, fs: Fs, zeroed: bool) -> Result<(), LabError> {
    mkfs_at(&dev.dev_path(), fs, zeroed)
}

/// [`mkfs`] on a device node or an image file.
fn mkfs_at(path: &std::path::Path, fs: Fs, zeroed: bool) -> Result<(), LabError> {
    let path = path.to_string_lossy();
    let (prog, args): (&str, Vec<&str>) = match fs {
        // Built from its source directory with the image (image.rs).
        Fs::None | Fs::Erofs => return Ok(()),
        // mke2fs, not mkfs.ext4: Android has only the former.
        Fs::Ext4 => (
            "mke2fs",
            vec![
                "-t",
                "ext4",
                "-q",
                "-F",
                "-E",
                if zeroed {
                    "nodiscard,lazy_itable_init=1,lazy_journal_init=1"
                } else {
                    "lazy_itable_init=0,lazy_journal_init=0"
                },
                &path,
            ],
        ),
        Fs::Xfs if zeroed => ("mkfs.xfs", vec!["-q", "-f", "-K", &path]),
        Fs::Xfs => ("mkfs.xfs", vec!["-q", "-f", &path]),
        Fs::Btrfs if zeroed => ("mkfs.btrfs", vec!["-q", "-f", "-K", &path]),
        Fs::Btrfs => ("mkfs.btrfs", vec!["-q", "-f", &path]),
    };
    iolab_guard::run_cmd(prog, &args)
        .map(|_| ())
        .map_err(|e| match e {
            GuardError::Command { stderr, .. } if stderr.ends_with("installed?)") => {
                LabError::usage(format!(
                    "{prog} not found: install {} (or use another --fs)",
                    match fs {
                        Fs::Xfs => "xfsprogs",
                        Fs::Btrfs => "btrfs-progs",
                        _ => "e2fsprogs",
                    }
                ))
            }
            e => e.into(),
        })
}

/// Mount options. ext4: `noinit_itable`, because the inode tables were
/// left unzeroed by mkfs and the ext4lazyinit thread would otherwise write
/// them in the background for minutes — I/O nobody asked for, in the
/// middle of measurements.
fn mount_data(fs: Fs) -> &'static str {
    match fs {
        Fs::Ext4 => "noinit_itable",
        _ => "",
    }
}

/// Between steps: stop early on Ctrl-C/SIGTERM, and the test seam
/// `IOLAB_TEST_PAUSE_AFTER=<step>` (image, devices, mkfs, queues, mount),
/// which announces the step on stderr and sleeps so a test can SIGKILL
/// the process at a known point.
fn checkpoint(#[allow(unused_variables)] step: &str) -> Result<(), LabError> {
    #[cfg(feature = "test-seams")]
    if std::env::var("IOLAB_TEST_PAUSE_AFTER").is_ok_and(|s| s == step) {
        iolab_sys::say!("iolab: test pause after {step}");
        for _ in 0..600 {
            if iolab_guard::stop_requested() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    if iolab_guard::stop_requested() {
        return Err(LabError::Interrupted);
    }
    Ok(())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
