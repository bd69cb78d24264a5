//! `iolab trace` — kernel event tracing. `trace bio`: per-request block
//! I/O as biosnoop shows it, biolatency-style histograms, per-process
//! summaries and Perfetto traces, from iolab's own trace session.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use iolab_bio::{snoop, BioOptions, BioRequest, BioSession, BioTrace, Disk, Disks};
use iolab_sys::UsageError;

/// `iolab trace` subcommands.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Per-request block I/O: biosnoop's lines, or --hist, --summary,
    /// --perfetto.
    Bio(BioArgs),
}

/// `iolab trace bio` arguments.
#[derive(Debug, Args)]
#[command(after_help = BIO_AFTER_HELP)]
pub struct BioArgs {
    /// Trace only this disk: vda, /dev/vda, 254:0, or a lab name (repeat
    /// for several; a partition means its disk). Filtered in the kernel.
    #[arg(short = 'd', long = "device", value_name = "DEV")]
    pub devices: Vec<String>,

    /// Only requests queued by this process (or thread) id.
    #[arg(short = 'p', long, value_name = "PID")]
    pub pid: Option<String>,

    /// Stop after this long (5s, 500ms, 2m).
    #[arg(long, value_name = "S")]
    pub duration: Option<String>,

    /// Instead of a line per request: log2 latency histograms per disk and
    /// operation (biolatency's), with p50/p90/p99/p99.9/max.
    #[arg(long)]
    pub hist: bool,

    /// Instead of a line per request: per process, disk and operation the
    /// requests, bytes, sequential share and latency percentiles.
    #[arg(long)]
    pub summary: bool,

    /// JSON: one object per request (biosnoop's columns: time_s comm pid
    /// disk t sector bytes que_ms lat_ms ...) and a last line with the
    /// counters; one document with --hist/--summary.
    #[arg(long)]
    pub json: bool,

    /// Also write a Chrome-JSON trace for ui.perfetto.dev: requests as
    /// async slices per disk, queue depth as counters.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,

    /// Who follows the requests: tracefs (iolab reads every request's
    /// events) or bpf (programs on the block tracepoints: --hist alone is
    /// counted in the kernel, nothing crossing per request; anything else
    /// gets one record per completed request through a BPF ring buffer,
    /// which needs the kernel's BTF). auto: bpf for --hist alone on
    /// bio-based disks given with -d (zram: measured the cheaper,
    /// docs/PERFORMANCE.md), falling back to tracefs with the reason where
    /// BPF cannot run; tracefs for the rest (request-based disks measured
    /// cheaper with tracefs, records alike). Printed and in --json.
    #[arg(long, value_enum, default_value_t = Tracer::Auto)]
    pub tracer: Tracer,

    /// Trace while COMMAND runs and stop when it exits (iolab then exits
    /// with its exit code).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `--tracer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tracer {
    /// The cheapest measured (see `--tracer`'s help).
    Auto,
    /// BPF programs on the block tracepoints (see `--tracer`'s help).
    Bpf,
    /// iolab's own tracefs instance, every event read.
    Tracefs,
}

const BIO_AFTER_HELP: &str = "\
Columns (biosnoop -Q): TIME(s) completion time since the start, COMM/PID the
task that queued the request, DISK, T the operation (R read, W write, D discard,
F flush, N other), SECTOR, BYTES, QUE(ms) queued → issued to the driver,
LAT(ms) issued → completed. Every output ends with the number of events lost
(tracefs: the trace buffer overflowed; BPF: a map was full, the kernel skipped
a program's run, or /proc/diskstats counted completions the programs never
saw) and why. Runs until Ctrl-C unless
--duration or a COMMAND is given. Needs root.

Examples:
  iolab trace bio -d vda
  iolab trace bio --hist --duration 10s
  iolab trace bio --summary --json -d /dev/loop3 -- dd if=/dev/loop3 of=/dev/null bs=1M count=100
  iolab trace bio -d phone --perfetto /tmp/io.json -- iolab load 1r1w --lab phone --runtime 5";

/// Runs a `trace` subcommand.
pub fn run(c: TraceCommand) -> anyhow::Result<()> {
    match c {
        TraceCommand::Bio(a) => run_bio(a),
    }
}

/// Validated `trace bio` arguments.
struct BioPlan {
    disks: Vec<Disk>,
    pid: Option<i32>,
    duration: Option<Duration>,
}

