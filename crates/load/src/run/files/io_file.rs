//! The files and devices jobs work on (fio's `filename`s; each an
//! [`IoFile`]): where a clone's file is, what it
//! is, how big, which block device holds it, and whether writing to it is
//! safe.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use iolab_sys::block::BlockDev;

use crate::error::LoadError;
use crate::job::model::Job;

/// What an I/O file's path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoFileKind {
    /// A regular file (possibly not created yet).
    File,
    /// A block device node.
    BlockDevice,
}

/// One clone's file or device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoFile {
    /// Path as the job resolves it.
    pub path: PathBuf,
    /// File or block device.
    pub kind: IoFileKind,
    /// Current size in bytes (0 when the file does not exist yet).
    pub existing: u64,
    /// True when the path exists.
    pub exists: bool,
}

/// Where clone `clone` of `job` does its I/O: `filename`'s files (shared
/// by all clones, relative to `directory` when both are set) or fio's
/// `DIRECTORY/NAME.CLONE.FILE` for each of its `nrfiles` (`filename_format`
/// renames them).
pub fn clone_paths(job: &Job, clone: u32) -> Vec<PathBuf> {
    // Without `directory`, names stay as given (fio's iologs and reports
    // say `a`, not `./a`).
    let place = |f: &PathBuf| match &job.directory {
        Some(d) if !f.is_absolute() => d.join(f),
        _ => f.clone(),
    };
    if !job.x.filenames.is_empty() {
        return job.x.filenames.iter().map(place).collect();
    }
    match &job.filename {
        Some(f) => vec![place(f)],
        None => (0..job.nrfiles())
            .map(|k| {
                place(&PathBuf::from(crate::run::files::file_set::format_name(
                    job.x.filename_format.as_deref(),
                    &job.name,
                    clone,
                    k,
                )))
            })
            .collect(),
    }
}

