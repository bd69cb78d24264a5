//! What a clone writes and checks: write buffers filled for verify and
//! patterns, the syncs writes ask for (`fsync`, `fdatasync`,
//! `sync_file_range`), and verify's read-backs through the clone's
//! [`Verifier`].

use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::Instant;

use iolab_sys::cast;

use crate::job::extra::BufferFill;
use crate::job::kinds::{Dir, IoEngine};
use crate::run::clone::result::Failure;
use crate::run::clone::state::Run;
use crate::run::clone::verifier::Verifier;
use crate::run::files::file_set::Files;

impl Run<'_> {
    /// Fills a write buffer for `offset` (verify headers, patterns, fresh
    /// contents) when the job asks for any of that.
    #[inline]
    pub fn prepare_write(&mut self, buf: &mut [u8], offset: u64) {
        if !self.prepare {
            return;
        }
        if let Some(d) = &mut self.dedupe {
            // A repeat is filled from its original's seed: the same bytes.
            let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(d.next_seed());
            crate::run::buffer::fill(buf, &self.job.x.buffer, &mut rng);
        } else if self.job.x.refill_buffers || self.job.x.buffer != BufferFill::Random {
            crate::run::buffer::fill(buf, &self.job.x.buffer, &mut self.rng);
        }
        let real = self.names.real(offset);
        if let Some(v) = &self.verify {
            v.opts.stamp(buf, real);
        }
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
        self.verify.as_ref().is_some_and(|v| v.opts.do_verify)
            && self.job.reads()
            && !self.job.writes()
    }

    /// True when verify errors are continued past (`continue_on_error`
    /// with verify, and not `verify_fatal`).
    fn continues_verify(&self) -> bool {
        self.job.x.continue_on_error & 4 != 0 && self.verify.as_ref().is_some_and(|v| !v.opts.fatal)
    }

    /// Checks a block read at `offset` (read jobs with `verify`).
    pub fn check_read(&mut self, buf: &[u8], offset: u64) {
        let (path, real) = self.names.locate(offset);
        let Some(v) = &mut self.verify else { return };
        if let Some(f) = v.check_read(self.job, path, buf, offset, real) {
            self.fail(f);
        }
    }

    /// Counts a completed write, remembers it for verify, and syncs when
    /// `fsync`/`fdatasync`/`sync_file_range` ask.
    pub fn after_write_at(&mut self, files: &Files, offset: u64, len: u64) {
        self.writes += 1;
        if offset != u64::MAX && self.verify.as_mut().is_some_and(|v| v.wrote(offset, len)) {
            self.verify_written(files);
        }
        let every = |n: u32| n > 0 && self.writes % u64::from(n) == 0;
        let sync: fn(&File, u32) -> std::io::Result<()> = if every(self.job.fsync) {
            |f, _| f.sync_all()
        } else if every(self.job.fdatasync) {
            |f, _| f.sync_data()
        } else if self.job.x.sync_file_range.is_some_and(|(_, n)| every(n)) {
            |f, flags| {
                // SAFETY: plain syscall on an open fd; 0/0 means the whole file.
                let r = unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, flags) };
                if r == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            }
        } else {
            return;
        };
        self.syncs += 1;
        let flags = self.job.x.sync_file_range.map_or(0, |(f, _)| f);
        // fio syncs the file the write went to.
        let file = files.at(if offset == u64::MAX { 0 } else { offset }).0;
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
            self.fx.sync_lat.record(0, 0, ns);
        }
        if let Err(e) = r {
            self.fail(Failure {
                errno: e.raw_os_error().unwrap_or(0),
                message: format!(
                    "job {}: fsync of {} failed: {e}",
                    self.job.name,
                    self.names
                        .locate(if offset == u64::MAX { 0 } else { offset })
                        .0
                        .display()
                ),
            });
        }
    }

    /// Reads back and checks every block written since the last check;
    /// the read-backs count as the job's reads.
    pub(super) fn verify_written(&mut self, files: &Files) {
        let Some(v) = &mut self.verify else { return };
        let (done, failed) = v.read_back(self.job, files);
        for (n, lat, at, off) in done {
            self.complete_at(Dir::Read, n, lat, at, off);
        }
        // Bad blocks a job continues past are counted once, at its end.
        if let Some(f) = failed.filter(|_| !self.continues_verify()) {
            self.fail(f);
        }
    }

    /// The verify pass at the end of the job (`do_verify`).
    pub(crate) fn verify_all(&mut self, files: &Files) {
        if self.verify.is_none() || self.spec.ctl.stopping() {
            return;
        }
        if self.verify.as_ref().is_some_and(Verifier::has_pending) {
            self.verify_written(files);
        }
        if self.failure.is_none() {
            if let Some((f, bad)) = self.verify.as_ref().and_then(|v| v.final_failure(self.job)) {
                self.error(f, Dir::Read, bad);
            }
        }
    }
}
