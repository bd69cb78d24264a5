//! What a clone writes and checks ([`Data`]): write buffers filled for
//! verify and patterns, the syncs writes ask for (`fsync`, `fdatasync`,
//! `sync_file_range`, `end_fsync`), and verify's read-backs through the
//! clone's [`Verifier`].

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

use iolab_sys::cast;

use crate::job::extra::BufferFill;
use crate::job::kinds::{Dir, IoEngine};
use crate::job::model::Job;
use crate::run::buffer::Dedupe;
use crate::run::clone::result::Failure;
use crate::run::clone::spec::CloneSpec;
use crate::run::clone::state::Run;
use crate::run::clone::verifier::Verifier;
use crate::run::files::file_set::Files;

/// What is written and checked.
pub(crate) struct Data {
    verify: Option<Verifier>,
    /// Write buffers need preparing before each write.
    prepare: bool,
    /// `dedupe_percentage`: which seed each write buffer comes from.
    dedupe: Option<Dedupe>,
    /// Writes completed (the sync options count them).
    writes: u64,
}

/// A sync of a file: `fsync`, `fdatasync` or `sync_file_range` (with its
/// flags).
type Sync = fn(&File, u32) -> std::io::Result<()>;

impl Data {
    pub(super) fn new(spec: &CloneSpec, seed: u64) -> Result<Data, String> {
        let job = &*spec.job;
        let verify = Verifier::for_clone(job, spec.clone)?;
        let dedupe = job
            .x
            .dedupe
            .filter(|d| d.percent > 0 && job.writes())
            .map(|d| {
                let dd = Dedupe::new(d, seed, spec.size, job.sizes.min());
                if d.global {
                    dd.global(spec.shared.seeds.clone(), spec.number - 1)
                } else {
                    dd
                }
            });
        let prepare = job.writes()
            && (verify.is_some()
                || dedupe.is_some()
                || job.x.refill_buffers
                || job.x.buffer != BufferFill::Random);
        Ok(Data {
            verify,
            prepare,
            dedupe,
            writes: 0,
        })
    }

    /// True when write buffers are filled before each write.
    #[inline]
    pub(super) fn prepares(&self) -> bool {
        self.prepare
    }

    /// Fills a write buffer for the file's byte `real`: a dedupe repeat
    /// from its original's seed (the same bytes), else fresh contents from
    /// `rng` when the job asks for them; then verify's header.
    pub(super) fn fill(
        &mut self,
        job: &Job,
        buf: &mut [u8],
        real: u64,
        rng: &mut rand::rngs::SmallRng,
    ) {
        if let Some(d) = &mut self.dedupe {
            let mut seeded =
                <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(d.next_seed());
            crate::run::buffer::fill(buf, &job.x.buffer, &mut seeded);
        } else if job.x.refill_buffers || job.x.buffer != BufferFill::Random {
            crate::run::buffer::fill(buf, &job.x.buffer, rng);
        }
        if let Some(v) = &self.verify {
            v.opts.stamp(buf, real);
        }
    }

    /// True when each loop's writes are read back (`do_verify`).
    pub(super) fn verifies(&self) -> bool {
        self.verify.as_ref().is_some_and(|v| v.opts.do_verify)
    }

    /// True when writes wait to be read back.
    pub(super) fn has_pending(&self) -> bool {
        self.verify.as_ref().is_some_and(Verifier::has_pending)
    }

    /// See [`Run::checks_reads`].
    pub(super) fn checks_reads(&self, job: &Job) -> bool {
        self.verifies() && job.reads() && !job.writes()
    }

    /// True when verify errors are continued past (`continue_on_error`
    /// with verify, and not `verify_fatal`).
    fn continues_verify(&self, job: &Job) -> bool {
        job.x.continue_on_error & 4 != 0 && self.verify.as_ref().is_some_and(|v| !v.opts.fatal)
    }

    /// A write of `len` bytes at `offset` completed (`u64::MAX`: a write
    /// with no offset): true when verify wants its writes read back now.
    pub(super) fn wrote(&mut self, offset: u64, len: u64) -> bool {
        self.writes += 1;
        offset != u64::MAX && self.verify.as_mut().is_some_and(|v| v.wrote(offset, len))
    }

    /// The sync this write asks for (`fsync`, `fdatasync`,
    /// `sync_file_range` every N writes), if any.
    pub(super) fn sync_due(&self, job: &Job) -> Option<Sync> {
        let every = |n: u32| n > 0 && self.writes % u64::from(n) == 0;
        if every(job.fsync) {
            Some(|f, _| f.sync_all())
        } else if every(job.fdatasync) {
            Some(|f, _| f.sync_data())
        } else if job.x.sync_file_range.is_some_and(|(_, n)| every(n)) {
            Some(|f, flags| {
                // SAFETY: plain syscall on an open fd; 0/0 means the whole file.
                let r = unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, flags) };
                if r == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            })
        } else {
            None
        }
    }

    /// Saves verify's state at the end (`verify_state_save`).
    fn save_state(&self, job: &Job, clone: u32) -> Result<(), String> {
        match self.verify.as_ref().filter(|v| v.opts.state_save) {
            Some(v) => v.save_state(job, clone),
            None => Ok(()),
        }
    }
}

