//! A finished recording, named and merged: per file the byte ranges it
//! brought into the page cache, files in order of first access, as a
//! prefetch list (seed 001's `FILE off:len,...`) or JSON.

use std::fmt::Write as _;
use std::path::PathBuf;

use iolab_cache::prefetch::{ListEntry, PrefetchList};
use iolab_cache::ranges::ByteRange;
use serde::Serialize;

use crate::candidates::Source;
use crate::event::FileKey;
use crate::pages::FilePages;
use crate::recorder::Raw;
use crate::resolve::{resolve, Resolution, ResolveOptions};

/// One file the recorded tasks read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedFile {
    /// Path (`None` when it could not be named; see `why`).
    pub file: Option<PathBuf>,
    /// Device of its filesystem, `major:minor`.
    pub dev: String,
    /// Inode number.
    pub ino: u64,
    /// First page added, ms after the recording started.
    pub first_ms: f64,
    /// Task that added its first page.
    pub pid: i32,
    /// Pages added.
    pub pages: u64,
    /// Bytes in `ranges` (pages clipped to the file's size).
    pub bytes: u64,
    /// Byte ranges, sorted and merged.
    pub ranges: Vec<ByteRange>,
    /// How the path was found: `proc`, `named`, `handle` or `walk`.
    pub source: Option<Source>,
    /// Why it has no path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Everything a recording found: what `iolab record --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recording {
    /// The recorded command (empty with `--all-pids` and no command).
    pub command: Vec<String>,
    /// `pids` (the command and what it forks) or `all` (every task).
    pub mode: String,
    /// Filesystems recorded (`major:minor`); empty: all.
    pub devices: Vec<String>,
    /// Seconds recorded.
    pub duration_s: f64,
    /// The command's exit code, when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// Page-cache insertions seen.
    pub events: u64,
    /// Events the kernel dropped (the list may miss pages when non-zero).
    pub lost: u64,
    /// Tasks that added pages.
    pub pids: Vec<i32>,
    /// Page size, bytes.
    pub page_size: u64,
    /// Files in order of first access, named ones and not.
    pub files: Vec<RecordedFile>,
    /// Seconds spent naming inodes after the recording.
    pub resolve_s: f64,
}

impl Recording {
    /// Merges and names what `raw` gathered.
    pub fn build(
        raw: Raw,
        command: Vec<String>,
        mode: &str,
        devices: Vec<String>,
        status: Option<std::process::ExitStatus>,
        opts: ResolveOptions,
    ) -> Recording {
        use std::os::unix::process::ExitStatusExt;
        let page = iolab_sys::pagecache::page_size();
        let events = raw.log.events();
        let pids = raw.log.pids().iter().copied().collect();
        let files = raw.log.into_files();
        let keys: Vec<FileKey> = files.iter().map(|f| f.file).collect();
        let t0 = std::time::Instant::now();
        let names = resolve(&keys, &raw.candidates, opts);
        let resolve_s = t0.elapsed().as_secs_f64();
        let files = files
            .iter()
            .map(|f| file_of(f, names.get(&f.file), page, raw.start_ns))
            .collect();
        Recording {
            command,
            mode: mode.to_string(),
            devices,
            duration_s: raw.end_ns.saturating_sub(raw.start_ns) as f64 / 1e9,
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            events,
            lost: raw.stats.lost,
            pids,
            page_size: page,
            files,
            resolve_s,
        }
    }

    /// The named files with their ranges, as a prefetch list.
    pub fn prefetch_list(&self) -> PrefetchList {
        PrefetchList {
            entries: self
                .files
                .iter()
                .filter(|f| !f.ranges.is_empty())
                .filter_map(|f| {
                    Some(ListEntry {
                        path: f.file.clone()?,
                        ranges: Some(f.ranges.clone()),
                    })
                })
                .collect(),
        }
    }

    /// The list text, with `#` comment lines (ignored by `iolab prefetch`)
    /// for the files that could not be named.
    pub fn list_text(&self) -> String {
        let mut s = self.prefetch_list().to_string();
        for f in self.files.iter().filter(|f| f.file.is_none()) {
            let _ = writeln!(
                s,
                "# unresolved: dev {} inode {} ({} pages): {}",
                f.dev,
                f.ino,
                f.pages,
                f.why.as_deref().unwrap_or("")
            );
        }
        s
    }

