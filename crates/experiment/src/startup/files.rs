//! The target's files: what each start's cold step evicts, and whose
//! residency afterwards says whether the start was cold at all.
//!
//! Unless `--evict` names them, they are learnt in the experiment's first
//! start, which is cold: every page-cache insertion of the target's
//! process tree is recorded (as `iolab record` does) on every filesystem —
//! so an app on the root filesystem is covered, and a library every
//! process maps (never evicted by anyone) is not, since it was never read.
//! The first start itself is checked on the target's own files (its
//! executable or directory). Recording costs that start a tracepoint hit
//! per page it reads (see docs/PERFORMANCE.md); no extra start is made,
//! so a target runs exactly as often as asked. After each cold step their
//! residency is measured (mincore, as fincore counts): a start that begins
//! with more than [`NOT_COLD_SHARE`] of them still cached was not cold,
//! and the processes that map them are named. Pages some process mapped
//! before the experiment began (libc under every process, the app open
//! elsewhere) are the machine's cold state: stored, not held against it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_record::{RecordOptions, Recorder, Recording, ResolveOptions};
use serde::Serialize;

use crate::ExperimentError;

/// Share of the target's file bytes that may still be cached after the
/// cold step before the start is not a cold start.
pub(super) const NOT_COLD_SHARE: f64 = 0.10;

/// ... and the least that may be, in bytes: a shell started anywhere on
/// the machine maps `/bin/sh`, which is a tiny target's whole share.
pub(super) const NOT_COLD_MIN_BYTES: u64 = 1 << 20;

/// Starts recording what the target's tree (`pid`, held before exec)
/// brings into the page cache, on every filesystem.
pub(super) fn begin(guard: &Guard, pid: i32, argv: &[String]) -> Result<Recorder, ExperimentError> {
    let mut names = iolab_record::candidates::Candidates::default();
    names.add_argv(argv);
    let opts = RecordOptions {
        pids: Some(vec![pid]),
        // The start is timed: the reader takes only idle CPU.
        idle_reader: true,
        ..RecordOptions::default()
    };
    Ok(Recorder::start(guard, &opts, names)?)
}

/// The regular, droppable files the recording saw pages of.
pub(super) fn finish(rec: Recorder, argv: &[String]) -> Result<Vec<PathBuf>, ExperimentError> {
    let recording = Recording::build(
        rec.finish()?,
        argv.to_vec(),
        "pids",
        Vec::new(),
        None,
        ResolveOptions::default(),
    );
    Ok(recording
        .files
        .into_iter()
        .filter_map(|f| f.file)
        .filter(|p| p.is_file() && droppable(p))
        .collect())
}

/// How cold a start's files were after the cold step.
#[derive(Debug, Clone, Serialize)]
pub(super) struct ColdCheck {
    /// Files measured.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Of those, still cached.
    pub cached_bytes: u64,
    /// `cached_bytes / bytes`, 0 to 1.
    pub cached_share: f64,
    /// Of the cached bytes, those in ranges some process already mapped
    /// before the experiment began (libc under every process, the same
    /// app open elsewhere): the machine's cold state, not a leftover.
    /// Counted only when the cached share is over the limit.
    pub mapped_before_bytes: u64,
    /// Processes mapping them that did not before the experiment, with
    /// the cached bytes they map, biggest first: `pid comm (16.0MiB)`;
    /// named when the cached share is over the limit.
    pub holders: Vec<String>,
    /// What the cold step took, s: the filesystem's writeback, then the
    /// drop (drop_caches, or each file's eviction). Under a writing load
    /// both can take long, and that time is the machine's, not the
    /// start's.
    pub step: ColdStep,
}

/// The cold step's two parts, timed.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(super) struct ColdStep {
    /// syncfs of the place's filesystem (0 when evicting files).
    pub writeback_s: f64,
    /// Writing drop_caches; or, with `--cold evict`, each file's
    /// fdatasync and fadvise, its writeback included.
    pub drop_s: f64,
}

