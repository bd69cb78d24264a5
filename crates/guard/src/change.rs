//! One reversible change to system state, as written to the journal *before*
//! it is made, and how to undo it. Undo is idempotent: undoing a change that
//! was never applied (the run died between journaling and applying) is
//! harmless, so a journal can always be replayed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::GuardError;

/// A change iolab made, with what is needed to undo it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Change {
    /// A sysfs or procfs attribute (scheduler, iosched tunable,
    /// nr_requests, read_ahead_kb, vm sysctl): `old` is written back.
    Attr {
        /// The attribute file.
        path: PathBuf,
        /// Its value before the change, as it must be written back.
        old: String,
    },
    /// A blkio throttle rule (`blkio.throttle.*_device`) for one device:
    /// `old` 0 means there was no rule, and writing 0 removes it.
    Throttle {
        /// The throttle file.
        file: PathBuf,
        /// `major:minor`.
        devno: String,
        /// Previous limit, 0 for none.
        old: u64,
    },
    /// A directory iolab created (mount point, lab directory); removed if empty.
    Dir {
        /// The directory.
        path: PathBuf,
    },
    /// A scratch directory iolab made in a directory the user named
    /// (`--in DIR`) for its own files (the load's): removed with all it
    /// holds, but only while it still carries iolab's mark, so a path
    /// that is not iolab's is never deleted.
    ScratchDir {
        /// The directory.
        path: PathBuf,
    },
    /// A file iolab created (lab image); removed.
    File {
        /// The file.
        path: PathBuf,
    },
    /// A cgroup iolab created: its tasks go back to the parent, then rmdir.
    Cgroup {
        /// The cgroup directory.
        path: PathBuf,
    },
    /// A process iolab moved into a cgroup of its own (v2 moves whole
    /// processes): moved back to the cgroup it came from, if it still
    /// runs with the same start time.
    CgroupMove {
        /// The process.
        pid: i32,
        /// Its start time, to survive pid reuse.
        start: u64,
        /// The `cgroup.procs` it came from.
        back_to: PathBuf,
    },
    /// A controller iolab enabled in a v2 `cgroup.subtree_control`
    /// (`+io`): disabled again (`-io`) when nothing else needs it.
    SubtreeControl {
        /// The `cgroup.subtree_control` file.
        path: PathBuf,
        /// The controller, e.g. `io`.
        controller: String,
    },
    /// One device's line of a keyed cgroup file at a hierarchy's root
    /// (`io.cost.qos`, `io.cost.model`): `old` written back, or `reset`
    /// when the device had no line.
    DevLine {
        /// The file.
        file: PathBuf,
        /// `major:minor`.
        devno: String,
        /// The device's line before, whole.
        old: Option<String>,
        /// What restores the kernel's default (`MAJ:MIN enable=0`).
        reset: String,
    },
    /// A tracefs instance iolab created: tracing off, then rmdir.
    TraceInstance {
        /// The instance directory.
        path: PathBuf,
    },
    /// A loop device over `backing`, found again by its backing file, so the
    /// entry can be journaled before the kernel picks the device number.
    Loop {
        /// The backing file or device.
        backing: PathBuf,
        /// The device, once known.
        dev: Option<String>,
        /// The device's queue attributes that configuring it changes, as
        /// they were before (see [`LOOP_QUEUE_ATTRS`]): written back once
        /// it is detached, if it is still free. Journals written before
        /// this field have none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        queue: Vec<(String, String)>,
    },
    /// A zram device iolab configured (and hot-added when `added`).
    Zram {
        /// Device number N of zramN.
        id: u32,
        /// True when iolab created it via hot_add (then it is hot-removed).
        added: bool,
    },
    /// A mount: unmounted (lazily if still busy after retries).
    Mount {
        /// Mount point.
        target: PathBuf,
        /// What was mounted.
        source: String,
    },
    /// A filesystem remounted with other options: remounted back with the
    /// per-mount flags and superblock options that restore it.
    Remount {
        /// Mount point.
        target: PathBuf,
        /// The per-mount flags to remount with (MS_* bits).
        flags: u64,
        /// The superblock options that undo the change (`commit=5,nolazytime`).
        data: String,
    },
    /// The driver tag depth of a blk-mq device (how many requests its
    /// driver accepts at once), shrunk via `queue/nr_requests` while the
    /// scheduler was `none`. See `undo_queue_depth` for why restoring it is
    /// not a plain write of `old`.
    QueueDepth {
        /// The device's `queue/` directory.
        queue: PathBuf,
        /// The depth before the change.
        old: u32,
    },
    /// An Android setting (`settings put NAMESPACE KEY VALUE`, or a
    /// command that writes one, as `svc power stayon` writes
    /// `global stay_on_while_plugged_in`): put back as it was, or deleted
    /// when it was never set (`settings get` printed `null`).
    AndroidSetting {
        /// `global`, `system` or `secure`.
        namespace: String,
        /// The setting.
        key: String,
        /// Its value before, `None` when unset.
        old: Option<String>,
    },
    /// A process group iolab started (load, target): killed with SIGKILL if
    /// its leader still runs with the same start time.
    ProcessGroup {
        /// Process group id (= leader pid).
        pgid: i32,
        /// Leader's start time, to survive pid reuse.
        start: u64,
    },
}

