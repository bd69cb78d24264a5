//! The image file behind a loop lab: checked against free space, created
//! through the guard, and fully allocated up front.
//!
//! Why fallocate: a sparse image allocates host blocks during the
//! experiment, adding the host filesystem's allocator and journal to the
//! latency being measured. Allocated-but-unwritten extents also read as
//! zeros, which is what lets mkfs skip zeroing inode tables and journal.

use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_sys::units::format_bytes;

use crate::spec::{Fs, LabSpec};
use crate::LabError;

/// Room left free on the host filesystem beyond the image, so a lab never
/// fills it to the last block.
const SPARE_BYTES: u64 = 64 << 20;

/// Makes `<dir>/<name>.img` of the spec's size; returns its canonical path
/// (the name the loop driver reports as backing file).
pub(crate) fn make(guard: &Guard, spec: &LabSpec) -> Result<PathBuf, LabError> {
    let dir = absolute(&spec.dir)?;
    if spec.fs != Fs::Erofs {
        check_space(&dir, spec.size_bytes)?;
    }
    guard.mkdir_all(&dir)?;
    let path = dir.join(format!("{}.img", spec.name));
    if path.exists() {
        return Err(LabError::usage(format!(
            "{} already exists (a lab from before a reboot, or not iolab's): remove it, or choose another --name or --dir",
            path.display()
        )));
    }
    let file = guard.create_file(&path)?;
    if spec.fs == Fs::Erofs {
        drop(file);
        build_erofs(&path, spec)?;
        return std::fs::canonicalize(&path).map_err(|e| LabError::io(&path, e));
    }
    let len = spec.size_bytes;
    match rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => {}
        Err(rustix::io::Errno::NOSPC) => return Err(no_room(&dir, spec.size_bytes)),
        // Filesystems without fallocate: a sparse file still works.
        Err(rustix::io::Errno::OPNOTSUPP) => {
            file.set_len(len).map_err(|e| LabError::io(&path, e))?
        }
        Err(e) => return Err(LabError::io(&path, e.into())),
    }
    std::fs::canonicalize(&path).map_err(|e| LabError::io(&path, e))
}

/// Builds a read-only EROFS image of `spec.from` into `img` (already
/// created, and journaled, by the guard) with mkfs.erofs, compressed when
/// `spec.compress` says so. The image is as large as its contents need.
fn build_erofs(img: &Path, spec: &LabSpec) -> Result<(), LabError> {
    let from = spec
        .from
        .as_deref()
        .ok_or_else(|| LabError::usage("--fs erofs needs --from DIR"))?;
    if !from.is_dir() {
        return Err(LabError::usage(format!(
            "--from {}: not a directory: give the directory whose files the EROFS image should hold",
            from.display()
        )));
    }
    let mut args = vec!["--quiet".to_string()];
    if let Some(c) = &spec.compress {
        args.push(format!("-z{c}"));
    }
    args.push(img.to_string_lossy().into_owned());
    args.push(from.to_string_lossy().into_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    iolab_guard::run_cmd("mkfs.erofs", &args)
        .map(|_| ())
        .map_err(|e| match e {
            iolab_guard::GuardError::Command { stderr, .. } if stderr.ends_with("installed?)") => {
                LabError::usage("mkfs.erofs not found: install erofs-utils (or use another --fs)")
            }
            e => e.into(),
        })
}

fn absolute(dir: &Path) -> Result<PathBuf, LabError> {
    if dir.is_absolute() {
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|e| LabError::io(".", e))?;
    Ok(cwd.join(dir))
}

/// Refuses an image that would not fit (with [`SPARE_BYTES`] to spare) on
/// the filesystem that will hold `dir` (its nearest existing ancestor).
fn check_space(dir: &Path, size: u64) -> Result<(), LabError> {
    let existing = dir
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or_else(|| Path::new("/"));
    if !existing.is_dir() {
        return Err(LabError::usage(format!(
            "--dir {}: {} is not a directory",
            dir.display(),
            existing.display()
        )));
    }
    let st = rustix::fs::statvfs(existing).map_err(|e| LabError::io(existing, e.into()))?;
    let avail = st.f_bavail.saturating_mul(st.f_frsize);
    if size.saturating_add(SPARE_BYTES) > avail {
        return Err(no_room_avail(dir, size, avail));
    }
    Ok(())
}

fn no_room(dir: &Path, size: u64) -> LabError {
    no_room_avail(dir, size, 0)
}

fn no_room_avail(dir: &Path, size: u64, avail: u64) -> LabError {
    let free = if avail > 0 {
        format!(" (its filesystem has {} free)", format_bytes(avail))
    } else {
        String::new()
    };
    LabError::usage(format!(
        "a {} image does not fit in {}{free}: use a smaller --size or another --dir",
        format_bytes(size),
        dir.display()
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn images_larger_than_the_free_space_are_refused() {
        let d = tempfile::tempdir().unwrap();
        check_space(d.path(), 1 << 20).unwrap();
        let e = check_space(&d.path().join("not/yet"), u64::MAX / 2).unwrap_err();
        assert!(iolab_sys::is_usage(&e));
        let msg = e.to_string();
        assert!(
            msg.contains("does not fit") && msg.contains("free"),
            "{msg}"
        );
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "").unwrap();
        assert!(check_space(&f, 1)
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
    }
}