impl ColdCheck {
    /// Measures `files` now (missing ones, e.g. a journal deleted since,
    /// and memory-only ones, left out), against the mappings `before`
    /// the experiment.
    pub(super) fn measure(
        files: &[PathBuf],
        before: &Maps,
    ) -> Result<ColdCheck, iolab_sys::SysError> {
        let page = iolab_sys::pagecache::page_size();
        let mut maps: Vec<(PathBuf, (u64, u64), Vec<u8>)> = Vec::new();
        let (mut bytes, mut cached) = (0u64, 0u64);
        for f in files.iter().filter(|f| droppable(f)) {
            let Ok(file) = std::fs::File::open(f) else {
                continue;
            };
            let Ok(meta) = file.metadata() else {
                continue;
            };
            let mut map = Vec::new();
            use std::os::fd::AsFd;
            if iolab_sys::pagecache::page_map(file.as_fd(), 0, meta.len(), &mut map).is_err() {
                continue;
            }
            bytes += meta.len().div_ceil(page) * page;
            cached += map.iter().map(|&b| u64::from(b)).sum::<u64>() * page;
            maps.push((f.clone(), (meta.dev(), meta.ino()), map));
        }
        let mut check = ColdCheck {
            files: maps.len(),
            bytes,
            cached_bytes: cached,
            cached_share: share(cached, bytes),
            mapped_before_bytes: 0,
            holders: Vec::new(),
            step: ColdStep::default(),
        };
        if check.cached_share <= NOT_COLD_SHARE {
            return Ok(check);
        }
        // Over the limit: which of those pages were the machine's own
        // before the experiment, and who maps the files now.
        let now = Maps::scan(Path::new("/proc"))?;
        let mut held: Vec<(u32, String, u64)> = Vec::new();
        for (_, key, map) in &maps {
            let resident = |i: usize| map.get(i).copied() == Some(1);
            let was: Vec<&Mapped> = before.of(*key).collect();
            let is: Vec<&Mapped> = now.of(*key).collect();
            let kept = (0..map.len())
                .filter(|&i| resident(i) && was.iter().any(|m| m.covers(i as u64 * page)))
                .count() as u64;
            check.mapped_before_bytes += kept * page;
            // Per process, the file's pages it maps (a file mapped twice
            // counts once), those cached summed.
            let mut pids: Vec<(u32, &str)> = Vec::new();
            for m in &is {
                if !was.iter().any(|b| b.pid == m.pid) && !pids.iter().any(|p| p.0 == m.pid) {
                    pids.push((m.pid, &m.comm));
                }
            }
            for (pid, comm) in pids {
                let pages = (0..map.len())
                    .filter(|&i| {
                        resident(i) && is.iter().any(|m| m.pid == pid && m.covers(i as u64 * page))
                    })
                    .count() as u64;
                match held.iter_mut().find(|h| h.0 == pid) {
                    Some(h) => h.2 += pages * page,
                    None => held.push((pid, comm.to_string(), pages * page)),
                }
            }
        }
        // The biggest holders first: a process mapping one shared library
        // of the target's is named after the one holding its data.
        held.sort_by(|x, y| y.2.cmp(&x.2).then(x.0.cmp(&y.0)));
        check.holders = held
            .into_iter()
            .filter(|h| h.2 > 0)
            .map(|(pid, comm, bytes)| {
                format!("{pid} {comm} ({})", iolab_sys::units::format_bytes(bytes))
            })
            .collect();
        Ok(check)
    }

    /// Cached share that the cold step should have dropped: the machine's
    /// own mapped pages left out, 0 to 1.
    pub(super) fn share(&self) -> f64 {
        share(
            self.cached_bytes.saturating_sub(self.mapped_before_bytes),
            self.bytes,
        )
    }