impl Change {
    /// The lock a change needs: changes to one device share one lock, so two
    /// runs never interleave changes to the same device.
    pub fn resource(&self) -> Option<String> {
        match self {
            Change::Attr { path, .. } => Some(resource_of_path(path)),
            Change::QueueDepth { queue, .. } => Some(resource_of_path(queue)),
            Change::Throttle { devno, .. } => Some(format!("devno-{}", devno.replace(':', "_"))),
            _ => None,
        }
    }

    /// Undoes the change; returns a one-line description of what was done.
    pub fn undo(&self) -> Result<String, GuardError> {
        match self {
            Change::Attr { path, old } => {
                if !path.exists() {
                    // e.g. an iosched tunable whose scheduler is gone again.
                    return Ok(format!(
                        "{} no longer exists; nothing to restore",
                        path.display()
                    ));
                }
                write_attr(path, old)?;
                Ok(format!("{} = {old}", path.display()))
            }
            Change::Throttle { file, devno, old } => {
                write_attr(file, &format!("{devno} {old}"))?;
                Ok(format!("{} for {devno} = {old}", file.display()))
            }
            Change::ScratchDir { path } => undo_scratch_dir(path),
            Change::Dir { path } => {
                match std::fs::remove_dir(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    // Someone put their own files in it: those are not
                    // iolab's to delete, so the directory stays.
                    Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                        // Possibly another iolab run's files (two labs share
                        // /var/tmp/iolab): marked, so whoever removes the
                        // last of them removes the directory too.
                        let _ = std::fs::write(path.join(LEFT_DIR_MARK), b"");
                        return Ok(format!(
                            "kept directory {}: it holds files iolab did not create here",
                            path.display()
                        ));
                    }
                    Err(e) => return Err(GuardError::io(path, e)),
                }
                Ok(format!("removed directory {}", path.display()))
            }
            Change::File { path } => {
                match std::fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(GuardError::io(path, e)),
                }
                if let Some(dir) = path.parent() {
                    remove_left_dir(dir);
                }
                Ok(format!("removed {}", path.display()))
            }
            Change::Cgroup { path } => undo_cgroup(path),
            Change::CgroupMove {
                pid,
                start,
                back_to,
            } => {
                if !iolab_sys::process::is_alive(*pid, *start) {
                    return Ok(format!("process {pid} already gone"));
                }
                write_attr(back_to, &pid.to_string())?;
                Ok(format!("process {pid} back in {}", back_to.display()))
            }
            Change::SubtreeControl { path, controller } => {
                // EBUSY: a group iolab did not make uses it now; leaving
                // it enabled is then what that group needs.
                match std::fs::write(path, format!("-{controller}")) {
                    Ok(()) => Ok(format!("{} -{controller}", path.display())),
                    Err(e) => Ok(format!(
                        "{} kept +{controller} ({e}): another group uses it",
                        path.display()
                    )),
                }
            }
            Change::DevLine {
                file,
                devno,
                old,
                reset,
            } => {
                let line = old.clone().unwrap_or_else(|| reset.clone());
                write_attr(file, &line)?;
                Ok(format!("{} for {devno}: {line}", file.display()))
            }
            Change::TraceInstance { path } => remove_trace_instance(path),
            Change::Loop {
                backing,
                dev,
                queue,
            } => undo_loop(backing, dev.as_deref(), queue),
            Change::Zram { id, added } => {
                let dev = PathBuf::from(format!("/sys/block/zram{id}"));
                if dev.exists() {
                    write_attr_when_free(&dev.join("reset"), "1")?;
                    if *added {
                        write_attr_when_free(
                            Path::new("/sys/class/zram-control/hot_remove"),
                            &id.to_string(),
                        )?;
                    }
                }
                Ok(format!(
                    "reset zram{id}{}",
                    if *added { " and removed it" } else { "" }
                ))
            }
            Change::Mount { target, source } => undo_mount(target, source),
            Change::Remount {
                target,
                flags,
                data,
            } => {
                if !is_mounted(target) {
                    return Ok(format!("{} no longer mounted", target.display()));
                }
                remount(target, *flags, data)?;
                Ok(format!("remounted {} back ({data})", target.display()))
            }
            Change::QueueDepth { queue, old } => undo_queue_depth(queue, *old),
            Change::AndroidSetting {
                namespace,
                key,
                old,
            } => {
                let mut argv = vec!["settings".to_string()];
                match old {
                    Some(v) => {
                        argv.extend(["put".into(), namespace.clone(), key.clone(), v.clone()])
                    }
                    None => argv.extend(["delete".into(), namespace.clone(), key.clone()]),
                }
                let out = std::process::Command::new(&argv[0])
                    .args(&argv[1..])
                    .stdin(std::process::Stdio::null())
                    .output()
                    .map_err(|e| GuardError::io(Path::new("settings"), e))?;
                if !out.status.success() {
                    return Err(GuardError::io(
                        Path::new("settings"),
                        std::io::Error::other(format!(
                            "`{}` failed: {}",
                            argv.join(" "),
                            String::from_utf8_lossy(&out.stderr).trim()
                        )),
                    ));
                }
                Ok(format!(
                    "{} {key} = {}",
                    namespace,
                    old.as_deref().unwrap_or("(unset)")
                ))
            }
            Change::ProcessGroup { pgid, start } => {
                if iolab_sys::process::is_alive(*pgid, *start) {
                    // Negative pid: the whole group, never a name.
                    let _ = rustix::process::kill_process_group(
                        rustix::process::Pid::from_raw(*pgid).ok_or_else(|| {
                            GuardError::io("pgid", std::io::Error::other("pgid 0"))
                        })?,
                        rustix::process::Signal::KILL,
                    );
                    // SIGKILL is delivered, not done: wait (bounded) until
                    // no member is left, so that "restored" means gone
                    // (a lab's model server must not outlive `lab down`;
                    // CI once saw it still running right after).
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
                    // /proc unreadable: as if members were left, until
                    // the deadline.
                    while iolab_sys::process::live_group_members(*pgid)
                        .map_or(true, |m| !m.is_empty())
                        && std::time::Instant::now() < deadline
                    {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    Ok(format!("killed process group {pgid}"))
                } else {
                    Ok(format!("process group {pgid} already gone"))
                }
            }
        }
    }
}

