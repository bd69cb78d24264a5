//! A parallel directory walker built for scanning 100k files quickly.
//!
//! Why not a generic walker: the per-file work (open, cachestat, close)
//! costs about as much as listing the file, so the walk itself must not add
//! allocations or system calls. Each worker thread lists a whole directory
//! with getdents64 into a reused buffer, sorts the names (so the output is
//! the same whatever thread ran), opens files relative to the directory's
//! descriptor (no path resolution per file) and builds each file's path in a
//! reused byte buffer. Threads share one stack of directories to list; the
//! per-directory outputs are put back in order (root argument, then
//! directory path compared by components) when all threads are done.
//!
//! Symbolic links met during the walk are not followed unless asked
//! (`follow`), and then a set of visited directories (device, inode) stops
//! loops. Links named on the command line are followed, like `find -H`.

use std::collections::HashSet;
use std::ffi::{CStr, OsStr};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, CWD};
use rustix::io::Errno;

use crate::notes::{NoteKind, Notes};
use crate::CacheError;

/// How to walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkOptions {
    /// Walk subdirectories (`-R`); without it a directory argument lists
    /// only its own files.
    pub recursive: bool,
    /// Follow symbolic links met during the walk (`-L`).
    pub follow: bool,
    /// Worker threads for directories (at least 1).
    pub threads: usize,
}

/// What the walker calls for every regular file.
pub trait Visitor: Send {
    /// Output gathered for one directory (or one file argument).
    type Out: Send;
    /// A fresh, empty output.
    fn begin(&mut self) -> Self::Out;
    /// Visits the regular file `name` in the directory `at`, whose full
    /// path is `path`.
    fn file(
        &mut self,
        at: BorrowedFd<'_>,
        name: &CStr,
        path: &Path,
        out: &mut Self::Out,
        notes: &mut Notes,
    );
    /// Visits a regular file named as an argument, already opened with
    /// [`FILE_FLAGS`].
    fn opened(&mut self, fd: OwnedFd, path: &Path, out: &mut Self::Out, notes: &mut Notes);
    /// True when `out` holds nothing worth keeping.
    fn is_empty(out: &Self::Out) -> bool;
}

/// How files are opened for inspection: read-only, and non-blocking so a
/// FIFO swapped in after listing cannot hang the walk in open(2).
pub const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::CLOEXEC)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY);

/// The result of a walk.
pub struct Walked<V: Visitor> {
    /// Per-directory outputs in output order.
    pub outputs: Vec<V::Out>,
    /// Every visitor used (one per thread), for their totals.
    pub visitors: Vec<V>,
    /// What was skipped or treated specially.
    pub notes: Notes,
    /// Directories listed.
    pub dirs: u64,
    /// True when a stop was requested (Ctrl-C) and the walk ended early.
    pub interrupted: bool,
    /// The first argument that does not exist (the others were walked).
    pub missing: Option<CacheError>,
}

type Key = (usize, PathBuf);

struct Job {
    root: usize,
    dir: PathBuf,
    depth: u32,
}

struct Queue {
    jobs: Vec<Job>,
    active: usize,
    interrupted: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    visited: Mutex<HashSet<(u64, u64)>>,
    opts: WalkOptions,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True the first time a directory (device, inode) is seen; only
    /// tracked when following links, the only way to meet one twice.
    fn first_visit(&self, dev: u64, ino: u64) -> bool {
        !self.opts.follow
            || self
                .visited
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert((dev, ino))
    }
}

