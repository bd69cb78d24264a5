//! Pressure stall information: `/proc/pressure/{io,cpu,memory}`, as in the
//! kernel's Documentation/accounting/psi.rst.
//!
//! Each file holds a `some` line (share of wall time in which at least one
//! task was stalled on the resource) and, except for `cpu` before Linux
//! 5.13, a `full` line (all non-idle tasks stalled at once):
//!
//! ```text
//! some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//!
//! `avgN` are the kernel's running averages (percent); `total` is the
//! cumulative stall time in microseconds. The share of an interval is
//! derived from two `total` readings, which is exact for that interval,
//! where `avg10` is a decaying average of the last ten seconds.

use std::path::Path;

use crate::SysError;

/// The resources the kernel reports pressure for (Linux >= 4.20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// Waiting for block I/O.
    Io,
    /// Runnable but waiting for a CPU.
    Cpu,
    /// Waiting for memory (reclaim, refaults, swap-in).
    Memory,
}

impl Resource {
    /// All resources, in the order iolab prints them.
    pub const ALL: [Resource; 3] = [Resource::Io, Resource::Cpu, Resource::Memory];

    /// The file name under `/proc/pressure`.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Io => "io",
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
        }
    }
}

/// One line of a pressure file.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsiLine {
    /// Percent of the last 10 s stalled (kernel's decaying average).
    pub avg10: f64,
    /// Percent of the last 60 s stalled.
    pub avg60: f64,
    /// Percent of the last 300 s stalled.
    pub avg300: f64,
    /// Cumulative stall time, microseconds.
    pub total: u64,
}

/// One pressure file: `some`, and `full` when the kernel reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pressure {
    /// At least one task stalled.
    pub some: PsiLine,
    /// All non-idle tasks stalled; absent for `cpu` before Linux 5.13
    /// (and always zero there at system level since).
    pub full: Option<PsiLine>,
}

/// Parses one pressure file. `origin` names it in errors.
pub fn parse(text: &str, origin: &Path) -> Result<Pressure, SysError> {
    let mut some = None;
    let mut full = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let bad = |why: &str| SysError::Parse {
            path: origin.to_path_buf(),
            text: line.to_string(),
            why: why.to_string(),
        };
        let mut words = line.split_whitespace();
        let slot = match words.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            _ => return Err(bad("expected a line starting with some or full")),
        };
        let mut psi = PsiLine::default();
        let mut seen = 0;
        for word in words {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| bad("expected key=value pairs"))?;
            let float = || value.parse::<f64>().map_err(|_| bad("expected a number"));
            match key {
                "avg10" => psi.avg10 = float()?,
                "avg60" => psi.avg60 = float()?,
                "avg300" => psi.avg300 = float()?,
                "total" => {
                    psi.total = value
                        .parse()
                        .map_err(|_| bad("expected total=<microseconds>"))?
                }
                // Fields a later kernel may add are not ours to refuse.
                _ => continue,
            }
            seen += 1;
        }
        if seen < 4 {
            return Err(bad("expected avg10=, avg60=, avg300= and total="));
        }
        *slot = Some(psi);
    }
    let some = some.ok_or_else(|| SysError::Parse {
        path: origin.to_path_buf(),
        text: text.to_string(),
        why: "no some line".to_string(),
    })?;
    Ok(Pressure { some, full })
}

/// Reads `<proc_root>/pressure/<resource>`. `Ok(None)` when the kernel
/// has no PSI (CONFIG_PSI off, booted with `psi=0`, or older than 4.20).
pub fn read(proc_root: &Path, resource: Resource) -> Result<Option<Pressure>, SysError> {
    let path = proc_root.join("pressure").join(resource.name());
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text, &path).map(Some),
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::EOPNOTSUPP) =>
        {
            Ok(None)
        }
        Err(e) => Err(SysError::io(path, e)),
    }
}

/// Stall shares of one resource over an interval, percent of wall time.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsiPercent {
    /// Percent of the interval in which some task was stalled.
    pub some: f64,
    /// Percent in which all non-idle tasks were stalled (None when the
    /// kernel has no `full` line for this resource).
    pub full: Option<f64>,
}

