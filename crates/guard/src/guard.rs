//! `Guard`: the handle through which every change to system state is made.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::change::Change;
use crate::journal::Journal;
use crate::GuardError;

/// Which blkio throttle file a limit goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttle {
    /// `blkio.throttle.read_bps_device`
    ReadBps,
    /// `blkio.throttle.write_bps_device`
    WriteBps,
    /// `blkio.throttle.read_iops_device`
    ReadIops,
    /// `blkio.throttle.write_iops_device`
    WriteIops,
}

impl Throttle {
    /// The cgroup-v1 file name.
    pub fn file_name(self) -> &'static str {
        match self {
            Throttle::ReadBps => "blkio.throttle.read_bps_device",
            Throttle::WriteBps => "blkio.throttle.write_bps_device",
            Throttle::ReadIops => "blkio.throttle.read_iops_device",
            Throttle::WriteIops => "blkio.throttle.write_iops_device",
        }
    }
}

/// Root of the cgroup-v1 blkio hierarchy.
pub const BLKIO_ROOT: &str = "/sys/fs/cgroup/blkio";

/// Token for a recorded change that may later be forgotten (see
/// [`Guard::forget`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded(pub(crate) u64);

/// Where a guard's journal stood: what was changed after it can be undone
/// on its own ([`Guard::undo_since`]), e.g. one cell's settings before the
/// next cell applies its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(u64);

#[derive(Debug)]
pub(crate) struct State {
    dir: PathBuf,
    journal: Option<Journal>,
    locks: HashMap<String, File>,
}

impl State {
    pub(crate) fn journal(&mut self) -> Result<&mut Journal, GuardError> {
        if self.journal.is_none() {
            self.journal = Some(Journal::create(&self.dir)?);
        }
        // Just created above when absent.
        self.journal
            .as_mut()
            .ok_or_else(|| GuardError::io(&self.dir, std::io::Error::other("no journal")))
    }

    fn lock(&mut self, resource: &str) -> Result<(), GuardError> {
        if self.locks.contains_key(resource) {
            return Ok(());
        }
        let dir = self.dir.join("locks");
        std::fs::create_dir_all(&dir).map_err(|e| GuardError::io(&dir, e))?;
        let path = dir.join(format!("{resource}.lock"));
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| GuardError::io(&path, e))?;
        use rustix::fs::{flock, FlockOperation};
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let holder = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
                return Err(GuardError::Busy {
                    resource: resource.to_string(),
                    holder,
                });
            }
            Err(e) => return Err(GuardError::io(&path, e.into())),
        }
        let _ = file.set_len(0);
        let _ = write!(file, "{}", std::process::id());
        self.locks.insert(resource.to_string(), file);
        Ok(())
    }

    /// Locks the change's resource and journals it; returns its sequence.
    pub(crate) fn record(&mut self, change: Change) -> Result<u64, GuardError> {
        if let Some(res) = change.resource() {
            self.lock(&res)?;
        }
        self.journal()?.record(change)
    }

    pub(crate) fn restore(&mut self) -> Vec<Result<String, String>> {
        let report = match self.journal.as_mut() {
            Some(j) => j.undo_all(),
            None => Vec::new(),
        };
        if report.iter().all(Result::is_ok) {
            self.journal = None;
        }
        self.locks.clear();
        report
    }
}

impl Drop for State {
    fn drop(&mut self) {
        for line in self.restore() {
            if let Err(e) = line {
                iolab_sys::say!("iolab: restore: {e}");
            }
        }
    }
}

/// The one place that changes system state. Each change is journaled (and
/// fsynced) before it is made and undone, newest first, when the last clone
/// of the guard is dropped: on normal return, on error and during a panic's
/// unwinding. Ctrl-C and SIGTERM are handled in `signals`; after a SIGKILL,
/// [`crate::recover_stale`] undoes the journal on the next run.
#[derive(Debug, Clone)]
pub struct Guard {
    state: Arc<Mutex<State>>,
}

impl Guard {
    /// A guard journaling under the run directory (`/run/iolab`, or
    /// `$IOLAB_RUN_DIR`). Nothing is written until the first change.
    pub fn new() -> Guard {
        Guard::in_dir(crate::run_dir())
    }

    /// A guard journaling under `dir`.
    pub fn in_dir(dir: PathBuf) -> Guard {
        let state = Arc::new(Mutex::new(State {
            dir,
            journal: None,
            locks: HashMap::new(),
        }));
        crate::signals::register(&state);
        Guard { state }
    }

