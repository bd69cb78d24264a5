//! Seed 001's treadahead `-w`: rewrite the files of a prefetch list in
//! the list's order (a recording's order of first access), each copied
//! whole to a new file beside it and renamed over it, so the filesystem
//! allocates them one after the other and a boot's reads become one
//! sweep. The only place iolab rewrites a user's files: the caller must
//! have the user's `--force` or own the filesystem (a lab, the boot
//! guest's copy of its image).
//!
//! What it changed is measured, not assumed: FIEMAP before and after
//! (fragments, and how many neighbours in the list are also neighbours in
//! ascending order on disk).

use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use iolab_sys::fiemap::{self, Extent};
use serde::Serialize;

use crate::prefetch::PrefetchList;
use crate::CacheError;

/// What a relayout did.
#[derive(Debug, Default, Serialize)]
pub struct RelayoutReport {
    /// Files rewritten.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Their fragments (extents that do not continue one another), before
    /// and after; `None` when FIEMAP could not map them (see
    /// `layout_unmeasured`).
    pub fragments_before: Option<u64>,
    /// After.
    pub fragments_after: Option<u64>,
    /// Of the list's consecutive rewritten files, how many start after the
    /// previous one's start on disk, before and after.
    pub in_order_before: Option<u64>,
    /// After.
    pub in_order_after: Option<u64>,
    /// Why the layout could not be measured (the filesystem has no
    /// FIEMAP); the files were rewritten all the same.
    pub layout_unmeasured: Option<String>,
    /// Files left as they were, with why (not a regular file, hard links,
    /// unreadable).
    pub skipped: Vec<(PathBuf, String)>,
    /// Seconds it took, syncs included.
    pub seconds: f64,
}

/// Rewrites the files of `list` in its order; see the module docs.
pub fn relayout(list: &PrefetchList) -> Result<RelayoutReport, CacheError> {
    let t0 = std::time::Instant::now();
    let mut r = RelayoutReport::default();
    let mut seen = HashSet::new();
    let mut done: Vec<(PathBuf, Result<Vec<Extent>, iolab_sys::SysError>)> = Vec::new();
    for e in &list.entries {
        if !seen.insert(e.path.clone()) {
            continue;
        }
        let md = match std::fs::symlink_metadata(&e.path) {
            Ok(m) => m,
            Err(err) => {
                r.skipped.push((e.path.clone(), err.to_string()));
                continue;
            }
        };
        if !md.file_type().is_file() {
            r.skipped
                .push((e.path.clone(), "not a regular file".into()));
            continue;
        }
        if md.nlink() > 1 {
            r.skipped.push((
                e.path.clone(),
                format!("{} hard links: a copy would split them", md.nlink()),
            ));
            continue;
        }
        let before = fiemap::extents(&e.path);
        match rewrite(&e.path, &md) {
            Ok(()) => {
                r.files += 1;
                r.bytes += md.len();
                done.push((e.path.clone(), before));
            }
            Err(err) => r.skipped.push((e.path.clone(), err.to_string())),
        }
    }
    // Written out, so FIEMAP sees where the blocks went.
    rustix::fs::sync();
    let mapped = |maps: Vec<Result<Vec<Extent>, iolab_sys::SysError>>| {
        maps.into_iter().collect::<Result<Vec<_>, _>>()
    };
    let after = mapped(done.iter().map(|(p, _)| fiemap::extents(p)).collect());
    let before = mapped(done.into_iter().map(|d| d.1).collect());
    match (before, after) {
        (Ok(b), Ok(a)) => {
            let frags = |m: &[Vec<Extent>]| m.iter().map(|e| fiemap::fragments(e) as u64).sum();
            r.fragments_before = Some(frags(&b));
            r.fragments_after = Some(frags(&a));
            r.in_order_before = Some(in_order(&b));
            r.in_order_after = Some(in_order(&a));
        }
        (Err(e), _) | (_, Err(e)) => r.layout_unmeasured = Some(e.to_string()),
    }
    r.seconds = t0.elapsed().as_secs_f64();
    Ok(r)
}

/// Consecutive files whose first block lies after the previous file's.
fn in_order(files: &[Vec<Extent>]) -> u64 {
    let starts: Vec<Option<u64>> = files.iter().map(|e| fiemap::physical_of(e, 0)).collect();
    starts
        .windows(2)
        .filter(|w| matches!((w[0], w[1]), (Some(a), Some(b)) if b > a))
        .count() as u64
}

/// Copies `path` to a new file beside it (plain reads and writes, so the
/// blocks are new ones: copy_file_range may share them), with its owner,
/// mode and times, and renames it over `path`.
fn rewrite(path: &Path, md: &std::fs::Metadata) -> Result<(), CacheError> {
    let name = path
        .file_name()
        .ok_or_else(|| CacheError::usage(format!("{}: no file name", path.display())))?;
    let tmp = path.with_file_name(format!(".{}.iolab-relayout", name.to_string_lossy()));
    let io = |e| CacheError::io(&tmp, e);
    let mut src = std::fs::File::open(path).map_err(|e| CacheError::io(path, e))?;
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    let result = (|| {
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = src.read(&mut buf).map_err(|e| CacheError::io(path, e))?;
            if n == 0 {
                break;
            }
            dst.write_all(&buf[..n]).map_err(io)?;
        }
        dst.sync_all().map_err(io)?;
        std::os::unix::fs::fchown(&dst, Some(md.uid()), Some(md.gid())).map_err(io)?;
        dst.set_permissions(std::fs::Permissions::from_mode(md.mode() & 0o7777))
            .map_err(io)?;
        let times = std::fs::FileTimes::new()
            .set_accessed(md.accessed().map_err(io)?)
            .set_modified(md.modified().map_err(io)?);
        dst.set_times(times).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn files_are_rewritten_whole_with_their_metadata_and_others_skipped() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&a, &data).unwrap();
        std::fs::write(&b, b"bee").unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o751)).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let linked = dir.path().join("l");
        std::fs::write(&linked, b"x").unwrap();
        std::fs::hard_link(&linked, dir.path().join("l2")).unwrap();
        let ino = std::fs::metadata(&a).unwrap().ino();
        let list = PrefetchList::parse(&format!(
            "{} 0:4096\n{}\n{}\n{}/gone\n",
            b.display(),
            a.display(),
            linked.display(),
            dir.path().display()
        ))
        .unwrap();
        let r = relayout(&list).unwrap();
        assert_eq!((r.files, r.bytes), (2, 300_003));
        assert_eq!(std::fs::read(&a).unwrap(), data);
        assert_eq!(std::fs::read(&b).unwrap(), b"bee");
        let md = std::fs::metadata(&a).unwrap();
        assert_ne!(md.ino(), ino, "a new file");
        assert_eq!(md.mode() & 0o7777, 0o751);
        assert_eq!(md.modified().unwrap(), old);
        assert_eq!(r.skipped.len(), 2, "{:?}", r.skipped);
        assert!(r.skipped.iter().any(|s| s.1.contains("hard links")));
        // Nothing of iolab's is left beside them.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains("iolab")), "{names:?}");
    }
}
