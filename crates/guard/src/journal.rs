//! The journal file: JSON lines, one per event, fsynced before the change it
//! describes is made. Its owner holds an exclusive flock on it for its whole
//! life, so "stale" means "lockable": a SIGKILLed owner's lock is released
//! by the kernel, and pid reuse cannot fool the check.
//!
//! ```text
//! {"op":"begin","pid":812,"start":99121,"cmd":"iolab lab up","unix_time":1790000000}
//! {"op":"change","seq":1,"change":{"kind":"attr","path":"/sys/block/loop3/queue/scheduler","old":"none"}}
//! {"op":"update","seq":2,"change":{"kind":"loop","backing":"/var/tmp/iolab/a.img","dev":"loop3"}}
//! {"op":"undone","seq":1}
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::change::Change;
use crate::GuardError;

/// One journal line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Line {
    /// First line: who owns the journal.
    Begin {
        /// Owner pid.
        pid: i32,
        /// Owner start time (clock ticks since boot).
        start: u64,
        /// Owner command line, for messages.
        cmd: String,
        /// Wall-clock creation time.
        unix_time: u64,
    },
    /// A change about to be made.
    Change {
        /// Sequence number within the journal.
        seq: u64,
        /// The change.
        change: Change,
    },
    /// More is known about an earlier change (e.g. the loop device name).
    Update {
        /// Which change.
        seq: u64,
        /// Its new description.
        change: Change,
    },
    /// The change was undone (or forgotten: the resource is gone anyway).
    Undone {
        /// Which change.
        seq: u64,
    },
}

/// An open, locked journal.
#[derive(Debug)]
pub struct Journal {
    pub(crate) path: PathBuf,
    file: File,
    /// Changes not yet undone, in the order they were made.
    pub(crate) pending: Vec<(u64, Change)>,
    next_seq: u64,
    /// The owner line, when the journal was read back from disk.
    pub(crate) owner: Option<(i32, String)>,
}

fn flock(file: &File, path: &Path) -> Result<bool, GuardError> {
    use rustix::fs::{flock, FlockOperation};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(GuardError::io(path, e.into())),
    }
}

impl Journal {
    /// Creates a new journal in `dir`, locked by this process. It is created
    /// under a temporary name and renamed once locked, so a concurrent
    /// recovery never mistakes it for a stale one.
    pub fn create(dir: &Path) -> Result<Journal, GuardError> {
        std::fs::create_dir_all(dir).map_err(|e| GuardError::io(dir, e))?;
        let (pid, start) = iolab_sys::process::me();
        let n = crate::next_instance();
        let tmp = dir.join(format!(".new-{pid}-{n}"));
        let path = dir.join(format!("journal-{pid}-{start}-{n}.jsonl"));
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .read(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| GuardError::io(&tmp, e))?;
        flock(&file, &tmp)?;
        std::fs::rename(&tmp, &path).map_err(|e| GuardError::io(&path, e))?;
        let mut j = Journal {
            path,
            file,
            pending: Vec::new(),
            next_seq: 1,
            owner: None,
        };
        let cmd: Vec<String> = std::env::args().collect();
        let unix_time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        j.write(&Line::Begin {
            pid,
            start,
            cmd: cmd.join(" "),
            unix_time,
        })?;
        Ok(j)
    }

    /// Opens an existing journal if nobody holds it (its owner is gone).
    /// Returns `None` when a live process owns it.
    pub fn adopt(path: &Path) -> Result<Option<Journal>, GuardError> {
        let file = OpenOptions::new()
            .append(true)
            .read(true)
            .open(path)
            .map_err(|e| GuardError::io(path, e))?;
        if !flock(&file, path)? {
            return Ok(None);
        }
        let text = std::fs::read_to_string(path).map_err(|e| GuardError::io(path, e))?;
        let (pending, next_seq, owner) = replay(path, &text)?;
        Ok(Some(Journal {
            path: path.to_path_buf(),
            file,
            pending,
            next_seq,
            owner,
        }))
    }

