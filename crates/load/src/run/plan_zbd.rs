//! zonemode=zbd's part of the plan, as fio 3.33's zbd_init_files and
//! zbd_setup_files do it before any I/O: each file's zones read (or
//! emulated) once and shared by every job on it, the open-zone limit
//! settled against the device's, and each clone's region moved to zone
//! boundaries when it writes (with fio's "rounded up offset" notes).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::LoadError;
use crate::job::model::Job;
use crate::run::files::io_file::{IoFile, IoFileKind};
use crate::run::files::zbd::ZbdFile;
use crate::run::plan::{region_end, PlannedJob, Region};

/// Sets up the zbd jobs of `jobs`; notes go to `warnings`.
pub fn plan_zbd(jobs: &mut [PlannedJob], warnings: &mut Vec<String>) -> Result<(), LoadError> {
    refuse_unzoned_writes(jobs)?;
    let mut files: HashMap<PathBuf, Arc<ZbdFile>> = HashMap::new();
    for pj in jobs.iter_mut().filter(|pj| pj.job.x.zbd) {
        let job = pj.job.clone();
        let usage = |why: String| LoadError::usage(format!("job {}: {why}", job.name));
        let Some(t) = pj.files.first().cloned() else {
            // The null engine: no file, nothing zoned.
            continue;
        };
        let block = t.kind == IoFileKind::BlockDevice;
        let zf = match files.get(&t.path) {
            Some(f) => f.clone(),
            None => {
                let end = region_end(pj, job.numjobs.saturating_sub(1) as usize);
                let real = if block {
                    t.existing
                } else {
                    t.existing.max(end)
                };
                let f = Arc::new(ZbdFile::open(&t.path, block, real, &job).map_err(usage)?);
                files.insert(t.path.clone(), f.clone());
                f
            }
        };
        let o = &job.x.zbd_opts;
        if block && zf.model == iolab_sys::zoned::Model::HostManaged && job.writes() && !job.direct
        {
            return Err(usage(format!(
                "Using direct I/O is mandatory for writing to ZBD drives ({} is host-managed: buffered writeback would reorder the writes); add direct=1",
                t.path.display()
            )));
        }
        if o.max_open > 0 && zf.max_open != o.max_open {
            return Err(usage(format!(
                "Different 'max_open_zones' values: {} here, {} for the job that first opened {}; give every job on it the same",
                o.max_open,
                zf.max_open,
                t.path.display()
            )));
        }
        if o.job_max_open > 0 && zf.max_open == 0 {
            return Err(usage(
                "'job_max_open_zones' cannot be used without a global open zones limit (add max_open_zones, or use a device that has one)".into(),
            ));
        }
        if job.rw.trims() && job.sizes.of(crate::job::kinds::Dir::Trim).min() != zf.zone_size {
            return Err(usage(format!(
                "{}: trim block size {} is not the zone size {} (a trim is a zone reset)",
                t.path.display(),
                job.sizes.of(crate::job::kinds::Dir::Trim).min(),
                zf.zone_size
            )));
        }
        if job.x.verify.is_some() {
            for d in [crate::job::kinds::Dir::Read, crate::job::kinds::Dir::Write] {
                let bs = job.sizes.of(d).max();
                if zf.zone_size % bs != 0 {
                    return Err(usage(format!(
                        "{}: block size {bs} is not a divisor of the zone size {}",
                        t.path.display(),
                        zf.zone_size
                    )));
                }
            }
        }
        let skip = job.x.strided.map_or(0, |s| s.2);
        if skip % zf.zone_size != 0 && zf.seq_in(job.x.offset, job.x.offset + pj.size) {
            return Err(usage(format!(
                "{}: zoneskip {skip} is not a multiple of the device zone size {}.",
                t.path.display(),
                zf.zone_size
            )));
        }
        let mut regions = Vec::with_capacity(job.numjobs as usize);
        for c in 0..job.numjobs {
            // Still the job's own region: regions are set below.
            let mut base = pj.region(c).base;
            let mut size = pj.size;
            let name = t.path.display();
            let writes = job.writes();
            if writes && base < zf.file_size() && zf.seq_in(base, base + size) {
                let start = zf.zone_start(base);
                if base != start {
                    let new = zf.zone_start(base) + zf.zone_size;
                    if new >= base + size {
                        return Err(usage(format!(
                            "{name}: io_size must be at least one zone (offset {base}, size {size}, zones of {})",
                            zf.zone_size
                        )));
                    }
                    warnings.push(format!("{name}: rounded up offset from {base} to {new}"));
                    size -= new - base;
                    base = new;
                }
                let end = zf.zone_start(base + size);
                if base + size != end {
                    if end <= base {
                        return Err(usage(format!(
                            "{name}: io_size must be at least one zone (size {size}, zones of {})",
                            zf.zone_size
                        )));
                    }
                    warnings.push(format!(
                        "{name}: rounded down io_size from {size} to {}",
                        end - base
                    ));
                    size = end - base;
                }
            }
            let io_size = job.x.io_size.unwrap_or(size);
            regions.push(Region {
                base,
                size,
                io_size,
            });
            if c == 0 {
                let resets = zf
                    .adopt_open_zones(base, base + size)
                    .map_err(|e| usage(format!("{name}: report zones failed: {e}")))?;
                if resets > 0 {
                    warnings.push(format!(
                        "{name}: {resets} zone(s) open beyond the open-zone limit were reset"
                    ));
                }
            }
        }
        pj.regions = regions;
        pj.zbd = Some(zf);
    }
    Ok(())
}

