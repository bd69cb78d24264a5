//! The cgroups a plan's `cg.*` settings need: the I/O hierarchy of this
//! system (cgroup v2 with the io controller, else v1's blkio as Android
//! and this project's host mount it) and, per cell, iolab's own groups in
//! it — `iolab-PID/target` and `iolab-PID/load` — made through the guard,
//! so they are removed after the cell, on Ctrl-C, on panic, and after a
//! SIGKILL by the next run.
//!
//! On v2 the groups get `memory` beside `io`: cgroup-v2.rst ("Writeback")
//! charges a page-cache page's writeback to the blkcg of the memcg that
//! dirtied it, and only when both controllers are on; with io alone every
//! buffered write of the load is written back from the root, and no
//! setting of the load's group touches it. On v1 a bio is charged to the
//! group of the task that submits it: the flusher's writeback is the
//! root's, the load's own syncs are its group's ([`Groups::writeback`]
//! says which; each cell stores the share of the disk's writes charged to
//! each group).
//!
//! v2 moves whole processes only and the load runs in iolab's own threads,
//! so iolab itself joins the load's group for the cell (moved back after);
//! each target is forked from it and moved into the target's group while
//! it is held before exec, so it never runs an instruction outside it.

use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_sys::UsageError;

use super::setting::{Who, GROUP_FILES, ROOT_FILES};
use crate::ExperimentError;

/// Which cgroup interface the hierarchy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// Cgroup v1's blkio controller.
    V1,
    /// Cgroup v2 with io.
    V2,
}

/// The hierarchy iolab's groups go in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// v1 blkio or v2.
    pub version: Version,
    /// Its mount point (the root group).
    pub root: PathBuf,
    /// The group this process is in now (where it goes back to).
    pub home: PathBuf,
}

impl Hierarchy {
    /// The system's I/O hierarchy: a cgroup2 mount whose root offers `io`,
    /// else a cgroup v1 mount with blkio; a one-line refusal (a usage
    /// error) saying what the system has otherwise. An unreadable
    /// mountinfo or /proc/self/cgroup is an error, not "nothing mounted".
    pub fn find() -> Result<Hierarchy, ExperimentError> {
        let read = |p: &str| {
            std::fs::read_to_string(p).map_err(|e| iolab_sys::SysError::io(Path::new(p), e))
        };
        let (mounts, mine) = (read("/proc/self/mountinfo")?, read("/proc/self/cgroup")?);
        Ok(Hierarchy::from(&mounts, &mine, |p| {
            std::fs::read_to_string(p).ok()
        })?)
    }

    /// As [`Hierarchy::find`] over mountinfo and `/proc/self/cgroup` text.
    pub fn from(
        mountinfo: &str,
        self_cgroup: &str,
        read: impl Fn(&Path) -> Option<String>,
    ) -> Result<Hierarchy, UsageError> {
        let mounts = iolab_sys::mounts::parse(mountinfo);
        let v2 = mounts.iter().find(|m| {
            m.fstype == "cgroup2"
                && read(&m.target.join("cgroup.controllers"))
                    .is_some_and(|c| c.split_whitespace().any(|x| x == "io"))
        });
        if let Some(m) = v2 {
            let rel = self_cgroup
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .unwrap_or("/");
            return Ok(Hierarchy {
                version: Version::V2,
                root: m.target.clone(),
                home: m.target.join(rel.trim_start_matches('/')),
            });
        }
        let v1 = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == "blkio"));
        if let Some(m) = v1 {
            let rel = self_cgroup
                .lines()
                .find_map(|l| {
                    let mut f = l.splitn(3, ':');
                    let (_, ctl, path) = (f.next(), f.next()?, f.next()?);
                    ctl.split(',').any(|c| c == "blkio").then_some(path)
                })
                .unwrap_or("/");
            return Ok(Hierarchy {
                version: Version::V1,
                root: m.target.clone(),
                home: m.target.join(rel.trim_start_matches('/')),
            });
        }
        let v2_without_io = mounts.iter().find(|m| m.fstype == "cgroup2");
        Err(UsageError::new(match v2_without_io {
            Some(m) => format!(
                "no cgroup I/O controller to put the target and the load under: the cgroup2 mount at {} does not offer io (its controllers: {}) and no cgroup v1 blkio is mounted",
                m.target.display(),
                read(&m.target.join("cgroup.controllers"))
                    .map_or_else(|| "unreadable".to_string(), |c| c.trim().to_string())
            ),
            None => "no cgroup I/O controller to put the target and the load under: neither cgroup2 nor cgroup v1 blkio is mounted".to_string(),
        }))
    }

    /// `cgroup v2` or `cgroup v1 blkio`, and where.
    pub fn describe(&self) -> String {
        match self.version {
            Version::V2 => format!("cgroup v2 at {}", self.root.display()),
            Version::V1 => format!("cgroup v1 blkio at {}", self.root.display()),
        }
    }

    /// The files a group of iolab's has here (of those a plan can set):
    /// one probe pair of groups is made and removed through `guard` (the
    /// files exist in child groups only, and only for the controllers the
    /// kernel has).
    pub fn group_files(&self, guard: &Guard) -> Result<Vec<String>, ExperimentError> {
        let mark = guard.mark()?;
        let made = Groups::make(guard, self).map(|g| {
            let dir = g.dir(Who::Target);
            GROUP_FILES
                .iter()
                .filter(|f| dir.join(f).exists())
                .map(|f| f.to_string())
                .collect()
        });
        for line in guard.undo_since(mark) {
            if let Err(e) = line {
                return Err(UsageError::new(format!("removing the probe cgroups: {e}")).into());
            }
        }
        made
    }

    /// True when the root offers `controller` (v2's cgroup.controllers).
    pub fn offers(&self, controller: &str) -> bool {
        std::fs::read_to_string(self.root.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == controller))
    }

    /// The root files a plan can set that exist here.
    pub fn root_files(&self) -> Vec<String> {
        ROOT_FILES
            .iter()
            .filter(|f| self.root.join(f).exists())
            .map(|f| f.to_string())
            .collect()
    }
}

