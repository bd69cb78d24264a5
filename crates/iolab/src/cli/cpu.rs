//! `iolab cpu` — mpstat's CPU utilisation per interval, with the pressure
//! stall shares of io, cpu and memory, while waiting or while a command
//! runs.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use iolab_sys::cpustat::{CpuMonitor, CpuSeries, CpuStatistics, CpuUtil, PsiStatistics};
use iolab_sys::pressure::{PsiPercent, Resource};
use iolab_sys::text::align_columns;
use iolab_sys::UsageError;

/// `iolab cpu` arguments.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct CpuArgs {
    /// Seconds between reports: 1, 0.5, or with a unit (500ms, 2s); at
    /// least 0.1 s, since the kernel counts CPU time in 10 ms ticks.
    #[arg(
        long,
        short = 'i',
        value_name = "S",
        default_value = "1",
        allow_negative_numbers = true,
        value_parser = super::values::duration
    )]
    pub interval: Duration,

    /// Stop after N reports.
    #[arg(
        long,
        short = 'c',
        value_name = "N",
        conflicts_with = "duration",
        allow_negative_numbers = true
    )]
    pub count: Option<String>,

    /// Stop after S seconds (rounded up to whole intervals).
    #[arg(long, value_name = "S", allow_negative_numbers = true,
          value_parser = super::values::duration)]
    pub duration: Option<Duration>,

    /// A line per CPU under each "all" line (table and CSV; JSON always
    /// has every CPU).
    #[arg(long = "per-cpu", short = 'P')]
    pub per_cpu: bool,

    /// One JSON document at the end: every raw reading and the derived
    /// percentages (sysstat's names: usr, nice, sys, iowait ...).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,

    /// CSV, one row per interval (and CPU with --per-cpu), as they come.
    #[arg(long)]
    pub csv: bool,

    /// Sample while COMMAND runs and stop when it exits; iolab exits with
    /// its exit code. With --json/--csv its stdout goes to stderr.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

const AFTER_HELP: &str = "\
Columns: mpstat's (%usr excludes guest time, %nice excludes niced guest time;
the ten add up to 100), then pressure stall shares over the same interval from
/proc/pressure's total counters: %io-some / %io-full (some / all non-idle tasks
waiting for I/O), %cpu-some (runnable tasks waiting for a CPU), %mem-some /
%mem-full. Without --count, --duration or a COMMAND it runs until Ctrl-C; the
Average line covers the whole run.

Examples:
  iolab cpu --interval 1 --count 5 --per-cpu
  iolab cpu --json -- cp big.img /mnt/lab/
  iolab cpu --csv --interval 0.5 --duration 30s > cpu.csv";

/// How output is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Table,
    Csv,
    Json,
}

/// Validated arguments.
struct Plan {
    interval: Duration,
    count: Option<usize>,
    format: Format,
    per_cpu: bool,
}

fn plan(a: &CpuArgs) -> Result<Plan, UsageError> {
    let interval = a.interval;
    if interval < Duration::from_millis(100) {
        return Err(UsageError::new(format!(
            "--interval {}: too short, the kernel counts CPU time in 10 ms ticks; use at least 0.1",
            interval.as_secs_f64()
        )));
    }
    let count = match (&a.count, &a.duration) {
        (Some(n), _) => Some(n.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
            UsageError::new(format!(
                "--count {n}: expected a whole number of reports >= 1"
            ))
        })?),
        (None, Some(d)) => {
            let n = (d.as_secs_f64() / interval.as_secs_f64() - 1e-9).ceil();
            #[allow(
                clippy::cast_possible_truncation,
                reason = "--duration is at most a week and --interval at least 0.1 s: n <= 6048000"
            )]
            let n = n as usize;
            Some(n.max(1))
        }
        (None, None) => None,
    };
    let format = match (a.json, a.csv) {
        (true, _) => Format::Json,
        (_, true) => Format::Csv,
        _ => Format::Table,
    };
    Ok(Plan {
        interval,
        count,
        format,
        per_cpu: a.per_cpu,
    })
}

