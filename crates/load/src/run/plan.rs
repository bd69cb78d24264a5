//! Turning jobs into a checked plan before anything is written: every
//! clone's target, every job's size (derived for named workloads), the
//! stonewall groups, the files to lay out, the devices to watch and the
//! safety checks (block devices, free space, direct-I/O alignment,
//! schedulers the device really offers).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use iolab_sys::block::BlockDev;
use iolab_sys::units::format_bytes;

use crate::error::LoadError;
use crate::job::kinds::IoEngine;
use crate::job::model::Job;
use crate::run::files::io_file::{self, IoFile, IoFileKind};

/// The thesis's file size (`dd bs=1M count=512`), the default for named
/// workloads when it fits.
pub const NAMED_FILE_SIZE: u64 = 512 << 20;
/// The smallest file a named workload accepts when space is short.
pub const NAMED_MIN_FILE_SIZE: u64 = 16 << 20;

/// A checked job.
#[derive(Debug, Clone)]
pub struct PlannedJob {
    /// The job.
    pub job: Arc<Job>,
    /// Its stonewall group, from 0.
    pub group: usize,
    /// Bytes of each clone's region in each of its files (0 for cpuio).
    pub size: u64,
    /// Bytes per pass over all of a clone's files (`io_size`; default the
    /// regions).
    pub io_size: u64,
    /// The clones' targets, `nrfiles` per clone in clone order (empty for
    /// cpuio).
    pub files: Vec<IoFile>,
    /// The devices whose scheduler `ioscheduler` switches (each device
    /// holding one of the job's files, once).
    pub scheduler_devs: Vec<BlockDev>,
    /// zonemode=zbd: the zones of the job's file, shared with every job
    /// on it.
    pub zbd: Option<Arc<crate::run::files::zbd::ZbdFile>>,
    /// Each clone's region when it is not the job's (zonemode=zbd moves
    /// a writer's to zone boundaries); empty otherwise.
    pub regions: Vec<Region>,
}

/// Where one clone works in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Its first byte.
    pub base: u64,
    /// Its bytes.
    pub size: u64,
    /// Bytes per pass.
    pub io_size: u64,
}

impl PlannedJob {
    /// Clone `c`'s region.
    pub fn region(&self, c: u32) -> Region {
        self.regions.get(c as usize).copied().unwrap_or(Region {
            base: self.job.x.offset + self.job.x.offset_increment * u64::from(c),
            size: self.size,
            io_size: self.io_size,
        })
    }

    /// Files per clone.
    pub fn nrfiles(&self) -> usize {
        self.job.nrfiles()
    }

    /// Clone `c`'s files.
    pub fn clone_files(&self, c: usize) -> &[IoFile] {
        let n = self.nrfiles();
        self.files.get(c * n..(c + 1) * n).unwrap_or(&[])
    }
}

/// A file to write before the load starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutItem {
    /// The file.
    pub path: PathBuf,
    /// Its current size.
    pub from: u64,
    /// The size it needs.
    pub to: u64,
}

/// Everything `start` needs, checked.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The jobs in order.
    pub jobs: Vec<PlannedJob>,
    /// Files to lay out.
    pub layout: Vec<LayoutItem>,
    /// Devices holding the targets (for disk_util).
    pub devices: Vec<BlockDev>,
    /// Things the user should know (options without effect).
    pub warnings: Vec<String>,
}

