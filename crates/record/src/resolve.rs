//! Naming inodes: the tracepoint says (device, inode), a prefetch list
//! needs a path. Tried in order, each answer verified by stat'ing the path
//! and comparing device and inode:
//!
//! 1. paths the recorded tasks used ([`crate::candidates`]): exact, and the
//!    name the command really opened when a file has several;
//! 2. open_by_handle_at(2) with a `FILEID_INO32_GEN` handle of generation 0
//!    on a mount of the device, then the fd's `/proc/self/fd` link: ext2/3/4,
//!    f2fs and erofs accept generation 0 as "any"; the link is a full path
//!    when the kernel still caches a dentry of the inode (it does right
//!    after the command used the file, unless memory pressure dropped it),
//!    else a bare `/` that fails verification;
//! 3. a breadth-first walk of the device's mounts — directories the
//!    command named or worked in and those holding files already named
//!    first, then their ancestors, then each mount from its root —
//!    matching `d_ino` from getdents (no stat per file), not crossing into
//!    other mounts, stopping as soon as every inode is named or after
//!    [`ResolveOptions::walk_limit`] (directories not in the dentry cache
//!    are read from the device: a cold walk of a big root filesystem takes
//!    tens of seconds).
//!
//! Limits: a hard-linked file gets the first name found; a file deleted
//! since (or only ever reachable through a deleted directory) has no name;
//! inodes of devices not mounted in this mount namespace cannot be named:
//! the page cache of a block device itself (filesystem metadata read
//! through it, or the device node read directly) belongs to the `bdev`
//! pseudo filesystem, and another container's mounts are not ours; on btrfs, subvolumes have
//! their own `st_dev`, different from the superblock's, so only inodes of
//! the top-level subvolume verify.

use std::collections::{HashMap, HashSet, VecDeque};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::candidates::{Candidates, Source};
use crate::event::{DevNo, FileKey};

/// How one file was named, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Named and verified.
    Found {
        /// The path.
        path: PathBuf,
        /// Its size now, bytes.
        size: u64,
        /// How it was found.
        source: Source,
    },
    /// Not named.
    Missing {
        /// Why.
        why: String,
    },
}

/// How hard to look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolveOptions {
    /// Try open_by_handle_at (step 2).
    pub handles: bool,
    /// Walk the filesystems (step 3).
    pub walk: bool,
    /// Stop walking after this long (`None`: never).
    pub walk_limit: Option<Duration>,
}

/// Default [`ResolveOptions::walk_limit`].
pub const WALK_LIMIT: Duration = Duration::from_secs(10);

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions {
            handles: true,
            walk: true,
            walk_limit: Some(WALK_LIMIT),
        }
    }
}

/// Where the walk of `dev` starts, in order: directories the command named
/// (its arguments, the tasks' working directories), those holding files
/// already named, then their ancestors nearest first, then the mounts.
fn walk_starts(
    dirs: &[PathBuf],
    found: &HashMap<FileKey, Resolution>,
    dev: DevNo,
    roots: &[&iolab_sys::mounts::Mount],
) -> Vec<PathBuf> {
    let mut near: Vec<PathBuf> = dirs.to_vec();
    let mut parents: Vec<PathBuf> = found
        .iter()
        .filter_map(|(k, r)| match r {
            Resolution::Found { path, .. } if k.dev == dev => path.parent().map(Path::to_path_buf),
            _ => None,
        })
        .collect();
    parents.sort();
    near.extend(parents);
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for d in &near {
        push(d.clone());
    }
    for d in &near {
        for a in d.ancestors().skip(1) {
            if roots.iter().any(|m| a == m.target) {
                break;
            }
            push(a.to_path_buf());
        }
    }
    for m in roots {
        push(m.target.clone());
    }
    out
}

