//! Carrying out a launch plan on a prepared file set, counting what was
//! done so the report can be checked against the plan.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use iolab_sys::cast;
use iolab_sys::pagecache::Mapping;
use iolab_sys::process::{io_counters, IoCounters};
use iolab_sys::SysError;
use serde::Serialize;

use super::manifest::Manifest;
use super::profile::{plan, totals, Step, Totals, PAGE};
use crate::targets::content::SplitMix64;

/// Time spent in one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseTime {
    /// Phase name (`apk-open`, `runtime`, `native-libs`, `application`,
    /// `activity`, `prefs-commit`).
    pub name: &'static str,
    /// Wall time, ns.
    pub elapsed_ns: u64,
}

/// What a launch did; the `--json` output of `iolab app`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StartReport {
    /// App directory.
    pub dir: PathBuf,
    /// Scale of the file set.
    pub scale: f64,
    /// Wall time from the first open to the last fsync, ns.
    pub elapsed_ns: u64,
    /// Per-phase times, in launch order.
    pub phases: Vec<PhaseTime>,
    /// What the launch did, counted as it went.
    pub done: Totals,
    /// What the profile says a launch does (equal to `done` unless
    /// interrupted).
    pub profile: Totals,
    /// pread/pwrite calls made.
    pub read_calls: u64,
    /// write calls made.
    pub write_calls: u64,
    /// Bytes mapped (whole files).
    pub mapped_bytes: u64,
    /// This process's `/proc/self/io` counters over the launch; `read_bytes`
    /// is what came from storage (page faults and readahead included), so
    /// it is near zero when the cache was warm.
    pub proc_io: Option<IoCounters>,
    /// Leftovers of a killed earlier launch that were cleaned up first.
    pub recovered: Vec<String>,
    /// True when a stop request ended the launch between phases.
    pub interrupted: bool,
}

/// Launches the app in `dir` described by `m`.
pub fn start(dir: &Path, m: &Manifest) -> Result<StartReport, SysError> {
    let phases = plan(m);
    let profile = totals(m, &phases);
    let recovered = recover(dir, m)?;
    let io_before = own_io();
    let start = Instant::now();
    let mut run = Run {
        dir,
        m,
        files: HashMap::new(),
        opened: HashSet::new(),
        maps: Vec::new(),
        buf: vec![0u8; 256 << 10],
        rng: SplitMix64::stream(m.seed, "writes"),
        done: Totals::default(),
        read_calls: 0,
        write_calls: 0,
        checksum: 0,
    };
    let mut times = Vec::new();
    let mut interrupted = false;
    for phase in &phases {
        if iolab_guard::stop_requested() {
            interrupted = true;
            break;
        }
        let t = Instant::now();
        for step in &phase.steps {
            run.step(step)?;
        }
        times.push(PhaseTime {
            name: phase.name,
            elapsed_ns: ns(t),
        });
    }
    let elapsed_ns = ns(start);
    let proc_io = io_before.zip(own_io()).map(|(a, b)| IoCounters {
        rchar: b.rchar - a.rchar,
        wchar: b.wchar - a.wchar,
        read_bytes: b.read_bytes - a.read_bytes,
        write_bytes: b.write_bytes - a.write_bytes,
    });
    std::hint::black_box(run.checksum);
    run.done.files_opened = run.opened.len() as u64;
    Ok(StartReport {
        dir: dir.to_path_buf(),
        scale: m.scale,
        elapsed_ns,
        phases: times,
        done: run.done,
        profile,
        read_calls: run.read_calls,
        write_calls: run.write_calls,
        mapped_bytes: run.maps.iter().map(|m| m.len() as u64).sum(),
        proc_io,
        recovered,
        interrupted,
    })
}

fn ns(t: Instant) -> u64 {
    cast::duration_ns(t.elapsed())
}

fn own_io() -> Option<IoCounters> {
    io_counters(Path::new("/proc"), iolab_sys::process::own_pid())
}

fn journal_path(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push("-journal");
    PathBuf::from(s)
}

fn backup_path(prefs: &Path) -> PathBuf {
    let mut s = prefs.as_os_str().to_owned();
    s.push(".bak");
    PathBuf::from(s)
}

/// Undoes what a killed launch left, as SQLite and SharedPreferences would
/// on the next start: a stale journal is removed (the content of the
/// pages does not matter here), a lone `.bak` becomes the preferences again.
fn recover(dir: &Path, m: &Manifest) -> Result<Vec<String>, SysError> {
    use super::manifest::FileKind;
    let mut out = Vec::new();
    for f in &m.files {
        let path = m.path_of(dir, f);
        let stale = match f.kind {
            FileKind::Database => journal_path(&path),
            FileKind::Prefs => backup_path(&path),
            _ => continue,
        };
        if !stale.exists() {
            continue;
        }
        if f.kind == FileKind::Prefs && !path.exists() {
            std::fs::rename(&stale, &path).map_err(|e| SysError::io(&stale, e))?;
        } else {
            std::fs::remove_file(&stale).map_err(|e| SysError::io(&stale, e))?;
        }
        out.push(stale.display().to_string());
    }
    Ok(out)
}

struct Run<'a> {
    dir: &'a Path,
    m: &'a Manifest,
    files: HashMap<usize, File>,
    /// Every file a step used, however it was opened.
    opened: HashSet<usize>,
    maps: Vec<Mapping>,
    buf: Vec<u8>,
    rng: SplitMix64,
    done: Totals,
    read_calls: u64,
    write_calls: u64,
    checksum: u64,
}

