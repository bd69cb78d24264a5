//! Per-CPU time from `/proc/stat` (the kernel's
//! Documentation/filesystems/proc.rst, "Miscellaneous kernel statistics"),
//! and the percentages mpstat derives from two readings.
//!
//! ```text
//! cpu  user nice system idle iowait irq softirq steal guest guest_nice
//! cpu0 ...
//! ```
//!
//! Counters are in USER_HZ ticks ("jiffies", usually 1/100 s). `user` and
//! `nice` already include `guest` and `guest_nice`, so mpstat (sysstat's
//! mpstat.c, `get_per_cpu_interval` in rd_stats.c) reports
//! `%usr = Δ(user − guest)` and `%nice = Δ(nice − guest_nice)`, and takes the
//! interval of a CPU as the sum of all its counters but guest and
//! guest_nice; the ten percentages then add up to 100. The "all" line is
//! the sum over the CPUs online at both readings, as in sysstat 12.
//!
//! Where this differs from mpstat, only for counters that go backwards:
//! mpstat assumes a CPU whose idle or iowait went back came online again
//! and counts the whole new value; here such a delta counts as 0. A
//! CPU whose interval is empty (tickless, or sampled twice within one
//! tick) is 100 % idle, for "all" too (mpstat prints zeros there).

mod monitor;
mod series;

pub use monitor::{monotonic_ns, CpuMonitor, Sampler};
pub use series::{
    CpuLoad, CpuSeries, CpuStatistics, CpuTrack, PsiSample, PsiStatistics, PsiTrack, Sample,
    StatSample,
};

use std::path::Path;

use crate::SysError;

/// One CPU's (or all CPUs') cumulative times, USER_HZ ticks, named as in
/// proc(5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuTimes {
    /// User mode, guest time included.
    pub user: u64,
    /// User mode at low priority (nice > 0), guest_nice included.
    pub nice: u64,
    /// Kernel mode, interrupts excluded.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle with I/O outstanding from a task last run on this CPU.
    pub iowait: u64,
    /// Servicing hardware interrupts.
    pub irq: u64,
    /// Servicing softirqs.
    pub softirq: u64,
    /// Stolen by the hypervisor for other guests.
    pub steal: u64,
    /// Running a guest's virtual CPU.
    pub guest: u64,
    /// Running a niced guest's virtual CPU.
    pub guest_nice: u64,
}

/// One `cpuN` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuLine {
    /// CPU number (N of `cpuN`).
    pub cpu: u32,
    /// Its times.
    #[serde(flatten)]
    pub times: CpuTimes,
}

/// The CPU lines of one `/proc/stat` reading. Offline CPUs have no line.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcStat {
    /// The `cpu` line: the sum over all possible CPUs.
    pub all: CpuTimes,
    /// The `cpuN` lines, in file order (ascending N).
    pub cpus: Vec<CpuLine>,
}

/// Parses the `cpu` lines of `/proc/stat`; `origin` names it in errors.
/// Older kernels' shorter lines (no steal, guest or guest_nice) read as 0.
pub fn parse(text: &str, origin: &Path) -> Result<ProcStat, SysError> {
    let mut stat = ProcStat::default();
    let mut saw_all = false;
    for line in text.lines().filter(|l| l.starts_with("cpu")) {
        let bad = |why: &str| SysError::Parse {
            path: origin.to_path_buf(),
            text: line.to_string(),
            why: why.to_string(),
        };
        let mut words = line.split_whitespace();
        let label = words.next().unwrap_or_default();
        let values = words
            .map(|w| w.parse::<u64>())
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| bad("expected counters (unsigned integers)"))?;
        if values.len() < 4 {
            return Err(bad("expected at least user nice system idle"));
        }
        let v = |i: usize| values.get(i).copied().unwrap_or(0);
        let times = CpuTimes {
            user: v(0),
            nice: v(1),
            system: v(2),
            idle: v(3),
            iowait: v(4),
            irq: v(5),
            softirq: v(6),
            steal: v(7),
            guest: v(8),
            guest_nice: v(9),
        };
        match &label[3..] {
            "" => {
                stat.all = times;
                saw_all = true;
            }
            n => {
                let cpu = n.parse().map_err(|_| bad("expected cpu or cpuN"))?;
                stat.cpus.push(CpuLine { cpu, times });
            }
        }
    }
    if !saw_all {
        return Err(SysError::Parse {
            path: origin.to_path_buf(),
            text: text.lines().next().unwrap_or_default().to_string(),
            why: "no cpu line".to_string(),
        });
    }
    Ok(stat)
}

