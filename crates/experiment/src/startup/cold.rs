//! Making each start cold: drop caches after writing back the lab's
//! filesystem, or evict only the target's files (`Target::files`).

use std::path::{Path, PathBuf};

use iolab_guard::Guard;

use super::config::Cold;
use crate::ExperimentError;

pub(super) fn make_cold(
    guard: &Guard,
    cold: Cold,
    evict: &[PathBuf],
    fs: &Path,
) -> Result<(), ExperimentError> {
    match cold {
        Cold::DropCaches => guard.drop_caches(Some(fs))?,
        Cold::Evict => iolab_sys::pagecache::evict(evict)?,
        Cold::None => {}
    }
    Ok(())
}
