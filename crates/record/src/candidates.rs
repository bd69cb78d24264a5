//! Paths the recorded tasks used, gathered while they run: the cheapest and
//! most faithful way to name an inode is the path the command itself opened.
//!
//! - `/proc/PID/maps`: every file-backed mapping with its device and inode
//!   (proc(5)): executables, shared libraries, mmapped data;
//! - `/proc/PID/fd/*`: open files (stat through the link gives device and
//!   inode, readlink the path);
//! - `sched:sched_process_exec` filenames and the command's own arguments
//!   (`dd if=FILE` included), stat'ed at the end.
//!
//! Sampling misses files opened and closed between two samples (every
//! [`crate::recorder::SAMPLE_INTERVAL`]); the resolver falls back to file
//! handles and a walk for those.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::event::{DevNo, FileKey};

/// Where a path came from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `/proc/PID/maps` or `/proc/PID/fd` of a recorded task.
    Proc,
    /// An exec'd program or a path in the command's arguments.
    Named,
    /// open_by_handle_at(2) on the inode number (the dentry the kernel
    /// still caches).
    Handle,
    /// A walk of the filesystem's directories.
    Walk,
}

/// Candidate paths, by file and unkeyed (files to stat, directories to
/// walk first: arguments, exec'd programs, the tasks' working directories).
#[derive(Debug, Default)]
pub struct Candidates {
    /// Paths seen with their device and inode.
    pub keyed: HashMap<FileKey, PathBuf>,
    /// Paths to stat at the end (exec filenames, arguments), in order.
    pub named: Vec<PathBuf>,
}

impl Candidates {
    /// Adds a path named by the command (argument, exec filename): files
    /// are stat'ed when resolving; directories are walked first.
    pub fn add_named(&mut self, p: PathBuf) {
        if !self.named.contains(&p) {
            self.named.push(p);
        }
    }

    /// Adds the paths in `argv` (whole words and the part after `=`) that
    /// exist, relative to the current directory.
    pub fn add_argv(&mut self, argv: &[String]) {
        for a in argv {
            let words = std::iter::once(a.as_str()).chain(a.split_once('=').map(|(_, v)| v));
            for w in words {
                if w.is_empty() || w.starts_with('-') {
                    continue;
                }
                let p = Path::new(w);
                if p.exists() {
                    if let Ok(abs) = std::fs::canonicalize(p) {
                        self.add_named(abs);
                    }
                }
            }
        }
    }

    /// Samples `/proc/PID/maps` and `/proc/PID/fd` of `pid` under
    /// `proc_root`; a task that is gone is skipped.
    pub fn sample(&mut self, proc_root: &Path, pid: i32) {
        let dir = proc_root.join(pid.to_string());
        if let Ok(cwd) = std::fs::read_link(dir.join("cwd")) {
            if cwd.is_absolute() && cwd != Path::new("/") {
                self.add_named(cwd);
            }
        }
        if let Ok(maps) = std::fs::read_to_string(dir.join("maps")) {
            for (key, path) in parse_maps(&maps) {
                self.keyed.entry(key).or_insert(path);
            }
        }
        let Ok(rd) = std::fs::read_dir(dir.join("fd")) else {
            return;
        };
        for e in rd.flatten() {
            let link = e.path();
            let (Ok(md), Ok(target)) = (std::fs::metadata(&link), std::fs::read_link(&link)) else {
                continue;
            };
            if !md.is_file() || !target.is_absolute() {
                continue;
            }
            let key = FileKey {
                dev: DevNo::from_st_dev(md.dev()),
                ino: md.ino(),
            };
            self.keyed.entry(key).or_insert(target);
        }
    }
}

/// File-backed mappings of a `maps` text: `(device, inode) → path`.
/// Lines look like `7f1c-7f1d r--p 00000000 fd:01 1835 /usr/lib/libc.so.6`
/// (device in hex); anonymous and special mappings (inode 0, `[heap]`) and
/// deleted files are skipped.
pub fn parse_maps(text: &str) -> Vec<(FileKey, PathBuf)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.splitn(6, ' ');
        let (Some(_), Some(_), Some(_), Some(dev), Some(ino), Some(rest)) = (
            it.next(),
            it.next(),
            it.next(),
            it.next(),
            it.next(),
            it.next(),
        ) else {
            continue;
        };
        let path = rest.trim_start();
        let Ok(ino) = ino.parse::<u64>() else {
            continue;
        };
        if ino == 0 || !path.starts_with('/') || path.ends_with(" (deleted)") {
            continue;
        }
        let Some((ma, mi)) = dev.split_once(':') else {
            continue;
        };
        let (Ok(major), Ok(minor)) = (u32::from_str_radix(ma, 16), u32::from_str_radix(mi, 16))
        else {
            continue;
        };
        out.push((
            FileKey {
                dev: DevNo { major, minor },
                ino,
            },
            PathBuf::from(path),
        ));
    }
    out
}

/// An exec'd filename made absolute: relative names are relative to the
/// task's working directory at exec time.
pub fn exec_path(proc_root: &Path, pid: i32, filename: &str) -> Option<PathBuf> {
    let p = Path::new(filename);
    if p.is_absolute() {
        return Some(p.to_path_buf());
    }
    let cwd = std::fs::read_link(proc_root.join(pid.to_string()).join("cwd")).ok()?;
    Some(cwd.join(p))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_give_device_inode_and_path() {
        let text = "\
55d0-55d1 r--p 00000000 fd:01 1835                       /usr/bin/cat
7f1c-7f1d r-xp 00002000 103:02 99                        /usr/lib/a b.so
7f1e-7f1f rw-p 00000000 00:00 0 
7ffd-7ffe rw-p 00000000 00:00 0                          [stack]
7f20-7f21 r--p 00000000 fd:01 77                         /tmp/gone (deleted)
";
        let v = parse_maps(text);
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[0].0.dev,
            DevNo {
                major: 253,
                minor: 1
            }
        );
        assert_eq!(v[0].0.ino, 1835);
        assert_eq!(v[0].1, Path::new("/usr/bin/cat"));
        assert_eq!(
            v[1].0.dev,
            DevNo {
                major: 259,
                minor: 2
            }
        );
        assert_eq!(v[1].1, Path::new("/usr/lib/a b.so"));
    }

    #[test]
    fn sampling_reads_a_fixture_proc_tree() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join("42");
        std::fs::create_dir_all(p.join("fd")).unwrap();
        std::fs::write(p.join("maps"), "1-2 r--p 0 08:01 5 /bin/x\n").unwrap();
        let data = root.path().join("data");
        std::fs::write(&data, "x").unwrap();
        std::os::unix::fs::symlink(&data, p.join("fd").join("3")).unwrap();
        let mut c = Candidates::default();
        c.sample(root.path(), 42);
        c.sample(root.path(), 43); // gone: skipped
        assert_eq!(c.keyed.len(), 2);
        let md = std::fs::metadata(&data).unwrap();
        let key = FileKey {
            dev: DevNo::from_st_dev(md.dev()),
            ino: md.ino(),
        };
        assert_eq!(c.keyed[&key], data);
    }

    #[test]
    fn argv_paths_include_values_after_equals() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("in");
        std::fs::write(&f, "x").unwrap();
        let mut c = Candidates::default();
        c.add_argv(&[
            "dd".into(),
            format!("if={}", f.display()),
            "--nope".into(),
            "bs=4k".into(),
        ]);
        assert_eq!(c.named, [std::fs::canonicalize(&f).unwrap()]);
    }
}
