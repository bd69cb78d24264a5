//! `iolab cache`: measure (and optionally evict or read in) every file under
//! the given paths, rendering each directory's lines in the worker thread
//! that measured it, so formatting runs in parallel too.

use std::collections::HashSet;
use std::ffi::CStr;
use std::num::NonZeroU64;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{Advice, FileType, Mode};

use crate::inspect::{Measured, Probe, Unmeasurable};
use crate::notes::{NoteKind, Notes};
use crate::prefetch::fetch;
use crate::ranges::{self, ByteRange};
use crate::render::{self, Layout};
use crate::walk::{self, Visitor, WalkOptions};
use crate::CacheError;

/// What to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// One line per file with a bar `columns` wide terminals can show; with
    /// `map`, the full page map below each line (`-v`).
    Table {
        /// Terminal width in columns.
        columns: usize,
        /// Print every page (`-v`).
        map: bool,
    },
    /// `FILE off:len,off:len,...` per file with cached pages (`-r`).
    Ranges,
    /// One JSON document; `ranges`/`map` add those per file.
    Json {
        /// List every file (else totals only).
        files: bool,
        /// Add `ranges` (`[offset, length]` byte pairs).
        ranges: bool,
        /// Add `map` (one character per page).
        map: bool,
    },
    /// Totals only.
    Summary,
}

/// What to do to each file besides measuring it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Only measure.
    Inspect,
    /// Drop the file's clean, unmapped pages (POSIX_FADV_DONTNEED);
    /// `sync` writes dirty pages back first (fdatasync) so they can go too.
    Evict {
        /// fdatasync before evicting.
        sync: bool,
    },
    /// Read the whole file into the page cache.
    Touch,
}

/// A scan request.
#[derive(Debug, Clone, Copy)]
pub struct ScanOptions {
    /// What to print.
    pub output: Output,
    /// What to do to each file.
    pub action: Action,
    /// How to walk directories.
    pub walk: WalkOptions,
}

impl ScanOptions {
    fn wants_map(&self) -> bool {
        match self.output {
            Output::Table { .. } | Output::Ranges => true,
            Output::Json { files, ranges, map } => files && (ranges || map),
            Output::Summary => false,
        }
    }
}

/// Sums over every file measured (hard links counted once).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Totals {
    /// Regular files measured.
    pub files: u64,
    /// Directories listed.
    pub dirs: u64,
    /// Bytes in those files.
    pub size: u64,
    /// Pages they span.
    pub total_pages: u64,
    /// Pages in the page cache (fincore's PAGES).
    pub pages: u64,
    /// Bytes in the page cache, whole pages (fincore's RES).
    pub res: u64,
    /// `pages` / `total_pages` in percent.
    pub percent: f64,
    /// Dirty pages (cachestat only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dirty_pages: Option<u64>,
    /// Pages under writeback (cachestat only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writeback_pages: Option<u64>,
    /// Pages evicted since the files were opened by anyone (cachestat only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted_pages: Option<u64>,
    /// Evicted pages that would count as refaults (cachestat only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recently_evicted_pages: Option<u64>,
    /// Cached pages before `--evict`/`--touch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_pages: Option<u64>,
    /// Files and directories left out (see `skipped` and `notes`).
    pub skipped: u64,
}

impl Totals {
    fn add(&mut self, size: u64, page: u64, m: &Measured, before: Option<u64>) {
        self.files += 1;
        self.size += size;
        self.total_pages += m.total_pages;
        self.pages += m.resident;
        self.res += m.resident * page;
        if let Some(s) = m.stat {
            *self.dirty_pages.get_or_insert(0) += s.dirty;
            *self.writeback_pages.get_or_insert(0) += s.writeback;
            *self.evicted_pages.get_or_insert(0) += s.evicted;
            *self.recently_evicted_pages.get_or_insert(0) += s.recently_evicted;
        }
        if let Some(b) = before {
            *self.before_pages.get_or_insert(0) += b;
        }
    }

