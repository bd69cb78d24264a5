//! `iolab cache` — page-cache residency of files (seed 001's `mincore`,
//! fincore and vmtouch in one): per-file counts and a bar, the full page
//! map, ranges ready for `iolab prefetch`, eviction and reading in.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use iolab_cache::scan::{self, Action, Output, ScanOptions};
use iolab_cache::walk::WalkOptions;
use iolab_cache::CacheError;
use iolab_sys::UsageError;

/// `iolab cache` arguments.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct CacheArgs {
    /// Files or directories (a directory lists its own files; -R walks
    /// below it). Symbolic links named here are followed.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Walk directories recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,

    /// Follow symbolic links met while walking (each directory is still
    /// walked once).
    #[arg(short = 'L', long)]
    pub follow: bool,

    /// Show every page: the full map below each file (`#` cached, `.` not).
    #[arg(short, long)]
    pub verbose: bool,

    /// Print the cached byte ranges as `FILE off:len,off:len,...`, a list
    /// `iolab prefetch` reads back. Files with nothing cached are left out.
    #[arg(short, long)]
    pub ranges: bool,

    /// Evict the files' pages (POSIX_FADV_DONTNEED) and report what stayed:
    /// dirty pages (see --sync) and pages mapped by running processes.
    #[arg(long, conflicts_with = "touch")]
    pub evict: bool,

    /// With --evict: write dirty pages back first (fdatasync), so they can
    /// be evicted too.
    #[arg(long, requires = "evict")]
    pub sync: bool,

    /// Read the files into the page cache.
    #[arg(long)]
    pub touch: bool,

    /// Print only the totals.
    #[arg(short, long, conflicts_with_all = ["ranges", "verbose"])]
    pub summary: bool,

    /// One JSON document: files[] with fincore's names (file, size, pages =
    /// cached pages, res = cached bytes) plus total_pages, percent,
    /// dirty/writeback/evicted/recently_evicted_pages, ranges with -r, map
    /// with -v; totals, skipped, notes.
    #[arg(long)]
    pub json: bool,

    /// Threads walking directories (default: one per CPU).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

const AFTER_HELP: &str = "\
Counts come from cachestat(2) (Linux >= 6.5: also dirty, writeback and evicted
pages); the bar, -v and -r need the page map, from mmap+mincore. Since Linux
5.2 the kernel describes a file's cache only to its owner, to users who may
write it, and to root: other files are listed once as not inspectable instead
of being shown with wrong numbers.

Examples:
  iolab cache /usr/bin/ls                  one file, with its bar
  iolab cache -R /usr/lib --summary        totals of a tree
  iolab cache -r app/*.apk > boot.list     ranges to replay with iolab prefetch
  iolab cache -R --evict --sync /var/tmp/data
  iolab cache -R --json /usr > usr-cache.json";

/// Terminal width for the bar: the terminal's, else $COLUMNS, else 80.
fn terminal_columns() -> usize {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize we own; failure leaves it 0.
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    if rc == 0 && ws.ws_col > 0 {
        return usize::from(ws.ws_col);
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(80)
}

/// Turns a library error into the binary's: a path that does not exist
/// also says what was expected (still a `UsageError`: exit 2).
pub(crate) fn cache_error(e: CacheError) -> anyhow::Error {
    match e {
        CacheError::Missing(u) => {
            UsageError::new(format!("{u}: expected existing files or directories")).into()
        }
        e => e.into(),
    }
}

pub fn run(a: CacheArgs) -> anyhow::Result<()> {
    let output = if a.json {
        Output::Json {
            files: !a.summary,
            ranges: a.ranges,
            map: a.verbose,
        }
    } else if a.summary {
        Output::Summary
    } else if a.ranges {
        Output::Ranges
    } else {
        Output::Table {
            columns: terminal_columns(),
            map: a.verbose,
        }
    };
    let action = if a.evict {
        Action::Evict { sync: a.sync }
    } else if a.touch {
        Action::Touch
    } else {
        Action::Inspect
    };
    let threads = a
        .threads
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let opts = ScanOptions {
        output,
        action,
        walk: WalkOptions {
            recursive: a.recursive,
            follow: a.follow,
            threads,
        },
    };
    let mut result = scan::scan(&a.paths, &opts).map_err(cache_error)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    iolab_cache::render::write_output(&mut out, &result, output)?;
    out.flush()?;
    drop(out);
    if !a.json {
        let tty = std::io::stderr().is_terminal();
        for s in result.notes.sentences() {
            iolab_sys::say!("iolab: {}{s}", if tty { "note: " } else { "" });
        }
    }
    if let Some(e) = result.missing.take() {
        return Err(cache_error(e));
    }
    if result.totals.files == 0 && result.notes.skipped() > 0 {
        let why = if a.json {
            result.notes.sentences().join("; ")
        } else {
            "see the notes above".to_string()
        };
        anyhow::bail!("nothing could be inspected ({why})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::exit::{code_for, one_line};

    #[test]
    fn a_missing_path_says_what_was_expected_and_other_usage_errors_are_unchanged() {
        let missing = CacheError::io("/no/such", std::io::ErrorKind::NotFound.into());
        let err = cache_error(missing).context("ctx");
        assert_eq!(code_for(&err), 2);
        assert_eq!(
            one_line(&err),
            "ctx: /no/such: entity not found: expected existing files or directories"
        );
        let list = iolab_cache::prefetch::PrefetchList::parse("a 0:0\n")
            .err()
            .unwrap();
        let text = list.to_string();
        let err = cache_error(list).context("ctx");
        assert_eq!(code_for(&err), 2);
        assert_eq!(one_line(&err), format!("ctx: {text}"));
        let denied = CacheError::io("/root/x", std::io::ErrorKind::PermissionDenied.into());
        assert_eq!(code_for(&cache_error(denied)), 1);
    }
}
