//! `zonemode=zbd`: I/O that a zoned block device accepts, as fio 3.33's
//! zbd.c places it. Every write goes to its zone's write pointer; a write
//! that finds its zone full resets it (or, under an open-zone limit, goes
//! to one of the zones already open); reads stay below the write pointer
//! (unless `read_beyond_wp`); a trim is a zone reset. A regular file or a
//! block device that is not zoned gets emulated zones of `zonesize`
//! (fio's ZBD_NONE model), so the same job runs anywhere.
//!
//! One [`ZbdFile`] per file or device is shared by every clone of every
//! job on it, as fio shares its `zbd_info`: the zones' write pointers, the
//! open zones, the bytes with data. fio holds a zone's mutex from choosing
//! an I/O's offset until it completes (recursively, so one thread may
//! have several I/Os in a zone); here a zone has an owner while it has
//! I/O in flight, and another clone that wants it waits
//! ([`Placed::Wait`]) — reaping its own completions meanwhile, which is
//! what fio's `io_u_quiesce` before blocking is for. Without that, two
//! clones' writes at consecutive write pointers could reach the device
//! out of order and fail.
//!
//! fio's zbd.c is the model for the files: the zone table ([`zones`]),
//! the file opened into it from what the device reports, and the data
//! counted ([`reports`]), where an I/O goes ([`placement`]), and resets
//! and their policy ([`resets`]).

mod placement;
mod reports;
mod resets;
#[cfg(test)]
mod tests;
mod zones;

use crate::job::kinds::Dir;
use crate::job::model::Job;
pub use zones::ZbdFile;
use zones::NOBODY;

/// Where a zbd I/O goes, or why it does not go yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Issue it here, this long.
    Io(u64, u64),
    /// A zone it needs has another clone's I/O in flight, or its own
    /// must complete first (a reset, a zone to close): reap and retry.
    Wait,
    /// Nothing more to do in this pass (no zone with data to read, no
    /// zone to open).
    Eof,
    /// The job fails: errno and fio's message.
    Fail(i32, &'static str),
}

/// One clone's view of a [`ZbdFile`]: its range of zones and its options.
#[derive(Debug)]
pub struct ZbdClone {
    f: std::sync::Arc<ZbdFile>,
    /// This clone (its number across the load).
    me: u32,
    min_zone: usize,
    max_zone: usize,
    /// The clone's region: where it starts and how long it is.
    file_offset: u64,
    io_size: u64,
    random: bool,
    mixed: bool,
    writes: bool,
    verify: bool,
    read_beyond_wp: bool,
    job_max_open: u32,
    zrt: f64,
    zrf: f64,
    /// Smallest read, write and trim sizes.
    min_bs: [u64; 3],
    /// Zone resets this clone made (fio's nr_zone_resets).
    pub resets: u64,
    /// `zoneskip` (sequential jobs), and the bytes moved in the current
    /// zone (fio's zone_bytes).
    skip: u64,
    zone_bytes: u64,
}

impl ZbdClone {
    /// Clone `me` of `job` over `[file_offset, file_offset + io_size)`.
    pub fn new(
        f: std::sync::Arc<ZbdFile>,
        me: u32,
        job: &Job,
        file_offset: u64,
        io_size: u64,
    ) -> ZbdClone {
        let (min_zone, max_zone) = {
            let t = f.table();
            (f.idx(&t, file_offset), f.idx(&t, file_offset + io_size))
        };
        let o = &job.x.zbd_opts;
        let min = |d| job.sizes.of(d).min().max(1);
        ZbdClone {
            me,
            min_zone,
            max_zone,
            file_offset,
            io_size,
            random: job.rw.random(),
            mixed: job.rw.reads() && job.rw.writes(),
            writes: job.rw.writes(),
            verify: job.x.verify.is_some(),
            read_beyond_wp: o.read_beyond_wp,
            job_max_open: o.job_max_open,
            zrt: o.reset_threshold,
            zrf: o.reset_frequency,
            min_bs: [
                min(Dir::Read),
                min(Dir::Write),
                job.sizes.of(Dir::Trim).min().max(1),
            ],
            resets: 0,
            skip: job.x.strided.map_or(0, |s| s.2),
            zone_bytes: 0,
            f,
        }
    }

    /// True when `off` is in the clone's region.
    fn valid(&self, off: u64) -> bool {
        off.wrapping_sub(self.file_offset) < self.io_size
    }
}

impl Drop for ZbdClone {
    /// A clone that ends with I/O unreaped (a failure, a stop) frees its
    /// zones, or the other clones would wait for them for ever.
    fn drop(&mut self) {
        let mut t = self.f.table();
        let mut freed = 0;
        for z in t.zones.iter_mut().filter(|z| z.owner == self.me) {
            freed += z.inflight;
            z.inflight = 0;
            z.owner = NOBODY;
        }
        t.inflight -= freed;
    }
}