impl Run<'_> {
    /// Fills a write buffer for `offset` (verify headers, patterns, fresh
    /// contents) when the job asks for any of that.
    #[inline]
    pub fn prepare_write(&mut self, buf: &mut [u8], offset: u64) {
        if !self.data.prepares() {
            return;
        }
        let real = self.place.names.real(offset);
        self.data.fill(self.job, buf, real, &mut self.rng);
    }

    /// True when reads must be checked ([`Run::check_read`]): a job that
    /// only reads (a file an earlier job wrote). In a job that also
    /// writes, the workload's reads may land on blocks not written yet;
    /// only the read-back of what it wrote is checked, as fio does
    /// (backend.c: verify_io_u for a read "if !td_rw(td)" or from the
    /// verify list). fio's t0008 (readwrite, verify_backlog=1) failed on
    /// iolab with "no header" until this.
    #[inline]
    pub fn checks_reads(&self) -> bool {
        self.data.checks_reads(self.job)
    }

    /// Checks a block read at `offset` (read jobs with `verify`).
    pub fn check_read(&mut self, buf: &[u8], offset: u64) {
        let (path, real) = self.place.names.locate(offset);
        let Some(v) = &mut self.data.verify else {
            return;
        };
        if let Some(f) = v.check_read(self.job, path, buf, offset, real) {
            self.fail(f);
        }
    }

    /// Counts a completed write, remembers it for verify, and syncs when
    /// `fsync`/`fdatasync`/`sync_file_range` ask.
    pub fn after_write_at(&mut self, files: &Files, offset: u64, len: u64) {
        if self.data.wrote(offset, len) {
            self.verify_written(files);
        }
        let Some(sync) = self.data.sync_due(self.job) else {
            return;
        };
        self.tally.syncs += 1;
        let flags = self.job.x.sync_file_range.map_or(0, |(f, _)| f);
        // fio syncs the file the write went to.
        let at = if offset == u64::MAX { 0 } else { offset };
        let file = files.at(at).0;
        let t0 = Instant::now();
        // The null engine completes a sync at once, as fio's does: there
        // is no file to sync, but the sync is counted and timed.
        let r = if self.job.ioengine == IoEngine::Null {
            Ok(())
        } else {
            sync(file, flags)
        };
        if self.time.measuring() {
            let ns = cast::duration_ns(t0.elapsed());
            self.tally.fx.sync_lat.record(0, 0, ns);
        }
        if let Err(e) = r {
            let f = sync_failure(self.job, "fsync", self.place.names.locate(at).0, &e);
            self.fail(f);
        }
    }

    /// `end_fsync`: every file synced at the end. A failure is the
    /// clone's (the first kept); the job's other clones go on.
    pub(crate) fn end_fsync(&mut self, files: &Files) {
        for f in files.all() {
            if let Err(e) = f.sync_all() {
                self.failure.get_or_insert(Failure {
                    errno: e.raw_os_error().unwrap_or(0),
                    message: format!("job {}: end_fsync failed: {e}", self.job.name),
                });
            }
            self.tally.syncs += 1;
        }
    }

    /// Reads back and checks every block written since the last check;
    /// the read-backs count as the job's reads.
    pub(super) fn verify_written(&mut self, files: &Files) {
        let Some(v) = &mut self.data.verify else {
            return;
        };
        let (done, failed) = v.read_back(self.job, files);
        for (n, lat, at, off) in done {
            self.complete_at(Dir::Read, n, lat, at, off);
        }
        // Bad blocks a job continues past are counted once, at its end.
        if let Some(f) = failed.filter(|_| !self.data.continues_verify(self.job)) {
            self.fail(f);
        }
    }

    /// The verify pass at the end of the job (`do_verify`).
    pub(crate) fn verify_all(&mut self, files: &Files) {
        if self.data.verify.is_none() || self.spec.ctl.stopping() {
            return;
        }
        if self.data.has_pending() {
            self.verify_written(files);
        }
        if self.failure.is_none() {
            if let Some((f, bad)) = self
                .data
                .verify
                .as_ref()
                .and_then(|v| v.final_failure(self.job))
            {
                self.error(f, Dir::Read, bad);
            }
        }
    }

    /// At the end: verify's state saved (`verify_state_save`); a failure
    /// to is the clone's unless it already has one.
    pub(super) fn save_verify_state(&mut self) {
        if let Err(e) = self.data.save_state(self.job, self.spec.clone) {
            self.failure.get_or_insert(Failure {
                errno: 0,
                message: format!("job {}: {e}", self.job.name),
            });
        }
    }
}

/// A failed sync of `path`.
fn sync_failure(job: &Job, what: &str, path: &Path, e: &std::io::Error) -> Failure {
    Failure {
        errno: e.raw_os_error().unwrap_or(0),
        message: format!("job {}: {what} of {} failed: {e}", job.name, path.display()),
    }
}
