//! Where a clone's drawn I/O goes in its files: the files' names and the
//! offset codec, the region's start, zonemode=strided's current zone, and
//! zonemode=zbd's zones (a write at its write pointer, an I/O that waits
//! for a zone, a loop's resets).

use std::path::Path;
use std::time::Duration;

use crate::job::kinds::Dir;
use crate::job::model::Job;
use crate::run::clone::result::Failure;
use crate::run::clone::spec::CloneSpec;
use crate::run::clone::state::Step;
use crate::run::files::file_set::{FilePatterns, Names};
use crate::run::files::zbd::{Placed, ZbdClone};
use crate::run::files::zones::Zones;

/// Where I/O goes.
pub(crate) struct Placement {
    /// The files' names and the offset codec.
    pub(super) names: Names,
    /// Where the region starts in the file.
    base: u64,
    /// zonemode=strided: the zone the pattern runs in, and the bytes
    /// issued this pass (a pass ends at io_size).
    zones: Option<Zones>,
    zone_bytes: u64,
    /// zonemode=zbd: this clone's zones, and an I/O waiting for one.
    zbd: Option<ZbdClone>,
    zbd_hold: Option<(Dir, u64, u64)>,
    /// A new loop begins at the next step (fio's zbd_file_reset).
    zbd_new_loop: bool,
    /// I/Os issued this pass (a zbd pass that issues none ends the clone).
    pass_issued: u64,
}

/// What zonemode=zbd made of an I/O.
pub(super) enum Zoned {
    /// Issue it: direction, offset, length.
    Io(Dir, u64, u64),
    /// Take this step instead.
    Step(Step),
    /// The pass ended: draw the next I/O.
    PassEnd,
    /// The clone fails.
    Fail(Failure),
}

impl Placement {
    pub(super) fn new(spec: &CloneSpec) -> Result<Placement, String> {
        let job = &*spec.job;
        let zbd = match (&spec.zbd, replay_free(job)) {
            (Some(f), true) => {
                let mut z = ZbdClone::new(
                    f.clone(),
                    u32::try_from(spec.number).map_err(|_| {
                        format!(
                            "clone {}: zonemode=zbd numbers the clones in 32 bits",
                            spec.number
                        )
                    })?,
                    job,
                    spec.base,
                    spec.size,
                );
                z.loop_start()
                    .map_err(|e| format!("{}: resetting zones failed: {e}", f.path.display()))?;
                Some(z)
            }
            _ => None,
        };
        Ok(Placement {
            names: Names::new(spec.targets.clone()),
            base: spec.base,
            zones: zones_of(spec),
            zone_bytes: 0,
            zbd,
            zbd_hold: None,
            zbd_new_loop: false,
            pass_issued: 0,
        })
    }

    /// zonemode=strided's zones, if the job has them.
    pub(super) fn zones(&self) -> Option<&Zones> {
        self.zones.as_ref()
    }

    /// True with zonemode=zbd.
    #[inline]
    pub(super) fn zoned(&self) -> bool {
        self.zbd.is_some()
    }

    /// The (first) target path, for messages.
    pub(super) fn path(&self) -> &Path {
        self.names.first()
    }

    /// zonemode=strided: true when this zone's pass has moved `io_size`
    /// bytes (the count starts again).
    pub(super) fn zone_pass_over(&mut self, io_size: u64) -> bool {
        if self.zones.is_none() || self.zone_bytes < io_size {
            return false;
        }
        self.zone_bytes = 0;
        true
    }

    /// Where a drawn I/O at `offset` goes in the file: in the current zone
    /// with zonemode=strided (its pass may end: a fresh `pattern` pass),
    /// past the region's start otherwise.
    pub(super) fn at(&mut self, offset: u64, len: u64, pattern: &mut FilePatterns) -> u64 {
        match &mut self.zones {
            Some(z) => {
                let at = z.place(offset);
                self.zone_bytes += len;
                if z.done(len) {
                    pattern.new_pass();
                }
                at
            }
            None => self.base + offset,
        }
    }

    /// A mixed zbd job's direction for `dir` (reads become writes until
    /// some zone holds data).
    pub(super) fn ddir(&self, dir: Dir) -> Dir {
        match &self.zbd {
            Some(z) => z.ddir(dir),
            None => dir,
        }
    }

