//! Where iolab keeps its files, chosen at run time for the system it finds
//! (one binary serves a PC, a board and an Android phone):
//!
//! - the machine directory (journals, locks, lab mounts): `/run/iolab`
//!   where `/run` exists; on Android (no `/run`, a read-only root)
//!   `/data/local/tmp/iolab/run`, the one place a rooted shell can write;
//!   elsewhere `$TMPDIR/iolab-run`;
//! - the data directory (the results database): on Android
//!   `/data/local/tmp/iolab` (its shells have `HOME=/`, read-only); else
//!   the user's data directory (`~/.local/share/iolab`); without `HOME`,
//!   `/var/lib/iolab`.
//!
//! Each has an `_in(root)` form over a file-system root so tests can
//! present an Android layout.

use std::path::{Path, PathBuf};

/// Android's marker: every Android system image has it.
const ANDROID_MARKER: &str = "system/build.prop";

/// True when `root` looks like an Android system.
pub fn is_android_in(root: &Path) -> bool {
    root.join(ANDROID_MARKER).is_file()
}

/// True on Android.
pub fn is_android() -> bool {
    is_android_in(Path::new("/"))
}

/// The machine directory under file-system root `root`.
pub fn machine_dir_in(root: &Path) -> PathBuf {
    if is_android_in(root) {
        root.join("data/local/tmp/iolab/run")
    } else if root.join("run").is_dir() {
        root.join("run/iolab")
    } else {
        std::env::temp_dir().join("iolab-run")
    }
}

/// The machine directory (journals, locks, lab mounts) of this system;
/// `IOLAB_RUN_DIR` overrides it for one run's journals (see the guard).
pub fn machine_dir() -> PathBuf {
    machine_dir_in(Path::new("/"))
}

/// The default directory of lab images under `root`: on Android
/// `/data/local/tmp/iolab/images` (no /var there, and /data is where
/// there is room); elsewhere `/var/tmp/iolab` (on disk, not a tmpfs, and
/// kept across reboots so a lab's image can be found again).
pub fn image_dir_in(root: &Path) -> PathBuf {
    if is_android_in(root) {
        root.join("data/local/tmp/iolab/images")
    } else {
        root.join("var/tmp/iolab")
    }
}

/// The default directory of lab images on this system.
pub fn image_dir() -> PathBuf {
    image_dir_in(Path::new("/"))
}

/// The results database's file name in the data directory: what every
/// command opens by default and what `iolab remote` pulls from a device.
pub const DB_FILE_NAME: &str = "results.db";

/// The data directory under `root`, given the user's data directory
/// (`dirs::data_dir()`, `None` without `HOME`).
pub fn data_dir_in(root: &Path, user_data: Option<PathBuf>) -> PathBuf {
    if is_android_in(root) {
        root.join("data/local/tmp/iolab")
    } else {
        user_data.map_or_else(|| root.join("var/lib/iolab"), |d| d.join("iolab"))
    }
}

/// The data directory of this system (the results database lives here);
/// `IOLAB_DATA_DIR` overrides it (`iolab remote` keeps a device's results
/// next to the binary it pushed).
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("IOLAB_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    data_dir_in(Path::new("/"), dirs::data_dir())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn android(root: &Path) {
        std::fs::create_dir_all(root.join("system")).unwrap();
        std::fs::write(root.join(ANDROID_MARKER), "ro.build.version.sdk=34\n").unwrap();
    }

    #[test]
    fn a_linux_root_uses_run_and_the_users_data_dir() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("run")).unwrap();
        assert_eq!(machine_dir_in(d.path()), d.path().join("run/iolab"));
        let home = PathBuf::from("/home/u/.local/share");
        assert_eq!(
            data_dir_in(d.path(), Some(home.clone())),
            home.join("iolab")
        );
        assert_eq!(data_dir_in(d.path(), None), d.path().join("var/lib/iolab"));
    }

    #[test]
    fn an_android_root_uses_data_local_tmp_even_with_home() {
        let d = tempfile::tempdir().unwrap();
        android(d.path());
        assert!(is_android_in(d.path()));
        assert_eq!(
            machine_dir_in(d.path()),
            d.path().join("data/local/tmp/iolab/run")
        );
        // Android shells have HOME=/ (read-only): not used.
        let home = Some(PathBuf::from("/.local/share"));
        assert_eq!(
            data_dir_in(d.path(), home),
            d.path().join("data/local/tmp/iolab")
        );
    }

    #[test]
    fn without_run_the_temp_dir_is_used() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            machine_dir_in(d.path()),
            std::env::temp_dir().join("iolab-run")
        );
    }
}