/// iolab's groups for one cell.
#[derive(Debug)]
pub struct Groups {
    /// The hierarchy.
    pub hier: Hierarchy,
    /// `iolab-PID`.
    pub base: PathBuf,
    /// v2 with `memory` on beside `io`: a group's buffered writes are
    /// written back in its name.
    pub memory: bool,
    /// The point puts the target in the hierarchy's root group
    /// (`target.cgroup=root`, Android's top app) instead of its own.
    pub target_in_root: bool,
}

impl Groups {
    /// Makes `iolab-PID/target` and `iolab-PID/load` (v2: with io enabled
    /// down to them) and moves this process into the load's group.
    pub fn make(guard: &Guard, hier: &Hierarchy) -> Result<Groups, ExperimentError> {
        let base = hier.root.join(format!("iolab-{}", std::process::id()));
        let v2 = hier.version == Version::V2;
        let memory = v2 && hier.offers("memory");
        if v2 {
            guard.enable_controller(&hier.root, "io")?;
            if memory {
                guard.enable_controller(&hier.root, "memory")?;
            }
        }
        guard.create_cgroup(&base)?;
        if v2 {
            guard.set_in_own_cgroup(&base, "cgroup.subtree_control", "+io")?;
            if memory {
                guard.set_in_own_cgroup(&base, "cgroup.subtree_control", "+memory")?;
            }
        }
        for who in [Who::Target, Who::Load] {
            guard.create_cgroup(&base.join(who.as_str()))?;
        }
        let g = Groups {
            hier: hier.clone(),
            base,
            memory,
            target_in_root: false,
        };
        guard.move_to_cgroup(
            iolab_sys::process::own_pid(),
            &g.dir(Who::Load),
            &hier.home.join("cgroup.procs"),
        )?;
        Ok(g)
    }

    /// Whose name the page cache's writeback goes out in, said once per
    /// cell and stored with it.
    pub fn writeback(&self) -> &'static str {
        match (self.hier.version, self.memory) {
            (Version::V2, true) => "charged to the group that dirtied the pages (v2 with memory and io)",
            (Version::V2, false) => "the root's: this v2 hierarchy offers no memory controller, so a group's buffered writes are written back outside it and its settings do not reach them",
            (Version::V1, _) => "the issuer's: v1 blkio charges a bio to the group of the task that submits it, so what the flusher writes back is the root's and only a setting of the root or the queue reaches it, while the load's own syncs and direct writes are its group's",
        }
    }

    /// The directory of `who`'s group.
    pub fn dir(&self, who: Who) -> PathBuf {
        self.base.join(who.as_str())
    }

    /// Where the target runs: its own group, or the root.
    pub fn target_dir(&self) -> PathBuf {
        if self.target_in_root {
            self.hier.root.clone()
        } else {
            self.dir(Who::Target)
        }
    }

    /// Puts the held target `pid` in its group (before it is released),
    /// and reads its /proc/PID/cgroup back: a move the kernel did not make
    /// is an error, never a start measured elsewhere.
    pub fn put_target(&self, pid: i32) -> std::io::Result<()> {
        let dir = self.target_dir();
        std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        let want = match dir.strip_prefix(&self.hier.root) {
            Ok(r) if !r.as_os_str().is_empty() => format!("/{}", r.display()),
            _ => "/".to_string(),
        };
        let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))?;
        let v1 = self.hier.version == Version::V1;
        let now = text.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next(), f.next()?, f.next()?);
            let ours = if v1 {
                ctl.split(',').any(|c| c == "blkio")
            } else {
                ctl.is_empty()
            };
            ours.then(|| path.to_string())
        });
        if now.as_deref() == Some(want.as_str()) {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "after the move its /proc/{pid}/cgroup says {now:?}, not {want:?}"
            )))
        }
    }

    /// Bytes read and written on `devnos` by `who`'s group so far: v2's
    /// `io.stat`, v1's `blkio.throttle.io_service_bytes_recursive` (which
    /// counts every bio the group issues, limited or not).
    pub fn io_bytes(&self, who: Who, devnos: &[String]) -> Result<(u64, u64), ExperimentError> {
        let dir = self.dir(who);
        let file = match self.hier.version {
            Version::V2 => dir.join("io.stat"),
            Version::V1 => dir.join("blkio.throttle.io_service_bytes_recursive"),
        };
        let text = std::fs::read_to_string(&file).map_err(|e| iolab_sys::SysError::io(&file, e))?;
        let bytes = match self.hier.version {
            Version::V2 => io_stat_bytes(&text, devnos),
            Version::V1 => blkio_bytes(&text, devnos),
        };
        // A count that does not parse is not 0 bytes of the group's cost.
        bytes.map_err(|bad| {
            iolab_sys::SysError::Parse {
                path: file.clone(),
                text: bad,
                why: "expected a byte count".into(),
            }
            .into()
        })
    }
}

