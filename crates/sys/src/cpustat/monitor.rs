//! A sampling thread that reads `/proc/stat` and `/proc/pressure` every
//! interval while something else runs (a load, a start-up, a command).
//!
//! ```no_run
//! # fn main() -> Result<(), iolab_sys::SysError> {
//! use std::time::Duration;
//! let monitor = iolab_sys::cpustat::CpuMonitor::start(Duration::from_secs(1))?;
//! // ... run the workload ...
//! let series = monitor.stop();
//! iolab_sys::show!("{}", series.summary_line());
//! # Ok(()) }
//! ```

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::series::{CpuSeries, PsiSample, Sample, StatSample};
use crate::pressure::{self, Resource};
use crate::SysError;

/// CLOCK_MONOTONIC now, nanoseconds: the clock of `Instant`, of the trace
/// instances (trace_clock=mono) and of every iolab timestamp.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; it cannot fail
    // for CLOCK_MONOTONIC with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec.max(0) as u64) * 1_000_000_000 + ts.tv_nsec.max(0) as u64
}

/// Takes one reading of `/proc/stat` and the pressure files.
#[derive(Debug, Clone)]
pub struct Sampler {
    proc_root: PathBuf,
}

impl Sampler {
    /// A sampler reading under `proc_root` (normally `/proc`).
    pub fn new(proc_root: impl Into<PathBuf>) -> Sampler {
        Sampler {
            proc_root: proc_root.into(),
        }
    }

    /// One reading, timestamped.
    pub fn sample(&self) -> Result<Sample, SysError> {
        let stat_ts = monotonic_ns();
        let stat = super::read(&self.proc_root)?;
        let psi_ts = monotonic_ns();
        let read = |r| pressure::read(&self.proc_root, r);
        Ok(Sample {
            stat: StatSample {
                ts_ns: stat_ts,
                stat,
            },
            psi: PsiSample {
                ts_ns: psi_ts,
                io: read(Resource::Io)?,
                cpu: read(Resource::Cpu)?,
                memory: read(Resource::Memory)?,
            },
        })
    }
}

/// A running sampler thread; [`CpuMonitor::stop`] ends it and returns the
/// series. Dropping it without `stop` ends the thread too.
pub struct CpuMonitor {
    stop_tx: mpsc::Sender<()>,
    thread: JoinHandle<CpuSeries>,
}

impl CpuMonitor {
    /// Reads `/proc` now and then every `interval` until stopped.
    pub fn start(interval: Duration) -> Result<CpuMonitor, SysError> {
        CpuMonitor::start_with(Path::new("/proc"), interval, |_| ControlFlow::Continue(()))
    }

    /// Like [`CpuMonitor::start`], reading under `proc_root`, and calling
    /// `on_sample` with the series after each reading but the first (the
    /// newest interval is the last of `series.cpu.statistics`), on the
    /// sampling thread. `ControlFlow::Break` ends the sampling there, with
    /// no partial interval (e.g. after N intervals). Intervals shorter than
    /// one tick (10 ms at the usual USER_HZ) are raised to it: counters do
    /// not move faster.
    pub fn start_with(
        proc_root: &Path,
        interval: Duration,
        mut on_sample: impl FnMut(&CpuSeries) -> ControlFlow<()> + Send + 'static,
    ) -> Result<CpuMonitor, SysError> {
        let tick = Duration::from_nanos(1_000_000_000 / super::user_hz().max(1));
        let interval = interval.max(tick);
        let sampler = Sampler::new(proc_root);
        let mut series = CpuSeries::new(interval);
        // The first reading here, so a missing /proc fails the caller.
        series.push(sampler.sample()?);
        let mut last = Instant::now();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("iolab-cpumon".into())
            .spawn(move || {
                let mut take = |series: &mut CpuSeries| match sampler.sample() {
                    Ok(s) => {
                        series.push(s);
                        on_sample(series)
                    }
                    Err(_) => {
                        series.missed_samples += 1;
                        ControlFlow::Continue(())
                    }
                };
                // Deadlines on a fixed grid from the first reading, so the
                // intervals do not drift by the time each reading takes.
                let mut next = last + interval;
                loop {
                    match stop_rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                        Err(RecvTimeoutError::Timeout) => {
                            if take(&mut series).is_break() {
                                break;
                            }
                            last = Instant::now();
                            next += interval;
                            if next <= last {
                                // Fell behind (the machine was suspended or
                                // starved): start a new grid from now.
                                next = last + interval;
                            }
                        }
                        // stop() or the monitor was dropped: close the last,
                        // partial interval unless it is under one tick,
                        // which no counter could have seen.
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                            if last.elapsed() >= tick {
                                let _ = take(&mut series);
                            }
                            break;
                        }
                    }
                }
                series.finish();
                series
            })
            .map_err(|e| SysError::io("thread iolab-cpumon", e))?;
        Ok(CpuMonitor { stop_tx, thread })
    }

    /// Takes a last reading (closing a partial interval), ends the thread
    /// and returns every reading with the derived percentages.
    pub fn stop(self) -> CpuSeries {
        // A send error means the thread is already gone; join tells why.
        let _ = self.stop_tx.send(());
        match self.thread.join() {
            Ok(series) => series,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn monitor_samples_until_stopped() {
        let seen = Arc::new(Mutex::new(0usize));
        let seen2 = seen.clone();
        let m = CpuMonitor::start_with(Path::new("/proc"), Duration::from_millis(50), move |s| {
            *seen2.lock().unwrap() = s.cpu.statistics.len();
            ControlFlow::Continue(())
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(320));
        let s = m.stop();
        // About 6 ticks and the final partial one; scheduling may delay
        // some, so only require a few.
        assert!(s.cpu.samples.len() >= 3, "{}", s.cpu.samples.len());
        assert_eq!(s.cpu.samples.len(), s.psi.samples.len());
        assert_eq!(s.cpu.statistics.len(), s.cpu.samples.len() - 1);
        assert_eq!(*seen.lock().unwrap(), s.cpu.statistics.len());
        assert!(s.cpu.samples.windows(2).all(|w| w[0].ts_ns < w[1].ts_ns));
        let avg = s.cpu.average.as_ref().unwrap();
        assert_eq!(avg.start_ns, s.cpu.samples[0].ts_ns);
        assert_eq!(s.missed_samples, 0);
    }

    #[test]
    fn break_ends_after_n_intervals_without_a_partial_one() {
        let m = CpuMonitor::start_with(Path::new("/proc"), Duration::from_millis(20), |s| {
            if s.cpu.statistics.len() == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let s = m.stop();
        assert_eq!(s.cpu.statistics.len(), 3);
        assert!(s.cpu.average.is_some());
    }

    #[test]
    fn missing_proc_fails_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let e = CpuMonitor::start_with(dir.path(), Duration::from_secs(1), |_| {
            ControlFlow::Continue(())
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("stat"), "{e}");
    }

    #[test]
    fn fixture_proc_without_pressure() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("stat"), "cpu 1 0 1 8\ncpu0 1 0 1 8\n").unwrap();
        let s = Sampler::new(dir.path()).sample().unwrap();
        assert_eq!(s.stat.stat.all.idle, 8);
        assert!(s.psi.io.is_none() && s.psi.cpu.is_none() && s.psi.memory.is_none());
    }

    #[test]
    fn monotonic_matches_instant_clock() {
        let a = monotonic_ns();
        std::thread::sleep(Duration::from_millis(20));
        let b = monotonic_ns();
        assert!(b - a >= 20_000_000, "{}", b - a);
    }
}