/// Maps an attribute path to its lock: `/sys/block/loop3/queue/x` →
/// `block-loop3`; `/proc/sys/vm/dirty_ratio` → `sysctl-vm.dirty_ratio`.
pub fn resource_of_path(path: &Path) -> String {
    let s = path.to_string_lossy();
    if let Some(rest) = s.strip_prefix("/sys/block/") {
        let dev = rest.split('/').next().unwrap_or(rest);
        return format!("block-{dev}");
    }
    if let Some(rest) = s.strip_prefix("/proc/sys/") {
        return format!("sysctl-{}", rest.replace('/', "."));
    }
    s.trim_start_matches('/').replace('/', "_")
}

/// Writes a sysfs/procfs attribute in one write(2), as the kernel expects.
pub(crate) fn write_attr(path: &Path, value: &str) -> Result<(), GuardError> {
    std::fs::write(path, value).map_err(|e| GuardError::io(path, e))
}

/// Writes an attribute that the kernel refuses with EBUSY while anyone
/// holds the device open. Right after a writer closes a block device,
/// udev's inotify watch opens it to probe it again (blkid); CI once saw
/// a zram reset refused in that window. Retried for up to 5 s: a holder
/// that stays longer is a real one, and its EBUSY is the answer.
pub(crate) fn write_attr_when_free(path: &Path, value: &str) -> Result<(), GuardError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match std::fs::write(path, value) {
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r.map_err(|e| GuardError::io(path, e)),
        }
    }
}

