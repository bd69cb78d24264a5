//! `iolab sched record|report|compare` — scheduling latency per task, the
//! seed-004 workflow (`perf sched record` + `perf sched latency`) as one
//! tool, with medians, percentiles, histograms and before/after tables.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use regex::Regex;
use serde::Serialize;

use iolab_sched::compare::{Comparison, SeedStats};
use iolab_sched::text::{BpfReport, Report};
use iolab_sched::{
    analyze_file, DelaySelect, Loaded, RecordOptions, SchedError, Selection, SortKey, WakeFrom,
};
use iolab_sys::UsageError;

/// Sched subcommands.
#[derive(Debug, Subcommand)]
pub enum SchedCommand {
    /// Record scheduler events (raw ring-buffer pages, decoded later) for
    /// a duration, until a command exits, or until Ctrl-C.
    Record(RecordArgs),
    /// Per-task scheduling delay of a recording: run time, switches,
    /// wakeup and preemption delays (avg, median, p99, max, stddev).
    Report(ReportArgs),
    /// Two recordings side by side: the seed's Average / Median / Minimum
    /// / Maximum / Standard deviation table with a diff column.
    Compare(CompareArgs),
}

/// Arguments of `iolab sched record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Trace file to write.
    #[arg(short, long, default_value = "sched.trace")]
    pub output: PathBuf,
    /// Record for this long (seconds, or 500ms, 2m ...).
    #[arg(long, conflicts_with = "command", value_parser = super::values::duration)]
    pub duration: Option<Duration>,
    /// Also record workqueue_queue_work and workqueue_execute_start: work
    /// item latency, and worker delays attributed to the work they ran.
    #[arg(long)]
    pub workqueue: bool,
    /// Ring buffer per CPU, KiB (default 16384).
    #[arg(long, value_name = "KIB")]
    pub buffer_size: Option<u32>,
    /// Who counts: tracefs (the default: every event recorded, every raw
    /// delay kept, report's --samples, --work and --from waking, compare
    /// of anything) or bpf (the delays summed per task in the kernel,
    /// nothing per event crossing to user space: for long or busy
    /// recordings; the file is the sums, as JSON).
    #[arg(long, default_value = "tracefs", value_name = "tracefs|bpf")]
    pub tracer: String,
    /// Write back and drop the page cache before recording, so reads
    /// during the recording start cold.
    #[arg(long)]
    pub drop_caches: bool,
    /// The EROFS lab whose knobs --sync-decompress sets.
    #[arg(long, value_name = "NAME", requires = "sync_decompress")]
    pub lab: Option<String>,
    /// EROFS decompression mode of --lab for the recording (restored
    /// after): auto (0, the kernel's default), on (1: small reads
    /// decompress in the reading task) or off (2: always on the
    /// erofs_worker workqueue).
    #[arg(long, value_name = "auto|on|off", requires = "lab")]
    pub sync_decompress: Option<String>,
    /// Print what was recorded as JSON.
    #[arg(long)]
    pub json: bool,
    /// Command to run while recording (after `--`); recording stops when
    /// it exits.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Which tasks and delays (shared by report and compare).
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Only tasks whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub comm: Option<String>,
    /// Only the task with this id (a thread id, as after the colon).
    #[arg(long)]
    pub pid: Option<i32>,
    /// Only delays after which a worker ran a work item whose
    /// `function@workqueue` matches (needs `record --workqueue`), e.g.
    /// z_erofs or erofs_worker.
    #[arg(long, value_name = "REGEX")]
    pub work: Option<String>,
    /// Delays pooled by --summary, --hist and compare: all (wakeup and
    /// preemption), wakeup or preempt.
    #[arg(long, default_value = "all")]
    pub delay: String,
    /// Where a wakeup delay starts: wakeup (sched_wakeup, as perf sched
    /// latency) or waking (sched_waking, as Perfetto).
    #[arg(long, default_value = "wakeup", value_name = "wakeup|waking")]
    pub from: String,
}