    /// One line for the terminal: what was recorded and lost.
    pub fn summary(&self) -> String {
        let named: Vec<&RecordedFile> = self.files.iter().filter(|f| f.file.is_some()).collect();
        let bytes: u64 = named.iter().map(|f| f.bytes).sum();
        let ranges: usize = named.iter().map(|f| f.ranges.len()).sum();
        let missing = self.files.len() - named.len();
        let mut s = format!(
            "recorded {} files, {} in {} ranges from {} tasks in {:.2} s ({} events, {} lost)",
            named.len(),
            iolab_sys::units::format_bytes(bytes),
            ranges,
            self.pids.len(),
            self.duration_s,
            self.events,
            self.lost
        );
        if missing > 0 {
            let pages: u64 = self
                .files
                .iter()
                .filter(|f| f.file.is_none())
                .map(|f| f.pages)
                .sum();
            let _ = write!(s, "; {missing} files ({pages} pages) could not be named");
        }
        s
    }
}

fn file_of(f: &FilePages, name: Option<&Resolution>, page: u64, start_ns: u64) -> RecordedFile {
    let (file, size, source, why) = match name {
        Some(Resolution::Found { path, size, source }) => {
            (Some(path.clone()), *size, Some(*source), None)
        }
        Some(Resolution::Missing { why }) => (None, u64::MAX, None, Some(why.clone())),
        None => (None, u64::MAX, None, Some("not resolved".into())),
    };
    let ranges: Vec<ByteRange> = f
        .runs
        .iter()
        .filter_map(|r| {
            ByteRange {
                offset: r.first.saturating_mul(page),
                len: r.count.saturating_mul(page),
            }
            .clip(size)
        })
        .collect();
    RecordedFile {
        file,
        dev: f.file.dev.to_string(),
        ino: f.file.ino,
        first_ms: f.first_ns.saturating_sub(start_ns) as f64 / 1e6,
        pid: f.first_pid,
        pages: f.pages(),
        bytes: ranges.iter().map(|r| r.len).sum(),
        ranges,
        source,
        why,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::event::DevNo;
    use crate::pages::PageRun;

    fn pages(ino: u64, runs: &[(u64, u64)]) -> FilePages {
        FilePages {
            file: FileKey {
                dev: DevNo { major: 7, minor: 0 },
                ino,
            },
            first_ns: 1_500_000,
            first_pid: 9,
            runs: runs
                .iter()
                .map(|&(first, count)| PageRun { first, count })
                .collect(),
            events: 1,
        }
    }

    #[test]
    fn ranges_are_clipped_to_the_file_and_missing_files_are_comments() {
        let found = Resolution::Found {
            path: PathBuf::from("/a b/app.apk"),
            size: 3 * 4096 + 100,
            source: Source::Walk,
        };
        let f = file_of(&pages(1, &[(0, 2), (3, 4)]), Some(&found), 4096, 500_000);
        assert_eq!(
            f.ranges,
            [
                ByteRange {
                    offset: 0,
                    len: 8192
                },
                ByteRange {
                    offset: 12288,
                    len: 100
                }
            ]
        );
        assert_eq!((f.bytes, f.pages, f.first_ms), (8292, 6, 1.0));
        let missing = Resolution::Missing {
            why: "deleted".into(),
        };
        let g = file_of(&pages(2, &[(0, 1)]), Some(&missing), 4096, 0);
        let rec = Recording {
            command: vec![],
            mode: "pids".into(),
            devices: vec![],
            duration_s: 1.0,
            exit_code: Some(0),
            signal: None,
            events: 2,
            lost: 0,
            pids: vec![9],
            page_size: 4096,
            files: vec![f, g],
            resolve_s: 0.0,
        };
        let text = rec.list_text();
        assert_eq!(
            text,
            "/a b/app.apk 0:8192,12288:100\n# unresolved: dev 7:0 inode 2 (1 pages): deleted\n"
        );
        let back = PrefetchList::parse(&text).unwrap();
        assert_eq!(back, rec.prefetch_list());
        assert!(rec
            .summary()
            .contains("1 files (1 pages) could not be named"));
    }
}