/// The mark iolab writes into a scratch directory it makes.
pub(crate) const SCRATCH_MARK: &str = ".iolab-scratch";

fn undo_scratch_dir(path: &Path) -> Result<String, GuardError> {
    if !path.exists() {
        return Ok(format!("scratch directory {} already gone", path.display()));
    }
    if !path.join(SCRATCH_MARK).is_file() {
        return Ok(format!(
            "kept {}: it lacks iolab's mark ({SCRATCH_MARK}), so it is not iolab's to delete",
            path.display()
        ));
    }
    std::fs::remove_dir_all(path).map_err(|e| GuardError::io(path, e))?;
    Ok(format!("removed scratch directory {}", path.display()))
}

fn undo_cgroup(path: &Path) -> Result<String, GuardError> {
    if !path.exists() {
        return Ok(format!("cgroup {} already gone", path.display()));
    }
    // Unreadable: the rmdir below would fail with EBUSY and no cause;
    // say why instead.
    let file = path.join("cgroup.procs");
    let procs = std::fs::read_to_string(&file).map_err(|e| GuardError::io(&file, e))?;
    for pid in procs.split_whitespace() {
        // To the nearest ancestor that takes it: a v2 parent with
        // controllers enabled for its children holds no process itself
        // (EBUSY); the root always does. A task that exits meanwhile
        // makes every write fail; that is fine.
        for a in path.ancestors().skip(1) {
            let procs = a.join("cgroup.procs");
            if !procs.exists() || std::fs::write(&procs, pid).is_ok() {
                break;
            }
        }
    }
    std::fs::remove_dir(path).map_err(|e| GuardError::io(path, e))?;
    Ok(format!("removed cgroup {}", path.display()))
}

/// Gives a device its driver tag depth back. `nr_requests` resizes the
/// driver tags only while no elevator is attached, so one is detached for
/// the moment if present. And after an elevator detaches, `nr_requests`
/// reads the tag set's full depth while the driver tags may still be
/// shrunk, and the kernel ignores a write equal to the value it shows
/// (checked on 6.18): stepping through `old - 1` makes the resize happen.
fn undo_queue_depth(queue: &Path, old: u32) -> Result<String, GuardError> {
    let nr = queue.join("nr_requests");
    if !nr.exists() {
        return Ok(format!(
            "{} no longer exists; nothing to restore",
            nr.display()
        ));
    }
    let sched_path = queue.join("scheduler");
    let elevator = std::fs::read_to_string(&sched_path)
        .ok()
        .and_then(|t| iolab_sys::block::parse_schedulers(t.trim()))
        .map(|s| s.current)
        .filter(|s| s != "none");
    if elevator.is_some() {
        write_attr(&sched_path, "none")?;
    }
    if old > 4 {
        write_attr(&nr, &(old - 1).to_string())?;
    }
    write_attr(&nr, &old.to_string())?;
    if let Some(e) = &elevator {
        write_attr(&sched_path, e)?;
    }
    Ok(format!("{} = {old} (driver queue depth)", nr.display()))
}

pub use iolab_sys::device_safety::loops_backed_by;