/// Arguments of `iolab sched report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Trace file made by `iolab sched record`.
    pub file: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Sort keys, comma-separated: avg, max, median, p99, switch, runtime,
    /// pid, comm (perf's default: avg,max).
    #[arg(long, short, default_value = "avg,max")]
    pub sort: String,
    /// One row per task name, instance numbers normalised
    /// (kworker/1:2H → kworker/*:*H, erofs_worker/1 → erofs_worker/*).
    #[arg(long)]
    pub by_comm: bool,
    /// The seed's table (Average / Median / Minimum / Maximum / Standard
    /// deviation, µs) over every selected delay, instead of the task table.
    #[arg(long)]
    pub summary: bool,
    /// Log2 histogram of the selected delays.
    #[arg(long)]
    pub hist: bool,
    /// Show at most N rows.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print JSON (perf sched latency's fields plus iolab's).
    #[arg(long)]
    pub json: bool,
    /// With --json: include every raw delay sample of the selected tasks.
    #[arg(long, requires = "json")]
    pub samples: bool,
}

/// Arguments of `iolab sched compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The "before" recording.
    pub a: PathBuf,
    /// The "after" recording.
    pub b: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs a sched subcommand.
pub fn run(c: SchedCommand) -> anyhow::Result<()> {
    match c {
        SchedCommand::Record(a) => record(a),
        SchedCommand::Report(a) => report(a),
        SchedCommand::Compare(a) => compare(a),
    }
}

#[derive(Serialize)]
struct Recorded {
    file: PathBuf,
    events: u64,
    lost_events: u64,
    bytes: u64,
    duration_s: f64,
    /// CPU time of iolab itself (reader thread included, the command not).
    cpu_user_s: f64,
    cpu_sys_s: f64,
    command_exit: Option<i32>,
}