/// A writer without zonemode=zbd whose region on a host-managed device
/// holds a sequential zone: every write not at a write pointer would fail
/// (fio finds out at the first I/O and says "consider --zonemode=zbd");
/// refused before anything is written. Conventional zones take any write.
fn refuse_unzoned_writes(jobs: &[PlannedJob]) -> Result<(), LoadError> {
    for pj in jobs.iter().filter(|pj| !pj.job.x.zbd && pj.job.writes()) {
        for t in pj
            .files
            .iter()
            .filter(|t| t.kind == IoFileKind::BlockDevice)
        {
            // A device whose model cannot be read is not taken for a
            // conventional one: its writes might all fail.
            let zoned = crate::run::files::io_file::holding_device(&t.path)
                .map(|d| iolab_sys::zoned::Model::of(&d))
                .transpose()
                .map_err(|e| LoadError::Setup {
                    job: pj.job.name.clone(),
                    why: e,
                })?;
            if zoned != Some(iolab_sys::zoned::Model::HostManaged) {
                continue;
            }
            let from = pj.job.x.offset;
            let to = region_end(pj, pj.job.numjobs.saturating_sub(1) as usize);
            // Zones that cannot be read are an error of their own: taken
            // as sequential, the refusal below would blame the job.
            let zones = std::fs::File::open(&t.path)
                .and_then(|f| iolab_sys::zoned::report_all(&f, to))
                .map_err(|e| {
                    LoadError::io(
                        &t.path,
                        std::io::Error::new(
                            e.kind(),
                            format!(
                                "reading its zones (BLKREPORTZONE) to check job {}'s writes: {e}",
                                pj.job.name
                            ),
                        ),
                    )
                })?;
            let seq = zones.iter().any(|z| {
                z.kind == iolab_sys::zoned::ZoneType::SeqRequired
                    && z.start < to
                    && z.start + z.len > from
            });
            if seq {
                return Err(LoadError::usage(format!(
                    "job {}: {} is a host-managed zoned device, which fails every write not at its zone's write pointer: add zonemode=zbd (and direct=1), or keep the job in its conventional zones",
                    pj.job.name,
                    t.path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Resolves sizes given in zones (`size=8z`) with the zone size: zonesize,
/// or the zoned device's own (fio's zbd_recalc_options_with_zone_granularity).
pub fn resolve_zone_units(job: &mut Job, files: &[IoFile]) -> Result<(), LoadError> {
    let u = job.x.zone_units;
    if !u.any() {
        return Ok(());
    }
    let given = if job.x.zbd {
        job.x.zbd_zone_size().unwrap_or(0)
    } else {
        job.x.strided.map_or(0, |s| s.1)
    };
    // The zoned device's zone size; a model or chunk_sectors that cannot
    // be read is that error, not "no zone size".
    let device = || -> Result<Option<u64>, LoadError> {
        let setup = |why: String| LoadError::Setup {
            job: job.name.clone(),
            why,
        };
        let Some(t) = files.iter().find(|t| t.kind == IoFileKind::BlockDevice) else {
            return Ok(None);
        };
        let Some(d) = crate::run::files::io_file::holding_device(&t.path) else {
            return Ok(None);
        };
        if iolab_sys::zoned::Model::of(&d).map_err(setup)? == iolab_sys::zoned::Model::None {
            return Ok(None);
        }
        let text = d
            .queue_attr("chunk_sectors")
            .map_err(|e| setup(format!("{}: queue/chunk_sectors: {e}", d.name)))?;
        let sectors: u64 = text.trim().parse().map_err(|_| {
            setup(format!(
                "{}: queue/chunk_sectors holds {text:?}, not a number",
                d.name
            ))
        })?;
        Ok(Some(sectors * 512))
    };
    let zone = match given {
        0 if job.x.zbd => device()?,
        0 => None,
        z => Some(z),
    }
    .ok_or_else(|| {
        LoadError::usage(format!(
            "job {}: a size in zones (Nz) needs the zone size: give zonesize=, or zonemode=zbd on a zoned device",
            job.name
        ))
    })?;
    if let Some(n) = u.size {
        job.size = Some(n * zone);
    }
    if let Some(n) = u.io_size {
        job.x.io_size = Some(n * zone);
    }
    if let Some(n) = u.offset {
        job.x.offset = n * zone;
    }
    if let Some(n) = u.offset_increment {
        job.x.offset_increment = n * zone;
    }
    Ok(())
}