impl Run<'_> {
    fn path(&self, file: usize) -> PathBuf {
        self.m.path_of(self.dir, &self.m.files[file])
    }

    fn open(&mut self, file: usize) -> Result<&File, SysError> {
        if !self.files.contains_key(&file) {
            let path = self.path(file);
            let f = OpenOptions::new()
                .read(true)
                .write(self.m.files[file].kind == super::manifest::FileKind::Database)
                .open(&path)
                .map_err(|e| SysError::io(&path, e))?;
            self.files.insert(file, f);
            self.opened.insert(file);
        }
        self.files
            .get(&file)
            .ok_or_else(|| SysError::io(self.path(file), std::io::ErrorKind::NotFound.into()))
    }

    fn step(&mut self, step: &Step) -> Result<(), SysError> {
        match step {
            Step::Read { file, offset, len } => self.read(*file, *offset, *len).map(drop),
            Step::Map { file, pages } => {
                let path = self.path(*file);
                let map = Mapping::open(&path)?;
                for &p in pages {
                    self.checksum += u64::from(map.touch(cast::usize_of(p * PAGE)));
                }
                self.maps.push(map);
                self.opened.insert(*file);
                self.done.mapped_files += 1;
                self.done.touched_pages += pages.len() as u64;
                Ok(())
            }
            Step::Transaction { file, pages } => self.transaction(*file, pages),
            Step::Commit { file } => self.commit(*file),
        }
    }

    /// preads `len` bytes at `offset` in chunks; returns the last chunk's size.
    fn read(&mut self, file: usize, offset: u64, len: u64) -> Result<usize, SysError> {
        let path = self.path(file);
        let mut buf = std::mem::take(&mut self.buf);
        let f = self.open(file)?;
        let (mut at, end, mut last) = (offset, offset + len, 0);
        let mut result = Ok(());
        let mut calls = 0;
        while at < end {
            let n = buf.len().min(cast::usize_of(end - at));
            calls += 1;
            match f.read_at(&mut buf[..n], at) {
                Ok(0) => break,
                Ok(got) => {
                    at += got as u64;
                    last = got;
                }
                Err(e) => {
                    result = Err(SysError::io(&path, e));
                    break;
                }
            }
        }
        self.checksum += u64::from(buf[0]);
        self.buf = buf;
        self.read_calls += calls;
        self.done.read_bytes += at - offset;
        result.map(|()| last)
    }

    fn write_at(&mut self, f: &File, path: &Path, data: &[u8], at: u64) -> Result<(), SysError> {
        f.write_all_at(data, at)
            .map_err(|e| SysError::io(path, e))?;
        self.write_calls += 1;
        self.done.write_bytes += data.len() as u64;
        Ok(())
    }

    fn fsync(&mut self, f: &File, path: &Path) -> Result<(), SysError> {
        f.sync_all().map_err(|e| SysError::io(path, e))?;
        self.done.fsyncs += 1;
        Ok(())
    }

    /// A rollback-journal transaction (SQLite's DELETE journal mode).
    fn transaction(&mut self, file: usize, pages: &[u64]) -> Result<(), SysError> {
        let db_path = self.path(file);
        let jpath = journal_path(&db_path);
        let journal = File::create(&jpath).map_err(|e| SysError::io(&jpath, e))?;
        let mut header = vec![0u8; 512];
        header[..8].copy_from_slice(&[0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);
        self.write_at(&journal, &jpath, &header, 0)?;
        let page_len = cast::usize_of(PAGE);
        let mut record = vec![0u8; page_len + 8];
        for (k, &p) in pages.iter().enumerate() {
            self.read(file, p * PAGE, PAGE)?;
            // SQLite numbers pages from 1 in a u32.
            let number = u32::try_from(p + 1).map_err(|_| {
                let why = format!(
                    "page {p}: a SQLite journal numbers pages up to {}",
                    u32::MAX
                );
                SysError::io(
                    &db_path,
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
                )
            })?;
            record[..4].copy_from_slice(&number.to_be_bytes());
            record[4..4 + page_len].copy_from_slice(&self.buf[..page_len]);
            let at = 512 + k as u64 * (PAGE + 8);
            self.write_at(&journal, &jpath, &record, at)?;
        }
        self.fsync(&journal, &jpath)?;
        let db = self
            .open(file)?
            .try_clone()
            .map_err(|e| SysError::io(&db_path, e))?;
        let mut page = vec![0u8; page_len];
        for &p in pages {
            self.rng.fill(&mut page);
            self.write_at(&db, &db_path, &page, p * PAGE)?;
        }
        self.fsync(&db, &db_path)?;
        drop(journal);
        std::fs::remove_file(&jpath).map_err(|e| SysError::io(&jpath, e))
    }

    /// SharedPreferencesImpl.writeToFile: back up, write, fsync, drop backup.
    fn commit(&mut self, file: usize) -> Result<(), SysError> {
        let path = self.path(file);
        let bak = backup_path(&path);
        let mut data = vec![0u8; cast::usize_of(self.m.files[file].size_bytes)];
        self.rng.fill(&mut data);
        std::fs::rename(&path, &bak).map_err(|e| SysError::io(&path, e))?;
        let mut f = File::create(&path).map_err(|e| SysError::io(&path, e))?;
        f.write_all(&data).map_err(|e| SysError::io(&path, e))?;
        self.write_calls += 1;
        self.done.write_bytes += data.len() as u64;
        self.fsync(&f, &path)?;
        self.opened.insert(file);
        std::fs::remove_file(&bak).map_err(|e| SysError::io(&bak, e))
    }
}