fn record(a: RecordArgs) -> anyhow::Result<()> {
    let bpf = match a.tracer.as_str() {
        "tracefs" => false,
        "bpf" => true,
        other => {
            return Err(UsageError::new(format!(
                "--tracer: unknown tracer {other:?}: expected tracefs or bpf"
            ))
            .into())
        }
    };
    // What only a trace has, refused before anything starts.
    let refused = if !bpf {
        None
    } else if a.workqueue {
        Some("--workqueue (work items are in the trace only)")
    } else if a.buffer_size.is_some() {
        Some("--buffer-size (the programs keep sums, not a ring buffer)")
    } else {
        None
    };
    if let Some(what) = refused {
        return Err(
            UsageError::new(format!("--tracer bpf has no {what}: use --tracer tracefs")).into(),
        );
    }
    super::require_root("iolab sched record")?;
    let guard = iolab_guard::Guard::new();
    if let (Some(lab), Some(mode)) = (&a.lab, &a.sync_decompress) {
        set_sync_decompress(&guard, lab, mode)?;
    }
    if a.drop_caches {
        guard.drop_caches(None)?;
    }
    let t0 = Instant::now();
    enum Started {
        Trace(iolab_trace::Recorder),
        Bpf(iolab_sched::bpf::SchedBpf),
    }
    let (started, doing) = if bpf {
        let b = iolab_sched::bpf::SchedBpf::start(&guard)
            .map_err(|e| UsageError::new(format!("--tracer bpf: {e}")))?;
        (Started::Bpf(b), "counting in the kernel".to_string())
    } else {
        let opts = RecordOptions {
            workqueue: a.workqueue,
            buffer_kib_per_cpu: a.buffer_size.unwrap_or(16384),
        };
        let r = iolab_sched::start_recording(&guard, &opts, &a.output)?;
        (
            Started::Trace(r),
            format!("recording to {}", a.output.display()),
        )
    };
    let command_exit = if a.command.is_empty() {
        let until = a.duration.map(|d| t0 + d);
        if until.is_none() && !a.json {
            iolab_sys::say!("iolab: {doing}; Ctrl-C to stop");
        }
        while !iolab_guard::stop_requested() && until.is_none_or(|u| Instant::now() < u) {
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    } else {
        run_command(&guard, &a.command)?
    };
    // (events, lost, bytes written, what the text line says was made)
    let (events, lost, bytes, made) = match started {
        Started::Trace(r) => {
            let stats = r.finish().map_err(SchedError::from)?;
            let bytes = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
            (stats.events, stats.lost, bytes, "recorded".to_string())
        }
        Started::Bpf(b) => {
            let rec = b.finish()?;
            let text = serde_json::to_vec_pretty(&rec)?;
            // Whole or not at all: written beside it, then renamed over it.
            let tmp = a.output.with_extension("json.part");
            std::fs::write(&tmp, &text)
                .and_then(|()| std::fs::rename(&tmp, &a.output))
                .with_context(|| format!("writing {}", a.output.display()))?;
            let made = format!("counted in the kernel, {} tasks,", rec.tasks.len());
            (
                rec.counters.events,
                rec.counters.no_room,
                text.len() as u64,
                made,
            )
        }
    };
    let (user, sys) = self_cpu();
    let out = Recorded {
        bytes,
        file: a.output,
        events,
        lost_events: lost,
        duration_s: t0.elapsed().as_secs_f64(),
        cpu_user_s: user,
        cpu_sys_s: sys,
        command_exit,
    };
    if a.json {
        iolab_sys::show!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        iolab_sys::say!(
            "iolab: {made} {} events ({} lost) in {:.1} s to {} ({}); recorder CPU {:.2} s",
            out.events,
            out.lost_events,
            out.duration_s,
            out.file.display(),
            iolab_sys::units::format_bytes(out.bytes),
            user + sys
        );
    }
    if let Some(code) = command_exit.filter(|&c| c != 0) {
        anyhow::bail!("the recorded command exited with status {code}");
    }
    Ok(())
}

/// Sets `/sys/fs/erofs/<dev>/sync_decompress` of the EROFS lab `lab`
/// through the guard (restored when the recording ends). Values as in
/// Documentation/ABI/testing/sysfs-fs-erofs: 0 auto, 1 force on, 2 force
/// off.
fn set_sync_decompress(guard: &iolab_guard::Guard, lab: &str, mode: &str) -> anyhow::Result<()> {
    let value = match mode {
        "auto" | "0" => "0",
        "on" | "1" => "1",
        "off" | "2" => "2",
        other => {
            return Err(UsageError::new(format!(
                "--sync-decompress {other:?}: expected auto, on or off (0, 1, 2)"
            ))
            .into())
        }
    };
    let l = iolab_lab::open(lab).map_err(anyhow::Error::from)?;
    let knob = Path::new("/sys/fs/erofs")
        .join(&l.device().name)
        .join("sync_decompress");
    if !knob.exists() {
        return Err(UsageError::new(format!(
            "lab {lab:?} has no {}: --sync-decompress needs an EROFS lab (iolab lab up --fs erofs --from DIR)",
            knob.display()
        ))
        .into());
    }
    guard.write_attr(&knob, value)?;
    Ok(())
}

/// Runs `argv` in its own process group (killed through the guard if iolab
/// dies) with the terminal's stdio; returns its exit status.
fn run_command(guard: &iolab_guard::Guard, argv: &[String]) -> anyhow::Result<Option<i32>> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .process_group(0)
        .spawn()
        .map_err(|e| {
            UsageError::new(format!(
                "cannot start {:?}: {e}: expected an executable on PATH or a path to one",
                argv[0]
            ))
        })?;
    let pgid = rustix::process::Pid::from_child(&child)
        .as_raw_nonzero()
        .get();
    let tracked = guard.track_process_group(pgid)?;
    let mut signalled = false;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if iolab_guard::stop_requested() && !signalled {
            // Ctrl-C reached iolab's group only: pass it on.
            // SAFETY: kill(2) on our own child's process group.
            unsafe { libc::kill(-pgid, libc::SIGINT) };
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    guard.forget(tracked)?;
    Ok(status.code().or(status.signal().map(|s| 128 + s)))
}

/// A recording made by `--tracer bpf` (JSON), or `None` for a trace file.
fn bpf_recording(path: &Path) -> anyhow::Result<Option<iolab_sched::bpf::BpfRecording>> {
    use std::io::Read;
    let reading = || format!("reading {}", path.display());
    // A trace file can be large: only its head decides.
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(256).read_to_end(&mut head))
        .with_context(reading)?;
    if head.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Ok(None);
    }
    let bytes = std::fs::read(path).with_context(reading)?;
    let not_ours = |e: &dyn std::fmt::Display| {
        UsageError::new(format!(
            "{}: not a recording of iolab sched record --tracer bpf: {e}",
            path.display()
        ))
    };
    // The format first, so a newer one says so rather than "not ours".
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| not_ours(&e))?;
    match v.get("format").and_then(|f| f.as_str()) {
        Some(iolab_sched::bpf::FORMAT) => {}
        Some(other) => {
            return Err(UsageError::new(format!(
                "{}: format {other:?}, this iolab reads {}",
                path.display(),
                iolab_sched::bpf::FORMAT
            ))
            .into())
        }
        None => return Err(not_ours(&"no \"format\"").into()),
    }
    Ok(Some(serde_json::from_value(v).map_err(|e| not_ours(&e))?))
}

