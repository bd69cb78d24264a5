//! Zone resets and their policy: a zone's write pointer reset (the
//! device's BLKRESETZONE for a zoned one) and a zone closed, taken off the
//! open list; a loop's resets before verify (fio's zbd_file_reset);
//! `zone_reset_threshold`/`zone_reset_frequency`'s resets and a full
//! zone's reset before a write (fio's zbd_adjust_block); and a trim as its
//! zone's reset (fio's zbd_do_io_u_trim).

use iolab_sys::cast;

use super::zones::{Table, ZbdFile, NOBODY};
use super::{Placed, ZbdClone};

impl ZbdFile {
    /// Resets zone `i`'s write pointer (the device's, for a zoned one).
    pub(super) fn reset(&self, t: &mut Table, i: usize) -> std::io::Result<()> {
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

    /// Takes zone `i` off the open list (a write filled it, or a loop
    /// resets it).
    pub(super) fn close(t: &mut Table, i: usize) {
        if !t.zones[i].open {
            return;
        }
        t.open.retain(|&k| k != i);
        t.zones[i].open = false;
        t.zones[i].opener = NOBODY;
    }
}

impl ZbdClone {
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
        let (swd, wp_swd) = super::reports::data(&t.zones[a..b]);
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

    /// Writes until `zone_reset_frequency`'s next reset.
    pub(super) fn write_cnt_start(&self) -> u32 {
        if self.zrf > 0.0 {
            // fio: min(1.0 / zrf, UINT_MAX), truncated to unsigned int.
            cast::u32_sat(cast::floor_u64(1.0 / self.zrf))
        } else {
            u32::MAX
        }
    }

    /// Before a write to zone `zb`: the reset `zone_reset_frequency` asks
    /// for once `zone_reset_threshold` of the region holds data, or the
    /// reset a full zone needs to take the write. `Err` is what to do
    /// instead: wait for this clone's writes in flight in the zone (the
    /// reset is synchronous: fio quiesces), or fail.
    pub(super) fn reset_before_write(
        &mut self,
        f: &ZbdFile,
        t: &mut Table,
        zb: usize,
    ) -> Result<(), Placed> {
        let min_bs = self.min_bs[1];
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
                return Err(Placed::Wait);
            }
            if let Err(e) = f.reset(t, zb) {
                return Err(Placed::Fail(
                    e.raw_os_error().unwrap_or(libc::EIO),
                    "resetting wp failed",
                ));
            }
            self.resets += 1;
            if t.zones[zb].cap_end - t.zones[zb].start < min_bs {
                return Err(Placed::Fail(libc::EINVAL, "ZCAP is less min_bs"));
            }
        }
        Ok(())
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