fn plan(a: &BioArgs) -> anyhow::Result<BioPlan> {
    let disks = a
        .devices
        .iter()
        .map(|d| resolve_device(d))
        .collect::<Result<Vec<_>, _>>()?;
    let pid = a
        .pid
        .as_deref()
        .map(|p| {
            let n: i32 = p.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                UsageError::new(format!("-p {p}: expected a process id (a positive number)"))
            })?;
            if !std::path::Path::new(&format!("/proc/{n}")).exists() {
                return Err(UsageError::new(format!("-p {p}: no such process")));
            }
            Ok(n)
        })
        .transpose()?;
    let duration = a
        .duration
        .as_deref()
        .map(iolab_sys::units::parse_duration)
        .transpose()
        .map_err(|e| UsageError::new(format!("--duration: {e}")))?;
    Ok(BioPlan {
        disks,
        pid,
        duration,
    })
}

/// A disk from `vda`, `/dev/vda`, `254:0` or a lab name.
pub fn resolve_device(spec: &str) -> Result<Disk, UsageError> {
    let disks = Disks::default();
    match disks.resolve(spec) {
        Ok(d) => Ok(d),
        Err(_) => match iolab_lab::open(spec) {
            Ok(lab) => disks.resolve(&lab.top.name),
            Err(_) => Err(UsageError::new(format!(
                "-d {spec}: no such block device or lab: expected a disk in /sys/block (vda, loop0, zram0), /dev/NAME, MAJ:MIN or a lab name"
            ))),
        },
    }
}

/// Traces until Ctrl-C, the duration or the command's exit, printing each
/// request as it completes (or the histograms/summary at the end).
fn run_bio(a: BioArgs) -> anyhow::Result<()> {
    let plan = plan(&a)?;
    // What only the records of every request can give.
    let needs_records = [
        (!a.hist, "per-request lines"),
        (a.summary, "--summary"),
        (a.perfetto.is_some(), "--perfetto"),
        (plan.pid.is_some(), "-p"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, what)| what)
    .collect::<Vec<_>>();
    super::require_root("trace bio")?;
    let mut bpf_unavailable = None;
    let auto_bpf = a.tracer == Tracer::Auto && iolab_bio::bpf::cheaper_for(&plan.disks);
    if (a.tracer == Tracer::Bpf || auto_bpf) && needs_records.is_empty() {
        let guard = iolab_guard::Guard::new();
        match iolab_bio::bpf::BioBpf::start(&guard, &plan.disks) {
            Ok(bpf) => return run_bio_bpf(&a, &plan, bpf, guard),
            Err(e) if a.tracer == Tracer::Bpf => {
                return Err(UsageError::new(format!("--tracer bpf: {e}")).into())
            }
            Err(e) => {
                iolab_sys::say!("iolab: tracing with tracefs: BPF cannot run here: {e}");
                bpf_unavailable = Some(e.to_string());
            }
        }
    }
    run_bio_records(a, plan, bpf_unavailable)
}

/// `--hist` counted in the kernel: attached until Ctrl-C, the duration or
/// the command's exit, then read once.
fn run_bio_bpf(
    a: &BioArgs,
    plan: &BioPlan,
    bpf: iolab_bio::bpf::BioBpf,
    guard: iolab_guard::Guard,
) -> anyhow::Result<()> {
    let mut child = match a.command.split_first() {
        Some((prog, args)) => Some(super::child::spawn(prog, args, a.json)?),
        None => None,
    };
    let status = wait_for_end(plan.duration, child.as_mut(), &mut || Ok(()))?;
    let h = bpf.finish()?;
    // Before any exit: it unmounts a tracefs it mounted.
    drop(guard);
    let mut out = BufWriter::new(std::io::stdout().lock());
    if a.json {
        serde_json::to_writer_pretty(&mut out, &h)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", h.render())?;
        writeln!(out, "\n{}", h.counts_line())?;
    }
    out.flush()?;
    match status.map(super::child::exit_code) {
        Some(code) if code != 0 => {
            drop(out);
            std::process::exit(code)
        }
        _ => Ok(()),
    }
}

/// Where every request's record comes from.
enum Records {
    /// iolab's tracefs instance (the guard removes it).
    Tracefs(Box<BioSession>, iolab_guard::Guard),
    /// A BPF ring buffer (the guard unmounts a tracefs it mounted).
    Bpf(Box<iolab_bio::bpf::BioBpfRecords>, iolab_guard::Guard),
}