/// What a BPF recording cannot answer (it holds sums, not samples).
fn bpf_refuses(path: &Path, s: &SelectArgs, samples: bool) -> anyhow::Result<()> {
    let why = if s.work.is_some() {
        Some("--work (no work items are counted)")
    } else if s.from != "wakeup" {
        Some("--from waking (the programs start delays at sched_wakeup)")
    } else if samples {
        Some("--samples (the kernel kept sums, not each delay)")
    } else {
        None
    };
    match why {
        Some(w) => Err(UsageError::new(format!(
            "{} was counted in the kernel (--tracer bpf): it has no {w}; record with --tracer tracefs",
            path.display()
        ))
        .into()),
        None => Ok(()),
    }
}

/// User and system CPU time of this process, s.
fn self_cpu() -> (f64, f64) {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

fn selection(s: &SelectArgs) -> anyhow::Result<(Selection, WakeFrom)> {
    let re = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<Regex>> {
        v.as_deref()
            .map(|r| {
                Regex::new(r).map_err(|e| {
                    // regex's syntax errors span lines (pattern, caret,
                    // reason): keep the reason.
                    let why = e.to_string();
                    let why = why
                        .lines()
                        .last()
                        .unwrap_or_default()
                        .trim_start_matches("error: ")
                        .to_string();
                    UsageError::new(format!("{flag}: invalid regular expression {r:?}: {why}"))
                        .into()
                })
            })
            .transpose()
    };
    let from = match s.from.as_str() {
        "wakeup" => WakeFrom::Wakeup,
        "waking" => WakeFrom::Waking,
        other => {
            return Err(UsageError::new(format!(
                "--from: unknown start {other:?}: expected wakeup (sched_wakeup, perf's) or waking (sched_waking, Perfetto's)"
            ))
            .into())
        }
    };
    Ok((
        Selection {
            comm: re("--comm", &s.comm)?,
            tid: s.pid,
            work: re("--work", &s.work)?,
            delay: DelaySelect::parse(&s.delay)
                .map_err(|e| UsageError::new(format!("--delay: {e}")))?,
        },
        from,
    ))
}

fn load(path: &Path, from: WakeFrom) -> anyhow::Result<Loaded> {
    analyze_file(path, from).with_context(|| format!("reading {}", path.display()))
}

fn report(a: ReportArgs) -> anyhow::Result<()> {
    let (sel, from) = selection(&a.select)?;
    let sort = SortKey::parse_list(&a.sort).map_err(|e| UsageError::new(format!("--sort: {e}")))?;
    if let Some(rec) = bpf_recording(&a.file)? {
        bpf_refuses(&a.file, &a.select, a.samples)?;
        let r = BpfReport::of(&rec, &sel, &sort, a.by_comm, a.limit, a.summary, a.hist);
        if a.json {
            let doc = r.json(&a.file, &rec, &sel);
            iolab_sys::show!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            iolab_sys::show_part!("{}", r.text(&a.file, &rec, &a.select.delay));
        }
        return Ok(());
    }
    let l = load(&a.file, from)?;
    let r = Report::of(&l, &sel, &sort, a.by_comm, a.limit, a.summary, a.hist);
    if a.json {
        let doc = r.json(&a.file, &l, &sel, a.samples);
        iolab_sys::show!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        iolab_sys::show_part!("{}", r.text(&a.file, &l, &sel, &a.select.delay));
    }
    Ok(())
}

fn compare(a: CompareArgs) -> anyhow::Result<()> {
    let (sel, from) = selection(&a.select)?;
    // Either kind of recording: the seed's statistics of its pooled
    // delays, and the events it lost.
    let stats = |p: &Path| -> anyhow::Result<(SeedStats, u64)> {
        if let Some(rec) = bpf_recording(p)? {
            bpf_refuses(p, &a.select, false)?;
            return Ok((
                SeedStats::of_summary(&rec.pooled(&sel).summary()),
                rec.counters.no_room,
            ));
        }
        let l = load(p, from)?;
        Ok((
            SeedStats::of(sel.pooled(&l.analysis, &l.symbols)),
            l.stats.lost,
        ))
    };
    let (sa, lost_a) = stats(&a.a)?;
    let (sb, lost_b) = stats(&a.b)?;
    let label = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let c = Comparison::new(&label(&a.a), sa, lost_a, &label(&a.b), sb, lost_b);
    if a.json {
        iolab_sys::show!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        iolab_sys::show!("{} delay of the selected tasks:", a.select.delay);
        iolab_sys::show_part!("{}", c.render());
    }
    Ok(())
}