/// Reads `<proc_root>/stat`.
pub fn read(proc_root: &Path) -> Result<ProcStat, SysError> {
    let path = proc_root.join("stat");
    let text = std::fs::read_to_string(&path).map_err(|e| SysError::io(&path, e))?;
    parse(&text, &path)
}

/// USER_HZ: the unit of `/proc/stat` counters, ticks per second.
pub fn user_hz() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// Tick deltas of one interval, split the way mpstat reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuDelta {
    /// Δ(user − guest).
    pub usr: u64,
    /// Δ(nice − guest_nice).
    pub nice: u64,
    /// Δsystem.
    pub sys: u64,
    /// Δiowait.
    pub iowait: u64,
    /// Δirq.
    pub irq: u64,
    /// Δsoftirq.
    pub soft: u64,
    /// Δsteal.
    pub steal: u64,
    /// Δguest.
    pub guest: u64,
    /// Δguest_nice.
    pub gnice: u64,
    /// Δidle.
    pub idle: u64,
}

impl CpuDelta {
    /// Deltas from `prev` to `curr`; a counter that went backwards counts
    /// 0 (mpstat does the same for usr and nice, and widens the interval
    /// by the shortfall, which comes to the same sum).
    pub fn between(prev: &CpuTimes, curr: &CpuTimes) -> CpuDelta {
        let d = |p: u64, c: u64| c.saturating_sub(p);
        let net = |total: u64, part: u64| total.saturating_sub(part);
        CpuDelta {
            usr: d(net(prev.user, prev.guest), net(curr.user, curr.guest)),
            nice: d(
                net(prev.nice, prev.guest_nice),
                net(curr.nice, curr.guest_nice),
            ),
            sys: d(prev.system, curr.system),
            iowait: d(prev.iowait, curr.iowait),
            irq: d(prev.irq, curr.irq),
            soft: d(prev.softirq, curr.softirq),
            steal: d(prev.steal, curr.steal),
            guest: d(prev.guest, curr.guest),
            gnice: d(prev.guest_nice, curr.guest_nice),
            idle: d(prev.idle, curr.idle),
        }
    }

    /// The interval in ticks: every counter but guest and guest_nice,
    /// which user and nice already hold (mpstat's get_per_cpu_interval).
    pub fn total(&self) -> u64 {
        self.parts().iter().sum()
    }

    /// Adds another CPU's deltas (for the "all" line).
    pub fn add(&mut self, o: &CpuDelta) {
        self.usr += o.usr;
        self.nice += o.nice;
        self.sys += o.sys;
        self.iowait += o.iowait;
        self.irq += o.irq;
        self.soft += o.soft;
        self.steal += o.steal;
        self.guest += o.guest;
        self.gnice += o.gnice;
        self.idle += o.idle;
    }

    /// Percent of the interval in each state; an empty interval is idle.
    pub fn percent(&self) -> CpuUtil {
        let total = self.total();
        if total == 0 {
            return CpuUtil {
                idle: 100.0,
                ..CpuUtil::default()
            };
        }
        let p = |v: u64| v as f64 * 100.0 / total as f64;
        CpuUtil {
            usr: p(self.usr),
            nice: p(self.nice),
            sys: p(self.sys),
            iowait: p(self.iowait),
            irq: p(self.irq),
            soft: p(self.soft),
            steal: p(self.steal),
            guest: p(self.guest),
            gnice: p(self.gnice),
            idle: p(self.idle),
        }
    }

