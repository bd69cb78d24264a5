//! A run's CPU and pressure time series: every raw reading (CLOCK_MONOTONIC
//! timestamps, raw counters) and the percentages derived from consecutive
//! readings. Serialised as two documents, `cpu` and `psi`, which is what
//! gets stored per run.

use std::time::Duration;

use super::{deltas, CpuUtil, ProcStat};
use crate::pressure::{Pressure, PsiPercent, Resource};

/// One `/proc/stat` reading.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StatSample {
    /// CLOCK_MONOTONIC nanoseconds just before the read.
    pub ts_ns: u64,
    /// The counters read.
    #[serde(flatten)]
    pub stat: ProcStat,
}

/// One reading of the pressure files; `None` where the kernel has none.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsiSample {
    /// CLOCK_MONOTONIC nanoseconds just before the reads.
    pub ts_ns: u64,
    /// `/proc/pressure/io`.
    pub io: Option<Pressure>,
    /// `/proc/pressure/cpu`.
    pub cpu: Option<Pressure>,
    /// `/proc/pressure/memory`.
    pub memory: Option<Pressure>,
}

impl PsiSample {
    /// The reading for `r`.
    pub fn get(&self, r: Resource) -> Option<&Pressure> {
        match r {
            Resource::Io => self.io.as_ref(),
            Resource::Cpu => self.cpu.as_ref(),
            Resource::Memory => self.memory.as_ref(),
        }
    }
}

/// Both readings taken at one tick.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// `/proc/stat`.
    pub stat: StatSample,
    /// `/proc/pressure/*`.
    pub psi: PsiSample,
}

/// One CPU's (or "all") utilisation over an interval: mpstat's
/// `cpu-load` entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuLoad {
    /// "all" or the CPU number, as in `mpstat -o JSON`.
    pub cpu: String,
    /// Percentages.
    #[serde(flatten)]
    pub util: CpuUtil,
}

/// CPU utilisation between two readings.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuStatistics {
    /// Timestamp of the earlier reading (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// Timestamp of the later reading.
    pub end_ns: u64,
    /// "all" first, then each CPU online at both readings.
    #[serde(rename = "cpu-load")]
    pub cpu_load: Vec<CpuLoad>,
}

impl CpuStatistics {
    /// mpstat's percentages from `prev` to `curr`.
    pub fn between(prev: &StatSample, curr: &StatSample) -> CpuStatistics {
        let (all, per_cpu) = deltas(&prev.stat, &curr.stat);
        let mut cpu_load = vec![CpuLoad {
            cpu: "all".into(),
            util: all.percent(),
        }];
        cpu_load.extend(per_cpu.iter().map(|(n, d)| CpuLoad {
            cpu: n.to_string(),
            util: d.percent(),
        }));
        CpuStatistics {
            start_ns: prev.ts_ns,
            end_ns: curr.ts_ns,
            cpu_load,
        }
    }

    /// The "all" line.
    pub fn all(&self) -> &CpuUtil {
        // `between` always puts "all" first; a deserialised document
        // without it reads as idle rather than failing.
        const IDLE: CpuUtil = CpuUtil {
            usr: 0.0,
            nice: 0.0,
            sys: 0.0,
            iowait: 0.0,
            irq: 0.0,
            soft: 0.0,
            steal: 0.0,
            guest: 0.0,
            gnice: 0.0,
            idle: 100.0,
        };
        self.cpu_load.first().map_or(&IDLE, |l| &l.util)
    }
}

/// Pressure stall shares between two readings, percent of wall time.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsiStatistics {
    /// Timestamp of the earlier reading (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// Timestamp of the later reading.
    pub end_ns: u64,
    /// I/O stall shares.
    pub io: Option<PsiPercent>,
    /// CPU stall shares.
    pub cpu: Option<PsiPercent>,
    /// Memory stall shares.
    pub memory: Option<PsiPercent>,
}

impl PsiStatistics {
    /// Shares from `prev` to `curr`, from the `total` counters.
    pub fn between(prev: &PsiSample, curr: &PsiSample) -> PsiStatistics {
        let wall_ns = curr.ts_ns.saturating_sub(prev.ts_ns);
        let share = |r: Resource| match (prev.get(r), curr.get(r)) {
            (Some(p), Some(c)) => PsiPercent::between(p, c, wall_ns),
            _ => None,
        };
        PsiStatistics {
            start_ns: prev.ts_ns,
            end_ns: curr.ts_ns,
            io: share(Resource::Io),
            cpu: share(Resource::Cpu),
            memory: share(Resource::Memory),
        }
    }