/// Samples until the count, the command's exit or Ctrl-C, printing each
/// interval as it closes, then the average.
pub fn run(a: CpuArgs) -> anyhow::Result<()> {
    let plan = plan(&a)?;
    let (tx, rx) = mpsc::channel::<(CpuStatistics, PsiStatistics)>();
    let count = plan.count;
    let monitor = CpuMonitor::start_with(Path::new("/proc"), plan.interval, move |s| {
        if let (Some(c), Some(p)) = (s.cpu.statistics.last(), s.psi.statistics.last()) {
            // The receiver outlives the monitor; a send error only means
            // the main thread is already leaving.
            let _ = tx.send((c.clone(), *p));
        }
        match count {
            Some(n) if s.cpu.statistics.len() >= n => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    })?;
    let mut child = match a.command.split_first() {
        Some((prog, args)) => Some(super::child::spawn(
            prog,
            args,
            plan.format != Format::Table,
        )?),
        None => None,
    };
    let mut out = Printer::new(plan, std::io::stdout().lock());
    let mut status = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok((c, p)) => out.interval(&c, &p)?,
            Err(RecvTimeoutError::Timeout) => {}
            // The monitor ended: the count is reached.
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if iolab_guard::stop_requested() {
            break;
        }
        if let Some(c) = child.as_mut() {
            if let Some(s) = c.try_wait().context("waiting for the command")? {
                status = Some(s);
                break;
            }
        }
    }
    let series = monitor.stop();
    // The final, partial interval closed by stop().
    for (c, p) in rx.try_iter() {
        out.interval(&c, &p)?;
    }
    if let (Some(c), None) = (child.as_mut(), status) {
        status = Some(super::child::finish(c, Duration::from_secs(2))?);
    }
    let exit_code = status.map(super::child::exit_code);
    out.finish(&series, &a.command, exit_code)?;
    match exit_code {
        // Exit with the command's code, as `time` and `perf stat` do; this
        // command holds no guard, so there is nothing left to undo.
        Some(code) if code != 0 => std::process::exit(code),
        _ => Ok(()),
    }
}

/// Writes intervals as they close and the average at the end.
struct Printer<W: Write> {
    plan: Plan,
    w: W,
    start_ns: Option<u64>,
    rows: usize,
}

impl<W: Write> Printer<W> {
    fn new(plan: Plan, w: W) -> Self {
        Printer {
            plan,
            w,
            start_ns: None,
            rows: 0,
        }
    }

    fn interval(&mut self, c: &CpuStatistics, p: &PsiStatistics) -> anyhow::Result<()> {
        let start = *self.start_ns.get_or_insert(c.start_ns);
        let time = format!("{:.2}", c.end_ns.saturating_sub(start) as f64 / 1e9);
        match self.plan.format {
            Format::Json => {}
            Format::Csv => {
                if self.rows == 0 {
                    writeln!(self.w, "{}", csv_header())?;
                }
                for (i, load) in self.lines(c).iter().enumerate() {
                    let psi = if i == 0 {
                        psi_cells(p, "")
                    } else {
                        vec![String::new(); 5]
                    };
                    let mut cells = vec![time.clone(), load.cpu.clone()];
                    cells.extend(load.util.values().iter().map(|v| format!("{v:.2}")));
                    cells.extend(psi);
                    writeln!(self.w, "{}", cells.join(","))?;
                }
            }
            Format::Table => self.table_block(&time, c, p)?,
        }
        self.rows += 1;
        self.w.flush()?;
        Ok(())
    }

    /// The "all" line, and every CPU's with --per-cpu.
    fn lines<'a>(&self, c: &'a CpuStatistics) -> &'a [iolab_sys::cpustat::CpuLoad] {
        let n = if self.plan.per_cpu {
            c.cpu_load.len()
        } else {
            1
        };
        &c.cpu_load[..n.min(c.cpu_load.len())]
    }

    /// One interval's rows. The header is laid out with every block so the
    /// columns keep their widths; without --per-cpu it is printed once,
    /// like mpstat's.
    fn table_block(
        &mut self,
        time: &str,
        c: &CpuStatistics,
        p: &PsiStatistics,
    ) -> anyhow::Result<()> {
        let mut rows = vec![table_header()];
        for (i, load) in self.lines(c).iter().enumerate() {
            let mut cells = vec![time.to_string(), load.cpu.clone()];
            cells.extend(load.util.values().iter().map(|v| format!("{v:.2}")));
            if i == 0 {
                cells.extend(psi_cells(p, "-"));
            }
            rows.push(cells);
        }
        let text = align_columns(&rows, 2);
        if self.plan.per_cpu {
            if self.rows > 0 {
                writeln!(self.w)?;
            }
            write!(self.w, "{text}")?;
        } else {
            let skip = usize::from(self.rows > 0);
            for line in text.lines().skip(skip) {
                writeln!(self.w, "{line}")?;
            }
        }
        Ok(())
    }

    fn finish(
        mut self,
        series: &CpuSeries,
        command: &[String],
        exit_code: Option<i32>,
    ) -> anyhow::Result<()> {
        match self.plan.format {
            Format::Csv => {}
            Format::Json => {
                let doc = JsonDoc {
                    interval_s: self.plan.interval.as_secs_f64(),
                    command: (!command.is_empty()).then(|| JsonCommand {
                        argv: command.to_vec(),
                        exit_code,
                    }),
                    series,
                };
                serde_json::to_writer_pretty(&mut self.w, &doc)
                    .context("serialising the series")?;
                writeln!(self.w)?;
            }
            Format::Table => {
                if let (Some(c), Some(p)) = (&series.cpu.average, &series.psi.average) {
                    if self.plan.per_cpu {
                        self.rows = 1; // blank line before the block
                    }
                    self.table_block("Average", c, p)?;
                }
                if series.missed_samples > 0 {
                    iolab_sys::say!(
                        "iolab: note: {} readings of /proc failed and were skipped",
                        series.missed_samples
                    );
                }
            }
        }
        self.w.flush()?;
        Ok(())
    }
}