    fn write(&mut self, line: &Line) -> Result<(), GuardError> {
        let mut text = serde_json::to_string(line).map_err(|e| GuardError::Journal {
            path: self.path.clone(),
            line: 0,
            why: e.to_string(),
        })?;
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| GuardError::io(&self.path, e))
    }

    /// Journals a change before it is made; returns its sequence number.
    pub fn record(&mut self, change: Change) -> Result<u64, GuardError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.write(&Line::Change {
            seq,
            change: change.clone(),
        })?;
        self.pending.push((seq, change));
        Ok(seq)
    }

    /// Replaces the description of change `seq`.
    pub fn update(&mut self, seq: u64, change: Change) -> Result<(), GuardError> {
        self.write(&Line::Update {
            seq,
            change: change.clone(),
        })?;
        if let Some(slot) = self.pending.iter_mut().find(|(s, _)| *s == seq) {
            slot.1 = change;
        }
        Ok(())
    }

    /// Marks change `seq` as no longer needing undo.
    pub fn mark_undone(&mut self, seq: u64) -> Result<(), GuardError> {
        self.write(&Line::Undone { seq })?;
        self.pending.retain(|(s, _)| *s != seq);
        Ok(())
    }

    /// Undoes every pending change, newest first. Keeps going past failures
    /// (one stuck mount must not leave a scheduler changed) and returns one
    /// line per change: `Ok(what was done)` or `Err(why it failed)`. The file
    /// is deleted when nothing is left to undo.
    pub fn undo_all(&mut self) -> Vec<Result<String, String>> {
        let report = self.undo_since(0);
        if report.iter().all(Result::is_ok) {
            let _ = std::fs::remove_file(&self.path);
        }
        report
    }

    /// The sequence number the next change will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Undoes the pending changes numbered `from` or later, newest first,
    /// as [`Journal::undo_all`] does; earlier ones stay pending.
    pub fn undo_since(&mut self, from: u64) -> Vec<Result<String, String>> {
        let mut report = Vec::new();
        while let Some((seq, change)) = self.pending.last().cloned() {
            if seq < from {
                break;
            }
            match change.undo() {
                Ok(msg) => {
                    report.push(Ok(msg));
                    if let Err(e) = self.mark_undone(seq) {
                        report.push(Err(e.to_string()));
                        self.pending.pop();
                    }
                }
                Err(e) => {
                    report.push(Err(format!("could not undo {change:?}: {e}")));
                    self.pending.pop();
                }
            }
        }
        report
    }

    /// Moves this journal to `dest` (a named, ownerless journal such as a
    /// lab's) and gives up ownership.
    pub fn persist(self, dest: &Path) -> Result<(), GuardError> {
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| GuardError::io(parent, e))?;
        }
        std::fs::rename(&self.path, dest).map_err(|e| GuardError::io(dest, e))
    }
}

type Replayed = (Vec<(u64, Change)>, u64, Option<(i32, String)>);

/// Rebuilds the pending changes from journal text. A torn last line (the
/// owner died mid-write) is ignored: its change was not yet made.
pub fn replay(path: &Path, text: &str) -> Result<Replayed, GuardError> {
    let mut pending: Vec<(u64, Change)> = Vec::new();
    let mut max_seq = 0;
    let mut owner = None;
    let lines: Vec<&str> = text.lines().collect();
    for (i, raw) in lines.iter().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let line: Line = match serde_json::from_str(raw) {
            Ok(l) => l,
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => {
                return Err(GuardError::Journal {
                    path: path.to_path_buf(),
                    line: i + 1,
                    why: e.to_string(),
                })
            }
        };
        match line {
            Line::Begin { pid, cmd, .. } => owner = Some((pid, cmd)),
            Line::Change { seq, change } => {
                max_seq = max_seq.max(seq);
                pending.push((seq, change));
            }
            Line::Update { seq, change } => {
                if let Some(slot) = pending.iter_mut().find(|(s, _)| *s == seq) {
                    slot.1 = change;
                }
            }
            Line::Undone { seq } => pending.retain(|(s, _)| *s != seq),
        }
    }
    Ok((pending, max_seq + 1, owner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_applies_updates_and_undone_and_tolerates_torn_tail() {
        let text = r#"{"op":"begin","pid":7,"start":1,"cmd":"iolab x","unix_time":0}
{"op":"change","seq":1,"change":{"kind":"dir","path":"/a"}}
{"op":"change","seq":2,"change":{"kind":"loop","backing":"/b","dev":null}}
{"op":"update","seq":2,"change":{"kind":"loop","backing":"/b","dev":"loop9"}}
{"op":"undone","seq":1}
{"op":"change","seq":3,"chan"#;
        let (pending, next, owner) = replay(Path::new("j"), text).unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(
            pending[0].1,
            Change::Loop {
                backing: "/b".into(),
                dev: Some("loop9".into()),
                queue: Vec::new(),
            }
        );
        assert_eq!(next, 3);
        assert_eq!(owner.unwrap().0, 7);
    }

    #[test]
    fn damaged_middle_line_is_an_error() {
        let text = "{\"op\":\"begin\"\n{\"op\":\"undone\",\"seq\":1}\n";
        assert!(matches!(
            replay(Path::new("j"), text),
            Err(GuardError::Journal { line: 1, .. })
        ));
    }

    #[test]
    fn live_journal_cannot_be_adopted_until_released() {
        let d = tempfile::tempdir().unwrap();
        let mut j = Journal::create(d.path()).unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        j.record(Change::File { path: f.clone() }).unwrap();
        let path = j.path.clone();
        assert!(Journal::adopt(&path).unwrap().is_none());
        drop(j); // simulates the owner dying: the kernel drops the flock
        let mut adopted = Journal::adopt(&path).unwrap().unwrap();
        assert_eq!(adopted.pending.len(), 1);
        let report = adopted.undo_all();
        assert!(report.iter().all(Result::is_ok), "{report:?}");
        assert!(!f.exists());
        assert!(!path.exists());
    }
}