/// Read and write bytes of `devnos` in v2 `io.stat` text; a count that
/// does not parse is returned as the error.
pub fn io_stat_bytes(text: &str, devnos: &[String]) -> Result<(u64, u64), String> {
    let (mut r, mut w) = (0, 0);
    let num = |v: &str| v.parse::<u64>().map_err(|_| v.to_string());
    for line in text.lines() {
        let mut f = line.split_whitespace();
        if !f.next().is_some_and(|d| devnos.iter().any(|x| x == d)) {
            continue;
        }
        for kv in f {
            match kv.split_once('=') {
                Some(("rbytes", v)) => r += num(v)?,
                Some(("wbytes", v)) => w += num(v)?,
                _ => {}
            }
        }
    }
    Ok((r, w))
}

/// Read and write bytes of `devnos` in v1 `blkio.*io_service_bytes*`
/// text; a count that does not parse is returned as the error.
pub fn blkio_bytes(text: &str, devnos: &[String]) -> Result<(u64, u64), String> {
    let (mut r, mut w) = (0, 0);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [dev, op, n] = f[..] {
            if devnos.iter().any(|x| x == dev) {
                let n = n.parse::<u64>().map_err(|_| n.to_string())?;
                match op {
                    "Read" => r += n,
                    "Write" => w += n,
                    _ => {}
                }
            }
        }
    }
    Ok((r, w))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MOUNTS_V1: &str =
        "35 25 0:30 / /sys/fs/cgroup/blkio rw,nosuid shared:15 - cgroup cgroup rw,blkio\n\
        40 25 0:35 / /sys/fs/cgroup/unified rw shared:20 - cgroup2 cgroup2 rw\n";

    #[test]
    fn a_v1_host_with_an_empty_v2_mount_uses_blkio() {
        let h = Hierarchy::from(MOUNTS_V1, "7:blkio:/\n0::/\n", |p| {
            p.ends_with("cgroup.controllers").then(String::new)
        })
        .unwrap();
        assert_eq!(h.version, Version::V1);
        assert_eq!(h.root, Path::new("/sys/fs/cgroup/blkio"));
        assert_eq!(h.home, Path::new("/sys/fs/cgroup/blkio"));
    }

    #[test]
    fn v2_with_io_wins_and_home_is_this_process_group() {
        let m = "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let h =
            Hierarchy::from(m, "0::/user.slice/x\n", |_| Some("cpu io memory\n".into())).unwrap();
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.home, Path::new("/sys/fs/cgroup/user.slice/x"));
        let e = Hierarchy::from(m, "0::/\n", |_| Some("cpu memory\n".into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not offer io (its controllers: cpu memory)"),
            "{e}"
        );
    }

    #[test]
    fn stats_sum_the_devices_asked_for() {
        let v2 =
            "7:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n8:0 rbytes=1 wbytes=1\n";
        assert_eq!(io_stat_bytes(v2, &["7:0".into()]), Ok((4096, 8192)));
        assert_eq!(
            io_stat_bytes("7:0 rbytes=x\n", &["7:0".into()]),
            Err("x".into())
        );
        let v1 =
            "7:0 Read 4096\n7:0 Write 512\n7:0 Sync 0\n7:0 Total 4608\n8:0 Read 9\nTotal 4617\n";
        assert_eq!(blkio_bytes(v1, &["7:0".into()]), Ok((4096, 512)));
        assert_eq!(
            blkio_bytes("7:0 Read -1\n", &["7:0".into()]),
            Err("-1".into())
        );
    }
}
