//! `iolab relayout` — seed 001's treadahead `-w`: the files of prefetch
//! lists rewritten in the lists' order (a recording's order of first
//! access), so a boot's reads become one sweep of the disk. It rewrites
//! the user's files, so it needs `--force`; `iolab boot` runs it in its
//! own copy of the guest's image.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use iolab_cache::prefetch::PrefetchList;
use iolab_sys::units::format_bytes;
use iolab_sys::UsageError;

use super::cache::cache_error;

/// `iolab relayout` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  iolab relayout --force /var/lib/iolab/boot.list && iolab prefetch --order disk /var/lib/iolab/boot.list"
)]
pub struct RelayoutArgs {
    /// Prefetch lists (`FILE off:len,...` lines, as `iolab record`
    /// writes them); their files are rewritten in this order.
    #[arg(required = true, value_name = "LIST")]
    pub lists: Vec<PathBuf>,
    /// Rewrite the files (each is copied whole and renamed over itself:
    /// same bytes, owner, mode and times; a new inode).
    #[arg(long)]
    pub force: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `iolab relayout`.
pub fn run(a: RelayoutArgs) -> anyhow::Result<()> {
    let mut list = PrefetchList::default();
    for l in &a.lists {
        list.extend(PrefetchList::read_file(l).map_err(cache_error)?);
    }
    if !a.force {
        return Err(UsageError::new(format!(
            "iolab relayout rewrites the {} file(s) of the list in place (same bytes, new blocks); add --force to do it",
            list.entries.len()
        ))
        .into());
    }
    let r = iolab_cache::relayout::relayout(&list).map_err(cache_error)?;
    let text = if a.json {
        serde_json::to_string_pretty(&r)? + "\n"
    } else {
        let layout = match (
            r.fragments_before,
            r.fragments_after,
            r.in_order_before,
            r.in_order_after,
        ) {
            (Some(fb), Some(fa), Some(ob), Some(oa)) => format!(
                "fragments {fb} → {fa}, files after the previous one on disk {ob} → {oa} of {}",
                r.files.saturating_sub(1)
            ),
            _ => format!(
                "layout not measured: {}",
                r.layout_unmeasured.as_deref().unwrap_or("?")
            ),
        };
        let mut t = format!(
            "rewrote {} file(s), {}, in {:.2} s: {layout}\n",
            r.files,
            format_bytes(r.bytes),
            r.seconds,
        );
        for (p, why) in &r.skipped {
            t.push_str(&format!("  left as it was: {}: {why}\n", p.display()));
        }
        t
    };
    match &a.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(())
}
