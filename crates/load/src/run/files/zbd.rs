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

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use iolab_sys::cast;
use iolab_sys::zoned::{Cond, Model, ZoneType};

use crate::job::kinds::Dir;
use crate::job::model::Job;

/// One zone as fio's `fio_zone_info` keeps it, in bytes.
#[derive(Debug, Clone, Copy)]
struct Zone {
    start: u64,
    /// Where the next zone starts.
    end: u64,
    /// `start + capacity`.
    cap_end: u64,
    wp: u64,
    /// A sequential-write-required zone (host-aware zones take random
    /// writes and count as conventional, as in fio).
    has_wp: bool,
    offline: bool,
    /// In the open list (only tracked under an open-zone limit).
    open: bool,
    /// The clone that opened it (`NOBODY`: open before the load).
    opener: u32,
    /// The clone with I/O in flight in it, and how many.
    owner: u32,
    inflight: u32,
}

const NOBODY: u32 = u32::MAX;

/// What every clone on one file shares (fio's `zoned_block_device_info`).
struct Table {
    zones: Vec<Zone>,
    /// Indices of the open zones, oldest first.
    open: Vec<usize>,
    /// Bytes with data in all zones, and in zones with write pointers
    /// (fio's sectors_with_data and wp_sectors_with_data).
    swd: u64,
    wp_swd: u64,
    /// Writes left until the next reset `zone_reset_frequency` asks.
    write_cnt: u32,
    /// I/Os in flight in any zone.
    inflight: u32,
}

impl Table {
    /// Zones in the open list: only an open-zone limit's are listed, so at
    /// most `max_open` (<= MAX_OPEN_ZONES, 4096); saturating is exact.
    fn open_count(&self) -> u32 {
        cast::u32_sat(cast::u64_of(self.open.len()))
    }
}

/// A zoned (or zone-emulated) file or device, shared by the clones on it.
pub struct ZbdFile {
    /// Its path.
    pub path: PathBuf,
    /// `None` for emulated zones.
    pub model: Model,
    /// Bytes per zone.
    pub zone_size: u64,
    /// The open-zone limit in force (0 = none).
    pub max_open: u32,
    /// The device, open for writing: zone resets need it.
    dev: Option<File>,
    t: Mutex<Table>,
}

impl std::fmt::Debug for ZbdFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZbdFile")
            .field("path", &self.path)
            .field("model", &self.model)
            .field("zone_size", &self.zone_size)
            .field("max_open", &self.max_open)
            .finish_non_exhaustive()
    }
}