/// Names `files`; the answer has one entry per file.
pub fn resolve(
    files: &[FileKey],
    cands: &Candidates,
    opts: ResolveOptions,
) -> HashMap<FileKey, Resolution> {
    let t0 = Instant::now();
    let wanted: HashSet<FileKey> = files.iter().copied().collect();
    let mut found: HashMap<FileKey, Resolution> = HashMap::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (key, path) in &cands.keyed {
        if wanted.contains(key) {
            try_path(*key, path, Source::Proc, &mut found);
        }
    }
    for p in &cands.named {
        let Ok(md) = std::fs::metadata(p) else {
            continue;
        };
        if md.is_dir() {
            dirs.push(p.clone());
        } else if let Some(key) = key_of(&md).filter(|k| wanted.contains(k)) {
            try_path(key, p, Source::Named, &mut found);
        }
    }
    let mounts = iolab_sys::mounts::read();
    let mut by_dev: HashMap<DevNo, Vec<FileKey>> = HashMap::new();
    for k in files.iter().filter(|k| !found.contains_key(k)) {
        by_dev.entry(k.dev).or_default().push(*k);
    }
    let mut devs: Vec<DevNo> = by_dev.keys().copied().collect();
    devs.sort();
    for dev in devs {
        let keys = &by_dev[&dev];
        let mut roots: Vec<&iolab_sys::mounts::Mount> = mounts
            .iter()
            .filter(|m| m.devno == dev.to_string())
            .collect();
        roots.sort_by_key(|m| m.target.as_os_str().len());
        if roots.is_empty() {
            for k in keys {
                found.insert(
                    *k,
                    Resolution::Missing {
                        why: unmounted_why(dev, k.ino),
                    },
                );
            }
            continue;
        }
        let mut left: HashSet<u64> = keys.iter().map(|k| k.ino).collect();
        if opts.handles {
            for root in &roots {
                by_handle(dev, &root.target, &mut left, &mut found);
            }
        }
        let mut gave_up = false;
        if opts.walk && !left.is_empty() {
            let starts = walk_starts(&dirs, &found, dev, &roots);
            let skip: HashSet<&Path> = mounts.iter().map(|m| m.target.as_path()).collect();
            let mut walk = Walk {
                dev,
                left: &mut left,
                found: &mut found,
                skip,
                done: HashSet::new(),
                deadline: opts.walk_limit.map(|l| t0 + l),
            };
            for s in starts {
                if walk.left.is_empty() {
                    break;
                }
                if !walk.tree(&s) {
                    gave_up = true;
                    break;
                }
            }
        }
        for ino in left {
            found.insert(
                FileKey { dev, ino },
                Resolution::Missing {
                    why: if let (true, Some(limit)) = (gave_up, opts.walk_limit) {
                        format!(
                            "the walk of the device's mounts stopped after {:.0} s (raise --walk-timeout)",
                            limit.as_secs_f64()
                        )
                    } else if opts.walk {
                        "no path on the device's mounts has this inode (deleted or renamed away since)"
                            .into()
                    } else {
                        "not among the paths the command used (walk disabled)".into()
                    },
                },
            );
        }
    }
    found
}

fn key_of(md: &std::fs::Metadata) -> Option<FileKey> {
    md.is_file().then(|| FileKey {
        dev: DevNo::from_st_dev(md.dev()),
        ino: md.ino(),
    })
}

/// Records `path` for `key` when it is a regular file with that device and
/// inode and `key` has no name yet.
fn try_path(
    key: FileKey,
    path: &Path,
    source: Source,
    found: &mut HashMap<FileKey, Resolution>,
) -> bool {
    if found.contains_key(&key) {
        return false;
    }
    match std::fs::metadata(path) {
        Ok(md) if key_of(&md) == Some(key) => {
            found.insert(
                key,
                Resolution::Found {
                    path: path.to_path_buf(),
                    size: md.size(),
                    source,
                },
            );
            true
        }
        _ => false,
    }
}

/// `struct file_handle` with room for a `FILEID_INO32_GEN` handle.
#[repr(C)]
struct Ino32Handle {
    handle_bytes: u32,
    handle_type: i32,
    ino: u32,
    generation: u32,
}

/// `FILEID_INO32_GEN` (include/linux/exportfs.h).
const FILEID_INO32_GEN: i32 = 1;

/// Step 2 for the inodes in `left` on the mount at `mount`.
fn by_handle(
    dev: DevNo,
    mount: &Path,
    left: &mut HashSet<u64>,
    found: &mut HashMap<FileKey, Resolution>,
) {
    let Ok(root) = std::fs::File::open(mount) else {
        return;
    };
    let inos: Vec<u64> = left.iter().copied().collect();
    for ino in inos {
        let Ok(ino32) = u32::try_from(ino) else {
            continue;
        };
        let mut h = Ino32Handle {
            handle_bytes: 8,
            handle_type: FILEID_INO32_GEN,
            ino: ino32,
            generation: 0,
        };
        // SAFETY: open_by_handle_at reads handle_bytes (8) bytes after the
        // two header fields of `h`, which we own; O_PATH opens nothing.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_open_by_handle_at,
                root.as_raw_fd(),
                &mut h as *mut Ino32Handle,
                libc::O_PATH | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            continue;
        }
        #[allow(
            clippy::cast_possible_truncation,
            reason = "open_by_handle_at(2) returns an int (a descriptor, checked >= 0 above) \
                      that syscall(2) widens to a long"
        )]
        // SAFETY: the syscall returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let link = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        let Ok(path) = std::fs::read_link(&link) else {
            continue;
        };
        drop(fd);
        if try_path(FileKey { dev, ino }, &path, Source::Handle, found) {
            left.remove(&ino);
        }
    }
}