impl Records {
    fn start(a: &BioArgs, plan: &BioPlan, keep_requests: bool) -> anyhow::Result<Records> {
        let guard = iolab_guard::Guard::new();
        if a.tracer == Tracer::Bpf {
            let opts = iolab_bio::bpf::RecordOptions {
                pid: plan.pid,
                keep_requests,
                ..Default::default()
            };
            let bpf = iolab_bio::bpf::BioBpfRecords::start(&guard, &plan.disks, opts)
                .map_err(|e| UsageError::new(format!("--tracer bpf: {e}")))?;
            return Ok(Records::Bpf(Box::new(bpf), guard));
        }
        let opts = BioOptions {
            disks: plan.disks.clone(),
            pid: plan.pid,
            keep_requests,
            ..BioOptions::default()
        };
        let session = BioSession::start(&guard, opts)?;
        Ok(Records::Tracefs(Box::new(session), guard))
    }

    fn start_ns(&self) -> u64 {
        match self {
            Records::Tracefs(s, _) => s.start_ns(),
            Records::Bpf(b, _) => b.start_ns(),
        }
    }

    /// `tracefs`, or `bpf` and how its programs are attached: printed
    /// and in --json.
    fn tracer(&self, bpf_unavailable: Option<String>) -> Tracing {
        match self {
            Records::Tracefs(..) => Tracing {
                tracer: "tracefs",
                attach: None,
                bpf_unavailable,
            },
            Records::Bpf(b, _) => Tracing {
                tracer: "bpf",
                attach: Some(b.attach().to_string()),
                bpf_unavailable: None,
            },
        }
    }

    fn poll(&mut self, on_request: &mut dyn FnMut(&BioRequest, &str)) -> anyhow::Result<()> {
        match self {
            Records::Tracefs(s, _) => s.poll(on_request)?,
            Records::Bpf(b, _) => b.poll(on_request),
        }
        Ok(())
    }

    fn finish(self, on_request: &mut dyn FnMut(&BioRequest, &str)) -> anyhow::Result<BioTrace> {
        Ok(match self {
            Records::Tracefs(s, guard) => {
                let t = s.finish(on_request)?;
                drop(guard);
                t
            }
            Records::Bpf(b, guard) => {
                let t = b.finish(on_request)?;
                drop(guard);
                t
            }
        })
    }
}

/// Which tracer followed the requests.
struct Tracing {
    tracer: &'static str,
    attach: Option<String>,
    /// Why `--tracer auto` did not use BPF, where it would have.
    bpf_unavailable: Option<String>,
}

impl Tracing {
    fn stamp(&self, doc: &mut serde_json::Value) {
        doc["tracer"] = self.tracer.into();
        if let Some(a) = &self.attach {
            doc["attach"] = a.as_str().into();
        }
        if let Some(why) = &self.bpf_unavailable {
            doc["bpf_unavailable"] = why.as_str().into();
        }
    }
}

impl std::fmt::Display for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.attach {
            Some(a) => write!(f, "tracer {}, {a}", self.tracer),
            None => write!(f, "tracer {}", self.tracer),
        }
    }
}

