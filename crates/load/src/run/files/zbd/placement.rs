//! Where a zbd I/O goes (fio's zbd_adjust_block and what it calls): a
//! write at its zone's write pointer, in a zone it may open under the
//! open-zone limits (`max_open_zones`, `job_max_open_zones`) or one
//! already open; a read below the write pointer, in a zone with data; a
//! zone owned by the clone with I/O in flight in it until that completes;
//! and a sequential job's next offset after a placed I/O.

use iolab_sys::cast;

use super::zones::{Table, ZbdFile, Zone, NOBODY};
use super::{Placed, ZbdClone};
use crate::job::kinds::Dir;

impl ZbdClone {
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

    /// True when zone `z` cannot take `need` more bytes.
    pub(super) fn full(z: &Zone, need: u64) -> bool {
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
        if let Err(p) = self.reset_before_write(f, t, zb) {
            return p;
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
}
