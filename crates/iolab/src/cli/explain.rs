//! `iolab explain`: where a command's (or a running process's) wall time
//! went — on-CPU, waiting for a CPU, and blocked by named kernel cause.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use iolab_explain::report::{folded, perfetto, text};
use iolab_explain::{Attribution, Explainer, ExplainerConfig, RuleSet};
use iolab_sys::UsageError;

/// Shown by `iolab explain --help` after the options.
const HELP: &str = "\
Follows the command (started held before exec, so nothing is missed) or
the running process -p PID with its threads and children, in a private
trace instance: every switch-out into a sleep with its kernel stack, the
wakeup and who did it, the switch-in. Each sleep's cause comes from an
ordered rule table (`--list-rules`; extend it with `--rules FILE`, whose
syntax the table itself documents). Idle waits (a shell waiting for its
child, a pipe, a futex, nanosleep) are listed apart: they are not stalls.
Folded output (`--folded`) feeds flamegraph.pl, inferno or speedscope;
`--perfetto FILE` opens in ui.perfetto.dev. Needs root.";

/// Arguments of `iolab explain`; see [`HELP`].
#[derive(Debug, Args)]
#[command(after_long_help = HELP)]
pub struct ExplainArgs {
    /// Follow this running process (its threads and descendants) until it
    /// exits, --duration passes, or Ctrl-C.
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<i32>,
    /// With -p: stop after this long (10s, 500ms).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// List stalls (switch-out to switch-in) at least this long, ms.
    #[arg(long, default_value = "1", value_name = "MS", value_parser = super::values::millis)]
    pub min_stall: f64,
    /// Stalls shown in the report (the JSON keeps up to 1000).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// Print folded stacks (`cause;frame;...;frame blocked_us`) instead of the report.
    #[arg(long, conflicts_with = "json")]
    pub folded: bool,
    /// Print the attribution as JSON instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Also write a Chrome JSON trace (stalls as slices per task) to FILE.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Rule file read before the built-in table (its rules win).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Print the rule table (with --rules: the combined one) and exit.
    #[arg(long)]
    pub list_rules: bool,
    /// Do not record the waker's stack with each wakeup (less overhead;
    /// stalls then show who woke them but not where).
    #[arg(long)]
    pub no_waker_stacks: bool,
    /// tracefs (every switch, wakeup and stack read by iolab: the full
    /// report) or bpf (blocked time summed per kernel stack in the kernel:
    /// the causes and their stacks only, nothing crossing to user space
    /// per sleep).
    #[arg(long, value_enum, default_value_t = ExplainTracer::Tracefs)]
    pub tracer: ExplainTracer,
    /// The command to run and explain.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `--tracer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExplainTracer {
    /// iolab's tracefs instance, every event read.
    Tracefs,
    /// Blocked time by stack, summed in the kernel.
    Bpf,
}

fn rules(args: &ExplainArgs) -> anyhow::Result<RuleSet> {
    match &args.rules {
        None => Ok(RuleSet::builtin()),
        Some(p) => RuleSet::with_file(p).map_err(|e| UsageError::new(e.to_string()).into()),
    }
}

fn list_rules(rules: &RuleSet) -> String {
    let mut out = format!("rules: {} (first match wins)\n", rules.source);
    for (i, r) in rules.rules.iter().enumerate() {
        let pats = |s: &iolab_explain::pattern::PatternSet| {
            s.0.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(" ")
        };
        out.push_str(&format!("{:>2}. {} ({:?})\n", i + 1, r.cause, r.kind));
        out.push_str(&format!("    any:    {}\n", pats(&r.any)));
        if !r.also.is_empty() {
            out.push_str(&format!("    also:   {}\n", pats(&r.also)));
        }
        if !r.unless.is_empty() {
            out.push_str(&format!("    unless: {}\n", pats(&r.unless)));
        }
        out.push_str(&format!("    {}\n", r.doc));
    }
    out
}

