//! What one point of `iolab sweep --max` measured, stored as the run's
//! `extra` (fio's names where fio has one).

use serde::{Deserialize, Serialize};

/// One point: N threads of one access kind on the raw device for a fixed
/// time, with the whole machine's CPU time around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaxPoint {
    /// I/Os completed by the job (all threads).
    pub total_ios: u64,
    /// Bytes moved by the job.
    pub io_bytes: u64,
    /// The job's measured time, seconds.
    pub runtime_s: f64,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// Wall time between the two /proc/stat readings, ns.
    pub wall_ns: u64,
    /// CPU time in the kernel on all CPUs over that window (system + irq
    /// + softirq), ns: the submitting threads, the loop driver's workers
    ///   and the completion interrupts together.
    pub kernel_ns: u64,
    /// `kernel_ns` per I/O, µs.
    pub kernel_us_per_io: f64,
    /// User CPU time on all CPUs over the window, ns.
    pub user_ns: u64,
    /// Share of all CPUs' time not idle (and not iowait), percent: near
    /// 100 the CPUs, not the device, set the ceiling.
    pub busy_pct: f64,
    /// System time of the job's own threads (getrusage), ns.
    pub job_sys_ns: u64,
    /// I/Os the device counted over the job's window (/proc/diskstats:
    /// reads + writes + merges), the independent check of `total_ios`.
    pub disk_ios: Option<u64>,
    /// Bytes the device counted over the window.
    pub disk_bytes: Option<u64>,
}
