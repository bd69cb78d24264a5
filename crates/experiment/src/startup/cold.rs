//! Making each start cold: drop caches after writing back the lab's
//! filesystem, or evict only the target's files.

use std::path::{Path, PathBuf};

use iolab_guard::Guard;

use super::config::{Cold, StartupConfig};
use super::StartupError;

/// Files to evict for `--cold evict`: the listed paths (directories
/// recursively), else the target's executable.
pub(super) fn evict_list(cfg: &StartupConfig) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let app_dir = || {
        // The built-in app: its --dir holds every file it reads.
        (cfg.command.get(1).map(String::as_str) == Some("app"))
            .then(|| {
                cfg.command
                    .windows(2)
                    .find(|w| w[0] == "--dir")
                    .map(|w| PathBuf::from(&w[1]))
            })
            .flatten()
    };
    let roots: Vec<PathBuf> = if !cfg.evict.is_empty() {
        cfg.evict.clone()
    } else if let Some(dir) = app_dir() {
        vec![dir]
    } else {
        cfg.command
            .first()
            .and_then(|p| which(p))
            .into_iter()
            .collect()
    };
    for r in roots {
        collect_files(&r, &mut out);
    }
    out
}

pub(super) fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        return Some(PathBuf::from(prog));
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file())
}

pub(super) fn collect_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                collect_files(&e.path(), out);
            }
        }
    } else if p.is_file() {
        out.push(p.to_path_buf());
    }
}

pub(super) fn make_cold(
    guard: &Guard,
    cold: Cold,
    evict: &[PathBuf],
    fs: &Path,
) -> Result<(), StartupError> {
    match cold {
        Cold::DropCaches => guard.drop_caches(Some(fs))?,
        Cold::Evict => iolab_sys::pagecache::evict(evict)?,
        Cold::None => {}
    }
    Ok(())
}