/// Looks at a path: kind, size, existence. Paths that exist but are
/// neither regular files nor block devices are refused.
pub fn inspect(path: &Path) -> Result<IoFile, LoadError> {
    match std::fs::metadata(path) {
        Ok(meta) => {
            let ft = meta.file_type();
            let kind = if ft.is_block_device() {
                IoFileKind::BlockDevice
            } else if ft.is_file() {
                IoFileKind::File
            } else if ft.is_char_device()
                && (path == Path::new("/dev/null") || path == Path::new("/dev/zero"))
            {
                // fio's examples read /dev/zero and write /dev/null to
                // measure the I/O path without a device: endless, so
                // never laid out and any size fits.
                return Ok(IoFile {
                    path: path.to_path_buf(),
                    kind: IoFileKind::File,
                    existing: 1 << 62,
                    exists: true,
                });
            } else {
                return Err(LoadError::usage(format!(
                    "{} is neither a regular file nor a block device (nor /dev/null, /dev/zero): expected a file path or e.g. /dev/loop3",
                    path.display()
                )));
            };
            let existing = match kind {
                IoFileKind::File => meta.len(),
                IoFileKind::BlockDevice => device_size(path)?,
            };
            Ok(IoFile {
                path: path.to_path_buf(),
                kind,
                existing,
                exists: true,
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if path.starts_with("/dev") {
                return Err(LoadError::usage(format!(
                    "{} does not exist: expected an existing device under /dev (iolab does not create files there)",
                    path.display()
                )));
            }
            let parent = parent_dir(path);
            if !parent.is_dir() {
                return Err(LoadError::usage(format!(
                    "directory {} does not exist: create it or choose another --directory",
                    parent.display()
                )));
            }
            Ok(IoFile {
                path: path.to_path_buf(),
                kind: IoFileKind::File,
                existing: 0,
                exists: false,
            })
        }
        Err(e) => Err(LoadError::io(path, e)),
    }
}

/// The directory a file lives in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn device_size(path: &Path) -> Result<u64, LoadError> {
    use std::io::Seek;
    let mut f = std::fs::File::open(path).map_err(|e| LoadError::io(path, e))?;
    f.seek(std::io::SeekFrom::End(0))
        .map_err(|e| LoadError::io(path, e))
}

/// Refuses to write to a block device, and says if it holds a mounted
/// filesystem, unless the user passed `--force`.
pub fn check_write_allowed(file: &IoFile, force: bool) -> Result<(), LoadError> {
    if file.kind != IoFileKind::BlockDevice || force {
        return Ok(());
    }
    let mounted = mounted_at(&file.path);
    let why = match mounted.first() {
        Some(m) => format!(
            "it holds the filesystem mounted at {}, which writing would corrupt",
            m.display()
        ),
        None => "writing destroys whatever it holds".to_string(),
    };
    Err(LoadError::usage(format!(
        "refusing to write to block device {}: {why}; pass --force if that is what you want (reads need no --force)",
        file.path.display()
    )))
}

/// Mount points of the filesystems on a device node or its partitions.
fn mounted_at(dev: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::metadata(dev) else {
        return Vec::new();
    };
    let rdev = meta.rdev();
    let (maj, min) = (libc::major(rdev), libc::minor(rdev));
    let disk = format!("{maj}:{min}");
    // Partitions of this disk appear as directories with a `dev` file under
    // its sysfs directory.
    let mut devnos = vec![disk.clone()];
    if let Ok(real) = std::fs::canonicalize(format!("/sys/dev/block/{disk}")) {
        for e in std::fs::read_dir(real).into_iter().flatten().flatten() {
            if e.path().join("partition").exists() {
                if let Ok(d) = std::fs::read_to_string(e.path().join("dev")) {
                    devnos.push(d.trim().to_string());
                }
            }
        }
    }
    iolab_sys::mounts::read()
        .into_iter()
        .filter(|m| devnos.contains(&m.devno))
        .map(|m| m.target)
        .collect()
}

/// The whole disk that holds `path` (the device itself for a device node),
/// or `None` for filesystems without one (tmpfs, overlay).
pub fn holding_device(path: &Path) -> Option<BlockDev> {
    let probe = if path.exists() {
        path.to_path_buf()
    } else {
        parent_dir(path)
    };
    let meta = std::fs::metadata(&probe).ok()?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    if maj != 0 {
        return BlockDev::from_devno(maj, min).ok();
    }
    // btrfs reports an anonymous device number; its mount source names
    // the real device.
    let m = iolab_sys::mounts::containing(&probe)?;
    if m.source.starts_with("/dev/") {
        BlockDev::resolve(&m.source).ok()
    } else {
        None
    }
}

/// The block devices holding what `jobs` read or write (their files or
/// devices, or the directory their files will be created in), each once:
/// the devices a load's collectors watch. Paths on no block device
/// (tmpfs) add none.
pub fn devices_of(jobs: &[Job]) -> Vec<BlockDev> {
    let paths = jobs.iter().flat_map(|j| match &j.filename {
        Some(_) => clone_paths(j, 0),
        None => vec![j.directory.clone().unwrap_or_else(|| ".".into())],
    });
    let mut out: Vec<BlockDev> = Vec::new();
    for d in paths.filter_map(|p| holding_device(&p)) {
        if !out.iter().any(|o| o.name == d.name) {
            out.push(d);
        }
    }
    out
}

/// `st_dev` of the filesystem a (possibly missing) file would live on.
pub fn fs_id(path: &Path) -> Result<u64, LoadError> {
    let dir = parent_dir(path);
    std::fs::metadata(&dir)
        .map(|m| m.dev())
        .map_err(|e| LoadError::io(dir, e))
}

/// Bytes an unprivileged writer may still use on the filesystem holding
/// `dir` (statvfs `f_bavail * f_frsize`).
pub fn free_bytes(dir: &Path) -> Result<u64, LoadError> {
    let s = rustix::fs::statvfs(dir).map_err(|e| LoadError::io(dir, e.into()))?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn clone_paths_follow_fio() {
        let mut j = Job::new("reader");
        j.directory = Some("/mnt/lab".into());
        assert_eq!(clone_paths(&j, 3), [PathBuf::from("/mnt/lab/reader.3.0")]);
        j.x.nrfiles = 2;
        assert_eq!(
            clone_paths(&j, 1),
            [
                PathBuf::from("/mnt/lab/reader.1.0"),
                PathBuf::from("/mnt/lab/reader.1.1")
            ]
        );
        j.x.filename_format = Some("f.$filenum".into());
        assert_eq!(clone_paths(&j, 1)[1], PathBuf::from("/mnt/lab/f.1"));
        j.filename = Some("data".into());
        assert_eq!(clone_paths(&j, 3), [PathBuf::from("/mnt/lab/data")]);
        j.filename = Some("/dev/loop7".into());
        assert_eq!(clone_paths(&j, 0), [PathBuf::from("/dev/loop7")]);
        j.x.filenames = vec!["a".into(), "/dev/b".into()];
        assert_eq!(
            clone_paths(&j, 0),
            [PathBuf::from("/mnt/lab/a"), PathBuf::from("/dev/b")]
        );
        let bare = Job::new("x");
        assert_eq!(clone_paths(&bare, 0), [PathBuf::from("x.0.0")]);
    }

    #[test]
    fn inspects_files_and_refuses_odd_things() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, vec![0u8; 8192]).unwrap();
        let t = inspect(&f).unwrap();
        assert_eq!(
            (t.kind, t.existing, t.exists),
            (IoFileKind::File, 8192, true)
        );
        let missing = inspect(&d.path().join("new")).unwrap();
        assert!(!missing.exists && missing.existing == 0);
        let e = inspect(&d.path().join("no/such/dir/f")).unwrap_err();
        assert!(
            iolab_sys::is_usage(&e) && e.to_string().contains("does not exist"),
            "{e}"
        );
        assert!(iolab_sys::is_usage(
            &inspect(Path::new("/dev/full")).unwrap_err()
        ));
        assert_eq!(
            inspect(Path::new("/dev/zero")).unwrap().kind,
            IoFileKind::File
        );
        assert!(iolab_sys::is_usage(
            &inspect(Path::new("/dev/iolab-no-such-dev")).unwrap_err()
        ));
    }

    #[test]
    fn block_devices_need_force_for_writes() {
        let t = IoFile {
            path: "/dev/vda".into(),
            kind: IoFileKind::BlockDevice,
            existing: 1 << 30,
            exists: true,
        };
        let e = check_write_allowed(&t, false).unwrap_err();
        assert!(
            iolab_sys::is_usage(&e) && e.to_string().contains("--force"),
            "{e}"
        );
        assert!(check_write_allowed(&t, true).is_ok());
        let f = IoFile {
            kind: IoFileKind::File,
            ..t
        };
        assert!(check_write_allowed(&f, false).is_ok());
    }

    #[test]
    fn root_filesystem_has_free_space_and_a_device_maybe() {
        assert!(free_bytes(Path::new("/")).unwrap() > 0);
        assert!(fs_id(Path::new("/tmp/x")).is_ok());
        // /proc has no block device behind it.
        assert!(holding_device(Path::new("/proc/self/status")).is_none());
    }
}
