//! Things said once: files that could not be inspected, links not
//! followed, special files skipped. A scan of 100k files must not print
//! 100k identical warnings, nor silently print zeros for files the kernel
//! would not describe; it counts each kind, keeps the first example and
//! explains the kind once at the end.

use std::path::{Path, PathBuf};

/// Why a file or directory was left out or treated specially.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoteKind {
    /// open(2) failed with EACCES/EPERM.
    PermissionDenied,
    /// The kernel will not describe this file's cache to this user.
    NotInspectable,
    /// Not a regular file (device, FIFO, socket).
    SpecialFile,
    /// A symbolic link met during the walk, not followed (no `-L`).
    SymlinkNotFollowed,
    /// A symbolic link whose target does not exist.
    DanglingSymlink,
    /// A directory reached a second time through a link (`-L`).
    AlreadyVisited,
    /// Removed between listing and opening.
    Vanished,
    /// A directory that could not be opened or read.
    DirUnreadable,
    /// A subdirectory not walked because `-R` was not given.
    SubdirNotWalked,
    /// A hard link to a file already counted in the totals.
    HardlinkCountedOnce,
    /// A file on tmpfs/ramfs, whose pages cannot be evicted.
    NotEvictable,
    /// A file name containing a newline, which a ranges list cannot hold.
    NewlineInName,
    /// Any other failure.
    Failed,
}

const KINDS: usize = 13;

impl NoteKind {
    fn index(self) -> usize {
        self as usize
    }

    /// The key in JSON `skipped`/`notes` objects.
    pub fn key(self) -> &'static str {
        match self {
            NoteKind::PermissionDenied => "permission_denied",
            NoteKind::NotInspectable => "not_inspectable",
            NoteKind::SpecialFile => "special_files",
            NoteKind::SymlinkNotFollowed => "symlinks_not_followed",
            NoteKind::DanglingSymlink => "dangling_symlinks",
            NoteKind::AlreadyVisited => "already_visited",
            NoteKind::Vanished => "vanished",
            NoteKind::DirUnreadable => "unreadable_dirs",
            NoteKind::SubdirNotWalked => "subdirs_not_walked",
            NoteKind::HardlinkCountedOnce => "hardlinks_counted_once",
            NoteKind::NotEvictable => "not_evictable",
            NoteKind::NewlineInName => "newline_in_name",
            NoteKind::Failed => "failed",
        }
    }

    const ALL: [NoteKind; KINDS] = [
        NoteKind::PermissionDenied,
        NoteKind::NotInspectable,
        NoteKind::SpecialFile,
        NoteKind::SymlinkNotFollowed,
        NoteKind::DanglingSymlink,
        NoteKind::AlreadyVisited,
        NoteKind::Vanished,
        NoteKind::DirUnreadable,
        NoteKind::SubdirNotWalked,
        NoteKind::HardlinkCountedOnce,
        NoteKind::NotEvictable,
        NoteKind::NewlineInName,
        NoteKind::Failed,
    ];

    /// True for kinds that mean a file was left out of the results.
    pub fn is_skip(self) -> bool {
        !matches!(
            self,
            NoteKind::HardlinkCountedOnce | NoteKind::NotEvictable | NoteKind::NewlineInName
        )
    }
}

/// Counts per kind, with the first example path and detail of each.
#[derive(Debug, Default, Clone)]
pub struct Notes {
    counts: [u64; KINDS],
    examples: [Option<(PathBuf, String)>; KINDS],
}

impl Notes {
    /// Records one occurrence; `detail` is only evaluated for the first.
    pub fn add(&mut self, kind: NoteKind, path: &Path, detail: impl FnOnce() -> String) {
        let i = kind.index();
        self.counts[i] += 1;
        if self.examples[i].is_none() {
            self.examples[i] = Some((path.to_path_buf(), detail()));
        }
    }

    /// How many of `kind` were recorded.
    pub fn count(&self, kind: NoteKind) -> u64 {
        self.counts[kind.index()]
    }

    /// Files and directories left out, over all skip kinds.
    pub fn skipped(&self) -> u64 {
        NoteKind::ALL
            .iter()
            .filter(|k| k.is_skip())
            .map(|&k| self.count(k))
            .sum()
    }