/// Walks `roots` in order; files are handed to visitors made by `make`
/// (one per thread). Arguments that do not exist are skipped and the first
/// is returned in [`Walked::missing`], after the others were walked (like
/// `ls a b`).
pub fn walk<V: Visitor>(
    roots: &[PathBuf],
    opts: WalkOptions,
    make: &(dyn Fn() -> V + Sync),
) -> Result<Walked<V>, CacheError> {
    let shared = Shared {
        queue: Mutex::new(Queue {
            jobs: Vec::new(),
            active: 0,
            interrupted: false,
        }),
        wake: Condvar::new(),
        visited: Mutex::new(HashSet::new()),
        opts,
    };
    let mut main = make();
    let mut notes = Notes::default();
    let mut missing = None;
    let mut results: Vec<(Key, V::Out)> = Vec::new();
    let mut jobs = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        // One open per argument, not a stat and then an open: with tens of
        // thousands of file arguments (xargs) the path walk is the cost.
        let fd = match rustix::fs::open(root, FILE_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => {
                match e {
                    Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::NAMETOOLONG => {
                        missing.get_or_insert_with(|| CacheError::io(root, e.into()));
                    }
                    Errno::ACCESS | Errno::PERM => {
                        notes.add(NoteKind::PermissionDenied, root, String::new)
                    }
                    Errno::NXIO => notes.add(NoteKind::SpecialFile, root, String::new),
                    _ => notes.add(NoteKind::Failed, root, || {
                        std::io::Error::from(e).to_string()
                    }),
                }
                continue;
            }
        };
        let st = match rustix::fs::fstat(&fd) {
            Ok(st) => st,
            Err(e) => {
                notes.add(NoteKind::Failed, root, || {
                    std::io::Error::from(e).to_string()
                });
                continue;
            }
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                shared.first_visit(st.st_dev, st.st_ino);
                jobs.push(Job {
                    root: i,
                    dir: root.clone(),
                    depth: 0,
                });
            }
            FileType::RegularFile => {
                let mut out = main.begin();
                main.opened(fd, root, &mut out, &mut notes);
                if !V::is_empty(&out) {
                    results.push(((i, root.clone()), out));
                }
            }
            _ => notes.add(NoteKind::SpecialFile, root, String::new),
        }
    }
    let mut visitors = vec![main];
    let mut dirs = 0;
    if !jobs.is_empty() {
        // LIFO: depth-first keeps the stack (and memory) small.
        jobs.reverse();
        shared.lock().jobs = jobs;
        let threads = opts.threads.max(1);
        let done: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let v = make();
                    let sh = &shared;
                    s.spawn(move || work(sh, v))
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        for d in done {
            let (v, r, n, d) = d.map_err(|_| CacheError::usage("a walker thread panicked"))?;
            visitors.push(v);
            results.extend(r);
            notes.merge(n);
            dirs += d;
        }
    }
    results.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let interrupted = shared.lock().interrupted;
    Ok(Walked {
        outputs: results.into_iter().map(|(_, o)| o).collect(),
        visitors,
        notes,
        dirs,
        interrupted,
        missing,
    })
}

type Done<V> = (V, Vec<(Key, <V as Visitor>::Out)>, Notes, u64);