    /// The shares of `r`.
    pub fn get(&self, r: Resource) -> Option<&PsiPercent> {
        match r {
            Resource::Io => self.io.as_ref(),
            Resource::Cpu => self.cpu.as_ref(),
            Resource::Memory => self.memory.as_ref(),
        }
    }
}

/// The `cpu` document: raw `/proc/stat` readings and mpstat percentages.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuTrack {
    /// Ticks per second of the raw counters (USER_HZ).
    pub user_hz: u64,
    /// Every reading, oldest first.
    pub samples: Vec<StatSample>,
    /// One entry per pair of consecutive readings.
    pub statistics: Vec<CpuStatistics>,
    /// First reading to last (mpstat's "Average"); None with < 2 readings.
    pub average: Option<CpuStatistics>,
}

/// The `psi` document: raw pressure readings and stall shares.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsiTrack {
    /// Every reading, oldest first.
    pub samples: Vec<PsiSample>,
    /// One entry per pair of consecutive readings.
    pub statistics: Vec<PsiStatistics>,
    /// First reading to last; None with < 2 readings.
    pub average: Option<PsiStatistics>,
}

/// A CPU and pressure time series.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuSeries {
    /// The sampling interval asked for, ns (the last interval of a
    /// stopped monitor is shorter).
    pub interval_ns: u64,
    /// Ticks at which a file could not be read (no reading recorded).
    pub missed_samples: u64,
    /// `/proc/stat` readings and CPU utilisation.
    pub cpu: CpuTrack,
    /// `/proc/pressure` readings and stall shares.
    pub psi: PsiTrack,
}

impl CpuSeries {
    /// An empty series sampled every `interval`.
    pub fn new(interval: Duration) -> CpuSeries {
        CpuSeries {
            interval_ns: crate::cast::duration_ns(interval),
            cpu: CpuTrack {
                user_hz: super::user_hz(),
                ..CpuTrack::default()
            },
            ..CpuSeries::default()
        }
    }

    /// Appends a reading and derives the interval it closes.
    pub fn push(&mut self, s: Sample) {
        if let Some(prev) = self.cpu.samples.last() {
            self.cpu
                .statistics
                .push(CpuStatistics::between(prev, &s.stat));
        }
        if let Some(prev) = self.psi.samples.last() {
            self.psi
                .statistics
                .push(PsiStatistics::between(prev, &s.psi));
        }
        self.cpu.samples.push(s.stat);
        self.psi.samples.push(s.psi);
    }

    /// Derives the averages over the whole series (first to last reading).
    pub fn finish(&mut self) {
        self.cpu.average = match (self.cpu.samples.first(), self.cpu.samples.last()) {
            (Some(a), Some(b)) if self.cpu.samples.len() > 1 => Some(CpuStatistics::between(a, b)),
            _ => None,
        };
        self.psi.average = match (self.psi.samples.first(), self.psi.samples.last()) {
            (Some(a), Some(b)) if self.psi.samples.len() > 1 => Some(PsiStatistics::between(a, b)),
            _ => None,
        };
    }

    /// Timestamp of the first reading (CLOCK_MONOTONIC ns).
    pub fn start_ns(&self) -> Option<u64> {
        self.cpu.samples.first().map(|s| s.ts_ns)
    }