/// Checks the jobs and resolves their targets. `force` allows writing to
/// block devices.
pub fn plan(jobs: &[Job], force: bool) -> Result<Plan, LoadError> {
    let mut out = Plan::default();
    let mut group = 0;
    let mut seen: HashMap<PathBuf, IoFile> = HashMap::new();
    for (i, job) in jobs.iter().enumerate() {
        job.validate()
            .map_err(|why| LoadError::usage(format!("job {}: {why}", job.name)))?;
        if job.stonewall && i > 0 {
            group += 1;
        }
        if let Some(w) = &job.x.wait_for {
            if !jobs[..i].iter().any(|j| &j.name == w) {
                return Err(LoadError::usage(format!(
                    "job {}: wait_for={w}: no job of that name comes before it (wait_for names an earlier job)",
                    job.name
                )));
            }
        }
        out.warnings.extend(job.x.notes.iter().cloned());
        let mut files = Vec::new();
        if !matches!(job.ioengine, IoEngine::CpuIo | IoEngine::Null) {
            for clone in 0..job.numjobs {
                for path in io_file::clone_paths(job, clone) {
                    let t = match seen.get(&path) {
                        Some(t) => t.clone(),
                        None => {
                            let t = io_file::inspect(&path)?;
                            seen.insert(path, t.clone());
                            t
                        }
                    };
                    if job.writes() {
                        io_file::check_write_allowed(&t, force)?;
                    }
                    files.push(t);
                }
            }
        }
        warn_about(job, &mut out.warnings);
        let mut job = job.clone();
        crate::run::plan_zbd::resolve_zone_units(&mut job, &files)?;
        out.jobs.push(PlannedJob {
            job: Arc::new(job),
            group,
            size: 0,
            io_size: 0,
            files,
            scheduler_devs: Vec::new(),
            zbd: None,
            regions: Vec::new(),
        });
    }
    auto_sizes(&mut out.jobs)?;
    for pj in &mut out.jobs {
        pj.size = job_size(pj)?;
        // fio's size and io_size count all of a clone's files.
        let all = pj.size * pj.nrfiles() as u64;
        pj.io_size = pj.job.x.io_size.unwrap_or(match pj.job.x.filesize {
            Some(_) => pj.job.size.unwrap_or(all),
            None => all,
        });
        check_device(pj)?;
        check_sequence(pj)?;
    }
    crate::run::plan_zbd::plan_zbd(&mut out.jobs, &mut out.warnings)?;
    out.layout = layout_items(&out.jobs);
    check_free_space(&out.jobs)?;
    let mut devices: Vec<BlockDev> = Vec::new();
    for t in out.jobs.iter().flat_map(|j| &j.files) {
        if let Some(d) = io_file::holding_device(&t.path) {
            if !devices.contains(&d) {
                devices.push(d);
            }
        }
    }
    out.devices = devices;
    Ok(out)
}

fn warn_about(job: &Job, warnings: &mut Vec<String>) {
    if job.ioengine == IoEngine::Libaio && !job.direct && job.ioengine != IoEngine::CpuIo {
        warnings.push(format!(
            "job {}: ioengine=libaio without direct=1: Linux AIO on buffered files completes inside io_submit (as with fio), so the queue does not fill; use direct=1 or io_uring",
            job.name
        ));
    }
    if job.iodepth > 1 && !job.ioengine.queues() && job.ioengine != IoEngine::CpuIo {
        warnings.push(format!(
            "job {}: iodepth={} has no effect with ioengine={} (one I/O at a time); use ioengine=libaio or io_uring for a queue",
            job.name,
            job.iodepth,
            job.ioengine.as_str()
        ));
    }
    if job.time_based && job.loops > 1 {
        warnings.push(format!(
            "job {}: loops={} has no effect with time_based (it wraps until the runtime ends)",
            job.name, job.loops
        ));
    }
}

/// Sizes for named-workload jobs: 512 MiB per file, or less so that all
/// their files on one filesystem fit in 90 % of its free space.
/// A `sequence` distribution's blocks lie in the file, as fio requires
/// (io_u.c: EINVAL, "sequence block out of bounds").
fn check_sequence(pj: &PlannedJob) -> Result<(), LoadError> {
    let j = &pj.job;
    let crate::job::distribution::Distribution::Sequence(blocks, _) = &j.x.distribution else {
        return Ok(());
    };
    let bs = j.sizes.min().max(1);
    let max = pj.size / bs;
    match blocks.iter().find(|b| **b >= max) {
        Some(b) => Err(LoadError::usage(format!(
            "job {}: random_distribution=sequence: block {b} is past the file's {max} blocks of {bs} bytes: give a bigger size or smaller block indices",
            j.name
        ))),
        None => Ok(()),
    }
}