fn work<V: Visitor>(sh: &Shared, mut v: V) -> Done<V> {
    let mut w = Worker::default();
    let mut results = Vec::new();
    let mut notes = Notes::default();
    let mut dirs = 0;
    loop {
        let job = {
            let mut q = sh.lock();
            loop {
                if iolab_guard::stop_requested() && !q.jobs.is_empty() {
                    q.jobs.clear();
                    q.interrupted = true;
                }
                if let Some(j) = q.jobs.pop() {
                    q.active += 1;
                    break Some(j);
                }
                if q.active == 0 {
                    break None;
                }
                q = sh.wake.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        let Some(job) = job else {
            sh.wake.notify_all();
            break;
        };
        dirs += 1;
        w.list(sh, &mut v, job, &mut results, &mut notes);
        let mut q = sh.lock();
        let pushed = !w.subdirs.is_empty();
        q.jobs.append(&mut w.subdirs);
        q.active -= 1;
        if pushed || q.active == 0 {
            sh.wake.notify_all();
        }
    }
    (v, results, notes, dirs)
}

/// One thread's reused buffers.
struct Worker {
    dents: Vec<MaybeUninit<u8>>,
    names: Vec<u8>,
    entries: Vec<(u32, u32, FileType)>,
    path: Vec<u8>,
    subdirs: Vec<Job>,
}

impl Default for Worker {
    fn default() -> Self {
        Worker {
            dents: vec![MaybeUninit::uninit(); 64 * 1024],
            names: Vec::with_capacity(64 * 1024),
            entries: Vec::with_capacity(1024),
            path: Vec::with_capacity(4096),
            subdirs: Vec::new(),
        }
    }
}

impl Worker {
    fn list<V: Visitor>(
        &mut self,
        sh: &Shared,
        v: &mut V,
        job: Job,
        results: &mut Vec<(Key, V::Out)>,
        notes: &mut Notes,
    ) {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(CWD, &job.dir, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => {
                let kind = if e == rustix::io::Errno::NOENT {
                    NoteKind::Vanished
                } else {
                    NoteKind::DirUnreadable
                };
                notes.add(kind, &job.dir, || std::io::Error::from(e).to_string());
                return;
            }
        };
        self.names.clear();
        self.entries.clear();
        let mut dir = RawDir::new(&fd, &mut self.dents);
        while let Some(ent) = dir.next() {
            match ent {
                Ok(e) => {
                    let n = e.file_name().to_bytes_with_nul();
                    if n == b".\0" || n == b"..\0" {
                        continue;
                    }
                    // Entries keep (offset, length) of their name as u32s;
                    // a directory with 4 GiB of names stops listing there.
                    match (u32::try_from(self.names.len()), u32::try_from(n.len())) {
                        (Ok(start), Ok(len)) if start.checked_add(len).is_some() => {
                            self.names.extend_from_slice(n);
                            self.entries.push((start, len, e.file_type()));
                        }
                        _ => {
                            notes.add(NoteKind::DirUnreadable, &job.dir, || {
                                format!("its names run past {} bytes: listed up to there", u32::MAX)
                            });
                            break;
                        }
                    }
                }
                Err(e) => {
                    notes.add(NoteKind::DirUnreadable, &job.dir, || {
                        std::io::Error::from(e).to_string()
                    });
                    break;
                }
            }
        }
        let names = &self.names;
        let name_of = |&(s, l, _): &(u32, u32, FileType)| &names[s as usize..(s + l) as usize];
        self.entries
            .sort_unstable_by(|a, b| name_of(a).cmp(name_of(b)));

        self.path.clear();
        self.path.extend_from_slice(job.dir.as_os_str().as_bytes());
        if self.path.last() != Some(&b'/') {
            self.path.push(b'/');
        }
        let base = self.path.len();
        let mut out = v.begin();
        for &(s, l, ty) in &self.entries {
            let bytes = &self.names[s as usize..(s + l) as usize];
            let Ok(name) = CStr::from_bytes_with_nul(bytes) else {
                continue;
            };
            self.path.truncate(base);
            self.path.extend_from_slice(&bytes[..bytes.len() - 1]);
            let path = Path::new(OsStr::from_bytes(&self.path));
            let at = fd.as_fd();
            let ty = if ty == FileType::Unknown {
                match rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => FileType::from_raw_mode(st.st_mode),
                    Err(_) => {
                        notes.add(NoteKind::Vanished, path, String::new);
                        continue;
                    }
                }
            } else {
                ty
            };
            match ty {
                FileType::RegularFile => v.file(at, name, path, &mut out, notes),
                FileType::Directory => {
                    if !sh.opts.recursive {
                        notes.add(NoteKind::SubdirNotWalked, path, String::new);
                    } else if !sh.opts.follow {
                        self.subdirs.push(Job {
                            root: job.root,
                            dir: path.to_path_buf(),
                            depth: job.depth + 1,
                        });
                    } else {
                        match rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW) {
                            Ok(st) if sh.first_visit(st.st_dev, st.st_ino) => {
                                self.subdirs.push(Job {
                                    root: job.root,
                                    dir: path.to_path_buf(),
                                    depth: job.depth + 1,
                                })
                            }
                            Ok(_) => notes.add(NoteKind::AlreadyVisited, path, String::new),
                            Err(_) => notes.add(NoteKind::Vanished, path, String::new),
                        }
                    }
                }
                FileType::Symlink if !sh.opts.follow => {
                    notes.add(NoteKind::SymlinkNotFollowed, path, String::new)
                }
                FileType::Symlink => match rustix::fs::statat(at, name, AtFlags::empty()) {
                    Err(_) => notes.add(NoteKind::DanglingSymlink, path, String::new),
                    Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                        FileType::RegularFile => v.file(at, name, path, &mut out, notes),
                        FileType::Directory if !sh.opts.recursive => {
                            notes.add(NoteKind::SubdirNotWalked, path, String::new)
                        }
                        FileType::Directory if sh.first_visit(st.st_dev, st.st_ino) => {
                            self.subdirs.push(Job {
                                root: job.root,
                                dir: path.to_path_buf(),
                                depth: job.depth + 1,
                            })
                        }
                        FileType::Directory => {
                            notes.add(NoteKind::AlreadyVisited, path, String::new)
                        }
                        _ => notes.add(NoteKind::SpecialFile, path, String::new),
                    },
                },
                _ => notes.add(NoteKind::SpecialFile, path, String::new),
            }
        }
        if !V::is_empty(&out) {
            results.push(((job.root, job.dir), out));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Collects paths.
    struct Paths;
    impl Visitor for Paths {
        type Out = Vec<PathBuf>;
        fn begin(&mut self) -> Vec<PathBuf> {
            Vec::new()
        }
        fn file(
            &mut self,
            _: BorrowedFd<'_>,
            _: &CStr,
            p: &Path,
            out: &mut Vec<PathBuf>,
            _: &mut Notes,
        ) {
            out.push(p.to_path_buf());
        }
        fn opened(&mut self, _: OwnedFd, p: &Path, out: &mut Vec<PathBuf>, _: &mut Notes) {
            out.push(p.to_path_buf());
        }
        fn is_empty(out: &Vec<PathBuf>) -> bool {
            out.is_empty()
        }
    }

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        std::fs::create_dir_all(p.join("a-z")).unwrap();
        for f in ["top", "a/one", "a/b/two", "a-z/three", "a/b/zz"] {
            std::fs::write(p.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink(p.join("a"), p.join("link-to-a")).unwrap();
        std::os::unix::fs::symlink(p, p.join("a/b/loop")).unwrap();
        d
    }

    fn run(root: &Path, recursive: bool, follow: bool, threads: usize) -> (Vec<String>, Notes) {
        let opts = WalkOptions {
            recursive,
            follow,
            threads,
        };
        let w = walk(&[root.to_path_buf()], opts, &|| Paths).unwrap();
        let names = w
            .outputs
            .into_iter()
            .flatten()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        (names, w.notes)
    }

    #[test]
    fn recursive_walk_is_ordered_and_does_not_follow_links() {
        let d = tree();
        for threads in [1, 4] {
            let (names, notes) = run(d.path(), true, false, threads);
            assert_eq!(names, ["top", "a/one", "a/b/two", "a/b/zz", "a-z/three"]);
            assert_eq!(notes.count(NoteKind::SymlinkNotFollowed), 2);
        }
    }

    #[test]
    fn following_links_visits_each_directory_once() {
        let d = tree();
        let (names, notes) = run(d.path(), true, true, 2);
        assert_eq!(names.len(), 5, "{names:?}");
        assert_eq!(
            notes.count(NoteKind::AlreadyVisited),
            2,
            "{:?}",
            notes.sentences()
        );
    }

    #[test]
    fn without_recursion_only_the_top_level() {
        let d = tree();
        let (names, notes) = run(d.path(), false, false, 2);
        assert_eq!(names, ["top"]);
        assert_eq!(notes.count(NoteKind::SubdirNotWalked), 2);
    }

    #[test]
    fn missing_root_is_reported_after_the_others() {
        let d = tree();
        let opts = WalkOptions {
            recursive: true,
            follow: false,
            threads: 1,
        };
        let roots = [PathBuf::from("/nonexistent/x"), d.path().join("top")];
        let w = walk(&roots, opts, &|| Paths).unwrap();
        assert_eq!(w.outputs.concat(), [d.path().join("top")]);
        let e = w.missing.unwrap();
        assert!(e.to_string().contains("/nonexistent/x"));
        assert!(iolab_sys::is_usage(&e));
    }
}
