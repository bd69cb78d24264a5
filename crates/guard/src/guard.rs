//! `Guard`: the handle through which every change to system state is made.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

use crate::change::{write_attr, Change};
use crate::journal::Journal;
use crate::{run_cmd, GuardError};

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
pub struct Recorded(u64);

#[derive(Debug)]
pub(crate) struct State {
    dir: PathBuf,
    journal: Option<Journal>,
    locks: HashMap<String, File>,
}

impl State {
    fn journal(&mut self) -> Result<&mut Journal, GuardError> {
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
    fn record(&mut self, change: Change) -> Result<u64, GuardError> {
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
                eprintln!("iolab: restore: {e}");
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

    fn st(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock must not stop the restore.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Path of this guard's journal, once a change has been made.
    pub fn journal_path(&self) -> Option<PathBuf> {
        self.st().journal.as_ref().map(|j| j.path.clone())
    }

    /// Writes `value` to a sysfs/procfs attribute after journaling its
    /// current value. Scheduler files are read as their bracketed entry.
    pub fn write_attr(&self, path: &Path, value: &str) -> Result<(), GuardError> {
        let current = std::fs::read_to_string(path).map_err(|e| GuardError::io(path, e))?;
        let old = if path.ends_with("queue/scheduler") {
            iolab_sys::block::parse_schedulers(current.trim())
                .map(|s| s.current)
                .unwrap_or_else(|| current.trim().to_string())
        } else {
            current.trim().to_string()
        };
        let mut st = self.st();
        st.record(Change::Attr {
            path: path.to_path_buf(),
            old,
        })?;
        write_attr(path, value)
    }

    /// Switches `dev` to the I/O scheduler `name`.
    pub fn set_scheduler(&self, dev: &BlockDev, name: &str) -> Result<(), GuardError> {
        let s = dev.schedulers()?;
        if !s.available.iter().any(|a| a == name) {
            return Err(UsageError::new(format!(
                "scheduler {name:?} is not offered by {}: available are {}",
                dev.name,
                s.available.join(", ")
            ))
            .into());
        }
        if s.current == name {
            return Ok(());
        }
        // Leaving a scheduler frees its instance: switching back later
        // starts one with default tunables. Journal the current values
        // first, so they are written back after the scheduler is restored
        // (undo runs newest first).
        {
            let mut st = self.st();
            for (k, v) in dev.iosched_tunables() {
                st.record(Change::Attr {
                    path: dev.queue_path("iosched").join(k),
                    old: v,
                })?;
            }
        }
        self.write_attr(&dev.queue_path("scheduler"), name)
    }

    /// Sets a tunable of the active scheduler (`queue/iosched/NAME`).
    pub fn set_iosched_param(
        &self,
        dev: &BlockDev,
        name: &str,
        value: &str,
    ) -> Result<(), GuardError> {
        let path = dev.queue_path("iosched").join(name);
        if name.contains('/') || !path.exists() {
            let have: Vec<String> = dev.iosched_tunables().into_iter().map(|(k, _)| k).collect();
            let sched = dev.schedulers().map(|s| s.current).unwrap_or_default();
            return Err(UsageError::new(format!(
                "{sched} on {} has no tunable {name:?}: available are {}",
                dev.name,
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            ))
            .into());
        }
        self.write_attr(&path, value)
    }

    /// Sets a `queue/` attribute such as `nr_requests` or `read_ahead_kb`.
    pub fn set_queue_attr(
        &self,
        dev: &BlockDev,
        attr: &str,
        value: &str,
    ) -> Result<(), GuardError> {
        let path = dev.queue_path(attr);
        if attr.contains('/') || !path.exists() {
            return Err(UsageError::new(format!(
                "{} has no queue attribute {attr:?}: see /sys/block/{}/queue/",
                dev.name, dev.name
            ))
            .into());
        }
        self.write_attr(&path, value)
    }

    /// Caps the dirty page cache of `dev`'s filesystem (bdi `max_bytes`,
    /// with `strict_limit` so the cap holds even below the global
    /// background threshold). `max_bytes` is stored by the kernel as a
    /// ratio, and writing back the bytes value it reported is refused, so
    /// the journal records `max_ratio_fine` (what `max_bytes` really sets)
    /// and restores that.
    pub fn set_bdi_dirty_limit(&self, dev: &BlockDev, bytes: u64) -> Result<(), GuardError> {
        let bdi = Path::new("/sys/class/bdi").join(dev.devno()?);
        let fine = bdi.join("max_ratio_fine");
        if !fine.exists() || !bdi.join("max_bytes").exists() {
            return Err(UsageError::new(format!(
                "this kernel has no per-device dirty limit ({} missing; needs Linux 6.2+): drop the dirty limit option",
                bdi.join("max_bytes").display()
            ))
            .into());
        }
        let old = std::fs::read_to_string(&fine).map_err(|e| GuardError::io(&fine, e))?;
        self.st().record(Change::Attr {
            path: fine,
            old: old.trim().to_string(),
        })?;
        write_attr(&bdi.join("max_bytes"), &bytes.to_string())?;
        self.write_attr(&bdi.join("strict_limit"), "1")
    }

    /// Sets a sysctl by dotted name (`vm.dirty_ratio`).
    pub fn set_sysctl(&self, name: &str, value: &str) -> Result<(), GuardError> {
        let path = PathBuf::from("/proc/sys").join(name.replace('.', "/"));
        if name.contains("..") || !path.exists() {
            return Err(UsageError::new(format!(
                "no sysctl named {name:?}: expected e.g. vm.dirty_ratio (see /proc/sys)"
            ))
            .into());
        }
        self.write_attr(&path, value)
    }

    /// Sets a blkio throttle for `dev` in the root blkio cgroup (0 removes it).
    pub fn set_throttle(
        &self,
        dev: &BlockDev,
        kind: Throttle,
        value: u64,
    ) -> Result<(), GuardError> {
        let file = Path::new(BLKIO_ROOT).join(kind.file_name());
        if !file.exists() {
            return Err(UsageError::new(format!(
                "blkio throttling is not available ({} missing): it needs the cgroup-v1 blkio controller mounted at {BLKIO_ROOT}",
                file.display()
            ))
            .into());
        }
        let devno = dev.devno()?;
        let old = read_throttle(&file, &devno)?;
        self.st().record(Change::Throttle {
            file: file.clone(),
            devno: devno.clone(),
            old,
        })?;
        write_attr(&file, &format!("{devno} {value}"))
    }

    /// Creates `path` and any missing parents, each journaled for removal.
    pub fn mkdir_all(&self, path: &Path) -> Result<(), GuardError> {
        let mut missing: Vec<&Path> = path.ancestors().take_while(|p| !p.exists()).collect();
        missing.reverse();
        let mut st = self.st();
        for p in missing {
            st.record(Change::Dir {
                path: p.to_path_buf(),
            })?;
            match std::fs::create_dir(p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(GuardError::io(p, e)),
            }
        }
        Ok(())
    }

    /// Creates a new file (it must not exist) that is removed on undo.
    pub fn create_file(&self, path: &Path) -> Result<File, GuardError> {
        let seq = self.st().record(Change::File {
            path: path.to_path_buf(),
        })?;
        OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| {
                // Not created (e.g. it already existed, and is someone
                // else's): undoing must not remove it.
                let _ = self.forget(Recorded(seq));
                GuardError::io(path, e)
            })
    }

    /// Limits how many requests `dev`'s driver accepts at once (its tag
    /// depth), so requests beyond `depth` wait in the I/O scheduler, as on a
    /// device with a shallow hardware queue (eMMC, SD card). `nr_requests`
    /// sizes the driver tags only while the scheduler is `none`, and the
    /// shrunk depth stays when an elevator is attached afterwards: call this
    /// first, then switch to the scheduler under test. Returns the depth
    /// the kernel applied (it raises values below 4, BLKDEV_MIN_RQ).
    pub fn set_queue_depth(&self, dev: &BlockDev, depth: u32) -> Result<u32, GuardError> {
        let current = dev.schedulers()?.current;
        if current != "none" {
            return Err(UsageError::new(format!(
                "the queue depth of {} can only be limited while its scheduler is none (it is {current}): switch it to none first",
                dev.name
            ))
            .into());
        }
        let nr = dev.queue_path("nr_requests");
        let read = || -> Result<u32, GuardError> {
            let text = std::fs::read_to_string(&nr).map_err(|e| GuardError::io(&nr, e))?;
            text.trim().parse().map_err(|_| {
                GuardError::io(&nr, std::io::Error::other(format!("unexpected {text:?}")))
            })
        };
        let old = read()?;
        self.st().record(Change::QueueDepth {
            queue: dev.sysfs.join("queue"),
            old,
        })?;
        write_attr(&nr, &depth.to_string())?;
        read()
    }

    /// Creates a cgroup directory (e.g. under [`BLKIO_ROOT`]).
    pub fn create_cgroup(&self, path: &Path) -> Result<(), GuardError> {
        self.st().record(Change::Cgroup {
            path: path.to_path_buf(),
        })?;
        std::fs::create_dir(path).map_err(|e| GuardError::io(path, e))
    }

    /// Creates a private tracefs instance (mounting tracefs first if needed)
    /// and returns its directory. iolab never uses the global trace buffer.
    pub fn create_trace_instance(&self, name: &str) -> Result<PathBuf, GuardError> {
        let root = Path::new("/sys/kernel/tracing");
        if !root.join("instances").exists() {
            self.mount("tracefs", root, "tracefs", "")?;
        }
        let path = root.join("instances").join(name);
        self.st()
            .record(Change::TraceInstance { path: path.clone() })?;
        std::fs::create_dir(&path).map_err(|e| GuardError::io(&path, e))?;
        Ok(path)
    }

    /// Attaches `backing` to a free loop device (with direct I/O when asked,
    /// so the page cache is not doubled) and returns the device.
    pub fn attach_loop(&self, backing: &Path, direct_io: bool) -> Result<BlockDev, GuardError> {
        let backing = std::fs::canonicalize(backing).map_err(|e| GuardError::io(backing, e))?;
        let seq = self.st().record(Change::Loop {
            backing: backing.clone(),
            dev: None,
        })?;
        let dio = if direct_io {
            "--direct-io=on"
        } else {
            "--direct-io=off"
        };
        let b = backing.to_string_lossy();
        let out = run_cmd("losetup", &["--find", "--show", dio, &b])?;
        let name = out.trim().trim_start_matches("/dev/").to_string();
        let mut st = self.st();
        st.journal()?.update(
            seq,
            Change::Loop {
                backing: backing.clone(),
                dev: Some(name.clone()),
            },
        )?;
        drop(st);
        Ok(BlockDev::from_name(&name)?)
    }

    /// Hot-adds a zram device of `size_bytes` and returns it. The kernel
    /// picks the number, so the entry is journaled right after hot_add: a
    /// SIGKILL in that instant leaves one empty, zero-size zram device.
    pub fn add_zram(
        &self,
        size_bytes: u64,
        algorithm: Option<&str>,
    ) -> Result<BlockDev, GuardError> {
        let ctl = Path::new("/sys/class/zram-control/hot_add");
        let id_text = std::fs::read_to_string(ctl).map_err(|e| {
            GuardError::Usage(UsageError::new(format!(
                "zram is not available ({}: {e}): load it with `modprobe zram`",
                ctl.display()
            )))
        })?;
        let id: u32 = id_text.trim().parse().map_err(|_| {
            GuardError::io(
                ctl,
                std::io::Error::other(format!("unexpected {id_text:?}")),
            )
        })?;
        self.st().record(Change::Zram { id, added: true })?;
        let dev = BlockDev::from_name(&format!("zram{id}"))?;
        if let Some(alg) = algorithm {
            write_attr(&dev.sysfs.join("comp_algorithm"), alg)?;
        }
        write_attr(&dev.sysfs.join("disksize"), &size_bytes.to_string())?;
        Ok(dev)
    }

    /// Mounts `source` on `target` (which must exist).
    pub fn mount(
        &self,
        source: &str,
        target: &Path,
        fstype: &str,
        data: &str,
    ) -> Result<(), GuardError> {
        self.st().record(Change::Mount {
            target: target.to_path_buf(),
            source: source.to_string(),
        })?;
        let data = std::ffi::CString::new(data)
            .map_err(|e| GuardError::io(target, std::io::Error::other(e)))?;
        rustix::mount::mount(
            source,
            target,
            fstype,
            rustix::mount::MountFlags::empty(),
            data.as_c_str(),
        )
        .map_err(|e| GuardError::io(target, e.into()))
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

    /// `sync`, then drops the page cache, dentries and inodes
    /// (`vm/drop_caches` = 3). Not journaled: there is nothing to undo.
    pub fn drop_caches(&self) -> Result<(), GuardError> {
        rustix::fs::sync();
        write_attr(Path::new("/proc/sys/vm/drop_caches"), "3")
    }
}

impl Default for Guard {
    fn default() -> Self {
        Guard::new()
    }
}

/// Reads the limit for `devno` in a throttle file (0 when there is no rule).
pub fn read_throttle(file: &Path, devno: &str) -> Result<u64, GuardError> {
    let text = std::fs::read_to_string(file).map_err(|e| GuardError::io(file, e))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(d, _)| *d == devno)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(g.set_queue_depth(&dev, 4).unwrap_err().is_usage());
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