/// Runs `iolab explain`.
pub fn run(args: ExplainArgs) -> anyhow::Result<()> {
    let rules = rules(&args)?;
    if args.list_rules {
        iolab_sys::show_part!("{}", list_rules(&rules));
        return Ok(());
    }
    match (args.pid, args.command.is_empty()) {
        (Some(_), false) => {
            return Err(UsageError::new("give either -p PID or -- COMMAND, not both").into())
        }
        (None, true) => return Err(UsageError::new(
            "nothing to explain: give -p PID or -- COMMAND (e.g. iolab explain -- cat big.file)",
        )
        .into()),
        _ => {}
    }
    if args.duration.is_some() && args.pid.is_none() {
        return Err(UsageError::new(
            "--duration applies to -p PID; a command is followed until it exits",
        )
        .into());
    }
    let duration = args
        .duration
        .as_deref()
        .map(iolab_sys::units::parse_duration)
        .transpose()?;
    if !(args.min_stall.is_finite() && args.min_stall >= 0.0) {
        return Err(UsageError::new(format!(
            "--min-stall {}: expected a number of milliseconds >= 0",
            args.min_stall
        ))
        .into());
    }
    if args.tracer == ExplainTracer::Bpf && args.perfetto.is_some() {
        return Err(UsageError::new(
            "--tracer bpf sums blocked time in the kernel; --perfetto needs every stall: use --tracer tracefs",
        )
        .into());
    }
    super::require_root("iolab explain")?;
    if args.tracer == ExplainTracer::Bpf {
        return run_bpf(&args, &rules, duration);
    }

    let config = ExplainerConfig {
        rules,
        min_stall_ns: iolab_sys::cast::floor_u64(args.min_stall * 1e6),
        waker_stacks: !args.no_waker_stacks,
        ..ExplainerConfig::default()
    };
    let guard = iolab_guard::Guard::new();
    let quiet_stdout = args.json || args.folded;
    let (attribution, note) = match args.pid {
        Some(pid) => (follow_pid(&guard, pid, duration, config)?, None),
        None => run_command(&guard, &args.command, quiet_stdout, config)?,
    };
    if let Some(path) = &args.perfetto {
        let doc = perfetto::render(&attribution);
        std::fs::write(path, serde_json::to_vec(&doc)?)
            .with_context(|| format!("cannot write the Perfetto trace to {}", path.display()))?;
    }
    let out = if args.json {
        serde_json::to_string_pretty(&attribution)? + "\n"
    } else if args.folded {
        folded::render(&attribution)
    } else {
        let opts = text::TextOptions {
            stalls: args.top,
            ..text::TextOptions::default()
        };
        text::render(&attribution, &opts)
    };
    print(&out, note)?;
    if attribution.trace.lost > 0 {
        iolab_sys::say!(
            "iolab explain: warning: the kernel lost {} events (trace buffer full): totals around them are untraced",
            attribution.trace.lost
        );
    }
    Ok(())
}

fn run_command(
    guard: &iolab_guard::Guard,
    argv: &[String],
    quiet_stdout: bool,
    config: ExplainerConfig,
) -> anyhow::Result<(Attribution, Option<String>)> {
    let held = hold(argv, quiet_stdout)?;
    let pid = held.pid();
    // If tracing cannot start, dropping `held` closes the gate: the child
    // exits without running the command.
    let config = ExplainerConfig {
        held_root: true,
        ..config
    };
    let explainer = Explainer::start_with(guard, pid, config).context("cannot start tracing")?;
    let (cpu_ns, note) = release(held)?;
    Ok((explainer.finish_with_cpu(Some(cpu_ns))?, note))
}

fn follow_pid(
    guard: &iolab_guard::Guard,
    pid: i32,
    duration: Option<Duration>,
    config: ExplainerConfig,
) -> anyhow::Result<Attribution> {
    let start_time = start_time(pid)?;
    let explainer = Explainer::start_with(guard, pid, config).context("cannot start tracing")?;
    wait_alive(pid, start_time, duration);
    Ok(explainer.finish()?)
}

/// `--tracer bpf`: the causes summed in the kernel.
fn run_bpf(args: &ExplainArgs, rules: &RuleSet, duration: Option<Duration>) -> anyhow::Result<()> {
    use iolab_explain::bpf::OffCpuBpf;
    let guard = iolab_guard::Guard::new();
    let unavailable =
        |e: iolab_trace::bpf::BpfUnavailable| UsageError::new(format!("--tracer bpf: {e}"));
    let (off, note) = match args.pid {
        Some(pid) => {
            let start_time = start_time(pid)?;
            let tids = iolab_explain::procfs::tree_tids(std::path::Path::new("/proc"), pid)?;
            let bpf = OffCpuBpf::start(&guard, &tids).map_err(unavailable)?;
            wait_alive(pid, start_time, duration);
            (bpf.finish(rules)?, None)
        }
        None => {
            let held = hold(&args.command, args.json || args.folded)?;
            // Dropping `held` on an error closes the gate: the command
            // never runs.
            let bpf = OffCpuBpf::start(&guard, &[held.pid()]).map_err(unavailable)?;
            let (_, note) = release(held)?;
            (bpf.finish(rules)?, note)
        }
    };
    drop(guard);
    let out = if args.json {
        serde_json::to_string_pretty(&off)? + "\n"
    } else if args.folded {
        iolab_explain::report::folded::lines(
            off.stacks
                .iter()
                .map(|s| (s.cause.as_str(), s.frames.as_slice(), s.blocked_ns)),
        )
    } else {
        bpf_text(&off)
    };
    print(&out, note)?;
    if off.counters.no_room > 0 {
        iolab_sys::say!(
            "iolab explain: warning: {} sleeps or tasks the BPF maps had no room for: their time is missing",
            off.counters.no_room
        );
    }
    if let Some(n) = off.counters.skipped_program_runs.filter(|&n| n > 0) {
        iolab_sys::say!(
            "iolab explain: warning: the kernel skipped {n} runs of the BPF programs (another BPF program was running on that CPU): those sleeps or wakeups are missing"
        );
    }
    Ok(())
}