    /// Adds another thread's notes (keeping the first example seen here).
    pub fn merge(&mut self, other: Notes) {
        for (i, ex) in other.examples.into_iter().enumerate() {
            self.counts[i] += other.counts[i];
            if self.examples[i].is_none() {
                self.examples[i] = ex;
            }
        }
    }

    /// `(key, count)` for every kind that occurred.
    pub fn counts(&self) -> Vec<(&'static str, u64)> {
        NoteKind::ALL
            .iter()
            .filter(|&&k| self.count(k) > 0)
            .map(|&k| (k.key(), self.count(k)))
            .collect()
    }

    /// One sentence per kind that occurred, saying what happened and what
    /// to do about it.
    pub fn sentences(&self) -> Vec<String> {
        NoteKind::ALL
            .iter()
            .filter(|&&k| self.count(k) > 0)
            .map(|&k| {
                let n = self.count(k);
                let (path, detail) = self.examples[k.index()]
                    .as_ref()
                    .map(|(p, d)| (p.display().to_string(), d.as_str()))
                    .unwrap_or_default();
                sentence(k, n, &path, detail)
            })
            .collect()
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn sentence(kind: NoteKind, n: u64, path: &str, detail: &str) -> String {
    let files = plural(n, "file", "files");
    match kind {
        NoteKind::PermissionDenied => format!(
            "{files} could not be opened (permission denied), e.g. {path}: run as root to include them"
        ),
        NoteKind::NotInspectable => format!(
            "{files} cannot be inspected, e.g. {path}: since Linux 5.2 the kernel describes a file's \
             page cache only to its owner or to a user who may write it (mincore would claim every \
             page is cached, cachestat refuses with EPERM); run as root or as the owner"
        ),
        NoteKind::SpecialFile => format!(
            "{} skipped (devices, FIFOs, sockets have no file pages to describe), e.g. {path}",
            plural(n, "special file", "special files")
        ),
        NoteKind::SymlinkNotFollowed => format!(
            "{} not followed, e.g. {path}: use -L to follow links",
            plural(n, "symbolic link", "symbolic links")
        ),
        NoteKind::DanglingSymlink => format!(
            "{} point at nothing, e.g. {path}",
            plural(n, "symbolic link", "symbolic links")
        ),
        NoteKind::AlreadyVisited => format!(
            "{} reached again through a link and not walked twice, e.g. {path}",
            plural(n, "directory", "directories")
        ),
        NoteKind::Vanished => format!("{files} vanished during the walk, e.g. {path}"),
        NoteKind::DirUnreadable => format!(
            "{} could not be read, e.g. {path}: {detail}",
            plural(n, "directory", "directories")
        ),
        NoteKind::SubdirNotWalked => format!(
            "{} not walked, e.g. {path}: use -R to walk directories recursively",
            plural(n, "subdirectory", "subdirectories")
        ),
        NoteKind::HardlinkCountedOnce => format!(
            "{} to files already seen: listed, but counted once in the totals, e.g. {path}",
            plural(n, "hard link", "hard links")
        ),
        NoteKind::NotEvictable => format!(
            "{files} live on tmpfs/ramfs, where the page cache is the only copy: they cannot be \
             evicted, e.g. {path}"
        ),
        NoteKind::NewlineInName => format!(
            "{files} with a newline in the name left out (a ranges list holds one file per line), \
             e.g. {path:?}"
        ),
        NoteKind::Failed => format!("{files} failed, e.g. {path}: {detail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_and_keep_the_first_example() {
        let mut a = Notes::default();
        a.add(NoteKind::SymlinkNotFollowed, Path::new("/a"), String::new);
        let mut b = Notes::default();
        b.add(NoteKind::SymlinkNotFollowed, Path::new("/b"), String::new);
        b.add(NoteKind::HardlinkCountedOnce, Path::new("/c"), String::new);
        a.merge(b);
        assert_eq!(a.count(NoteKind::SymlinkNotFollowed), 2);
        assert_eq!(a.skipped(), 2);
        let s = a.sentences();
        assert_eq!(s.len(), 2);
        assert!(
            s[0].starts_with("2 symbolic links not followed, e.g. /a"),
            "{s:?}"
        );
        assert!(s[0].contains("-L"));
        assert_eq!(
            a.counts(),
            [("symlinks_not_followed", 2), ("hardlinks_counted_once", 1)]
        );
    }
}
