//! Making each start cold: drop caches after writing back the lab's
//! filesystem, or evict only the target's files (`Target::files`).

use std::path::{Path, PathBuf};

use iolab_guard::Guard;

use super::config::Cold;
use super::files::ColdStep;
use crate::ExperimentError;

/// Makes the cache cold as `cold` says; what each part took.
pub(super) fn make_cold(
    guard: &Guard,
    cold: Cold,
    evict: &[PathBuf],
    fs: &Path,
) -> Result<ColdStep, ExperimentError> {
    let t0 = std::time::Instant::now();
    let mut step = ColdStep::default();
    match cold {
        Cold::DropCaches => {
            guard.sync_fs(fs)?;
            step.writeback_s = t0.elapsed().as_secs_f64();
            guard.drop_clean_caches()?;
        }
        Cold::Evict => iolab_sys::pagecache::evict(evict)?,
        Cold::None => {}
    }
    step.drop_s = t0.elapsed().as_secs_f64() - step.writeback_s;
    Ok(step)
}