/// The queue attributes of a loop device that LOOP_CONFIGURE sets from
/// its backing file (checked on 6.18: read_ahead_kb 128 → 2560, rotational
/// 0 → 1) and LOOP_CLR_FD leaves as they are. The discard and write-zeroes
/// limits change too, but are read-only and set again by the next
/// configure.
///
/// Not `write_cache`, though its reading changes too ("write through" →
/// "write back"): the reading of a device never bound is the driver's
/// feature being absent, and the only way to show it again is writing
/// "write through", which sets a flag the kernel keeps through every later
/// bind of that number (checked on 6.18: a new loop device binds "write
/// back"; one written "write through" once binds "write through" ever
/// after, so flushes never reach its backing file). Writing it back
/// poisoned every later lab on the number. What persists is that flag,
/// and a lab that sets `write_cache` journals and restores the value it
/// found after the bind, which is the flag as found; a detached device
/// reads what `losetup -d` leaves.
pub const LOOP_QUEUE_ATTRS: [&str; 2] = ["read_ahead_kb", "rotational"];

fn undo_loop(
    backing: &Path,
    dev: Option<&str>,
    queue: &[(String, String)],
) -> Result<String, GuardError> {
    // The queue first, while the device is still bound to iolab's file:
    // the kernel keeps it through the detach, and a device free for an
    // instant with the backing file's values would be read as "how it
    // was" by whoever takes it next (another test's loop did so).
    let restored = match (dev, queue.is_empty()) {
        (Some(d), false) => Some(restore_loop_queue(d, backing, queue)),
        _ => None,
    };
    let detached = detach_loops_of(backing, dev)?;
    match restored {
        Some(r) => Ok(format!("{detached}; {}", r?)),
        None => Ok(detached),
    }
}

/// Whether the kernel's `loop/backing_file` text names `backing`: the
/// kernel prints the resolved path, with " (deleted)" once it is
/// unlinked.
fn same_file(shown: &str, backing: &Path) -> bool {
    let shown = Path::new(shown.strip_suffix(" (deleted)").unwrap_or(shown));
    shown == backing || backing.canonicalize().is_ok_and(|c| c == shown)
}

/// Writes back a loop device's queue attributes while it is still bound
/// to `backing` (before its detach), once it is detached from it, or
/// while its detach is deferred (the kernel leaves the queue as it is
/// when the detach happens); not when the device is gone, or bound to
/// another file (then the queue is its new user's).
fn restore_loop_queue(
    dev: &str,
    backing: &Path,
    queue: &[(String, String)],
) -> Result<String, GuardError> {
    let sys = PathBuf::from(format!("/sys/block/{dev}"));
    if !sys.exists() {
        return Ok(format!("{dev} is gone; its queue with it"));
    }
    // The kernel shows loop/ only while a file is bound.
    match std::fs::read_to_string(sys.join("loop/backing_file")) {
        Ok(b) if !same_file(b.trim(), backing) => {
            return Ok(format!(
                "{dev} is bound again (to {}): its queue left to its new user",
                b.trim()
            ))
        }
        _ => {}
    }
    let mut set = Vec::new();
    // A journal of an older iolab may hold write_cache too: writing its
    // "write through" back would set the flag LOOP_QUEUE_ATTRS explains.
    for (attr, old) in queue
        .iter()
        .filter(|(a, _)| LOOP_QUEUE_ATTRS.contains(&a.as_str()))
    {
        let path = sys.join("queue").join(attr);
        let now = std::fs::read_to_string(&path).map_err(|e| GuardError::io(&path, e))?;
        if now.trim() != old {
            write_attr(&path, old)?;
            set.push(format!("{attr} = {old}"));
        }
    }
    Ok(if set.is_empty() {
        format!("{dev}'s queue as it was")
    } else {
        format!("{dev}: {}", set.join(", "))
    })
}

