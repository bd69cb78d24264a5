//! Where a lab's files live and the metadata file that describes it.
//!
//! ```text
//! <run dir>/labs/NAME.jsonl   the lab's journal (what to undo), from Guard::persist_as
//! <run dir>/labs/NAME.json    this metadata: spec, devices, mount point
//! <run dir>/labs/NAME/        the mount point
//! ```
//!
//! The run dir (`/run/iolab`) is a tmpfs cleared at boot, exactly when the
//! loop devices and mounts a lab is made of disappear too, so neither
//! metadata nor mount points can outlive the lab they describe. The
//! metadata file is made with `Guard::create_file`, so the journal removes
//! it with the lab; creating it exclusively also reserves the name.

use std::fs::File;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::spec::LabSpec;
use crate::LabError;

/// The directory holding every lab's journal, metadata and mount point.
pub fn labs_dir() -> PathBuf {
    iolab_guard::run_dir().join("labs")
}

/// The lab's metadata file.
pub fn meta_path(name: &str) -> PathBuf {
    labs_dir().join(format!("{name}.json"))
}

/// The lab's journal once it is persisted (`iolab lab up` made it).
pub fn journal_path(name: &str) -> PathBuf {
    labs_dir().join(format!("{name}.jsonl"))
}

/// Where the lab's filesystem is mounted.
pub fn mountpoint(name: &str) -> PathBuf {
    labs_dir().join(name)
}

/// What kind of device the lab is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LabKind {
    /// Image file → loop device (→ loop device, when throttled).
    Loop,
    /// A zram device.
    Zram,
}

impl std::fmt::Display for LabKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LabKind::Loop => "loop",
            LabKind::Zram => "zram",
        })
    }
}

/// How far a lab got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LabState {
    /// `up` is still making it (or died doing so and awaits recovery).
    Creating,
    /// Ready to use.
    Up,
}

/// The metadata file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabMeta {
    /// Lab name.
    pub name: String,
    /// Creating or up.
    pub state: LabState,
    /// Loop or zram.
    pub kind: LabKind,
    /// What was asked for.
    pub spec: LabSpec,
    /// Kernel name of the device under test (`loop3`), once made.
    pub device: Option<String>,
    /// Kernel name of the throttled lower loop device.
    pub lower: Option<String>,
    /// Canonical path of the image file.
    pub image: Option<PathBuf>,
    /// Mount point, when a filesystem is mounted.
    pub mountpoint: Option<PathBuf>,
    /// Driver queue depth applied to the device under test.
    pub queue_depth: Option<u32>,
    /// Pid of the iolab process that made the lab.
    pub owner_pid: i32,
    /// Its start time (clock ticks since boot), to survive pid reuse.
    pub owner_start: u64,
    /// When the lab was made (seconds since the epoch).
    pub created_unix: u64,
    /// What the lab could not be made to do as a phone's storage does on
    /// this host (a dirty limit the kernel cannot apply per device), said
    /// in every result measured on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl LabMeta {
    /// True while the process that made the lab still runs.
    pub fn owner_alive(&self) -> bool {
        iolab_sys::process::is_alive(self.owner_pid, self.owner_start)
    }
}

/// Rewrites the metadata file in place (its handle comes from
/// `Guard::create_file`) and syncs it.
pub(crate) fn write(file: &mut File, path: &Path, meta: &LabMeta) -> Result<(), LabError> {
    let mut text = serde_json::to_string_pretty(meta).map_err(|e| LabError::Meta {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    text.push('\n');
    file.set_len(0)
        .and_then(|_| file.rewind())
        .and_then(|_| file.write_all(text.as_bytes()))
        .and_then(|_| file.sync_data())
        .map_err(|e| LabError::io(path, e))
}

/// Reads a lab's metadata; `Ok(None)` when there is no such lab.
pub fn read(name: &str) -> Result<Option<LabMeta>, LabError> {
    let path = meta_path(name);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LabError::io(&path, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| LabError::Meta {
            path,
            why: e.to_string(),
        })
}

/// Names of all labs (with metadata or a journal), sorted.
pub fn names() -> Result<Vec<String>, LabError> {
    let dir = labs_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LabError::io(&dir, e)),
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_suffix(".jsonl")
                .or_else(|| n.strip_suffix(".json"))
                .map(str::to_string)
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// The pid holding a flock on `path` (from /proc/locks, proc(5)), if any:
/// says who is using a lab's journal when it cannot be taken.
pub fn flock_holder(path: &Path) -> Option<i32> {
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(path).ok()?.ino();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    holder_in(&locks, ino)
}

/// `1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF` → 1234 when the
/// inode (last part of MAJOR:MINOR:INODE) is `ino`.
fn holder_in(locks: &str, ino: u64) -> Option<i32> {
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (kind, pid, id) = (f.get(1)?, f.get(4)?, f.get(5)?);
        let lock_ino: u64 = id.rsplit(':').next()?.parse().ok()?;
        (*kind == "FLOCK" && lock_ino == ino)
            .then(|| pid.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_flock_holder_by_inode() {
        let text = "1: POSIX  ADVISORY  WRITE 99 00:1a:77 0 EOF\n2: FLOCK  ADVISORY  WRITE 4242 00:1a:77 0 EOF\n3: FLOCK  ADVISORY  WRITE 5 00:1a:8 0 EOF\n";
        assert_eq!(holder_in(text, 77), Some(4242));
        assert_eq!(holder_in(text, 8), Some(5));
        assert_eq!(holder_in(text, 9), None);
    }

    #[test]
    fn own_flock_is_found_live() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j");
        let f = File::create(&p).unwrap();
        assert_eq!(flock_holder(&p), None);
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive).unwrap();
        assert_eq!(flock_holder(&p), Some(std::process::id() as i32));
    }

    #[test]
    fn metadata_round_trips() {
        let m = LabMeta {
            name: "a".into(),
            state: LabState::Up,
            kind: LabKind::Loop,
            spec: LabSpec::default(),
            device: Some("loop3".into()),
            lower: None,
            image: Some("/var/tmp/iolab/a.img".into()),
            mountpoint: None,
            queue_depth: Some(4),
            owner_pid: 1,
            owner_start: 2,
            created_unix: 3,
            warnings: Vec::new(),
        };
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.json");
        let mut f = File::create(&p).unwrap();
        write(&mut f, &p, &m).unwrap();
        write(&mut f, &p, &m).unwrap(); // rewrites, never appends
        let back: LabMeta = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}