fn auto_sizes(jobs: &mut [PlannedJob]) -> Result<(), LoadError> {
    // filesystem -> (a directory on it, distinct files, their current bytes)
    let mut per_fs: BTreeMap<u64, (PathBuf, Vec<PathBuf>, u64)> = BTreeMap::new();
    let auto = |pj: &PlannedJob| pj.job.auto_size && pj.job.size.is_none();
    for pj in jobs.iter().filter(|pj| auto(pj)) {
        for t in &pj.files {
            let entry = per_fs
                .entry(io_file::fs_id(&t.path)?)
                .or_insert_with(|| (io_file::parent_dir(&t.path), Vec::new(), 0));
            if !entry.1.contains(&t.path) {
                entry.1.push(t.path.clone());
                entry.2 += t.existing;
            }
        }
    }
    let mut size_of_fs = BTreeMap::new();
    for (fs, (dir, files, existing)) in &per_fs {
        let available = io_file::free_bytes(dir)? + existing;
        let share = available / 10 * 9 / files.len() as u64;
        let size = NAMED_FILE_SIZE.min(share / (1 << 20) * (1 << 20));
        if size < NAMED_MIN_FILE_SIZE {
            return Err(LoadError::usage(format!(
                "the workload needs {} files of at least {} in {}, but only {} is free there: free some space, use a bigger lab or pass --size",
                files.len(),
                format_bytes(NAMED_MIN_FILE_SIZE),
                dir.display(),
                format_bytes(available)
            )));
        }
        size_of_fs.insert(*fs, size);
    }
    for pj in jobs.iter_mut().filter(|pj| auto(pj)) {
        let mut size = NAMED_FILE_SIZE;
        for t in &pj.files {
            size = size.min(size_of_fs[&io_file::fs_id(&t.path)?]);
        }
        Arc::make_mut(&mut pj.job).size = Some(size);
    }
    Ok(())
}

fn job_size(pj: &PlannedJob) -> Result<u64, LoadError> {
    let job = &pj.job;
    if job.ioengine == IoEngine::CpuIo {
        return Ok(0);
    }
    if job.ioengine == IoEngine::Null {
        // fio's null engine takes its extent from filesize as well
        // (t0030: filesize=1T only).
        return job.size.or(job.x.filesize.map(|(lo, _)| lo)).ok_or_else(|| {
            LoadError::usage(format!(
                "job {}: ioengine=null needs size or filesize (how many bytes the pretend I/O covers), e.g. size=1g",
                job.name
            ))
        });
    }
    if let Some((lo, hi)) = job.x.filesize {
        // One size for the job's files, drawn from the range by name (the
        // same on every run, like fio with randrepeat).
        let h = job
            .name
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let span = (hi - lo) / job.bs.max(1);
        return Ok(lo + if span > 0 { h % (span + 1) * job.bs } else { 0 });
    }
    let nf = pj.nrfiles() as u64;
    if job.x.fill_device && job.size.is_none() {
        if let Some(t) = pj.files.first().filter(|t| t.kind == IoFileKind::File) {
            let free = io_file::free_bytes(&io_file::parent_dir(&t.path))? + t.existing;
            return Ok(free / nf / job.bs.max(1) * job.bs.max(1));
        }
    }
    // `size` is the clone's total, shared by its files as in fio.
    let mut size = job.size.map(|s| s / nf);
    for t in &pj.files {
        if t.kind == IoFileKind::BlockDevice {
            match size {
                Some(s) if s > t.existing => {
                    return Err(LoadError::usage(format!(
                        "job {}: size {} is larger than {} ({}): lower size",
                        job.name,
                        format_bytes(s),
                        t.path.display(),
                        format_bytes(t.existing)
                    )))
                }
                Some(_) => {}
                None => size = Some(t.existing),
            }
        } else if size.is_none() {
            if t.existing == 0 {
                return Err(LoadError::usage(format!(
                    "job {}: size is not set and {} does not exist or is empty: set size (e.g. size=512m, --size 512m)",
                    job.name,
                    t.path.display()
                )));
            }
            size = Some(t.existing);
        }
    }
    let size = size.unwrap_or(0);
    if size < job.bs {
        return Err(LoadError::usage(format!(
            "job {}: size {size} is smaller than bs {}: each pass needs at least one block",
            job.name, job.bs
        )));
    }
    Ok(size)
}