/// Detaches every loop device over `backing`; says what it did.
fn detach_loops_of(backing: &Path, dev: Option<&str>) -> Result<String, GuardError> {
    let mut devs = loops_backed_by(backing);
    if devs.is_empty() {
        return Ok(format!(
            "loop device {} over {} already detached",
            dev.unwrap_or("?"),
            backing.display()
        ));
    }
    devs.sort();
    // A device detached and taken by another image since the listing is
    // not ours to detach, nor to name.
    let mut mine = Vec::new();
    for d in devs {
        if detach_loop(&d, backing)? {
            mine.push(d);
        }
    }
    let devs = mine;
    if devs.is_empty() {
        return Ok(format!(
            "loop device {} over {} already detached",
            dev.unwrap_or("?"),
            backing.display()
        ));
    }
    // The kernel defers a detach while the device is still open (the
    // device stacked above it may be closing this very moment): wait for
    // it, so what undo reports as done is done, and what comes next (the
    // image's removal, a FUSE unmount under it) does not find it busy.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while !loops_backed_by(backing).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = loops_backed_by(backing);
    if !left.is_empty() {
        return Ok(format!(
            "detach of {} from {} deferred by the kernel: it is still open; it goes when closed",
            left.join(","),
            backing.display()
        ));
    }
    Ok(format!(
        "detached {} from {}",
        devs.join(","),
        backing.display()
    ))
}

/// LOOP_CLR_FD by ioctl, only while `dev` is still bound to `backing`
/// (true: it was): a number detached since the listing may already be
/// another process's image. The kernel defers the
/// detach while the device is open ("autoclear"), which is what we want
/// for a busy device.
fn detach_loop(dev: &str, backing: &Path) -> Result<bool, GuardError> {
    iolab_sys::loopdev::detach_if_backed_by(dev, backing).map_err(|e| GuardError::Command {
        command: format!("detach loop device {dev}"),
        stderr: e.to_string(),
    })
}

fn is_mounted(target: &Path) -> bool {
    iolab_sys::mounts::read().iter().any(|m| m.target == target)
}

/// tracefs is one kernel-wide filesystem: another iolab process may have
/// created its own instance in the mount this guard made. Unmounting under
/// it would detach its instance from every path, so it could never be
/// removed; such a mount is left in place (tracefs mounted at its usual
/// place is the normal state of most systems).
fn tracefs_in_use(target: &Path, source: &str) -> bool {
    source == "tracefs"
        && std::fs::read_dir(target.join("instances"))
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
}

/// Left in a directory an iolab guard created but could not remove because
/// it still held other files.
const LEFT_DIR_MARK: &str = ".iolab-created";

