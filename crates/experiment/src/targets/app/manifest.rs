//! The file set of a synthetic app, as listed in `DIR/iolab-app.json`.
//!
//! `iolab app --prepare` writes the manifest last (through a rename), so a
//! directory with a manifest holds a complete file set.

use std::path::{Path, PathBuf};

use iolab_sys::{SysError, UsageError};
use serde::{Deserialize, Serialize};

/// Name of the manifest inside the app directory.
pub const MANIFEST_NAME: &str = "iolab-app.json";

/// Bumped whenever the file set or the launch pattern changes, so results
/// from different profiles are never compared by accident.
pub const PROFILE_VERSION: u32 = 1;

/// What kind of app file an entry stands for; decides how a launch uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// The APK: a zip read with pread (central directory, resources.arsc,
    /// entries).
    Apk,
    /// A native library: ELF header read, then mapped and page-faulted.
    NativeLib,
    /// Compiled code (`base.odex`): mapped and page-faulted.
    Odex,
    /// Verified dex (`base.vdex`): mapped and page-faulted.
    Vdex,
    /// The app image (`base.art`): read whole.
    Art,
    /// A small resource file: opened and read whole (some of them).
    Resource,
    /// A SQLite-like database: page reads, then journaled updates.
    Database,
    /// SharedPreferences XML: read, then rewritten with fsync.
    Prefs,
}

/// One file of the set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the app directory, `/`-separated.
    pub path: String,
    /// What the file stands for.
    pub kind: FileKind,
    /// Size in bytes.
    pub size_bytes: u64,
}

/// The manifest: how the set was made and what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`PROFILE_VERSION`] of the iolab that made the set.
    pub profile_version: u32,
    /// Seed of the content and of the launch pattern.
    pub seed: u64,
    /// Scale factor of sizes and counts (1 = the documented profile).
    pub scale: f64,
    /// Every file, in creation order.
    pub files: Vec<FileEntry>,
}

impl Manifest {
    /// Loads `DIR/iolab-app.json`; a missing or foreign manifest is a usage
    /// error that says how to make a good one.
    pub fn load(dir: &Path) -> Result<Manifest, UsageError> {
        let path = dir.join(MANIFEST_NAME);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            UsageError::new(format!(
                "{}: {e}: expected a prepared app; run `iolab app --prepare --dir {}` first",
                path.display(),
                dir.display()
            ))
        })?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| {
            UsageError::new(format!(
                "{}: {e}: not an iolab app manifest; remove the directory and run `iolab app --prepare --dir {}`",
                path.display(),
                dir.display()
            ))
        })?;
        if m.profile_version != PROFILE_VERSION {
            return Err(UsageError::new(format!(
                "{} holds app profile v{} but this iolab launches v{PROFILE_VERSION}: remove the directory and prepare it again",
                dir.display(),
                m.profile_version
            )));
        }
        Ok(m)
    }

    /// Writes the manifest atomically (temp file + rename).
    pub fn save(&self, dir: &Path) -> Result<(), SysError> {
        let path = dir.join(MANIFEST_NAME);
        let tmp = dir.join(format!("{MANIFEST_NAME}.tmp"));
        let text = serde_json::to_string_pretty(self).map_err(|e| SysError::Parse {
            path: path.clone(),
            text: String::new(),
            why: e.to_string(),
        })?;
        std::fs::write(&tmp, text).map_err(|e| SysError::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| SysError::io(&path, e))
    }

    /// Absolute path of one entry.
    pub fn path_of(&self, dir: &Path, entry: &FileEntry) -> PathBuf {
        dir.join(&entry.path)
    }

    /// Total bytes of the set.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size_bytes).sum()
    }
}

/// The files of the app in `dir` (for `--cold evict`: evict exactly these).
pub fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>, UsageError> {
    let m = Manifest::load(dir)?;
    Ok(m.files.iter().map(|f| m.path_of(dir, f)).collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn save_load_round_trip_and_errors() {
        let d = tempfile::tempdir().unwrap();
        let e = Manifest::load(d.path()).unwrap_err();
        assert!(e.0.contains("iolab app --prepare"), "{e}");
        let m = Manifest {
            profile_version: PROFILE_VERSION,
            seed: 3,
            scale: 0.5,
            files: vec![FileEntry {
                path: "lib/arm64/liba.so".into(),
                kind: FileKind::NativeLib,
                size_bytes: 4096,
            }],
        };
        m.save(d.path()).unwrap();
        assert_eq!(Manifest::load(d.path()).unwrap(), m);
        assert_eq!(
            manifest_files(d.path()).unwrap(),
            [d.path().join("lib/arm64/liba.so")]
        );
        std::fs::write(d.path().join(MANIFEST_NAME), "{}").unwrap();
        assert!(Manifest::load(d.path())
            .unwrap_err()
            .0
            .contains("not an iolab"));
    }
}
