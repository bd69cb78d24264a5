//! Page events gathered per file: which pages each file had added, in the
//! order files were first touched, merged into runs of pages.

use std::collections::{BTreeSet, HashMap};

use crate::event::{FileKey, PageEvent};

/// A run of pages of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRun {
    /// First page index.
    pub first: u64,
    /// Number of pages.
    pub count: u64,
}

impl PageRun {
    fn end(&self) -> u64 {
        self.first.saturating_add(self.count)
    }
}

/// What one file had added to the page cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePages {
    /// The file.
    pub file: FileKey,
    /// When its first page was added (CLOCK_MONOTONIC ns).
    pub first_ns: u64,
    /// The task that added its first page.
    pub first_pid: i32,
    /// Page runs, sorted and merged (touching runs joined).
    pub runs: Vec<PageRun>,
    /// Folios added (events), before merging.
    pub events: u64,
}

impl FilePages {
    /// Pages in all runs.
    pub fn pages(&self) -> u64 {
        self.runs.iter().map(|r| r.count).sum()
    }
}

/// Gathers [`PageEvent`]s; cheap per event (sequential reads extend the
/// last run in place), merged once at the end.
#[derive(Debug, Default)]
pub struct PageLog {
    index: HashMap<FileKey, usize>,
    files: Vec<FilePages>,
    pids: BTreeSet<i32>,
    events: u64,
}

impl PageLog {
    /// An empty log.
    pub fn new() -> PageLog {
        PageLog::default()
    }

    /// Adds one event. Events should arrive in time order (the trace
    /// session delivers them so) for "first access" to mean what it says.
    pub fn add(&mut self, e: &PageEvent) {
        self.events += 1;
        self.pids.insert(e.pid);
        let i = *self.index.entry(e.file).or_insert_with(|| {
            self.files.push(FilePages {
                file: e.file,
                first_ns: e.ts_ns,
                first_pid: e.pid,
                runs: Vec::new(),
                events: 0,
            });
            self.files.len() - 1
        });
        let f = &mut self.files[i];
        f.events += 1;
        match f.runs.last_mut() {
            Some(last) if last.end() == e.index => last.count += e.pages,
            _ => f.runs.push(PageRun {
                first: e.index,
                count: e.pages,
            }),
        }
    }

    /// Tasks seen adding pages.
    pub fn pids(&self) -> &BTreeSet<i32> {
        &self.pids
    }

    /// Events added.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// True when a page of `file` was seen.
    pub fn contains(&self, file: &FileKey) -> bool {
        self.index.contains_key(file)
    }

    /// The files in order of first access, each with merged runs.
    pub fn into_files(self) -> Vec<FilePages> {
        let mut files = self.files;
        for f in &mut files {
            merge(&mut f.runs);
        }
        files
    }
}

/// Sorts runs and joins overlapping or touching ones.
fn merge(runs: &mut Vec<PageRun>) {
    runs.sort_unstable_by_key(|r| r.first);
    let mut out: Vec<PageRun> = Vec::with_capacity(runs.len());
    for r in runs.drain(..) {
        match out.last_mut() {
            Some(last) if r.first <= last.end() => {
                last.count = last.end().max(r.end()) - last.first;
            }
            _ => out.push(r),
        }
    }
    *runs = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::DevNo;

    fn ev(ts: u64, pid: i32, ino: u64, index: u64, pages: u64) -> PageEvent {
        PageEvent {
            ts_ns: ts,
            pid,
            file: FileKey {
                dev: DevNo { major: 7, minor: 1 },
                ino,
            },
            index,
            pages,
        }
    }

    #[test]
    fn files_keep_first_access_order_and_runs_merge() {
        let mut log = PageLog::new();
        for e in [
            ev(1, 10, 5, 8, 1),
            ev(2, 10, 3, 0, 4),
            ev(3, 11, 5, 9, 1),
            ev(4, 11, 5, 2, 2),
            ev(5, 10, 3, 4, 4),
            ev(6, 10, 5, 3, 1),
            ev(7, 10, 5, 0, 1),
        ] {
            log.add(&e);
        }
        assert_eq!(log.events(), 7);
        assert_eq!(log.pids().iter().copied().collect::<Vec<_>>(), [10, 11]);
        let files = log.into_files();
        assert_eq!(files.iter().map(|f| f.file.ino).collect::<Vec<_>>(), [5, 3]);
        assert_eq!(files[0].first_pid, 10);
        assert_eq!(
            files[0].runs,
            [
                PageRun { first: 0, count: 1 },
                PageRun { first: 2, count: 2 },
                PageRun { first: 8, count: 2 }
            ]
        );
        assert_eq!(files[1].runs, [PageRun { first: 0, count: 8 }]);
        assert_eq!(files[1].pages(), 8);
    }

    #[test]
    fn overlapping_large_folios_count_once() {
        let mut log = PageLog::new();
        log.add(&ev(1, 1, 1, 0, 16));
        log.add(&ev(2, 1, 1, 4, 4));
        log.add(&ev(3, 1, 1, 14, 4));
        let f = log.into_files();
        assert_eq!(
            f[0].runs,
            [PageRun {
                first: 0,
                count: 18
            }]
        );
    }
}