impl PsiPercent {
    /// Shares from two readings `wall_ns` apart: Δtotal / Δwall. Capped at
    /// 100, since the stall time read between two reads of ours can exceed
    /// the time between our clock readings by the few microseconds a read
    /// takes. `None` when `wall_ns` is zero.
    pub fn between(prev: &Pressure, curr: &Pressure, wall_ns: u64) -> Option<PsiPercent> {
        if wall_ns == 0 {
            return None;
        }
        let share = |p: &PsiLine, c: &PsiLine| {
            let stalled_ns = c.total.saturating_sub(p.total) as f64 * 1000.0;
            (stalled_ns / wall_ns as f64 * 100.0).min(100.0)
        };
        Some(PsiPercent {
            some: share(&prev.some, &curr.some),
            full: match (&prev.full, &curr.full) {
                (Some(p), Some(c)) => Some(share(p, c)),
                _ => None,
            },
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const IO: &str = "some avg10=1.89 avg60=0.99 avg300=0.76 total=532728839\n\
                      full avg10=0.50 avg60=0.25 avg300=0.10 total=1000\n";
    // Linux < 5.13: no full line for cpu.
    const OLD_CPU: &str = "some avg10=0.00 avg60=0.12 avg300=3.40 total=77\n";

    #[test]
    fn parses_some_and_full() {
        let p = parse(IO, Path::new("io")).unwrap();
        assert_eq!(p.some.avg10, 1.89);
        assert_eq!(p.some.avg300, 0.76);
        assert_eq!(p.some.total, 532_728_839);
        assert_eq!(p.full.unwrap().total, 1000);
    }

    #[test]
    fn cpu_without_full_line() {
        let p = parse(OLD_CPU, Path::new("cpu")).unwrap();
        assert_eq!(p.some.total, 77);
        assert_eq!(p.some.avg300, 3.40);
        assert!(p.full.is_none());
    }

    #[test]
    fn bad_text_names_the_file_and_line() {
        let e = parse(
            "some avg10=x avg60=0 avg300=0 total=1\n",
            Path::new("/p/io"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("/p/io") && e.contains("avg10=x"), "{e}");
        assert!(parse("full avg10=0 avg60=0 avg300=0 total=1\n", Path::new("x")).is_err());
        assert!(parse("some avg10=0 total=1\n", Path::new("x")).is_err());
        assert!(parse("", Path::new("x")).is_err());
    }

    #[test]
    fn share_of_an_interval_from_totals() {
        let a = parse(IO, Path::new("io")).unwrap();
        let mut b = a;
        b.some.total += 250_000; // 250 ms stalled
        b.full.as_mut().unwrap().total += 100_000;
        let s = PsiPercent::between(&a, &b, 1_000_000_000).unwrap();
        assert!((s.some - 25.0).abs() < 1e-9);
        assert!((s.full.unwrap() - 10.0).abs() < 1e-9);
        let old = parse(OLD_CPU, Path::new("cpu")).unwrap();
        assert_eq!(PsiPercent::between(&old, &old, 1).unwrap().full, None);
        assert!(PsiPercent::between(&a, &b, 0).is_none());
        // A stall read a hair after our clock reading is capped at 100 %.
        b.some.total = a.some.total + 1_000_010;
        assert_eq!(
            PsiPercent::between(&a, &b, 1_000_000_000).unwrap().some,
            100.0
        );
    }

    #[test]
    fn missing_pressure_dir_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path(), Resource::Io).unwrap(), None);
    }

    #[test]
    fn reads_the_live_kernel_files() {
        let proc_root = Path::new("/proc");
        if !proc_root.join("pressure").exists() {
            iolab_testkit::skip_line(
                "skip reads_the_live_kernel_files: no /proc/pressure (PSI off)".to_string(),
            );
            return;
        }
        for r in Resource::ALL {
            let p = read(proc_root, r).unwrap().unwrap();
            assert!((0.0..=100.0).contains(&p.some.avg10), "{r:?} {p:?}");
            if r != Resource::Cpu {
                assert!(p.full.is_some(), "{r:?} has a full line since 4.20");
            }
            // total is cumulative: a second read never goes back.
            let q = read(proc_root, r).unwrap().unwrap();
            assert!(q.some.total >= p.some.total);
        }
    }
}
