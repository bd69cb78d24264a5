//! `verify` in one clone: which blocks it wrote and has not checked yet,
//! reading them back, checking what a read-only job reads, and the saved
//! state (`verify_state_save`/`verify_state_load`). An owned part of
//! [`super::state::Run`]: it reports what it read back and what failed,
//! and the run counts and stops.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use iolab_sys::cast;

use crate::job::model::Job;
use crate::job::verify::VerifyOpts;
use crate::run::clone::result::Failure;
use crate::run::files::file_set::Files;

/// Verify bookkeeping of a writing clone.
pub struct Verifier {
    /// The job's verify options.
    pub opts: VerifyOpts,
    /// Written and not yet checked: offset -> length (later writes replace
    /// the blocks they overlap).
    written: BTreeMap<u64, u64>,
    since_check: u64,
    bad: u64,
    checked: u64,
    first_bad: Option<String>,
    /// `verify_state_save`: every block written, for the state file.
    saved: BTreeMap<u64, u64>,
    /// `verify_state_load`: the blocks a saved state lists (only those
    /// are checked).
    loaded: Option<BTreeMap<u64, u64>>,
}

/// A block read back: bytes, latency, completion time, offset.
pub type ReadBack = (u64, Duration, Instant, u64);

impl Verifier {
    /// The verifier of clone `clone` of `job`, `None` without `verify`;
    /// loads the saved state when the job asks.
    pub fn for_clone(job: &Job, clone: u32) -> Result<Option<Verifier>, String> {
        let Some(opts) = job.x.verify.clone() else {
            return Ok(None);
        };
        let loaded = if opts.state_load {
            Some(crate::run::verify_state::load(
                &crate::run::verify_state::path(job, clone),
            )?)
        } else {
            None
        };
        Ok(Some(Verifier {
            opts,
            written: BTreeMap::new(),
            since_check: 0,
            bad: 0,
            checked: 0,
            first_bad: None,
            saved: BTreeMap::new(),
            loaded,
        }))
    }

    /// True when written blocks wait to be read back.
    pub fn has_pending(&self) -> bool {
        !self.written.is_empty()
    }

    /// Records a completed write; true when `verify_backlog` says the
    /// written blocks are to be read back now.
    pub fn wrote(&mut self, offset: u64, len: u64) -> bool {
        if self.opts.state_save {
            remember(&mut self.saved, offset, len);
        }
        if !self.opts.do_verify {
            return false;
        }
        remember(&mut self.written, offset, len);
        self.since_check += 1;
        self.opts.backlog > 0 && self.since_check >= self.opts.backlog
    }

    /// Checks a block a read-only job read at `offset` (`real` in the file
    /// at `path`); the failure that stops the clone, if any.
    pub fn check_read(
        &mut self,
        job: &Job,
        path: &Path,
        buf: &[u8],
        offset: u64,
        real: u64,
    ) -> Option<Failure> {
        if let Some(l) = &self.loaded {
            // Only what the saved state says was written is checked.
            if l.range(..=offset)
                .next_back()
                .is_none_or(|(o, n)| offset >= o + n)
            {
                return None;
            }
        }
        self.checked += 1;
        if let Err(why) = self.opts.check(buf, real) {
            self.record_bad(path, buf, real, why);
            if self.opts.fatal {
                return Some(self.failure(job));
            }
        }
        None
    }

    /// Reads back and checks every block written since the last check:
    /// the reads done (the run counts them as the job's reads, as fio
    /// does) and the failure that stops the clone, if any.
    pub fn read_back(&mut self, job: &Job, files: &Files) -> (Vec<ReadBack>, Option<Failure>) {
        self.since_check = 0;
        let blocks = std::mem::take(&mut self.written);
        let mut buf = crate::run::buffer::AlignedBuf::zeroed(cast::usize_of(job.bs));
        // t0005: a 100 MiB write job with verify reads 100 MiB.
        let mut done = Vec::with_capacity(blocks.len());
        for (voff, len) in blocks {
            let b = &mut buf.as_mut_slice()[..cast::usize_of(len)];
            let (file, off) = files.at(voff);
            let (path, _) = files.path_at(voff);
            let t0 = Instant::now();
            let read = rustix::io::pread(file.as_fd(), &mut *b, off);
            let now = Instant::now();
            if let Ok(n) = &read {
                done.push((*n as u64, now - t0, now, voff));
            }
            match read {
                Ok(n) if n as u64 == len => {}
                Ok(n) => {
                    let why = format!("verify: short read of {n} of {len} bytes at offset {off}");
                    self.record_bad(path, &b[..n], off, why);
                    continue;
                }
                Err(e) => {
                    let why = format!("verify: reading back offset {off} failed: {e}");
                    self.record_bad(path, &[], off, why);
                    continue;
                }
            }
            self.checked += 1;
            if let Err(why) = self.opts.check(b, off) {
                self.record_bad(path, b, off, why);
                if self.opts.fatal {
                    break;
                }
            }
        }
        let failed =
            (self.bad > 0 && (self.opts.fatal || self.opts.backlog > 0)).then(|| self.failure(job));
        (done, failed)
    }

    /// The failure of a job that found bad blocks, at its end, and how
    /// many blocks were bad.
    pub fn final_failure(&self, job: &Job) -> Option<(Failure, u64)> {
        (self.bad > 0).then(|| (self.failure(job), self.bad))
    }

    /// Saves the written blocks (`verify_state_save`).
    pub fn save_state(&self, job: &Job, clone: u32) -> Result<(), String> {
        let p = crate::run::verify_state::path(job, clone);
        crate::run::verify_state::save(&p, &self.saved)
    }

    fn record_bad(&mut self, path: &Path, buf: &[u8], off: u64, why: String) {
        self.bad += 1;
        if self.first_bad.is_none() {
            // Which file: a clone may have several.
            let mut msg = format!("{}: {why}", path.display());
            if self.opts.dump && !buf.is_empty() {
                let name = format!(
                    "{}.{off}.received",
                    path.file_name()
                        .map_or("block".into(), |n| n.to_string_lossy())
                );
                msg.push_str(&match std::fs::write(&name, buf) {
                    Ok(()) => format!(" (block saved to {name})"),
                    Err(e) => format!(" (could not save the block to {name}: {e})"),
                });
            }
            self.first_bad = Some(msg);
        }
    }

    fn failure(&self, job: &Job) -> Failure {
        Failure {
            errno: libc::EILSEQ,
            message: format!(
                "job {}: {} of {} checked blocks failed verification; first: {}",
                job.name,
                self.bad,
                self.checked.max(self.bad),
                self.first_bad.as_deref().unwrap_or("?")
            ),
        }
    }
}

/// Remembers a written block, dropping older blocks it overlaps.
fn remember(map: &mut BTreeMap<u64, u64>, off: u64, len: u64) {
    let end = off + len;
    while let Some((&o, _)) = map
        .range(..end)
        .next_back()
        .filter(|(o, l)| **o + **l > off)
    {
        map.remove(&o);
    }
    map.insert(off, len);
}