/// Removes `dir` when an iolab guard created it and had to leave it, and
/// nothing but that mark is left in it.
fn remove_left_dir(dir: &Path) {
    let mark = dir.join(LEFT_DIR_MARK);
    if !mark.exists() {
        return;
    }
    let only_mark = std::fs::read_dir(dir)
        .map(|d| d.flatten().all(|e| e.file_name() == LEFT_DIR_MARK))
        .unwrap_or(false);
    if only_mark && std::fs::remove_file(&mark).is_ok() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// Serialises, across threads and processes, the steps that mount or
/// unmount tracefs with those that create or remove an instance in it:
/// without it, two sessions starting at once both mount (the second gets
/// EBUSY), or one unmounts between another's check and its mkdir. Held
/// while the returned file is open; `None` (no lock) when the lock file
/// cannot be opened, which only loses this protection.
/// Removes a tracefs instance iolab made: the one teardown, for the
/// session that ends it and for the guard's undo alike. Tracing and its
/// events off, then rmdir, retried while the kernel still holds its buffer
/// (EBUSY: a reader that just closed its trace_pipe_raw), and tracefs
/// unmounted when iolab mounted it and no other instance is left. Gone
/// already is done. (An instance's event triggers are its session's to
/// clear first: only it knows which it wrote.)
pub fn remove_trace_instance(path: &Path) -> Result<String, GuardError> {
    let _lock = tracefs_lock();
    let mut last = None;
    for _ in 0..50 {
        if !path.exists() {
            last = None;
            break;
        }
        let _ = std::fs::write(path.join("tracing_on"), "0");
        let _ = std::fs::write(path.join("events/enable"), "0");
        match std::fs::remove_dir(path) {
            Ok(()) => {
                last = None;
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                last = None;
                break;
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if let Some(e) = last {
        return Err(GuardError::io(path, e));
    }
    let mut msg = format!("removed trace instance {}", path.display());
    if let Some(root) = path.parent().and_then(Path::parent) {
        if let Some(m) = unmount_left_tracefs(root) {
            msg.push_str("; ");
            msg.push_str(&m);
        }
    }
    Ok(msg)
}

pub(crate) fn tracefs_lock() -> Option<std::fs::File> {
    let locks = iolab_sys::paths::machine_dir().join("locks");
    let _ = std::fs::create_dir_all(&locks);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(locks.join("tracefs.lock"))
        .ok()?;
    rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive).ok()?;
    Some(f)
}

/// Marks a tracefs mount an iolab guard made and had to leave for other
/// instances. One path per machine, not per run directory: the processes
/// sharing tracefs need not share a run directory (tests do not).
fn tracefs_left() -> PathBuf {
    iolab_sys::paths::machine_dir().join("tracefs-left-mounted")
}

/// After an instance is removed: when an iolab guard left its tracefs
/// mount at `root` for others and no instance remains, unmounts it.
/// Returns what it did, if anything.
pub(crate) fn unmount_left_tracefs(root: &Path) -> Option<String> {
    let left = std::fs::read_to_string(tracefs_left()).ok()?;
    if Path::new(left.trim()) != root {
        return None;
    }
    if !is_mounted(root) {
        let _ = std::fs::remove_file(tracefs_left());
        return None;
    }
    if tracefs_in_use(root, "tracefs") {
        return None; // another instance still there: its owner does it
    }
    match rustix::mount::unmount(root, rustix::mount::UnmountFlags::empty()) {
        Ok(()) => {
            let _ = std::fs::remove_file(tracefs_left());
            Some(format!("unmounted tracefs from {}", root.display()))
        }
        // Someone has a tracefs file open: left for the next one.
        Err(_) => None,
    }
}

/// `mount -o remount`: MS_REMOUNT with the per-mount `flags` (they replace
/// the mount's: the caller passes every flag it keeps) and `data`.
pub(crate) fn remount(target: &Path, flags: u64, data: &str) -> Result<(), GuardError> {
    let bits = u32::try_from(flags)
        .map_err(|_| GuardError::io(target, std::io::Error::other("mount flags beyond 32 bits")))?;
    let data = std::ffi::CString::new(data)
        .map_err(|e| GuardError::io(target, std::io::Error::other(e)))?;
    rustix::mount::mount_remount(
        target,
        rustix::mount::MountFlags::from_bits_retain(bits),
        data.as_c_str(),
    )
    .map_err(|e| GuardError::io(target, e.into()))
}

fn undo_mount(target: &Path, source: &str) -> Result<String, GuardError> {
    if !is_mounted(target) {
        return Ok(format!("{} already unmounted", target.display()));
    }
    let _lock = (source == "tracefs").then(tracefs_lock);
    if tracefs_in_use(target, source) {
        // Whoever removes the last instance unmounts it (see
        // `unmount_left_tracefs`), so the machine ends as it began.
        let _ = std::fs::create_dir_all(iolab_sys::paths::machine_dir());
        let _ = std::fs::write(tracefs_left(), target.to_string_lossy().as_bytes());
        return Ok(format!(
            "left {source} mounted on {}: other trace instances still use it; the last of them unmounts it",
            target.display()
        ));
    }
    // A workload thread may still be closing files: retry briefly before
    // falling back to a lazy detach, which always succeeds.
    for _ in 0..20 {
        match rustix::mount::unmount(target, rustix::mount::UnmountFlags::empty()) {
            Ok(()) => return Ok(format!("unmounted {source} from {}", target.display())),
            Err(rustix::io::Errno::BUSY) => std::thread::sleep(Duration::from_millis(100)),
            Err(rustix::io::Errno::INVAL) => {
                return Ok(format!("{} already unmounted", target.display()))
            }
            Err(e) => return Err(GuardError::io(target, e.into())),
        }
    }
    rustix::mount::unmount(target, rustix::mount::UnmountFlags::DETACH)
        .map_err(|e| GuardError::io(target, e.into()))?;
    Ok(format!(
        "lazily unmounted busy {} ({source})",
        target.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracefs_with_other_instances_stays_mounted() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("instances")).expect("mkdir");
        assert!(!tracefs_in_use(dir.path(), "tracefs"));
        std::fs::create_dir(dir.path().join("instances/other-run")).expect("mkdir");
        assert!(tracefs_in_use(dir.path(), "tracefs"));
        assert!(!tracefs_in_use(dir.path(), "/dev/loop3"));
    }

    #[test]
    fn a_shared_directory_goes_with_the_last_file_in_it() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("iolab");
        std::fs::create_dir(&dir).expect("mkdir");
        let (mine, theirs) = (dir.join("a.img"), dir.join("b.img"));
        std::fs::write(&mine, b"x").expect("write");
        std::fs::write(&theirs, b"y").expect("write");
        // The creator goes first: its file, then its directory (kept).
        Change::File { path: mine }.undo().expect("undo file");
        let kept = Change::Dir { path: dir.clone() }.undo().expect("undo dir");
        assert!(kept.starts_with("kept"), "{kept}");
        assert!(dir.exists());
        // The other run's file was the last: the directory goes with it.
        Change::File { path: theirs }.undo().expect("undo file");
        assert!(!dir.exists());
    }

    #[test]
    fn a_directory_with_foreign_files_stays() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("iolab");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("users-own"), b"z").expect("write");
        let mine = dir.join("a.img");
        std::fs::write(&mine, b"x").expect("write");
        Change::Dir { path: dir.clone() }.undo().expect("undo dir");
        Change::File { path: mine }.undo().expect("undo file");
        assert!(dir.join("users-own").exists());
    }

    #[test]
    fn a_scratch_directory_goes_whole_only_with_iolabs_mark() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("iolab-scratch-1");
        std::fs::create_dir_all(dir.join("iolab-load")).expect("mkdir");
        std::fs::write(dir.join("iolab-load/1r.0.0"), b"x").expect("write");
        // Not marked (say, a path the journal was tampered with to name):
        // kept, contents and all.
        let kept = Change::ScratchDir { path: dir.clone() }
            .undo()
            .expect("undo");
        assert!(kept.starts_with("kept"), "{kept}");
        assert!(dir.join("iolab-load/1r.0.0").exists());
        std::fs::write(dir.join(SCRATCH_MARK), b"1\n").expect("mark");
        Change::ScratchDir { path: dir.clone() }
            .undo()
            .expect("undo");
        assert!(!dir.exists());
        // Idempotent: undoing again finds nothing.
        let again = Change::ScratchDir { path: dir }.undo().expect("undo");
        assert!(again.contains("already gone"), "{again}");
    }

    #[test]
    fn resources() {
        assert_eq!(
            resource_of_path(Path::new("/sys/block/loop3/queue/scheduler")),
            "block-loop3"
        );
        assert_eq!(
            resource_of_path(Path::new("/proc/sys/vm/dirty_ratio")),
            "sysctl-vm.dirty_ratio"
        );
    }

    #[test]
    fn journal_lines_round_trip() {
        let c = Change::Throttle {
            file: "/x".into(),
            devno: "7:1".into(),
            old: 0,
        };
        let s = serde_json::to_string(&c).unwrap();
        assert!(s.contains("\"kind\":\"throttle\""), "{s}");
        assert_eq!(serde_json::from_str::<Change>(&s).unwrap(), c);
    }

    #[test]
    fn attr_undo_writes_old_value_and_files_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("knob");
        std::fs::write(&p, "new").unwrap();
        Change::Attr {
            path: p.clone(),
            old: "old".into(),
        }
        .undo()
        .unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        Change::File { path: p.clone() }.undo().unwrap();
        assert!(!p.exists());
        // Idempotent: undoing again is fine.
        Change::File { path: p }.undo().unwrap();
    }
}
