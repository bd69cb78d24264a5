//! Guarded creation of things iolab owns: directories, files, cgroups,
//! trace instances, loop and zram devices, mounts; and cache dropping.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;

use crate::change::{write_attr, Change};
use crate::guard::{Guard, Recorded};
use crate::GuardError;

impl Guard {
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

    /// Creates the scratch directory `path` (it must not exist; its parent
    /// must), marked as iolab's, removed with everything in it on undo.
    pub fn create_scratch_dir(&self, path: &Path) -> Result<(), GuardError> {
        if path.exists() {
            return Err(GuardError::io(
                path,
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "already exists: iolab makes its scratch directory itself",
                ),
            ));
        }
        self.st().record(Change::ScratchDir {
            path: path.to_path_buf(),
        })?;
        std::fs::create_dir(path).map_err(|e| GuardError::io(path, e))?;
        let mark = path.join(crate::change::SCRATCH_MARK);
        std::fs::write(&mark, format!("{}\n", std::process::id()))
            .map_err(|e| GuardError::io(&mark, e))?;
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

    /// Creates a cgroup directory (e.g. under [`BLKIO_ROOT`]).
    pub fn create_cgroup(&self, path: &Path) -> Result<(), GuardError> {
        self.st().record(Change::Cgroup {
            path: path.to_path_buf(),
        })?;
        std::fs::create_dir(path).map_err(|e| GuardError::io(path, e))
    }

    /// Writes `value` to `file` of a cgroup this guard made (its settings
    /// go with it when it is removed, so nothing is journaled); refused for
    /// any other cgroup.
    pub fn set_in_own_cgroup(
        &self,
        group: &Path,
        file: &str,
        value: &str,
    ) -> Result<(), GuardError> {
        let ours = {
            let mut st = self.st();
            st.journal()?
                .pending
                .iter()
                .any(|(_, c)| matches!(c, Change::Cgroup { path } if path == group))
        };
        if !ours || file.contains('/') {
            return Err(GuardError::io(
                group,
                std::io::Error::other(
                    "not a cgroup iolab made: its files are not iolab's to write",
                ),
            ));
        }
        write_attr(&group.join(file), value)
    }

    /// Moves process `pid` (whole, with its threads) into the cgroup
    /// `group`; undone by moving it back to `back_to` (the `cgroup.procs`
    /// it is in now).
    pub fn move_to_cgroup(&self, pid: i32, group: &Path, back_to: &Path) -> Result<(), GuardError> {
        let start = iolab_sys::process::start_time(pid).unwrap_or(0);
        self.st().record(Change::CgroupMove {
            pid,
            start,
            back_to: back_to.to_path_buf(),
        })?;
        write_attr(&group.join("cgroup.procs"), &pid.to_string())
    }

    /// Enables `controller` for the children of the v2 cgroup `dir`
    /// (`+io` in its `cgroup.subtree_control`) when it is not yet.
    pub fn enable_controller(&self, dir: &Path, controller: &str) -> Result<(), GuardError> {
        let path = dir.join("cgroup.subtree_control");
        let now = std::fs::read_to_string(&path).map_err(|e| GuardError::io(&path, e))?;
        if now.split_whitespace().any(|c| c == controller) {
            return Ok(());
        }
        self.st().record(Change::SubtreeControl {
            path: path.clone(),
            controller: controller.to_string(),
        })?;
        write_attr(&path, &format!("+{controller}"))
    }