    fn parts(&self) -> [u64; 10] {
        [
            self.usr,
            self.nice,
            self.sys,
            self.iowait,
            self.irq,
            self.soft,
            self.steal,
            self.guest,
            self.gnice,
            self.idle,
        ]
    }
}

/// mpstat's CPU utilisation, percent of the interval; field names are
/// sysstat's JSON names (`mpstat -o JSON`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuUtil {
    /// %usr: user mode, guest time excluded.
    pub usr: f64,
    /// %nice: user mode at low priority, niced guest excluded.
    pub nice: f64,
    /// %sys: kernel mode, interrupts excluded.
    pub sys: f64,
    /// %iowait: idle with I/O outstanding.
    pub iowait: f64,
    /// %irq: hardware interrupts.
    pub irq: f64,
    /// %soft: softirqs.
    pub soft: f64,
    /// %steal: stolen by the hypervisor.
    pub steal: f64,
    /// %guest: running a virtual CPU.
    pub guest: f64,
    /// %gnice: running a niced virtual CPU.
    pub gnice: f64,
    /// %idle: idle without I/O outstanding.
    pub idle: f64,
}

impl CpuUtil {
    /// The ten values in mpstat's column order.
    pub fn values(&self) -> [f64; 10] {
        [
            self.usr,
            self.nice,
            self.sys,
            self.iowait,
            self.irq,
            self.soft,
            self.steal,
            self.guest,
            self.gnice,
            self.idle,
        ]
    }

    /// mpstat's column headers, in the order of [`CpuUtil::values`].
    pub const HEADERS: [&'static str; 10] = [
        "%usr", "%nice", "%sys", "%iowait", "%irq", "%soft", "%steal", "%guest", "%gnice", "%idle",
    ];

    /// sysstat's JSON names, in the order of [`CpuUtil::values`].
    pub const NAMES: [&'static str; 10] = [
        "usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice", "idle",
    ];
}