    /// Why the start was not cold, when it was not.
    pub(super) fn problem(&self) -> Option<String> {
        let excess = self.cached_bytes.saturating_sub(self.mapped_before_bytes);
        (self.share() > NOT_COLD_SHARE && excess >= NOT_COLD_MIN_BYTES).then(|| {
            format!(
                "not cold: {:.0} % of the target's {} in {} file(s) was still cached after the cold step{}",
                self.share() * 100.0,
                iolab_sys::units::format_bytes(self.bytes),
                self.files,
                if self.holders.is_empty() {
                    " (no process started since the experiment began maps them: cached by something the cold step does not reach)".to_string()
                } else {
                    let more = self.holders.len().saturating_sub(4);
                    format!(
                        ", mapped by {}{}",
                        self.holders[..self.holders.len() - more].join(", "),
                        if more > 0 { format!(" and {more} more") } else { String::new() }
                    )
                }
            )
        })
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// False for a file whose pages live only in memory (tmpfs, ramfs): no
/// cold step can drop them, so they say nothing about whether one worked.
fn droppable(path: &Path) -> bool {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    match rustix::fs::statfs(path) {
        #[allow(clippy::unnecessary_cast)]
        Ok(st) => ![TMPFS_MAGIC, RAMFS_MAGIC].contains(&(st.f_type as u64)),
        Err(_) => false,
    }
}

/// One file range a process maps.
#[derive(Debug, Clone)]
pub(super) struct Mapped {
    pid: u32,
    comm: String,
    /// (st_dev, st_ino) of the file, as `stat` gives them (btrfs maps
    /// show another device number than stat, so not the maps field).
    key: (u64, u64),
    /// Bytes of the file mapped: `[from, to)`.
    from: u64,
    to: u64,
}

impl Mapped {
    /// True when byte `at` of the file is in the range.
    fn covers(&self, at: u64) -> bool {
        self.from <= at && at < self.to
    }
}

/// Every file range every process maps (/proc/PID/maps), at one moment.
#[derive(Debug, Clone, Default)]
pub(super) struct Maps(Vec<Mapped>);

impl Maps {
    /// Reads `proc`'s maps (iolab's own included: `iolab app` as the
    /// target maps the binary iolab runs).
    /// /proc that cannot be listed is an error: what the machine maps
    /// decides which cached pages a cold check excuses.
    pub(super) fn scan(proc: &Path) -> Result<Maps, iolab_sys::SysError> {
        let mut keys: std::collections::HashMap<String, Option<(u64, u64)>> =
            std::collections::HashMap::new();
        let mut out = Vec::new();
        let pids = iolab_sys::process::pids(proc).map_err(|e| iolab_sys::SysError::io(proc, e))?;
        for pid in pids {
            let dir = proc.join(pid.to_string());
            let Ok(pid) = u32::try_from(pid) else {
                continue;
            };
            // Gone since the walk: it maps nothing now.
            let Ok(text) = std::fs::read_to_string(dir.join("maps")) else {
                continue;
            };
            let comm = std::fs::read_to_string(dir.join("comm"))
                .map(|c| c.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            for line in text.lines() {
                let Some((range, offset, path)) = parse_maps_line(line) else {
                    continue;
                };
                let key = *keys
                    .entry(path.to_string())
                    .or_insert_with(|| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino())));
                if let Some(key) = key {
                    out.push(Mapped {
                        pid,
                        comm: comm.clone(),
                        key,
                        from: offset,
                        to: offset + range,
                    });
                }
            }
        }
        Ok(Maps(out))
    }

    fn of(&self, key: (u64, u64)) -> impl Iterator<Item = &Mapped> {
        self.0.iter().filter(move |m| m.key == key)
    }
}

/// `(length, file offset, path)` of a maps line naming a file.
fn parse_maps_line(line: &str) -> Option<(u64, u64, &str)> {
    let mut f = line.splitn(6, char::is_whitespace);
    let (range, _perms, offset, _dev, _ino) =
        (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
    let path = f.next()?.trim_start();
    if !path.starts_with('/') || path.ends_with(" (deleted)") {
        return None;
    }
    let (a, b) = range.split_once('-')?;
    let len = u64::from_str_radix(b, 16).ok()? - u64::from_str_radix(a, 16).ok()?;
    Some((len, u64::from_str_radix(offset, 16).ok()?, path))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_just_written_is_cached_and_one_gone_is_left_out() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("lib.so");
        std::fs::write(&f, vec![7u8; 2 << 20]).unwrap();
        let check = ColdCheck::measure(std::slice::from_ref(&f), &Maps::default()).unwrap();
        if !droppable(&f) {
            // On tmpfs nothing could be dropped: not counted at all.
            assert_eq!(check.files, 0);
            return;
        }
        assert_eq!((check.files, check.bytes), (1, 2 << 20));
        // A file just written is in the page cache.
        assert!(check.share() > NOT_COLD_SHARE, "{check:?}");
        let why = check.problem().unwrap();
        assert!(why.starts_with("not cold: 100 %"), "{why}");
        assert!(why.contains("no process started since"), "{why}");
        let missing = ColdCheck::measure(&[d.path().join("gone")], &Maps::default()).unwrap();
        assert_eq!((missing.files, missing.share()), (0, 0.0));
        assert!(missing.problem().is_none());
    }

    #[test]
    fn maps_lines_give_the_file_range_and_skip_anonymous_and_deleted() {
        let l = "7f00a000-7f00c000 r-xp 00003000 fd:01 1234    /usr/lib/libc.so.6";
        assert_eq!(
            parse_maps_line(l),
            Some((0x2000, 0x3000, "/usr/lib/libc.so.6"))
        );
        let spaced = "7f00a000-7f00b000 r--p 00000000 fd:01 99  /data/my app/lib.so";
        assert_eq!(
            parse_maps_line(spaced).map(|x| x.2),
            Some("/data/my app/lib.so")
        );
        assert_eq!(
            parse_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0  [stack]"),
            None
        );
        assert_eq!(
            parse_maps_line("7f00a000-7f00b000 rw-p 00000000 00:00 0"),
            None
        );
        assert_eq!(
            parse_maps_line("7f00a000-7f00b000 r--p 00000000 fd:01 7 /tmp/x (deleted)"),
            None
        );
    }

    #[test]
    fn pages_this_test_maps_are_found_with_the_mapper_named() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("data");
        std::fs::write(&f, vec![1u8; 1 << 20]).unwrap();
        if !droppable(&f) {
            return;
        }
        // A child maps the file.
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import mmap,sys,time; f=open(sys.argv[1],'rb'); m=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ); print('ok',flush=True); time.sleep(30)",
            ])
            .arg(&f)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let before = Maps::default();
        let check = ColdCheck::measure(std::slice::from_ref(&f), &before).unwrap();
        let pid = child.id().to_string();
        // Mapped since "before": named, and not excused.
        assert!(
            check
                .holders
                .iter()
                .any(|h| h.starts_with(&format!("{pid} "))),
            "{check:?}"
        );
        assert_eq!(check.mapped_before_bytes, 0);
        // Mapped before: the cached pages are the machine's own.
        let excused = ColdCheck::measure(
            std::slice::from_ref(&f),
            &Maps::scan(Path::new("/proc")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            excused.mapped_before_bytes, excused.cached_bytes,
            "{excused:?}"
        );
        assert!(excused.problem().is_none() && excused.holders.is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