/// Scheduler availability and direct-I/O alignment, checked against each
/// device that holds one of the job's files.
fn check_device(pj: &mut PlannedJob) -> Result<(), LoadError> {
    let job = pj.job.clone();
    let mut seen: Vec<Option<BlockDev>> = Vec::new();
    for t in &pj.files {
        let dev = io_file::holding_device(&t.path);
        if seen.contains(&dev) {
            continue;
        }
        seen.push(dev.clone());
        if job.direct {
            if let Some(lbs) = dev
                .as_ref()
                .and_then(|d| d.queue_attr("logical_block_size").ok())
                .and_then(|s| s.parse::<u64>().ok())
            {
                if job.bs % lbs != 0 {
                    return Err(LoadError::usage(format!(
                        "job {}: direct=1 needs bs to be a multiple of the device's logical block size {lbs}, got {}",
                        job.name, job.bs
                    )));
                }
            }
        }
        if let Some(sched) = &job.ioscheduler {
            let dev = dev.ok_or_else(|| {
                LoadError::usage(format!(
                    "job {}: ioscheduler={sched}: {} is not on a block device (tmpfs?), so it has no I/O scheduler",
                    job.name,
                    t.path.display()
                ))
            })?;
            let offered = dev
                .schedulers()
                .map_err(|e| LoadError::usage(e.to_string()))?;
            if !offered.available.iter().any(|a| a == sched) {
                return Err(LoadError::usage(format!(
                    "job {}: ioscheduler={sched} is not offered by {}: available are {}",
                    job.name,
                    dev.name,
                    offered.available.join(", ")
                )));
            }
            pj.scheduler_devs.push(dev);
        }
    }
    Ok(())
}

/// Regular files that reading jobs need longer than they are. Write-only
/// jobs create and extend their files as they write, like `dd`.
fn layout_items(jobs: &[PlannedJob]) -> Vec<LayoutItem> {
    let mut items: Vec<LayoutItem> = Vec::new();
    for pj in jobs.iter().filter(|pj| pj.job.reads()) {
        for (i, t) in pj.files.iter().enumerate() {
            if t.kind != IoFileKind::File {
                continue;
            }
            let end = region_end(pj, i / pj.nrfiles());
            if t.existing >= end {
                continue;
            }
            match items.iter_mut().find(|i| i.path == t.path) {
                Some(i) => i.to = i.to.max(end),
                None => items.push(LayoutItem {
                    path: t.path.clone(),
                    from: t.existing,
                    to: end,
                }),
            }
        }
    }
    items
}

/// Where clone `c`'s region ends in its file (`offset`,
/// `offset_increment`).
pub(crate) fn region_end(pj: &PlannedJob, c: usize) -> u64 {
    let x = &pj.job.x;
    x.offset + x.offset_increment * c as u64 + pj.size
}

/// Refuses a plan whose files would grow beyond the free space: layout
/// for readers, and the size writers will extend their files to.
fn check_free_space(jobs: &[PlannedJob]) -> Result<(), LoadError> {
    let mut need: HashMap<PathBuf, (u64, u64)> = HashMap::new(); // path -> (existing, size)
    for pj in jobs {
        if pj.job.x.fill_device {
            // Filling the filesystem is the point; a full disk ends it.
            continue;
        }
        for (i, t) in pj.files.iter().enumerate() {
            if t.kind != IoFileKind::File {
                continue;
            }
            let e = need.entry(t.path.clone()).or_insert((t.existing, 0));
            e.1 = e.1.max(region_end(pj, i / pj.nrfiles()));
        }
    }
    let mut per_fs: BTreeMap<u64, (PathBuf, u64, usize)> = BTreeMap::new();
    for (path, (existing, size)) in &need {
        let grow = size.saturating_sub(*existing);
        if grow == 0 {
            continue;
        }
        let e = per_fs
            .entry(io_file::fs_id(path)?)
            .or_insert_with(|| (io_file::parent_dir(path), 0, 0));
        e.1 += grow;
        e.2 += 1;
    }
    for (dir, bytes, files) in per_fs.values() {
        let free = io_file::free_bytes(dir)?;
        if *bytes > free {
            return Err(LoadError::usage(format!(
                "the jobs' {files} file(s) in {} need {} more, but only {} is free there (statvfs): lower size or free some space",
                dir.display(),
                format_bytes(*bytes),
                format_bytes(free)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
