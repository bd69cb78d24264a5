//! `--db PATH`, shared by every command that stores or reads results, with
//! its one default.

use std::path::{Path, PathBuf};

use clap::Args;

/// Where results are stored.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Results database [default: ~/.local/share/iolab/results.db;
    /// /data/local/tmp/iolab/results.db on Android].
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    /// The database to use.
    pub fn path(&self) -> Result<PathBuf, iolab_store::StoreError> {
        path(self.db.as_deref())
    }
}

/// The database given, or the default one (for commands whose `--db` is
/// declared with other attributes, such as `results`' global flag).
pub fn path(given: Option<&Path>) -> Result<PathBuf, iolab_store::StoreError> {
    match given {
        Some(p) => Ok(p.to_path_buf()),
        None => iolab_store::default_db_path(),
    }
}