    /// Writes `devno`'s line of a keyed root file (`io.cost.qos`): `value`
    /// after `devno`. Its old line is journaled, or `reset` when it had none.
    pub fn set_dev_line(
        &self,
        file: &Path,
        devno: &str,
        value: &str,
        reset: &str,
    ) -> Result<(), GuardError> {
        let text = std::fs::read_to_string(file).map_err(|e| GuardError::io(file, e))?;
        let old = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(devno))
            .map(str::to_string);
        self.st().record(Change::DevLine {
            file: file.to_path_buf(),
            devno: devno.to_string(),
            old,
            reset: format!("{devno} {reset}"),
        })?;
        write_attr(file, &format!("{devno} {value}"))
    }

    /// Creates a private tracefs instance (mounting tracefs first if needed)
    /// and returns its directory. iolab never uses the global trace buffer.
    pub fn create_trace_instance(&self, name: &str) -> Result<PathBuf, GuardError> {
        let root = Path::new("/sys/kernel/tracing");
        let _lock = crate::change::tracefs_lock();
        self.mount_tracefs(root)?;
        let path = root.join("instances").join(name);
        self.st()
            .record(Change::TraceInstance { path: path.clone() })?;
        std::fs::create_dir(&path).map_err(|e| GuardError::io(&path, e))?;
        Ok(path)
    }

    /// Mounts tracefs at /sys/kernel/tracing when it is not there (undone
    /// at exit): BPF programs on classic tracepoints find their
    /// tracepoint's id and record format in it.
    pub fn ensure_tracefs(&self) -> Result<(), GuardError> {
        let _lock = crate::change::tracefs_lock();
        self.mount_tracefs(Path::new("/sys/kernel/tracing"))
    }

    /// With the tracefs lock held.
    fn mount_tracefs(&self, root: &Path) -> Result<(), GuardError> {
        if !root.join("instances").exists() {
            self.mount("tracefs", root, "tracefs", "")?;
        }
        Ok(())
    }

    /// Attaches `backing` to a free loop device (with direct I/O when asked,
    /// so the page cache is not doubled) and returns the device. By ioctl,
    /// not losetup (see [`iolab_sys::loopdev`]); a node iolab had to make
    /// for it is removed with it.
    pub fn attach_loop(&self, backing: &Path, direct_io: bool) -> Result<BlockDev, GuardError> {
        let backing = std::fs::canonicalize(backing).map_err(|e| GuardError::io(backing, e))?;
        let seq = self.st().record(Change::Loop {
            backing: backing.clone(),
            dev: None,
            queue: Vec::new(),
        })?;
        // The device's queue as it is before the kernel configures it,
        // journaled before the configure: detaching does not undo what
        // configuring changed (change::LOOP_QUEUE_ATTRS).
        let mut announce = |name: &str| -> std::io::Result<()> {
            let queue = loop_queue(name)?;
            self.st()
                .journal()
                .and_then(|j| {
                    j.update(
                        seq,
                        Change::Loop {
                            backing: backing.clone(),
                            dev: Some(name.to_string()),
                            queue,
                        },
                    )
                })
                .map_err(std::io::Error::other)
        };
        let att = iolab_sys::loopdev::attach_announced(&backing, direct_io, false, &mut announce)
            .map_err(|e| GuardError::Command {
            command: format!("attach a loop device to {}", backing.display()),
            stderr: e.to_string(),
        })?;
        let mut st = self.st();
        if att.node_made {
            // Undone before the loop itself (reverse order): detaching
            // then opens the device by a node of its own.
            st.record(Change::File {
                path: att.node.clone(),
            })?;
        }
        drop(st);
        Ok(BlockDev::from_name(&att.name)?)
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

    /// Remounts the filesystem at `target` with the per-mount `flags` and
    /// superblock `data`; `undo_flags` and `undo_data` remount it back
    /// (journaled first).
    pub fn remount(
        &self,
        target: &Path,
        flags: u64,
        data: &str,
        undo_flags: u64,
        undo_data: &str,
    ) -> Result<(), GuardError> {
        self.st().record(Change::Remount {
            target: target.to_path_buf(),
            flags: undo_flags,
            data: undo_data.to_string(),
        })?;
        crate::change::remount(target, flags, data)
    }

    /// Records that the Android setting `namespace key` is about to be
    /// changed from `old` (`None`: unset), then runs `apply`, which
    /// changes it; the setting is put back at exit.
    pub fn android_setting<T>(
        &self,
        namespace: &str,
        key: &str,
        old: Option<String>,
        apply: impl FnOnce() -> Result<T, GuardError>,
    ) -> Result<T, GuardError> {
        self.st().record(Change::AndroidSetting {
            namespace: namespace.to_string(),
            key: key.to_string(),
            old,
        })?;
        apply()
    }

    /// Writes back the filesystem holding `fs` (`syncfs`, or `sync` of
    /// every filesystem when `None`), then drops the clean page cache,
    /// dentries and inodes (`vm/drop_caches` = 3). Syncing only the lab's
    /// filesystem keeps a slow device elsewhere (another lab) from stalling
    /// every cold start. Not journaled: there is nothing to undo.
    pub fn drop_caches(&self, fs: Option<&Path>) -> Result<(), GuardError> {
        match fs {
            Some(p) => self.sync_fs(p)?,
            None => rustix::fs::sync(),
        }
        self.drop_clean_caches()
    }

    /// Writes back the filesystem holding `fs` (`syncfs`).
    pub fn sync_fs(&self, fs: &Path) -> Result<(), GuardError> {
        let f = File::open(fs).map_err(|e| GuardError::io(fs, e))?;
        rustix::fs::syncfs(&f).map_err(|e| GuardError::io(fs, e.into()))
    }

    /// Drops the clean page cache, dentries and inodes (`vm/drop_caches`
    /// = 3), writing back nothing first.
    pub fn drop_clean_caches(&self) -> Result<(), GuardError> {
        write_attr(Path::new("/proc/sys/vm/drop_caches"), "3")
    }
}

/// A loop device's queue attributes that configuring it changes, as they
/// are now. An attribute this kernel does not have is left out; one that
/// cannot be read is an error (the attach does not happen).
fn loop_queue(name: &str) -> std::io::Result<Vec<(String, String)>> {
    let queue = PathBuf::from(format!("/sys/block/{name}/queue"));
    let mut out = Vec::new();
    for attr in crate::change::LOOP_QUEUE_ATTRS {
        let path = queue.join(attr);
        match std::fs::read_to_string(&path) {
            Ok(v) => out.push((attr.to_string(), v.trim().to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("{}: {e}", path.display()),
                ))
            }
        }
    }
    Ok(out)
}