fn bpf_text(off: &iolab_explain::bpf::OffCpu) -> String {
    let total: u64 = off.causes.iter().map(|c| c.blocked_ns).sum();
    let mut s = format!(
        "Blocked time by cause over {:.2} s, summed in the kernel (--tracer bpf):\n{:<36} {:<8} {:>12} {:>7} {:>8} {:>10}\n",
        off.duration_s, "cause", "kind", "blocked ms", "share", "sleeps", "max ms"
    );
    for c in &off.causes {
        s.push_str(&format!(
            "{:<36} {:<8} {:>12.1} {:>6.1}% {:>8} {:>10.1}\n",
            c.cause,
            format!("{:?}", c.kind).to_lowercase(),
            c.blocked_ns as f64 / 1e6,
            if total > 0 {
                100.0 * c.blocked_ns as f64 / total as f64
            } else {
                0.0
            },
            c.sleeps,
            c.max_ns as f64 / 1e6
        ));
    }
    let k = &off.counters;
    s.push_str(&format!(
        "{} sleeps ({} woken, {} woken while switching out, {} still asleep at the end), {} without a stack, {} with no room in the maps\n",
        k.sleeps, k.woken, k.raced, k.open, k.no_stack, k.no_room
    ));
    s
}

/// The command, held before exec; its output to stderr when stdout
/// carries the JSON or the folded stacks.
fn hold(argv: &[String], quiet_stdout: bool) -> anyhow::Result<iolab_spawn::Held> {
    let spec = iolab_spawn::Spec {
        stdout: if quiet_stdout {
            iolab_spawn::Output::ToStderr
        } else {
            iolab_spawn::Output::Inherit
        },
        ..iolab_spawn::Spec::new(argv)
    };
    Ok(iolab_spawn::hold(&spec).map_err(|e| UsageError::new(e.to_string()))?)
}

/// Lets the held command run and waits for it: its CPU time (ns), and a
/// note when it did not exit 0.
fn release(held: iolab_spawn::Held) -> anyhow::Result<(u64, Option<String>)> {
    use std::os::unix::process::ExitStatusExt;
    let done = held
        .release()
        .map_err(|e| UsageError::new(e.to_string()))?
        .wait()
        .context("waiting for the command")?;
    let note = match (done.status.code(), done.status.signal()) {
        (Some(0), _) => None,
        (Some(c), _) => Some(format!("the command exited with status {c}")),
        (None, Some(s)) => Some(format!("the command was killed by signal {s}")),
        _ => None,
    };
    Ok((done.cpu_ns(), note))
}

/// `pid`'s start time, which tells it from a later process of that pid.
fn start_time(pid: i32) -> anyhow::Result<u64> {
    iolab_sys::process::start_time(pid).ok_or_else(|| {
        UsageError::new(format!(
            "no process {pid}: expected the pid of a running process"
        ))
        .into()
    })
}

/// Until `pid` exits, Ctrl-C, or `duration` passes.
fn wait_alive(pid: i32, start_time: u64, duration: Option<Duration>) {
    let t0 = Instant::now();
    while iolab_sys::process::is_alive(pid, start_time)
        && !iolab_guard::stop_requested()
        && duration.is_none_or(|d| t0.elapsed() < d)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes the report to stdout (a closed pipe ends it quietly), then the
/// note about the command on stderr.
fn print(out: &str, note: Option<String>) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(out.as_bytes())
        .and_then(|_| stdout.flush())
    {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e.into());
        }
    }
    if let Some(n) = note {
        iolab_sys::say!("iolab explain: {n}");
    }
    Ok(())
}