    /// A zbd pass ended: true when it issued nothing (it would find
    /// nothing again: the clone is done); else its zones are reset when
    /// the next loop starts, after this one's verify.
    pub(super) fn zbd_pass_end(&mut self) -> bool {
        if self.pass_issued == 0 {
            return true;
        }
        self.pass_issued = 0;
        self.zbd_new_loop = true;
        false
    }

    /// zonemode=zbd's placement of the I/O drawn at `offset`.
    #[cold]
    pub(super) fn zbd_place(
        &mut self,
        job: &Job,
        dir: Dir,
        offset: u64,
        len: u64,
        pattern: &mut FilePatterns,
    ) -> Zoned {
        let Some(z) = self.zbd.as_mut() else {
            return Zoned::Io(dir, offset, len);
        };
        match z.place(dir, offset, len) {
            Placed::Io(o, l) => {
                // fio's next sequential offset follows where the I/O went.
                let next = z.next_seq(dir, o, l);
                pattern.moved(dir, next, len, l);
                self.pass_issued += 1;
                Zoned::Io(dir, o, l)
            }
            Placed::Wait => {
                self.zbd_hold = Some((dir, offset, len));
                Zoned::Step(Step::Wait(Duration::from_micros(50)))
            }
            Placed::Eof => {
                pattern.end_pass();
                Zoned::PassEnd
            }
            Placed::Fail(errno, what) => Zoned::Fail(Failure {
                errno,
                message: format!("job {}: {}: {what}", job.name, self.path().display()),
            }),
        }
    }

    /// A zbd clone's work before it draws an I/O: a new loop's zone
    /// resets, then the I/O that waited for a zone. `None`: draw the next
    /// I/O.
    #[cold]
    pub(super) fn zbd_pending(&mut self, job: &Job, pattern: &mut FilePatterns) -> Option<Zoned> {
        if self.zbd_new_loop {
            self.zbd_new_loop = false;
            if let Some(f) = self.zbd_loop_start(job) {
                return Some(Zoned::Fail(f));
            }
        }
        let (dir, offset, len) = self.zbd_hold.take()?;
        Some(self.zbd_place(job, dir, offset, len, pattern))
    }

    /// A new loop of a zbd clone (fio's zbd_file_reset).
    fn zbd_loop_start(&mut self, job: &Job) -> Option<Failure> {
        let z = self.zbd.as_mut()?;
        let e = z.loop_start().err()?;
        Some(Failure {
            errno: e.raw_os_error().unwrap_or(libc::EIO),
            message: format!(
                "job {}: {}: resetting zones failed: {e}",
                job.name,
                self.path().display()
            ),
        })
    }

    /// An I/O placed by zonemode=zbd completed or failed.
    #[inline]
    pub(super) fn zbd_done(&self, dir: Dir, offset: u64, len: u64) {
        if let Some(z) = &self.zbd {
            z.done(dir, offset, len);
        }
    }

    /// A trim with zonemode=zbd: its zone's reset (`None`: not zbd, or a
    /// conventional zone, trimmed as any block).
    pub(super) fn zbd_trim(&mut self, offset: u64) -> Option<std::io::Result<()>> {
        self.zbd.as_mut()?.trim(offset)
    }

    /// The zone resets zonemode=zbd made.
    pub(super) fn zone_resets(&self) -> Option<u64> {
        self.zbd.as_ref().map(|z| z.resets)
    }
}

/// fio applies zonemode=zbd to the I/O it draws, not to a replayed log's.
fn replay_free(job: &Job) -> bool {
    job.x.read_iolog.is_none()
}

/// zonemode=strided: the pattern runs over one zone, a pass per zonerange
/// bytes; [`Zones`] places it in the file.
fn zones_of(spec: &CloneSpec) -> Option<Zones> {
    let job = &*spec.job;
    job.x.strided().map(|(range, size, skip)| {
        let (range, size) = match (range, size) {
            (0, 0) => (spec.size, spec.size),
            (0, s) => (s, s),
            (r, 0) => (r, r),
            (r, s) => (r, s),
        };
        let first = job.x.offset;
        Zones::new(range, size, skip, first, spec.size.max(first + range))
    })
}