    fn merge(&mut self, o: &Totals) {
        fn add(a: &mut Option<u64>, b: Option<u64>) {
            if let Some(b) = b {
                *a.get_or_insert(0) += b;
            }
        }
        self.files += o.files;
        self.size += o.size;
        self.total_pages += o.total_pages;
        self.pages += o.pages;
        self.res += o.res;
        add(&mut self.dirty_pages, o.dirty_pages);
        add(&mut self.writeback_pages, o.writeback_pages);
        add(&mut self.evicted_pages, o.evicted_pages);
        add(&mut self.recently_evicted_pages, o.recently_evicted_pages);
        add(&mut self.before_pages, o.before_pages);
    }
}

/// What a scan found: rendered per-directory output in order, totals and
/// notes.
#[derive(Debug)]
pub struct ScanResult {
    /// Rendered output, one chunk per directory, in output order.
    pub chunks: Vec<Vec<u8>>,
    /// Sums over all files.
    pub totals: Totals,
    /// What was skipped, said once per kind.
    pub notes: Notes,
    /// True when counts came from cachestat(2).
    pub cachestat: bool,
    /// True when Ctrl-C ended the walk early.
    pub interrupted: bool,
    /// The first argument that does not exist (the others were scanned).
    pub missing: Option<CacheError>,
    /// The table layout used (for the header).
    pub layout: Layout,
    /// What was done to the files.
    pub action: Action,
}

/// Scans `roots` (files or directories).
pub fn scan(roots: &[PathBuf], opts: &ScanOptions) -> Result<ScanResult, CacheError> {
    let probe = Probe::new();
    let layout = Layout::new(opts, probe.has_cachestat());
    let hardlinks = Mutex::new(HashSet::new());
    let make = || ScanVisitor {
        opts,
        layout,
        probe: Probe::new(),
        totals: Totals::default(),
        ranges: Vec::new(),
        buf: Vec::new(),
        hardlinks: &hardlinks,
    };
    let w = walk::walk(roots, opts.walk, &make)?;
    let mut totals = Totals::default();
    for v in &w.visitors {
        totals.merge(&v.totals);
    }
    totals.dirs = w.dirs;
    totals.skipped = w.notes.skipped();
    totals.percent = percent(totals.pages, totals.total_pages);
    Ok(ScanResult {
        chunks: w.outputs,
        totals,
        notes: w.notes,
        cachestat: probe.has_cachestat(),
        interrupted: w.interrupted,
        missing: w.missing,
        layout,
        action: opts.action,
    })
}

/// `part / whole` in percent (0 for an empty whole).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

struct ScanVisitor<'a> {
    opts: &'a ScanOptions,
    layout: Layout,
    probe: Probe,
    totals: Totals,
    ranges: Vec<ByteRange>,
    buf: Vec<u8>,
    hardlinks: &'a Mutex<HashSet<(u64, u64)>>,
}

/// tmpfs and ramfs magic numbers (include/uapi/linux/magic.h): their pages
/// are the only copy of the data and fadvise cannot drop them.
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

impl ScanVisitor<'_> {
    fn measure_or_note(
        &mut self,
        fd: BorrowedFd<'_>,
        size: u64,
        uid: u32,
        map: bool,
        path: &Path,
        notes: &mut Notes,
    ) -> Option<Measured> {
        match self.probe.measure(fd, size, uid, map) {
            Ok(m) => Some(m),
            Err(Unmeasurable::NotInspectable) => {
                notes.add(NoteKind::NotInspectable, path, String::new);
                None
            }
            Err(Unmeasurable::Failed(e)) => {
                notes.add(NoteKind::Failed, path, || e.to_string());
                None
            }
        }
    }

    fn act(&mut self, fd: BorrowedFd<'_>, size: u64, path: &Path, notes: &mut Notes) {
        match self.opts.action {
            Action::Inspect => {}
            Action::Evict { sync } => {
                if sync {
                    if let Err(e) = rustix::fs::fdatasync(fd) {
                        notes.add(NoteKind::Failed, path, || format!("fdatasync: {e}"));
                    }
                }
                if let Ok(fs) = rustix::fs::fstatfs(fd) {
                    #[allow(clippy::unnecessary_cast)] // c_long on some targets
                    let magic = fs.f_type as i64;
                    if magic == TMPFS_MAGIC || magic == RAMFS_MAGIC {
                        notes.add(NoteKind::NotEvictable, path, String::new);
                    }
                }
                if let Err(e) = rustix::fs::fadvise(fd, 0, None::<NonZeroU64>, Advice::DontNeed) {
                    notes.add(NoteKind::Failed, path, || format!("fadvise: {e}"));
                }
            }
            Action::Touch => {
                if let Err(e) = fetch::read_range(fd, 0, size, &mut self.buf) {
                    notes.add(NoteKind::Failed, path, || format!("read: {e}"));
                }
            }
        }
    }
}