/// Every request's record: read through iolab's tracefs instance, or
/// from the BPF programs' ring buffer.
fn run_bio_records(
    a: BioArgs,
    plan: BioPlan,
    bpf_unavailable: Option<String>,
) -> anyhow::Result<()> {
    let stream = !a.hist && !a.summary;
    let mut session = Records::start(&a, &plan, !stream || a.perfetto.is_some())?;
    let tracer = session.tracer(bpf_unavailable);
    let t0 = session.start_ns();
    let mut child = match a.command.split_first() {
        Some((prog, args)) => Some(super::child::spawn(prog, args, a.json)?),
        None => None,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut printer = Printer {
        stream,
        json: a.json,
        t0,
        error: None,
        line: Vec::with_capacity(128),
    };
    if stream && !a.json {
        writeln!(out, "{}", snoop::header())?;
    }
    let status = wait_for_end(plan.duration, child.as_mut(), &mut || {
        session.poll(&mut |r, disk| printer.request(&mut out, r, disk))?;
        printer.check()?;
        out.flush()?;
        Ok(())
    })?;
    let trace = session.finish(&mut |r, disk| printer.request(&mut out, r, disk))?;
    printer.check()?;
    report(&mut out, &a, &trace, &tracer)?;
    out.flush()?;
    if let Some(path) = &a.perfetto {
        write_perfetto(path, &trace)?;
    }
    match status.map(super::child::exit_code) {
        Some(code) if code != 0 => {
            drop(out);
            // The guard is gone (trace instance removed) or the programs
            // detached: nothing to undo.
            std::process::exit(code)
        }
        _ => Ok(()),
    }
}

/// Every 50 ms runs `each`, until Ctrl-C, the duration or the command's
/// exit; the command's exit status (it is stopped first when it still
/// runs).
fn wait_for_end(
    duration: Option<Duration>,
    mut child: Option<&mut std::process::Child>,
    each: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<Option<std::process::ExitStatus>> {
    let deadline = duration.map(|d| Instant::now() + d);
    let mut grace = Duration::ZERO;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        each()?;
        if iolab_guard::stop_requested() {
            // The terminal sent the command the signal too.
            grace = Duration::from_secs(2);
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if let Some(c) = child.as_deref_mut() {
            if let Some(s) = c.try_wait().context("waiting for the command")? {
                return Ok(Some(s));
            }
        }
    }
    child.map(|c| super::child::finish(c, grace)).transpose()
}

/// Prints requests as they complete (stream mode).
struct Printer {
    stream: bool,
    json: bool,
    t0: u64,
    error: Option<std::io::Error>,
    /// The line being printed, reused: nothing is allocated per request.
    line: Vec<u8>,
}

impl Printer {
    fn request(&mut self, w: &mut impl Write, r: &BioRequest, disk: &str) {
        if !self.stream || self.error.is_some() {
            return;
        }
        let res = if self.json {
            serde_json::to_writer(&mut *w, &snoop::SnoopRecord::new(r, disk, self.t0))
                .map_err(std::io::Error::from)
                .and_then(|_| w.write_all(b"\n"))
        } else {
            self.line.clear();
            snoop::write_line(&mut self.line, r, disk, self.t0);
            w.write_all(&self.line)
        };
        if let Err(e) = res {
            self.error = Some(e);
        }
    }

    /// Surfaces a write error (a closed pipe ends the run quietly in exit.rs).
    fn check(&mut self) -> std::io::Result<()> {
        self.error.take().map_or(Ok(()), Err)
    }
}

/// The end of the output: counters, or the histograms/summary document.
fn report(
    w: &mut impl Write,
    a: &BioArgs,
    trace: &BioTrace,
    tracer: &Tracing,
) -> anyhow::Result<()> {
    let stream = !a.hist && !a.summary;
    if stream {
        if a.json {
            let mut doc = serde_json::to_value(trace.counts())?;
            tracer.stamp(&mut doc);
            serde_json::to_writer(&mut *w, &doc)?;
            writeln!(w)?;
        }
        iolab_sys::say!("iolab: {} ({tracer})", trace.counts_line());
        return Ok(());
    }
    if a.json {
        let mut doc = serde_json::to_value(trace.counts())?;
        tracer.stamp(&mut doc);
        if a.hist {
            doc["histograms"] = serde_json::to_value(trace.histograms().histograms)?;
        }
        if a.summary {
            doc["processes"] = serde_json::to_value(trace.summary().processes)?;
        }
        serde_json::to_writer_pretty(&mut *w, &doc)?;
        writeln!(w)?;
        return Ok(());
    }
    if a.hist {
        write!(w, "{}", trace.histograms().render())?;
    }
    if a.summary {
        if a.hist {
            writeln!(w)?;
        }
        write!(
            w,
            "{}",
            iolab_bio::summary::render(&trace.summary().processes)
        )?;
    }
    writeln!(w, "\n{} ({tracer})", trace.counts_line())?;
    Ok(())
}

fn write_perfetto(path: &PathBuf, trace: &BioTrace) -> anyhow::Result<()> {
    let f = std::fs::File::create(path)
        .with_context(|| format!("--perfetto {}: cannot create the file", path.display()))?;
    let mut w = BufWriter::new(f);
    trace
        .write_perfetto(&mut w)
        .and_then(|_| w.flush())
        .with_context(|| format!("writing {}", path.display()))?;
    iolab_sys::say!(
        "iolab: wrote {} ({} requests, {} events lost): open it in https://ui.perfetto.dev",
        path.display(),
        trace.requests.len(),
        trace.lost_events
    );
    Ok(())
}
