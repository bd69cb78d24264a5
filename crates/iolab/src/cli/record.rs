//! `iolab record` — which file ranges a command brings into the page cache,
//! written as a prefetch list (`FILE off:len,...`) for `iolab prefetch` and
//! `iolab startup --prefetch`.

use std::io::Write as _;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use iolab_record::{DevNo, RecordSpec, ResolveOptions};
use iolab_sys::UsageError;

const AFTER: &str = "\
Records which byte ranges of which files COMMAND and every task it forks
bring into the page cache (tracepoint filemap:mm_filemap_add_to_page_cache,
in a private tracefs instance, following COMMAND with set_event_pid and
event-fork from before its exec), merges them per file, files in order of
first access, and writes a prefetch list `FILE off:len,off:len,...` for
`iolab prefetch` and `iolab startup --prefetch` (or --json). COMMAND's
stdout goes to stderr unless -o is given.

What is recorded:
  Every folio added to the page cache by COMMAND or a task it forks later,
  readahead included (readahead inserts its pages in the reader's context).
  Only pages *added* are seen: pages already cached leave no trace, so
  record cold (--evict the app's files, or --drop-caches). Pages other
  processes add in the same window are excluded, even if COMMAND reads them
  afterwards. Not followed: tasks COMMAND does not fork (daemons doing work
  for it), io_uring io-wq workers (buffered io_uring reads still add their
  pages from COMMAND's task), kernel threads (khugepaged, a loop device's
  worker reading its backing file).

Naming inodes (the tracepoint gives device and inode, not a path):
  1. paths the recorded tasks used: /proc/PID/maps and /proc/PID/fd sampled
     every 25 ms, exec'd filenames, paths in COMMAND's arguments;
  2. open_by_handle_at with the inode number (ext2/3/4, f2fs, erofs), named
     through the dentry the kernel still caches;
  3. a breadth-first walk of the device's mounts (directories COMMAND named
     or ran in, and those of files already named, first), matching inode
     numbers, until all are named or --walk-timeout (--no-walk skips it).
  Every name is verified by stat (device and inode). Limits: a hard-linked
  file gets one of its names; deleted files, devices not mounted here, and
  a block device's own cache (filesystem metadata) cannot be named and are
  listed as `# unresolved` comments; on btrfs, files in subvolumes do not
  verify.

Android: `iolab record -- am start -W -n PKG/.Activity` follows only the am
process tree; the app is forked by zygote for system_server and is not a
child of am. Record every task instead, with a filter on the device holding
the app: `iolab record --all-pids --dev /data -- am start -W -n PKG/.Activity`
(add --duration S to keep recording after am returns). Following the app
itself would need its pid before it runs (zygote's fork: a uid filter or a
wrapper set with `setprop wrap.PKG`).

Examples:
  iolab record --evict /opt/app -o app.list -- /opt/app/bin/start
  iolab record --all-pids --dev /dev/vdb --duration 10 -o boot.list
  iolab prefetch app.list";

/// Arguments of `iolab record`.
#[derive(Debug, Args)]
#[command(after_help = AFTER)]
pub struct RecordArgs {
    /// Write the list to LIST instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "LIST")]
    pub output: Option<PathBuf>,
    /// Print the whole recording as JSON (files, ranges, how each was named).
    #[arg(long)]
    pub json: bool,
    /// Record every task on the machine, not only COMMAND's (use with --dev).
    #[arg(long)]
    pub all_pids: bool,
    /// Keep recording at least S seconds (also after COMMAND exits); with
    /// --until-file, at most S seconds.
    #[arg(long, value_name = "S", value_parser = super::values::duration)]
    pub duration: Option<Duration>,
    /// Stop recording when this file appears (a boot's end marker), at the
    /// latest after --duration.
    #[arg(long, value_name = "PATH", requires = "duration")]
    pub until_file: Option<PathBuf>,
    /// Only pages of files on this filesystem: MAJ:MIN, a block device, or
    /// any path on it (repeatable).
    #[arg(long = "dev", value_name = "DEV")]
    pub devices: Vec<String>,
    /// Evict these files (directories recursively) from the page cache
    /// first, so their pages are read, and seen, again.
    #[arg(long, value_name = "PATH")]
    pub evict: Vec<PathBuf>,
    /// Drop every clean page cache first (sync; drop_caches), guarded.
    #[arg(long)]
    pub drop_caches: bool,
    /// Name inodes only from the paths the tasks used and file handles.
    #[arg(long)]
    pub no_walk: bool,
    /// Give up walking filesystems for names after S seconds.
    #[arg(long, default_value = "10", value_name = "S", value_parser = super::values::duration)]
    pub walk_timeout: Duration,
    /// Write one byte to this inherited descriptor once the trace is on,
    /// then close it (how `iolab boot-init --record` holds init until the
    /// recording sees everything).
    #[arg(long, value_name = "FD", hide = true)]
    pub ready_fd: Option<i32>,
    /// Trace ring buffer per CPU, KiB.
    #[arg(long, default_value_t = 8192, value_name = "KIB")]
    pub buffer_kib: u32,
    /// The command to record.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `iolab record`.
pub fn run(a: RecordArgs) -> anyhow::Result<()> {
    super::require_root("iolab record")?;
    let duration = a.duration;
    if a.command.is_empty() && !(a.all_pids && duration.is_some()) {
        return Err(UsageError::new(
            "nothing to record: give a command after --, e.g. `iolab record -o app.list -- ./app` \
             (or --all-pids --duration S)",
        )
        .into());
    }
    let devices = a
        .devices
        .iter()
        .map(|d| parse_dev(d))
        .collect::<Result<Vec<_>, _>>()?;
    let guard = iolab_guard::Guard::new();
    if !a.evict.is_empty() {
        evict(&a.evict)?;
    }
    if a.drop_caches {
        guard.drop_caches(None)?;
    }
    let spec = RecordSpec {
        argv: a.command.clone(),
        all_pids: a.all_pids,
        devices,
        duration,
        until_file: a.until_file.clone(),
        ready_fd: a.ready_fd,
        stdout_to_stderr: a.output.is_none(),
        buffer_kib_per_cpu: a.buffer_kib,
        resolve: ResolveOptions {
            handles: true,
            walk: !a.no_walk,
            walk_limit: Some(a.walk_timeout),
        },
    };
    // Usage errors exit 2 through exit.rs, like every library error.
    let rec = iolab_record::record(&guard, &spec)?;
    let text = rec.list_text();
    if let Some(path) = &a.output {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &rec)?;
        writeln!(out)?;
    } else if a.output.is_none() {
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    iolab_sys::say!("iolab record: {}", rec.summary());
    if rec.events == 0 {
        iolab_sys::say!(
            "iolab record: no pages were added: were the files already cached? (--evict PATH or --drop-caches)"
        );
    }
    if rec.lost > 0 {
        iolab_sys::say!(
            "iolab record: the kernel dropped {} events: the list may miss pages (raise --buffer-kib)",
            rec.lost
        );
    }
    match (rec.exit_code, rec.signal) {
        (Some(0), _) | (None, None) => Ok(()),
        (Some(c), _) => anyhow::bail!("the command exited with status {c} (list written)"),
        (None, Some(s)) => anyhow::bail!("the command was killed by signal {s} (list written)"),
    }
}

/// MAJ:MIN, a block device (its own number), or a path (its filesystem's).
fn parse_dev(s: &str) -> Result<DevNo, UsageError> {
    if let Ok(d) = s.parse::<DevNo>() {
        return Ok(d);
    }
    let md = std::fs::metadata(s).map_err(|e| {
        UsageError::new(format!(
            "--dev {s:?}: {e}: expected MAJ:MIN, a block device or a path on the filesystem"
        ))
    })?;
    Ok(if md.file_type().is_block_device() {
        DevNo::from_st_dev(md.rdev())
    } else {
        DevNo::from_st_dev(md.dev())
    })
}

fn evict(paths: &[PathBuf]) -> anyhow::Result<()> {
    for p in paths {
        if !p.exists() {
            return Err(UsageError::new(format!(
                "--evict {}: no such file or directory",
                p.display()
            ))
            .into());
        }
    }
    let (list, _) = iolab_cache::prefetch::PrefetchList::from_paths(paths, false)?;
    let files: Vec<&Path> = list.entries.iter().map(|e| e.path.as_path()).collect();
    iolab_sys::pagecache::evict(&files)?;
    Ok(())
}