/// Step 3: a breadth-first walk matching `d_ino` (shallow files first:
/// a depth-first walk of `/` can spend a minute in one build tree before
/// it reaches `/tmp`).
struct Walk<'a> {
    dev: DevNo,
    left: &'a mut HashSet<u64>,
    found: &'a mut HashMap<FileKey, Resolution>,
    /// Mount points: not descended into (other filesystems, or this one
    /// again through a bind mount).
    skip: HashSet<&'a Path>,
    /// Directories already listed.
    done: HashSet<PathBuf>,
    /// Give up at this time.
    deadline: Option<Instant>,
}

impl Walk<'_> {
    /// Walks the tree under `start`; false once the deadline has passed.
    fn tree(&mut self, start: &Path) -> bool {
        // A start directory on another device (an argument on another
        // filesystem) is not this walk's business.
        match std::fs::symlink_metadata(start) {
            Ok(md) if md.is_dir() && DevNo::from_st_dev(md.dev()) == self.dev => {}
            _ => return true,
        }
        let mut queue = VecDeque::from([start.to_path_buf()]);
        while let Some(dir) = queue.pop_front() {
            if self.left.is_empty() {
                return true;
            }
            if self.deadline.is_some_and(|d| Instant::now() > d) {
                return false;
            }
            if (dir != start && self.skip.contains(dir.as_path())) || !self.done.insert(dir.clone())
            {
                continue;
            }
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut subdirs = Vec::new();
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() {
                    subdirs.push(e.path());
                } else if ft.is_file() && self.left.contains(&e.ino()) {
                    let key = FileKey {
                        dev: self.dev,
                        ino: e.ino(),
                    };
                    if try_path(key, &e.path(), Source::Walk, self.found) {
                        self.left.remove(&key.ino);
                    }
                }
            }
            subdirs.sort();
            queue.extend(subdirs);
        }
        true
    }
}

/// Why an inode of an unmounted device has no name: the page cache of a
/// block device itself belongs to the `bdev` pseudo filesystem, whose
/// inode number is the device's number (block/bdev.c `bdev_add`).
fn unmounted_why(dev: DevNo, ino: u64) -> String {
    let bdev = u32::try_from(ino).ok().map(DevNo::from_kernel);
    if let Some(b) = bdev.filter(|b| dev.major == 0 && b.major != 0) {
        let sys = PathBuf::from(format!("/sys/dev/block/{b}"));
        if let Some(name) = std::fs::read_link(&sys)
            .ok()
            .and_then(|t| Some(t.file_name()?.to_string_lossy().into_owned()))
        {
            return format!(
                "the page cache of block device {b} ({name}) itself: filesystem metadata (directories, inode tables) or reads of the device node"
            );
        }
    }
    format!(
        "device {dev} is not mounted in this mount namespace (a pseudo filesystem, or unmounted since)"
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(p: &Path) -> FileKey {
        key_of(&std::fs::metadata(p).unwrap()).unwrap()
    }

    #[test]
    fn candidates_then_walk_name_files_and_hard_links_once() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        let f1 = d.path().join("one");
        let f2 = sub.join("two");
        std::fs::write(&f1, "1").unwrap();
        std::fs::write(&f2, "22").unwrap();
        std::fs::hard_link(&f2, d.path().join("z-link")).unwrap();
        let mut c = Candidates::default();
        c.keyed.insert(key(&f1), f1.clone());
        c.add_named(d.path().to_path_buf());
        let files = [key(&f1), key(&f2)];
        let r = resolve(
            &files,
            &c,
            ResolveOptions {
                handles: false,
                walk: true,
                walk_limit: None,
            },
        );
        assert_eq!(
            r[&files[0]],
            Resolution::Found {
                path: f1,
                size: 1,
                source: Source::Proc
            }
        );
        match &r[&files[1]] {
            Resolution::Found { path, size, source } => {
                assert!(path == &f2 || path.ends_with("z-link"), "{path:?}");
                assert_eq!((*size, *source), (2, Source::Walk));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_devices_and_inodes_say_why() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let k = key(&f);
        let ghost = FileKey {
            dev: DevNo {
                major: 4095,
                minor: 77,
            },
            ino: 5,
        };
        let r = resolve(
            &[k, ghost],
            &Candidates::default(),
            ResolveOptions {
                handles: false,
                walk: false,
                walk_limit: None,
            },
        );
        match &r[&ghost] {
            Resolution::Missing { why } => assert!(why.contains("not mounted"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(&r[&k], Resolution::Missing { why } if why.contains("walk disabled")));
    }
}