/// Per-CPU deltas for the CPUs online at both readings, and their sum
/// (the "all" line).
pub fn deltas(prev: &ProcStat, curr: &ProcStat) -> (CpuDelta, Vec<(u32, CpuDelta)>) {
    let mut all = CpuDelta::default();
    let mut per_cpu = Vec::with_capacity(curr.cpus.len());
    for c in &curr.cpus {
        if let Some(p) = prev.cpus.iter().find(|p| p.cpu == c.cpu) {
            let d = CpuDelta::between(&p.times, &c.times);
            all.add(&d);
            per_cpu.push((c.cpu, d));
        }
    }
    (all, per_cpu)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const A: &str = "cpu  289507 0 161160 713408 336241 0 9285 7786 0 0\n\
                     cpu0 136027 0 73831 403111 140647 0 1780 3890 0 0\n\
                     cpu1 153479 0 87328 310296 195593 0 7505 3895 0 0\n\
                     intr 16253139 0 0\n";

    fn stat(text: &str) -> ProcStat {
        parse(text, Path::new("stat")).unwrap()
    }

    #[test]
    fn parses_cpu_lines() {
        let s = stat(A);
        assert_eq!(s.all.user, 289507);
        assert_eq!(s.all.steal, 7786);
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(s.cpus[1].cpu, 1);
        assert_eq!(s.cpus[1].times.iowait, 195593);
    }

    #[test]
    fn short_lines_of_old_kernels() {
        let s = stat("cpu 1 2 3 4\ncpu0 1 2 3 4 5 6 7\n");
        assert_eq!(s.all.idle, 4);
        assert_eq!(s.all.iowait, 0);
        assert_eq!(s.cpus[0].times.softirq, 7);
        assert_eq!(s.cpus[0].times.steal, 0);
    }

    #[test]
    fn bad_lines_are_refused_with_the_text() {
        let e = parse("cpu 1 2 x 4\n", Path::new("/proc/stat"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/proc/stat") && e.contains("cpu 1 2 x 4"), "{e}");
        assert!(parse("cpu 1 2\n", Path::new("s")).is_err());
        assert!(parse("cpuX 1 2 3 4\ncpu 1 2 3 4\n", Path::new("s")).is_err());
        assert!(parse("intr 1\n", Path::new("s")).is_err());
    }

    /// A worked example checked by hand against mpstat's formulas.
    #[test]
    fn mpstat_percentages() {
        let p = CpuTimes {
            user: 100,
            nice: 10,
            guest: 20,
            guest_nice: 5,
            ..CpuTimes::default()
        };
        // Over 200 ticks: user +60 (guest +10 of it), nice +10 (gnice +4),
        // system +30, iowait +40, irq +2, softirq +3, steal +5, idle +50.
        let c = CpuTimes {
            user: 160,
            nice: 20,
            system: 30,
            idle: 50,
            iowait: 40,
            irq: 2,
            softirq: 3,
            steal: 5,
            guest: 30,
            guest_nice: 9,
        };
        let d = CpuDelta::between(&p, &c);
        assert_eq!(d.total(), 200);
        let u = d.percent();
        assert_eq!(u.usr, 25.0); // (60 - 10) / 200
        assert_eq!(u.nice, 3.0); // (10 - 4) / 200
        assert_eq!(u.guest, 5.0);
        assert_eq!(u.gnice, 2.0);
        assert_eq!(u.sys, 15.0);
        assert_eq!(u.iowait, 20.0);
        assert_eq!(u.idle, 25.0);
        assert!((u.values().iter().sum::<f64>() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn guest_ahead_of_user_is_clamped_like_mpstat() {
        // guest grew by more than user: mpstat prints %usr 0 and widens the
        // interval by the shortfall; the sum stays 100.
        let p = CpuTimes {
            user: 100,
            guest: 50,
            idle: 0,
            ..CpuTimes::default()
        };
        let c = CpuTimes {
            user: 105,
            guest: 58,
            idle: 10,
            ..CpuTimes::default()
        };
        let d = CpuDelta::between(&p, &c);
        assert_eq!(d.usr, 0);
        assert_eq!(d.total(), 18);
        assert!((d.percent().values().iter().sum::<f64>() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn empty_interval_is_idle() {
        let t = CpuTimes {
            user: 7,
            ..CpuTimes::default()
        };
        assert_eq!(CpuDelta::between(&t, &t).percent().idle, 100.0);
    }

    #[test]
    fn all_is_the_sum_of_cpus_online_at_both_readings() {
        let a = stat(A);
        let mut b = a.clone();
        b.cpus[0].times.user += 100;
        b.cpus[1].times.idle += 100;
        let (all, per) = deltas(&a, &b);
        assert_eq!(per.len(), 2);
        assert_eq!(all.total(), 200);
        assert_eq!(all.percent().usr, 50.0);
        // CPU 1 went offline: it has no line, and "all" is CPU 0 alone.
        b.cpus.pop();
        let (all, per) = deltas(&a, &b);
        assert_eq!(per.len(), 1);
        assert_eq!(all.percent().usr, 100.0);
    }

    #[test]
    fn reads_the_live_kernel_file() {
        let s = read(Path::new("/proc")).unwrap();
        // available_parallelism counts CPUs we may run on: never more
        // than are online.
        let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(
            s.cpus.len() >= usable,
            "{} lines, {usable} usable",
            s.cpus.len()
        );
        let sum_user: u64 = s.cpus.iter().map(|c| c.times.user).sum();
        // The cpu line is the sum over CPUs (read at nearly the same time).
        assert!(s.all.user.abs_diff(sum_user) <= 10 * s.cpus.len() as u64);
        assert!(user_hz() > 0);
    }
}