impl Visitor for ScanVisitor<'_> {
    type Out = Vec<u8>;

    fn begin(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn is_empty(out: &Vec<u8>) -> bool {
        out.is_empty()
    }

    fn file(
        &mut self,
        at: BorrowedFd<'_>,
        name: &CStr,
        path: &Path,
        out: &mut Vec<u8>,
        notes: &mut Notes,
    ) {
        match rustix::fs::openat(at, name, walk::FILE_FLAGS, Mode::empty()) {
            Ok(fd) => self.visit(fd.as_fd(), path, out, notes),
            Err(e) => {
                let kind = match e {
                    rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => {
                        NoteKind::PermissionDenied
                    }
                    rustix::io::Errno::NOENT => NoteKind::Vanished,
                    _ => NoteKind::Failed,
                };
                notes.add(kind, path, || std::io::Error::from(e).to_string());
            }
        }
    }

    fn opened(&mut self, fd: OwnedFd, path: &Path, out: &mut Vec<u8>, notes: &mut Notes) {
        self.visit(fd.as_fd(), path, out, notes)
    }
}

impl ScanVisitor<'_> {
    /// Measures (and acts on) one open file and renders its output.
    fn visit(&mut self, fd: BorrowedFd<'_>, path: &Path, out: &mut Vec<u8>, notes: &mut Notes) {
        let st = match rustix::fs::fstat(fd) {
            Ok(st) => st,
            Err(e) => {
                notes.add(NoteKind::Failed, path, || {
                    std::io::Error::from(e).to_string()
                });
                return;
            }
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            notes.add(NoteKind::SpecialFile, path, String::new);
            return;
        }
        let dup = st.st_nlink > 1
            && !self
                .hardlinks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert((st.st_dev, st.st_ino));
        if dup {
            notes.add(NoteKind::HardlinkCountedOnce, path, String::new);
        }
        let size = st.st_size as u64;
        let before = if self.opts.action == Action::Inspect {
            None
        } else {
            let Some(m) = self.measure_or_note(fd, size, st.st_uid, false, path, notes) else {
                return;
            };
            Some(m.resident)
        };
        self.act(fd, size, path, notes);
        let Some(m) = self.measure_or_note(fd, size, st.st_uid, self.opts.wants_map(), path, notes)
        else {
            return;
        };
        if !dup {
            self.totals.add(size, self.probe.page_size(), &m, before);
        }
        let page = self.probe.page_size();
        let map = &self.probe.map;
        match self.opts.output {
            Output::Summary => {}
            Output::Table { map: full, .. } => {
                render::table_line(out, &self.layout, path, &m, before, map, full)
            }
            Output::Ranges => {
                if m.resident == 0 {
                    return;
                }
                if path.as_os_str().as_encoded_bytes().contains(&b'\n') {
                    notes.add(NoteKind::NewlineInName, path, String::new);
                    return;
                }
                self.ranges.clear();
                ranges::resident_ranges(map, page, size, &mut self.ranges);
                render::ranges_line(out, path, &self.ranges);
            }
            Output::Json { files: false, .. } => {}
            Output::Json {
                ranges: r,
                map: full,
                ..
            } => {
                self.ranges.clear();
                if r {
                    ranges::resident_ranges(map, page, size, &mut self.ranges);
                }
                let file = render::JsonFile {
                    path,
                    size,
                    page,
                    m: &m,
                    before,
                    ranges: r.then_some(&self.ranges[..]),
                    map: full.then_some(&map[..]),
                    dup,
                };
                render::json_file(out, &file);
            }
        }
    }
}
