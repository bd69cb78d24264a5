//! One point of the maximum-throughput sweep: N threads of one access
//! kind on the raw device for a fixed time, with the whole machine's CPU
//! time around it. Seed 003 measured the scheduler's overhead as the
//! throughput a fast device stops at; the CPU the kernel spends per I/O
//! (system + irq + softirq of every CPU, /proc/stat) says why: BFQ's extra
//! cost per request shows there before the IOPS ceiling does.

use iolab_results::max::MaxPoint;

use iolab_load::{job_from_options, run_to_completion, Job, LoadError, LoadReport, StartOptions};
use iolab_sys::block::BlockDev;
use iolab_sys::cast;
use iolab_sys::cpustat::{self, CpuDelta};
use std::path::Path;

use super::config::MaxConfig;
use crate::sweep::plan::Kind;
use crate::ExperimentError;

/// The job of one point, through the load engine's option table (fio's
/// names): `threads` clones on the raw device, sequential ones each on
/// their own slice (as IOSpeed spread its threads), O_DIRECT so every I/O
/// is a request the scheduler sees, `norandommap` as fio users set it for
/// peak-IOPS runs (the map's cost is not the scheduler's).
pub fn job(
    dev: &Path,
    dev_size: u64,
    cfg: &MaxConfig,
    kind: Kind,
    threads: u32,
) -> Result<Job, LoadError> {
    let slice = dev_size / u64::from(threads) / cfg.bs_bytes * cfg.bs_bytes;
    let ms = cast::round_u64(cfg.runtime_s * 1000.0).max(1);
    let opts: Vec<(String, String)> = [
        ("filename", dev.to_string_lossy().into_owned()),
        ("rw", kind.fio_rw().to_string()),
        ("bs", cfg.bs_bytes.to_string()),
        ("direct", "1".to_string()),
        ("ioengine", cfg.engine().to_string()),
        ("iodepth", cfg.iodepth.to_string()),
        ("numjobs", threads.to_string()),
        ("size", slice.to_string()),
        ("offset_increment", slice.to_string()),
        ("norandommap", "1".to_string()),
        ("runtime", format!("{ms}ms")),
        ("time_based", "1".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    job_from_options(&format!("{}-{threads}t", kind.label()), &opts)
}

/// Runs one point; `None` when Ctrl-C/SIGTERM stopped it.
pub fn measure(
    dev: &BlockDev,
    cfg: &MaxConfig,
    kind: Kind,
    threads: u32,
    force: bool,
) -> Result<Option<(MaxPoint, LoadReport)>, ExperimentError> {
    let size = dev.size_bytes()?;
    let job = job(&dev.dev_path(), size, cfg, kind, threads)?;
    if size / u64::from(threads) < cfg.bs_bytes {
        return Err(iolab_sys::UsageError::new(format!(
            "{} is too small for {threads} threads of {} blocks",
            dev.name, cfg.bs_bytes
        ))
        .into());
    }
    let proc = Path::new("/proc");
    let t0 = std::time::Instant::now();
    let before = cpustat::read(proc)?;
    let report = run_to_completion(
        vec![job],
        StartOptions {
            force,
            ..StartOptions::default()
        },
    );
    let after = cpustat::read(proc)?;
    let wall = t0.elapsed();
    let report = match report {
        Ok(r) => r,
        Err(LoadError::Interrupted { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if iolab_guard::stop_requested() {
        return Ok(None);
    }
    if let Some(f) = report.failures().next() {
        return Err(ExperimentError::RunFailed {
            run: format!("{} with {threads} threads", kind.title()),
            why: f.message.clone(),
        });
    }
    let d = CpuDelta::between(&before.all, &after.all);
    Ok(Some((point(&report, &d, wall), report)))
}

/// The point's numbers from the job's report and the CPU deltas.
fn point(report: &LoadReport, d: &CpuDelta, wall: std::time::Duration) -> MaxPoint {
    let tick_ns = 1e9 / cpustat::user_hz().max(1) as f64;
    let t = &report.total;
    let total_ios = t.read.total_ios + t.write.total_ios;
    let io_bytes = t.read.io_bytes + t.write.io_bytes;
    let runtime_s = t.read.runtime.max(t.write.runtime).as_secs_f64();
    let kernel_ns = cast::floor_u64((d.sys + d.irq + d.soft) as f64 * tick_ns);
    let busy = d.total().saturating_sub(d.idle + d.iowait);
    let disk = report.disks.first();
    MaxPoint {
        total_ios,
        io_bytes,
        runtime_s,
        iops: if runtime_s > 0.0 {
            total_ios as f64 / runtime_s
        } else {
            0.0
        },
        bw_bytes: if runtime_s > 0.0 {
            io_bytes as f64 / runtime_s
        } else {
            0.0
        },
        wall_ns: cast::duration_ns(wall),
        kernel_ns,
        kernel_us_per_io: if total_ios > 0 {
            kernel_ns as f64 / total_ios as f64 / 1e3
        } else {
            0.0
        },
        user_ns: cast::floor_u64((d.usr + d.nice) as f64 * tick_ns),
        busy_pct: if d.total() > 0 {
            100.0 * busy as f64 / d.total() as f64
        } else {
            0.0
        },
        job_sys_ns: cast::duration_ns(t.cpu.sys),
        disk_ios: disk.map(|u| {
            let s = &u.delta;
            s.reads + s.reads_merged + s.writes + s.writes_merged
        }),
        disk_bytes: disk.map(|u| u.delta.read_bytes() + u.delta.write_bytes()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sweep::max::config::tests::cfg as base;

    fn cfg(iodepth: u32) -> MaxConfig {
        MaxConfig {
            iodepth,
            runtime_s: 1.5,
            ..base()
        }
    }

    #[test]
    fn threads_get_their_own_slices() {
        let j = job(Path::new("/dev/loop9"), 1 << 30, &cfg(1), Kind::Read, 4).unwrap();
        assert_eq!(j.numjobs, 4);
        assert_eq!(j.size, Some(256 << 20));
        assert_eq!(j.x.offset_increment, 256 << 20);
        assert_eq!(j.ioengine, iolab_load::IoEngine::Psync);
        assert!(j.direct && j.time_based);
        assert_eq!(j.runtime, Some(std::time::Duration::from_millis(1500)));
        let j = job(
            Path::new("/dev/loop9"),
            1 << 30,
            &cfg(16),
            Kind::RandRead,
            1,
        )
        .unwrap();
        assert_eq!((j.ioengine, j.iodepth), (iolab_load::IoEngine::IoUring, 16));
        assert_eq!(j.name, "rand-read-1t");
    }
}
