//! What the zones report, and the table made of it: a file opened into
//! its zones — a zoned device's as BLKREPORTZONE gives them (fio's
//! parse_zone_info), else `zonesize`-byte emulated ones (fio's ZBD_NONE) —
//! with the open-zone limit in force; the zones the device reports open
//! before the load (adopted as fio's zbd_setup_files does); and the
//! statistics kept of the table: the bytes with data (fio's
//! sectors_with_data and wp_sectors_with_data).

use std::fs::File;
use std::path::Path;
use std::sync::Mutex;

use iolab_sys::zoned::{Cond, Model, ZoneType};

use super::zones::{Table, ZbdFile, Zone, NOBODY};
use crate::job::model::Job;

/// A zoned device's zones as it reports them, their size, and the device
/// open for writing (zone resets need it). `want` is the job's `zonesize`
/// (0: the device's). The error is a usage error's text (fio's words).
pub(super) fn device_zones(
    path: &Path,
    real_size: u64,
    want: u64,
) -> Result<(Vec<Zone>, u64, File), String> {
    let name = path.display();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("{name}: cannot open for zone resets: {e}"))?;
    let got = iolab_sys::zoned::report_all(&f, real_size)
        .map_err(|e| format!("{name}: report zones failed: {e}"))?;
    // A device that reports no zones has no zone size to place I/O by.
    let zs = got
        .first()
        .map(|z| z.len)
        .filter(|&l| l > 0)
        .ok_or_else(|| format!("{name}: report zones gave no zones"))?;
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
    Ok((zones, zs, f))
}

/// Bytes with data in `zones`, and in those of them with write pointers
/// (fio's sectors_with_data and wp_sectors_with_data).
pub(super) fn data(zones: &[Zone]) -> (u64, u64) {
    let swd = zones.iter().map(|z| z.wp - z.start).sum();
    let wp_swd = zones
        .iter()
        .filter(|z| z.has_wp)
        .map(|z| z.wp - z.start)
        .sum();
    (swd, wp_swd)
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
            let (zones, zs, f) = device_zones(path, real_size, want)?;
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
        let (swd, wp_swd) = data(&zones);
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