    pub(crate) fn st(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock must not stop the restore.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Path of this guard's journal, once a change has been made.
    pub fn journal_path(&self) -> Option<PathBuf> {
        self.st().journal.as_ref().map(|j| j.path.clone())
    }

    /// Records a process group iolab started, so it is killed (by pgid,
    /// never by name) if iolab dies first.
    pub fn track_process_group(&self, pgid: i32) -> Result<Recorded, GuardError> {
        let start = iolab_sys::process::start_time(pgid).unwrap_or(0);
        Ok(Recorded(
            self.st().record(Change::ProcessGroup { pgid, start })?,
        ))
    }

    /// Drops a recorded change without undoing it (e.g. a process group
    /// that has exited and been reaped).
    pub fn forget(&self, r: Recorded) -> Result<(), GuardError> {
        let mut st = self.st();
        match st.journal.as_mut() {
            Some(j) => j.mark_undone(r.0),
            None => Ok(()),
        }
    }

    /// The journal's position now (see [`Mark`]).
    pub fn mark(&self) -> Result<Mark, GuardError> {
        Ok(Mark(self.st().journal()?.next_seq()))
    }

    /// Undoes every change made since `m`, newest first; earlier ones stay
    /// for the final restore. One line per change, as [`Guard::restore`].
    pub fn undo_since(&self, m: Mark) -> Vec<Result<String, String>> {
        match self.st().journal.as_mut() {
            Some(j) => j.undo_since(m.0),
            None => Vec::new(),
        }
    }

    /// Undoes every change now, newest first; returns one line per change.
    pub fn restore(&self) -> Vec<Result<String, String>> {
        self.st().restore()
    }

    /// Hands every change made so far to a named, ownerless journal (a lab
    /// that must outlive this process) in `<run dir>/<kind>/<name>.jsonl`.
    /// They are undone later by [`Guard::adopt_named`] + restore.
    pub fn persist_as(&self, kind: &str, name: &str) -> Result<PathBuf, GuardError> {
        let mut st = self.st();
        let dest = st.dir.join(kind).join(format!("{name}.jsonl"));
        if let Some(j) = st.journal.take() {
            j.persist(&dest)?;
        }
        st.locks.clear();
        Ok(dest)
    }

    /// Takes ownership of a named journal written by [`Guard::persist_as`]
    /// (dropping or restoring the guard then undoes it). `Ok(None)` when no
    /// such journal exists; `Busy` when another run holds it.
    pub fn adopt_named(kind: &str, name: &str) -> Result<Option<Guard>, GuardError> {
        Guard::adopt_named_in(crate::run_dir(), kind, name)
    }

    /// [`Guard::adopt_named`] under a custom run directory.
    pub fn adopt_named_in(
        dir: PathBuf,
        kind: &str,
        name: &str,
    ) -> Result<Option<Guard>, GuardError> {
        let path = dir.join(kind).join(format!("{name}.jsonl"));
        if !path.exists() {
            return Ok(None);
        }
        match Journal::adopt(&path)? {
            None => Err(GuardError::Busy {
                resource: format!("{kind} {name}"),
                holder: 0,
            }),
            Some(j) => {
                let g = Guard::in_dir(dir);
                g.st().journal = Some(j);
                Ok(Some(g))
            }
        }
    }
}

impl Default for Guard {
    fn default() -> Self {
        Guard::new()
    }
}

/// Reads the limit for `devno` in a throttle file (0 when there is no
/// rule; a rule whose value does not parse is an error, not "no rule").
pub fn read_throttle(file: &Path, devno: &str) -> Result<u64, GuardError> {
    let text = std::fs::read_to_string(file).map_err(|e| GuardError::io(file, e))?;
    let Some((_, v)) = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(d, _)| *d == devno)
    else {
        return Ok(0);
    };
    v.trim().parse().map_err(|_| {
        GuardError::io(
            file,
            std::io::Error::other(format!(
                "the rule for {devno} has the value {v:?}, not a number"
            )),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_sys::block::BlockDev;

    #[test]
    fn changes_are_undone_on_drop_newest_first() {
        let run = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let knob = work.path().join("knob");
        std::fs::write(&knob, "a\n").unwrap();
        let g = Guard::in_dir(run.path().to_path_buf());
        g.write_attr(&knob, "b").unwrap();
        g.write_attr(&knob, "c").unwrap();
        let nested = work.path().join("x/y");
        g.mkdir_all(&nested).unwrap();
        assert!(nested.exists());
        let journal = g.journal_path().unwrap();
        assert!(journal.exists());
        drop(g);
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "a");
        assert!(!work.path().join("x").exists());
        assert!(!journal.exists());
    }

    #[test]
    fn persisted_changes_survive_the_guard_until_adopted() {
        let run = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("lab");
        let g = Guard::in_dir(run.path().to_path_buf());
        g.mkdir_all(&dir).unwrap();
        let dest = g.persist_as("labs", "t1").unwrap();
        drop(g);
        assert!(dir.exists() && dest.exists());
        let j = Journal::adopt(&dest).unwrap().unwrap();
        assert_eq!(j.pending.len(), 1);
    }

    #[test]
    fn create_file_never_removes_a_file_it_did_not_create() {
        let run = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let theirs = work.path().join("theirs");
        std::fs::write(&theirs, "keep").unwrap();
        let g = Guard::in_dir(run.path().to_path_buf());
        assert!(g.create_file(&theirs).is_err());
        let report = g.restore();
        assert!(report.is_empty(), "{report:?}");
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "keep");
    }

    #[test]
    fn directories_holding_foreign_files_are_kept() {
        let run = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("lab");
        let g = Guard::in_dir(run.path().to_path_buf());
        g.mkdir_all(&dir).unwrap();
        std::fs::write(dir.join("mine"), "x").unwrap();
        let report = g.restore();
        assert!(report.iter().all(Result::is_ok), "{report:?}");
        assert!(dir.join("mine").exists());
    }

    #[test]
    fn queue_depth_is_set_under_none_and_restored_with_a_step() {
        let sys = tempfile::tempdir().unwrap();
        let q = sys.path().join("block/fake0/queue");
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(q.join("scheduler"), "[none] mq-deadline\n").unwrap();
        std::fs::write(q.join("nr_requests"), "128\n").unwrap();
        let dev = BlockDev::from_name_in(sys.path(), "fake0").unwrap();
        let run = tempfile::tempdir().unwrap();
        let g = Guard::in_dir(run.path().to_path_buf());
        assert_eq!(g.set_queue_depth(&dev, 4).unwrap(), 4);
        // An elevator attached afterwards is detached for the restore and
        // attached again.
        std::fs::write(q.join("scheduler"), "none [mq-deadline]\n").unwrap();
        let report = g.restore();
        assert!(report.iter().all(Result::is_ok), "{report:?}");
        assert_eq!(
            std::fs::read_to_string(q.join("nr_requests")).unwrap(),
            "128"
        );
        assert_eq!(
            std::fs::read_to_string(q.join("scheduler")).unwrap(),
            "mq-deadline"
        );
        std::fs::write(q.join("scheduler"), "none [mq-deadline]\n").unwrap();
        let g = Guard::in_dir(run.path().to_path_buf());
        assert!(iolab_sys::is_usage(
            &g.set_queue_depth(&dev, 4).unwrap_err()
        ));
    }

    #[test]
    fn leaving_a_scheduler_restores_its_tunables_too() {
        let sys = tempfile::tempdir().unwrap();
        let q = sys.path().join("block/fake1/queue");
        std::fs::create_dir_all(q.join("iosched")).unwrap();
        std::fs::write(q.join("scheduler"), "none [mq-deadline] bfq\n").unwrap();
        std::fs::write(q.join("iosched/read_expire"), "250\n").unwrap();
        let dev = BlockDev::from_name_in(sys.path(), "fake1").unwrap();
        let run = tempfile::tempdir().unwrap();
        let g = Guard::in_dir(run.path().to_path_buf());
        g.set_scheduler(&dev, "bfq").unwrap();
        // The kernel starts a fresh mq-deadline (defaults) on the way back.
        std::fs::write(q.join("iosched/read_expire"), "500\n").unwrap();
        let report = g.restore();
        assert!(report.iter().all(Result::is_ok), "{report:?}");
        assert_eq!(
            std::fs::read_to_string(q.join("scheduler")).unwrap(),
            "mq-deadline"
        );
        assert_eq!(
            std::fs::read_to_string(q.join("iosched/read_expire")).unwrap(),
            "250"
        );
    }

    #[test]
    fn throttle_rules_are_read_per_device() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("t");
        std::fs::write(&f, "7:1 100\n7:2 200\n").unwrap();
        assert_eq!(read_throttle(&f, "7:2").unwrap(), 200);
        assert_eq!(read_throttle(&f, "7:3").unwrap(), 0);
    }
}