/// The `--json` document: the series as stored per run, and the command.
#[derive(serde::Serialize)]
struct JsonDoc<'a> {
    /// Sampling interval, seconds.
    interval_s: f64,
    /// The command sampled, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<JsonCommand>,
    #[serde(flatten)]
    series: &'a CpuSeries,
}

#[derive(serde::Serialize)]
struct JsonCommand {
    /// What ran.
    argv: Vec<String>,
    /// Its exit code (128 + signal when killed).
    exit_code: Option<i32>,
}

/// Pressure columns: io some/full, cpu some, memory some/full.
const PSI_COLUMNS: [(Resource, bool, &str, &str); 5] = [
    (Resource::Io, false, "%io-some", "io_some"),
    (Resource::Io, true, "%io-full", "io_full"),
    (Resource::Cpu, false, "%cpu-some", "cpu_some"),
    (Resource::Memory, false, "%mem-some", "memory_some"),
    (Resource::Memory, true, "%mem-full", "memory_full"),
];

fn psi_cells(p: &PsiStatistics, absent: &str) -> Vec<String> {
    PSI_COLUMNS
        .iter()
        .map(|&(r, full, _, _)| {
            let v = p
                .get(r)
                .and_then(|s: &PsiPercent| if full { s.full } else { Some(s.some) });
            v.map_or_else(|| absent.to_string(), |v| format!("{v:.2}"))
        })
        .collect()
}

fn table_header() -> Vec<String> {
    let mut h = vec!["TIME(s)".to_string(), "CPU".to_string()];
    // As wide as "100.00", so blocks printed apart keep the same widths.
    h.extend(CpuUtil::HEADERS.iter().map(|s| format!("{s:>6}")));
    h.extend(PSI_COLUMNS.iter().map(|c| c.2.to_string()));
    h
}

fn csv_header() -> String {
    let mut h = vec!["time_s", "cpu"];
    h.extend(CpuUtil::NAMES);
    h.extend(PSI_COLUMNS.iter().map(|c| c.3));
    h.join(",")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(interval: &str) -> CpuArgs {
        CpuArgs {
            interval: super::super::values::duration(interval).unwrap_or_default(),
            count: None,
            duration: None,
            per_cpu: false,
            json: false,
            csv: false,
            command: vec![],
        }
    }

    #[test]
    fn intervals_in_seconds_or_with_units() {
        assert_eq!(
            plan(&args("0.5")).unwrap().interval,
            Duration::from_millis(500)
        );
        assert_eq!(plan(&args("2s")).unwrap().interval, Duration::from_secs(2));
        assert_eq!(
            plan(&args("250ms")).unwrap().interval,
            Duration::from_millis(250)
        );
        for bad in ["0.01", "5ms"] {
            let e = plan(&args(bad)).err().unwrap().to_string();
            assert!(e.starts_with("--interval 0.0"), "{e}");
        }
        for bad in ["0", "-1", "x"] {
            assert!(super::super::values::duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn duration_rounds_up_to_whole_intervals() {
        let mut a = args("1");
        a.duration = Some(Duration::from_millis(2500));
        assert_eq!(plan(&a).unwrap().count, Some(3));
        a.duration = Some(Duration::from_secs(3));
        assert_eq!(plan(&a).unwrap().count, Some(3));
        a.duration = None;
        a.count = Some("0".into());
        assert!(plan(&a).is_err());
    }

    #[test]
    fn csv_header_has_sysstat_names() {
        assert_eq!(
            csv_header(),
            "time_s,cpu,usr,nice,sys,iowait,irq,soft,steal,guest,gnice,idle,io_some,io_full,cpu_some,memory_some,memory_full"
        );
    }
}
