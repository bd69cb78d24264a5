//! Lab images left behind by a reboot. A lab's journal and metadata live
//! in /run (a tmpfs, cleared at boot exactly when the devices and mounts
//! they describe vanish), but its image file lives on disk, in the default
//! image directory: after a reboot nothing names it any more. `lab list`
//! shows such images, and `lab down NAME` removes one — only a `NAME.img`
//! in iolab's own image directory that no lab names and no loop device
//! uses.

use std::path::{Path, PathBuf};

use crate::{meta, LabError};

/// iolab's default image directory (`lab up --dir`).
pub fn image_dir() -> PathBuf {
    iolab_sys::paths::image_dir()
}

/// Names of orphaned images in `dir`, sorted: `NAME.img` with no lab of
/// that name and no loop device over it. Labs that cannot be listed are
/// an error: every image would otherwise look orphaned.
pub fn orphans_in(dir: &Path) -> Result<Vec<String>, LabError> {
    let labs = meta::names()?;
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LabError::io(dir, e)),
    };
    let mut v: Vec<String> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_suffix(".img").map(str::to_string)
        })
        .filter(|n| !labs.contains(n))
        .filter(|n| {
            let p = dir.join(format!("{n}.img"));
            let p = p.canonicalize().unwrap_or(p);
            iolab_guard::loops_backed_by(&p).is_empty()
        })
        .collect();
    v.sort();
    Ok(v)
}

/// The orphaned image of `name`, if there is one.
pub fn orphan(name: &str) -> Result<Option<PathBuf>, LabError> {
    Ok(orphans_in(&image_dir())?
        .contains(&name.to_string())
        .then(|| image_dir().join(format!("{name}.img"))))
}

/// Removes the orphaned image of `name` (and the image directory when it
/// is left empty); returns what it did.
pub fn remove(name: &str) -> Result<Vec<String>, LabError> {
    let Some(img) = orphan(name)? else {
        return Ok(Vec::new());
    };
    std::fs::remove_file(&img).map_err(|e| LabError::io(&img, e))?;
    let mut done = vec![format!(
        "removed {} (an image left by a lab of a previous boot)",
        img.display()
    )];
    if std::fs::remove_dir(image_dir()).is_ok() {
        done.push(format!("removed directory {}", image_dir().display()));
    }
    Ok(done)
}