impl ZbdFile {
    /// The zones of `path` for `job`: a zoned device's as it reports them,
    /// else `zonesize`-byte emulated ones over `real_size` bytes. The
    /// error is a usage error's text (fio's words where fio has them).
    pub fn open(path: &Path, block: bool, real_size: u64, job: &Job) -> Result<ZbdFile, String> {
        let name = path.display();
        let want = job.x.zbd_zone_size().unwrap_or(0);
        let o = &job.x.zbd_opts;
        let dev = if block {
            Some(
                crate::run::files::io_file::holding_device(path)
                    .ok_or_else(|| format!("{name}: cannot find its block device in sysfs"))?,
            )
        } else {
            None
        };
        let model = match &dev {
            Some(d) => Model::of(d)?,
            None => Model::None,
        };
        let (zones, zone_size, handle) = if model == Model::None {
            if want == 0 {
                return Err(format!(
                    "{name}: Specifying the zone size is mandatory for regular file/block device with --zonemode=zbd (give zonesize=, e.g. zonesize=256m)"
                ));
            }
            if want < 512 {
                return Err(format!(
                    "{name}: zone size must be at least 512 bytes for --zonemode=zbd"
                ));
            }
            let cap = if o.capacity == 0 { want } else { o.capacity };
            if real_size < want {
                return Err(format!(
                    "{name}: file/device size {real_size} is smaller than zone size {want}"
                ));
            }
            let n = real_size.div_ceil(want);
            let zones = (0..n)
                .map(|i| Zone {
                    start: i * want,
                    end: (i + 1) * want,
                    cap_end: i * want + cap,
                    wp: i * want,
                    has_wp: true,
                    offline: false,
                    open: false,
                    opener: NOBODY,
                    owner: NOBODY,
                    inflight: 0,
                })
                .collect();
            (zones, want, None)
        } else {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(|e| format!("{name}: cannot open for zone resets: {e}"))?;
            let got = iolab_sys::zoned::report_all(&f, real_size)
                .map_err(|e| format!("{name}: report zones failed: {e}"))?;
            let zs = got.first().map_or(0, |z| z.len);
            if want != 0 && want != zs {
                return Err(format!(
                    "{name}: job parameter zonesize {want} does not match disk zone size {zs} (drop zonesize or give {zs})"
                ));
            }
            let mut zones = Vec::with_capacity(got.len());
            for (i, z) in got.iter().enumerate() {
                if i > 0 && z.start != got[i - 1].start + zs {
                    return Err(format!(
                        "{name}: invalid zone data (zones of different sizes)"
                    ));
                }
                let wp = match z.cond {
                    Cond::NotWp | Cond::Full => z.start + z.capacity,
                    _ => z.wp,
                };
                zones.push(Zone {
                    start: z.start,
                    end: z.start + z.len,
                    cap_end: z.start + z.capacity,
                    wp,
                    has_wp: z.kind == ZoneType::SeqRequired,
                    offline: z.cond == Cond::Offline,
                    open: false,
                    opener: NOBODY,
                    owner: NOBODY,
                    inflight: 0,
                });
            }
            (zones, zs, Some(f))
        };
        let max_open = if model != Model::HostManaged || o.ignore_limits {
            o.max_open
        } else {
            let devmax = dev.as_ref().map_or(0, iolab_sys::zoned::max_open_zones);
            match (devmax, o.max_open) {
                (0, m) => m,
                (d, 0) => d,
                (d, m) if m <= d => m,
                (d, m) => {
                    return Err(format!(
                        "Specified --max_open_zones ({m}) is larger than max ({d}) of {name}: lower max_open_zones or set ignore_zone_limits=1"
                    ))
                }
            }
        };
        if max_open > crate::job::options::zbd::MAX_OPEN_ZONES {
            return Err(format!(
                "'max_open_zones' value is larger than {}",
                crate::job::options::zbd::MAX_OPEN_ZONES
            ));
        }
        let swd = zones.iter().map(|z| z.wp - z.start).sum();
        let wp_swd = zones
            .iter()
            .filter(|z| z.has_wp)
            .map(|z| z.wp - z.start)
            .sum();
        Ok(ZbdFile {
            path: path.to_path_buf(),
            model,
            zone_size,
            max_open,
            dev: handle,
            t: Mutex::new(Table {
                zones,
                open: Vec::new(),
                swd,
                wp_swd,
                write_cnt: u32::MAX,
                inflight: 0,
            }),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // A clone that panicked holding the lock leaves a table whose
        // write pointers are still the best there is.
        self.t
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Index of the zone holding `off` (the sentinel past the end).
    fn idx(&self, t: &Table, off: u64) -> usize {
        cast::usize_of(off / self.zone_size).min(t.zones.len())
    }

    /// The zone holding byte `off` starts here (the file's end for an
    /// offset past the last zone).
    pub fn zone_start(&self, off: u64) -> u64 {
        let t = self.table();
        let i = self.idx(&t, off);
        t.zones
            .get(i)
            .map_or(t.zones.len() as u64 * self.zone_size, |z| z.start)
    }

    /// Bytes the zones cover.
    pub fn file_size(&self) -> u64 {
        let t = self.table();
        t.zones.last().map_or(0, |z| z.end)
    }

    /// True when a zone in `[from, to)` has a write pointer.
    pub fn seq_in(&self, from: u64, to: u64) -> bool {
        let t = self.table();
        let (a, b) = (self.idx(&t, from), self.idx(&t, to.saturating_sub(1)));
        (a..=b.min(t.zones.len().saturating_sub(1))).any(|i| t.zones[i].has_wp)
    }

    /// Resets zone `i`'s write pointer (the device's, for a zoned one).
    fn reset(&self, t: &mut Table, i: usize) -> std::io::Result<()> {
        let z = t.zones[i];
        let data = z.wp - z.start;
        if data == 0 {
            return Ok(());
        }
        if let Some(f) = &self.dev {
            iolab_sys::zoned::reset(f, z.start, z.end - z.start)?;
        }
        t.swd -= data;
        t.wp_swd -= data;
        t.zones[i].wp = z.start;
        Ok(())
    }

    fn close(t: &mut Table, i: usize) {
        if !t.zones[i].open {
            return;
        }
        t.open.retain(|&k| k != i);
        t.zones[i].open = false;
        t.zones[i].opener = NOBODY;
    }

    /// Zones in `[min, max)` the device reports open before the load: kept
    /// open while the limit allows, else reset (fio's zbd_setup_files).
    pub fn adopt_open_zones(&self, min: u64, max: u64) -> std::io::Result<u32> {
        let Some(f) = &self.dev else { return Ok(0) };
        let zones = iolab_sys::zoned::report_all(f, max)?;
        let mut t = self.table();
        let mut resets = 0;
        let (a, b) = (self.idx(&t, min), self.idx(&t, max));
        for (i, rz) in zones.iter().enumerate().take(b).skip(a) {
            if !matches!(rz.cond, Cond::ImplicitOpen | Cond::ExplicitOpen) || t.zones[i].open {
                continue;
            }
            if self.max_open == 0 {
                continue;
            }
            if t.open_count() < self.max_open {
                t.open.push(i);
                t.zones[i].open = true;
                continue;
            }
            self.reset(&mut t, i)?;
            resets += 1;
        }
        Ok(resets)
    }
}

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

    fn valid(&self, off: u64) -> bool {
        off.wrapping_sub(self.file_offset) < self.io_size
    }

    /// A mixed job's first reads become writes until some zone holds
    /// data (fio's zbd_adjust_ddir: a fresh device has nothing to read).
    pub fn ddir(&self, dir: Dir) -> Dir {
        if dir != Dir::Read || !self.mixed || self.read_beyond_wp {
            return dir;
        }
        if self.f.table().swd > 0 {
            Dir::Read
        } else {
            Dir::Write
        }
    }

    /// At the start of each loop of a writing clone: recounts the data
    /// and, with verify, resets the clone's zones so that no reset has to
    /// destroy data verify will read (fio's zbd_file_reset).
    pub fn loop_start(&mut self) -> std::io::Result<()> {
        if !self.writes {
            return Ok(());
        }
        let f = self.f.clone();
        let mut t = f.table();
        let (a, b) = (self.min_zone, self.max_zone);
        let (mut swd, mut wp_swd) = (0, 0);
        for z in &t.zones[a..b] {
            swd += z.wp - z.start;
            if z.has_wp {
                wp_swd += z.wp - z.start;
            }
        }
        // fio recounts over its own range only and keeps that as the
        // device's total: the same on one job, as with fio.
        t.swd = swd;
        t.wp_swd = wp_swd;
        if self.verify {
            for i in a..b {
                if !t.zones[i].has_wp {
                    continue;
                }
                ZbdFile::close(&mut t, i);
                if t.zones[i].wp != t.zones[i].start {
                    f.reset(&mut t, i)?;
                    self.resets += 1;
                }
            }
        }
        t.write_cnt = self.write_cnt_start();
        Ok(())
    }

    fn write_cnt_start(&self) -> u32 {
        if self.zrf > 0.0 {
            // fio: min(1.0 / zrf, UINT_MAX), truncated to unsigned int.
            cast::u32_sat(cast::floor_u64(1.0 / self.zrf))
        } else {
            u32::MAX
        }
    }

    /// Where the I/O drawn at `off` (`len` bytes) goes: fio's
    /// zbd_adjust_block. On [`Placed::Io`] the zone is this clone's until
    /// [`ZbdClone::done`] is called for the I/O, and a write has moved
    /// its write pointer.
    pub fn place(&mut self, dir: Dir, off: u64, len: u64) -> Placed {
        let f = self.f.clone();
        let mut t = f.table();
        let zi = f.idx(&t, off);
        if zi >= t.zones.len() {
            return Placed::Eof;
        }
        let min_bs = self.min_bs[(dir as usize).min(2)];
        let zb = t.zones[zi];
        if !zb.has_wp {
            return self.conventional(&t, zi, dir, off, len);
        }
        if !zb.offline && dir == Dir::Read && self.read_beyond_wp {
            return Placed::Io(off, len);
        }
        if self.busy(&t, zi) {
            return Placed::Wait;
        }
        match dir {
            Dir::Read => self.read(&mut t, zi, off, len, min_bs),
            Dir::Write => self.write(&f, &mut t, zi, off, len),
            Dir::Trim => {
                if !self.random || zb.wp > zb.start {
                    return self.accept(&mut t, zi, dir, off, len);
                }
                match self.find_zone(&t, 1, zi) {
                    Some(k) => {
                        let s = t.zones[k].start;
                        if t.zones[k].has_wp {
                            self.accept(&mut t, k, dir, s, len)
                        } else {
                            Placed::Io(s, len)
                        }
                    }
                    None => Placed::Eof,
                }
            }
        }
    }

    fn busy(&self, t: &Table, i: usize) -> bool {
        let z = &t.zones[i];
        z.inflight > 0 && z.owner != self.me
    }

    /// A conventional zone: anything goes, but a write must not run into
    /// the sequential zone after it.
    fn conventional(&self, t: &Table, zi: usize, dir: Dir, mut off: u64, len: u64) -> Placed {
        let next = t.zones.get(zi + 1);
        let zb = t.zones[zi];
        if dir != Dir::Write || !next.is_some_and(|n| n.has_wp) || off + len <= zb.end {
            return Placed::Io(off, len);
        }
        let min_bs = self.min_bs[1];
        let new_len = if off + min_bs > zb.end {
            off = zb.start + zb.end - off;
            len.min(zb.end - off)
        } else {
            zb.end - off
        };
        Placed::Io(off, new_len / min_bs * min_bs)
    }

    fn read(
        &mut self,
        t: &mut Table,
        zi: usize,
        mut off: u64,
        mut len: u64,
        min_bs: u64,
    ) -> Placed {
        let orig = t.zones[zi];
        let mut zb = zi;
        let mut range = if orig.offline {
            0
        } else {
            orig.wp - orig.start
        };
        if range < min_bs || (!self.random && off + min_bs > orig.wp) {
            let Some(k) = self.find_zone(t, min_bs, zi) else {
                return Placed::Eof;
            };
            if self.busy(t, k) {
                return Placed::Wait;
            }
            zb = k;
            range = t.zones[k].wp - t.zones[k].start;
            if !self.random {
                off = t.zones[k].start;
            }
        }
        let z = t.zones[zb];
        if range <= len {
            off = z.start;
        } else if self.random {
            off = z.start + ((off - orig.start) % (range - len)) / min_bs * min_bs;
        }
        if !z.has_wp {
            return Placed::Io(off, len);
        }
        let new_len = len.min(z.wp - off) / min_bs * min_bs;
        if new_len < len {
            len = new_len;
        }
        self.accept(t, zb, Dir::Read, off, len)
    }

    /// A zone after `zi` with `min` bytes of data (for random I/O, the
    /// nearest before or after): fio's zbd_find_zone.
    fn find_zone(&self, t: &Table, min: u64, zi: usize) -> Option<usize> {
        let (lo, hi) = (self.min_zone, self.max_zone);
        // b is None once it has gone below zone 0.
        let (mut a, mut b) = (zi + 1, zi.checked_sub(1));
        let below = |b: Option<usize>| b.filter(|&b| b >= lo);
        while a < hi || below(b).is_some() {
            if a < hi {
                let z = &t.zones[a];
                if !z.offline && z.start + min <= z.wp {
                    return Some(a);
                }
            } else if !self.random {
                break;
            }
            if let Some(b) = below(b).filter(|_| self.random) {
                let z = &t.zones[b];
                if !z.offline && z.start + min <= z.wp {
                    return Some(b);
                }
            }
            a += 1;
            b = b.and_then(|b| b.checked_sub(1));
        }
        None
    }

    fn full(z: &Zone, need: u64) -> bool {
        z.has_wp && z.wp + need > z.cap_end
    }

    /// fio's zbd_open_zone: true when zone `i` is open for this clone's
    /// writes, or could be opened within the limits.
    fn open_zone(&self, f: &ZbdFile, t: &mut Table, i: usize) -> bool {
        let z = t.zones[i];
        if z.offline {
            return false;
        }
        // A full zone under verify would have to be reset, losing data.
        if self.verify && Self::full(&z, self.min_bs[1]) {
            return false;
        }
        if f.max_open == 0 {
            return true;
        }
        if z.open {
            // Writes in flight will fill it: handle it as full.
            return z.wp < z.cap_end;
        }
        if self.job_max_open > 0 && self.my_open(t) >= self.job_max_open {
            return false;
        }
        if t.open_count() >= f.max_open {
            return false;
        }
        t.open.push(i);
        t.zones[i].open = true;
        t.zones[i].opener = self.me;
        true
    }

    fn my_open(&self, t: &Table) -> u32 {
        let mine = t.open.iter().filter(|&&k| t.zones[k].opener == self.me);
        cast::u32_sat(cast::u64_of(mine.count()))
    }

    /// The open zone (index into `t.open`) fio picks for an I/O at `off`.
    fn pick(&self, t: &Table, off: u64) -> usize {
        if self.io_size == 0 {
            return 0;
        }
        let k =
            u128::from(off - self.file_offset) * t.open.len() as u128 / u128::from(self.io_size);
        // Below t.open.len() for an offset in the region; callers bound it.
        usize::try_from(k).unwrap_or(usize::MAX)
    }

    /// fio's zbd_convert_to_open_zone: a zone this clone may write, from
    /// the open ones or a new one; `Err` when it must wait or give up.
    fn convert_to_open_zone(
        &mut self,
        f: &ZbdFile,
        t: &mut Table,
        off: u64,
    ) -> Result<usize, Placed> {
        let min_bs = self.min_bs[1];
        let limited = f.max_open > 0 || self.job_max_open > 0;
        let mut zi = if limited && !t.open.is_empty() {
            t.open[self.pick(t, off).min(t.open.len() - 1)]
        } else {
            f.idx(t, off)
        };
        zi = zi.clamp(self.min_zone, self.max_zone.saturating_sub(1));
        let examine;
        loop {
            let z = t.zones[zi];
            if z.has_wp && self.busy(t, zi) {
                return Err(Placed::Wait);
            }
            if z.has_wp {
                if !z.offline && !limited {
                    examine = true;
                    break;
                }
                if t.open.is_empty() {
                    examine = false;
                    break;
                }
            }
            let first = self.pick(t, off);
            let n = t.open.len();
            let cand = (0..n)
                .map(|k| (first + k) % n.max(1))
                .find(|&k| (self.min_zone..self.max_zone).contains(&t.open[k]));
            let Some(c) = cand else {
                return Err(Placed::Eof);
            };
            let new = t.open[c];
            if new == zi {
                examine = true;
                break;
            }
            zi = new;
        }
        if examine && t.zones[zi].wp + min_bs <= t.zones[zi].cap_end {
            return Ok(zi);
        }
        // Zone zi is full: the limits reached, wait for zones to close.
        let span = self.max_zone - self.min_zone;
        let wait_close = t.open.len() == span
            || (f.max_open > 0 && t.open_count() == f.max_open)
            || (self.job_max_open > 0 && self.my_open(t) == self.job_max_open);
        if wait_close && self.mine_in_flight(t) {
            return Err(Placed::Wait);
        }
        let tries = self.io_size / f.zone_size;
        for _ in 0..tries {
            zi += 1;
            if zi >= t.zones.len() || !self.valid(t.zones[zi].start) {
                zi = self.min_zone;
            }
            let z = t.zones[zi];
            if !z.has_wp || z.open || self.busy(t, zi) {
                continue;
            }
            if self.open_zone(f, t, zi) {
                return Ok(zi);
            }
        }
        // Does the write fit in a zone already open?
        for k in 0..t.open.len() {
            let i = t.open[k];
            if !(self.min_zone..self.max_zone).contains(&i) || self.busy(t, i) {
                continue;
            }
            if t.zones[i].wp + min_bs <= t.zones[i].cap_end {
                return Ok(i);
            }
        }
        // Writes in flight may close zones: wait for them, then retry.
        if t.inflight > 0 {
            return Err(Placed::Wait);
        }
        Err(Placed::Eof)
    }

    fn mine_in_flight(&self, t: &Table) -> bool {
        t.zones[self.min_zone..self.max_zone]
            .iter()
            .any(|z| z.owner == self.me && z.inflight > 0)
    }

    fn write(&mut self, f: &ZbdFile, t: &mut Table, zi: usize, drawn: u64, len: u64) -> Placed {
        let min_bs = self.min_bs[1];
        if len > f.zone_size {
            return Placed::Fail(libc::EINVAL, "I/O buflen exceeds zone size");
        }
        let mut zb = zi;
        if !self.open_zone(f, t, zb) {
            match self.convert_to_open_zone(f, t, drawn) {
                Ok(k) => zb = k,
                Err(p) => return p,
            }
        }
        let mut reset = false;
        if self.zrf > 0.0 && t.wp_swd as f64 >= self.io_size as f64 * self.zrt {
            t.write_cnt = t.write_cnt.saturating_sub(1);
            if t.write_cnt == 0 {
                t.write_cnt = self.write_cnt_start();
                reset = true;
            }
        }
        if reset || Self::full(&t.zones[zb], min_bs) {
            // The reset is synchronous: this clone's writes in flight in
            // the zone complete first (fio quiesces).
            if t.zones[zb].inflight > 0 {
                if reset {
                    // fio marks the zone (reset_zone) and waits; here the
                    // count is left one short, so the retry decides again.
                    t.write_cnt = 1;
                }
                return Placed::Wait;
            }
            if let Err(e) = f.reset(t, zb) {
                return Placed::Fail(e.raw_os_error().unwrap_or(libc::EIO), "resetting wp failed");
            }
            self.resets += 1;
            if t.zones[zb].cap_end - t.zones[zb].start < min_bs {
                return Placed::Fail(libc::EINVAL, "ZCAP is less min_bs");
            }
        }
        let z = t.zones[zb];
        let off = z.wp;
        if !self.valid(off) {
            return Placed::Fail(libc::EINVAL, "invalid WP value");
        }
        let new_len = len.min(z.cap_end - off) / min_bs * min_bs;
        if new_len < min_bs {
            return Placed::Fail(libc::EIO, "zone remainder too small");
        }
        self.accept(t, zb, Dir::Write, off, new_len)
    }

    fn accept(&self, t: &mut Table, i: usize, dir: Dir, off: u64, len: u64) -> Placed {
        let z = &mut t.zones[i];
        z.owner = self.me;
        z.inflight += 1;
        t.inflight += 1;
        if dir == Dir::Write {
            let end = (off + len).min(z.cap_end);
            if z.wp <= end {
                t.swd += end - z.wp;
                t.wp_swd += end - z.wp;
            }
            z.wp = end;
        }
        Placed::Io(off, len)
    }

    /// The I/O placed at `off` completed (or failed): the zone is free of
    /// it, and a write that reached the zone's capacity closes the zone.
    pub fn done(&self, dir: Dir, off: u64, len: u64) {
        let mut t = self.f.table();
        let i = self.f.idx(&t, off);
        let Some(z) = t.zones.get_mut(i) else { return };
        if !z.has_wp || z.owner != self.me || z.inflight == 0 {
            return;
        }
        z.inflight -= 1;
        if z.inflight == 0 {
            z.owner = NOBODY;
        }
        let cap_end = z.cap_end;
        t.inflight -= 1;
        if dir == Dir::Write && off + len >= cap_end {
            ZbdFile::close(&mut t, i);
        }
    }

    /// Where a sequential job's next I/O of `dir` starts after one placed
    /// at `off` for `len` bytes, relative to the region (fio's last_pos,
    /// then setup_zbd_zone_mode): a write that reached a zone's capacity
    /// goes on at the zone's end; with `zoneskip`, a zone done with (its
    /// size moved, its end or, reading, its write pointer reached) is
    /// followed by the zone `zoneskip` bytes after it, wrapping to the
    /// region's start.
    pub fn next_seq(&mut self, dir: Dir, off: u64, len: u64) -> u64 {
        let mut pos = off + len;
        self.zone_bytes += len;
        if self.random {
            return pos - self.file_offset;
        }
        let t = self.f.table();
        let i = self.f.idx(&t, pos.saturating_sub(1).max(off));
        let Some(z) = t.zones.get(i).copied() else {
            return pos - self.file_offset;
        };
        if dir == Dir::Write && z.cap_end < z.end && pos >= z.cap_end {
            pos = z.end;
        }
        if self.skip > 0
            && (self.zone_bytes >= self.f.zone_size
                || pos >= z.end
                || (dir == Dir::Read && !self.read_beyond_wp && pos >= z.wp))
        {
            self.zone_bytes = 0;
            pos = z.start + self.f.zone_size + self.skip;
            if pos >= self.file_offset + self.io_size {
                pos = self.file_offset;
            }
        }
        pos - self.file_offset
    }

    /// A trim at `off`: a reset of its zone (fio's zbd_do_io_u_trim);
    /// `None` for a conventional zone, trimmed as any block.
    pub fn trim(&mut self, off: u64) -> Option<std::io::Result<()>> {
        let f = self.f.clone();
        let mut t = f.table();
        let i = f.idx(&t, off);
        let z = *t.zones.get(i)?;
        if !z.has_wp {
            return None;
        }
        if off != z.start {
            return Some(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("Trim offset not at zone start ({off})"),
            )));
        }
        let had = z.wp != z.start;
        let r = f.reset(&mut t, i);
        if r.is_ok() && had {
            self.resets += 1;
        }
        Some(r)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::job::kinds::Rw;

    const Z: u64 = 1 << 20;

    /// A job over 4 emulated zones of 1 MiB in 64 KiB blocks.
    fn job(rw: Rw, opts: &[(&str, &str)]) -> Job {
        let mut j = Job::new("z");
        j.rw = rw;
        for (k, v) in [("zonemode", "zbd"), ("zonesize", "1m"), ("bs", "64k")]
            .iter()
            .chain(opts)
        {
            crate::job::options::apply(&mut j, k, Some(v)).unwrap();
        }
        j
    }

    fn file(j: &Job) -> Arc<ZbdFile> {
        Arc::new(ZbdFile::open(Path::new("/nonexistent"), false, 4 * Z, j).unwrap())
    }

    fn io(z: &mut ZbdClone, dir: Dir, off: u64) -> (u64, u64) {
        match z.place(dir, off, 64 << 10) {
            Placed::Io(o, l) => {
                z.done(dir, o, l);
                (o, l)
            }
            p => panic!("{p:?} for {dir:?} at {off}"),
        }
    }

    #[test]
    fn writes_go_to_the_write_pointer_and_a_full_zone_is_reset() {
        let j = job(Rw::RandWrite, &[]);
        let mut z = ZbdClone::new(file(&j), 1, &j, 0, 4 * Z);
        // Drawn anywhere in zone 2: written at its start, then after.
        assert_eq!(io(&mut z, Dir::Write, 2 * Z + 5 * 65536), (2 * Z, 65536));
        assert_eq!(io(&mut z, Dir::Write, 2 * Z), (2 * Z + 65536, 65536));
        for _ in 2..16 {
            io(&mut z, Dir::Write, 2 * Z);
        }
        assert_eq!(z.resets, 0);
        // Zone 2 is full: the next write there resets it.
        assert_eq!(io(&mut z, Dir::Write, 2 * Z + 65536), (2 * Z, 65536));
        assert_eq!(z.resets, 1);
    }

    #[test]
    fn the_open_zone_limit_sends_writes_to_zones_already_open() {
        let j = job(Rw::RandWrite, &[("max_open_zones", "2")]);
        let mut z = ZbdClone::new(file(&j), 1, &j, 0, 4 * Z);
        io(&mut z, Dir::Write, 0);
        io(&mut z, Dir::Write, Z);
        // A third zone would exceed the limit: the write goes to an open one.
        let (o, _) = io(&mut z, Dir::Write, 3 * Z);
        assert!(o < 2 * Z, "{o}");
        assert_eq!(z.f.table().open.len(), 2);
    }

    #[test]
    fn reads_stay_below_the_write_pointer_and_end_without_data() {
        let j = job(Rw::RandRead, &[]);
        let f = file(&j);
        let mut r = ZbdClone::new(f.clone(), 1, &j, 0, 4 * Z);
        assert_eq!(r.place(Dir::Read, Z, 65536), Placed::Eof);
        let w = job(Rw::Write, &[]);
        let mut wz = ZbdClone::new(f, 2, &w, 0, 4 * Z);
        io(&mut wz, Dir::Write, 3 * Z);
        io(&mut wz, Dir::Write, 3 * Z);
        // Drawn in empty zone 1: read from zone 3's 128 KiB of data.
        let (o, l) = io(&mut r, Dir::Read, Z + 7 * 65536);
        assert!(
            (3 * Z..3 * Z + 2 * 65536).contains(&o) && o + l <= 3 * Z + 2 * 65536,
            "{o}"
        );
    }

    #[test]
    fn a_zone_with_another_clones_io_in_flight_waits_until_it_completes() {
        let j = job(Rw::Write, &[]);
        let f = file(&j);
        let mut a = ZbdClone::new(f.clone(), 1, &j, 0, 4 * Z);
        let mut b = ZbdClone::new(f.clone(), 2, &j, 0, 4 * Z);
        let Placed::Io(o, l) = a.place(Dir::Write, 0, 65536) else {
            panic!()
        };
        assert_eq!(b.place(Dir::Write, 0, 65536), Placed::Wait);
        // a's own next write in the zone does not wait (fio's recursive
        // zone lock), and goes after the first.
        assert_eq!(a.place(Dir::Write, 0, 65536), Placed::Io(65536, 65536));
        a.done(Dir::Write, o, l);
        a.done(Dir::Write, 65536, 65536);
        assert_eq!(b.place(Dir::Write, 0, 65536), Placed::Io(2 * 65536, 65536));
        // A clone that ends with I/O in flight frees its zone.
        drop(b);
        let mut c = ZbdClone::new(f, 3, &j, 0, 4 * Z);
        assert!(matches!(c.place(Dir::Write, 0, 65536), Placed::Io(..)));
    }

    #[test]
    fn a_trim_resets_its_zone_and_must_start_it() {
        let j = job(Rw::Write, &[]);
        let mut z = ZbdClone::new(file(&j), 1, &j, 0, 4 * Z);
        io(&mut z, Dir::Write, 0);
        assert!(z.trim(65536).unwrap().is_err());
        z.trim(0).unwrap().unwrap();
        assert_eq!(z.resets, 1);
        assert_eq!(io(&mut z, Dir::Write, 0), (0, 65536));
    }
}
