//! The zone table of a zoned (or zone-emulated) file: each zone as fio's
//! `fio_zone_info` keeps it, what every clone on the file shares (fio's
//! `zoned_block_device_info`), the file with its open-zone limit, and the
//! lookups by offset; `reports.rs` fills it.

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use iolab_sys::cast;
use iolab_sys::zoned::Model;

/// One zone as fio's `fio_zone_info` keeps it, in bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Zone {
    pub(super) start: u64,
    /// Where the next zone starts.
    pub(super) end: u64,
    /// `start + capacity`.
    pub(super) cap_end: u64,
    pub(super) wp: u64,
    /// A sequential-write-required zone (host-aware zones take random
    /// writes and count as conventional, as in fio).
    pub(super) has_wp: bool,
    pub(super) offline: bool,
    /// In the open list (only tracked under an open-zone limit).
    pub(super) open: bool,
    /// The clone that opened it (`NOBODY`: open before the load).
    pub(super) opener: u32,
    /// The clone with I/O in flight in it, and how many.
    pub(super) owner: u32,
    pub(super) inflight: u32,
}

pub(super) const NOBODY: u32 = u32::MAX;

/// What every clone on one file shares (fio's `zoned_block_device_info`).
pub(super) struct Table {
    pub(super) zones: Vec<Zone>,
    /// Indices of the open zones, oldest first.
    pub(super) open: Vec<usize>,
    /// Bytes with data in all zones, and in zones with write pointers
    /// (fio's sectors_with_data and wp_sectors_with_data).
    pub(super) swd: u64,
    pub(super) wp_swd: u64,
    /// Writes left until the next reset `zone_reset_frequency` asks.
    pub(super) write_cnt: u32,
    /// I/Os in flight in any zone.
    pub(super) inflight: u32,
}

impl Table {
    /// Zones in the open list: only an open-zone limit's are listed, so at
    /// most `max_open` (<= MAX_OPEN_ZONES, 4096); saturating is exact.
    pub(super) fn open_count(&self) -> u32 {
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
    pub(super) dev: Option<File>,
    pub(super) t: Mutex<Table>,
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
    /// The table, locked.
    pub(super) fn table(&self) -> MutexGuard<'_, Table> {
        // A clone that panicked holding the lock leaves a table whose
        // write pointers are still the best there is.
        self.t
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Index of the zone holding `off` (the sentinel past the end).
    pub(super) fn idx(&self, t: &Table, off: u64) -> usize {
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
}