    /// One line for the end of a report: the average of every CPU state
    /// (mpstat's columns but guest) and the pressure stall shares, e.g.
    /// `cpu (all, 10.0 s): usr 12.30% ... idle 52.80% | psi io some 45.2% full 40.1%, ...`.
    pub fn summary_line(&self) -> String {
        let Some(avg) = &self.cpu.average else {
            return "cpu: no interval sampled".to_string();
        };
        let u = avg.all();
        let secs = avg.end_ns.saturating_sub(avg.start_ns) as f64 / 1e9;
        let mut line = format!(
            "cpu (all, {secs:.1} s): usr {:.2}% nice {:.2}% sys {:.2}% iowait {:.2}% irq {:.2}% soft {:.2}% steal {:.2}% idle {:.2}%",
            u.usr, u.nice, u.sys, u.iowait, u.irq, u.soft, u.steal, u.idle
        );
        if let Some(p) = &self.psi.average {
            line.push_str(" | psi");
            let mut first = true;
            for r in Resource::ALL {
                let Some(s) = p.get(r) else { continue };
                line.push_str(if first { " " } else { ", " });
                first = false;
                line.push_str(&format!("{} some {:.1}%", r.name(), s.some));
                // System-wide cpu "full" is always zero: not worth a column.
                if let (Some(f), false) = (s.full, r == Resource::Cpu) {
                    line.push_str(&format!(" full {f:.1}%"));
                }
            }
        }
        line
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cpustat::{CpuLine, CpuTimes};
    use crate::pressure::PsiLine;

    fn sample(ts_s: u64, user: u64, idle: u64, io_total_us: u64) -> Sample {
        let t = CpuTimes {
            user,
            idle,
            ..CpuTimes::default()
        };
        let io = Pressure {
            some: PsiLine {
                total: io_total_us,
                ..PsiLine::default()
            },
            full: Some(PsiLine::default()),
        };
        Sample {
            stat: StatSample {
                ts_ns: ts_s * 1_000_000_000,
                stat: ProcStat {
                    all: t,
                    cpus: vec![CpuLine { cpu: 0, times: t }],
                },
            },
            psi: PsiSample {
                ts_ns: ts_s * 1_000_000_000,
                io: Some(io),
                cpu: None,
                memory: None,
            },
        }
    }

    #[test]
    fn intervals_and_average() {
        let mut s = CpuSeries::new(Duration::from_secs(1));
        s.push(sample(10, 0, 0, 0));
        s.push(sample(11, 100, 0, 500_000));
        s.push(sample(12, 100, 100, 500_000));
        s.finish();
        assert_eq!(s.cpu.statistics.len(), 2);
        assert_eq!(s.cpu.statistics[0].all().usr, 100.0);
        assert_eq!(s.cpu.statistics[1].cpu_load[1].cpu, "0");
        assert_eq!(s.cpu.statistics[1].cpu_load[1].util.idle, 100.0);
        let avg = s.cpu.average.as_ref().unwrap();
        assert_eq!((avg.start_ns, avg.end_ns), (10_000_000_000, 12_000_000_000));
        assert_eq!(avg.all().usr, 50.0);
        assert_eq!(s.psi.statistics[0].io.unwrap().some, 50.0);
        assert_eq!(s.psi.statistics[1].io.unwrap().some, 0.0);
        assert_eq!(s.psi.average.unwrap().io.unwrap().some, 25.0);
        assert!(s.psi.average.unwrap().cpu.is_none());
        let line = s.summary_line();
        assert!(line.starts_with("cpu (all, 2.0 s): usr 50.00%"), "{line}");
        assert!(line.ends_with("| psi io some 25.0% full 0.0%"), "{line}");
    }

    #[test]
    fn one_reading_has_no_average() {
        let mut s = CpuSeries::new(Duration::from_secs(1));
        s.push(sample(1, 0, 0, 0));
        s.finish();
        assert!(s.cpu.average.is_none() && s.psi.average.is_none());
        assert_eq!(s.summary_line(), "cpu: no interval sampled");
    }

    #[test]
    fn json_uses_sysstat_names_and_round_trips() {
        let mut s = CpuSeries::new(Duration::from_millis(500));
        s.push(sample(1, 0, 0, 0));
        s.push(sample(2, 50, 50, 0));
        s.finish();
        let v = serde_json::to_value(&s).unwrap();
        let load = &v["cpu"]["statistics"][0]["cpu-load"][0];
        assert_eq!(load["cpu"], "all");
        for k in CpuUtil::NAMES {
            assert!(load[k].is_f64(), "{k}");
        }
        assert_eq!(v["cpu"]["samples"][0]["cpus"][0]["cpu"], 0);
        assert_eq!(v["cpu"]["samples"][1]["all"]["user"], 50);
        assert_eq!(v["psi"]["samples"][0]["io"]["some"]["total"], 0);
        assert_eq!(v["interval_ns"], 500_000_000);
        let back: CpuSeries = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }
}
