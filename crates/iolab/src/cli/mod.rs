//! Command-line interface: clap derive, one file per subcommand. Doc comments
//! are the help text.

use clap::{Parser, Subcommand};

mod app;
mod boot;
pub mod boot_init;
mod cache;
mod child;
mod cpu;
mod db;
mod demo;
mod explain;
#[cfg(feature = "test-seams")]
mod guard_test;
mod lab;
mod load;
mod load_fio;
mod load_with_fio;
mod model_args;
mod model_server;
mod observe;
mod prefetch;
mod probe;
#[cfg(feature = "test-seams")]
mod read_ranges;
mod record;
mod relayout;
mod remote;
mod report;
mod restore;
mod results;
mod sched;
mod settings;
mod startup;
mod sweep;
mod trace;
mod values;

/// Reproduce, measure and explain I/O latency: start-up under background
/// I/O across schedulers, on disposable lab devices, with numbers you can
/// trust.
#[derive(Debug, Parser)]
#[command(name = "iolab", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create, inspect and remove disposable lab devices (loop or zram).
    #[command(subcommand)]
    Lab(lab::LabCommand),
    /// Run a background I/O workload (fio-style job file, flags or a named S workload).
    Load(load::LoadArgs),
    /// Time an app's start-up under background I/O: schedulers x workloads x reps.
    Startup(startup::StartupArgs),
    /// The thesis's Lprobe: timed 4 KiB reads and writes, logging slow ones.
    Probe(probe::ProbeArgs),
    /// A synthetic app launch (APK, libraries, dex, resources, SQLite-like db).
    App(app::AppArgs),
    /// List, show and export stored experiments.
    Results(results::ResultsArgs),
    /// One self-contained HTML file of stored experiments: charts, flame graphs, A/B comparison.
    Report(report::ReportArgs),
    /// mpstat-like CPU utilisation per interval, with io/cpu/memory pressure stalls.
    Cpu(cpu::CpuArgs),
    /// Compare I/O schedulers' throughput and latency (seed 002): patterns x seq/rand x read/write.
    Sweep(sweep::SweepArgs),
    /// Show the phenomenon on a fresh machine: throttled lab, all schedulers, 4 loads.
    Demo(demo::DemoArgs),
    /// Trace kernel events: `trace bio` for per-request block I/O.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Scheduling latency per task: record sched events, report, compare.
    #[command(subcommand)]
    Sched(sched::SchedCommand),
    /// Page-cache residency of files: counts, bars, ranges; evict or read in.
    Cache(cache::CacheArgs),
    /// Read a list of file ranges (or files) into the page cache, and report the cost.
    Prefetch(prefetch::PrefetchArgs),
    /// Rewrite the files of a prefetch list in its order, so they lie on disk as they are read (treadahead -w).
    Relayout(relayout::RelayoutArgs),
    /// Record which file ranges a command brings into the page cache, as a prefetch list.
    Record(record::RecordArgs),
    /// Where did the time go: a command's wall time as on-CPU, runnable and blocked by kernel cause.
    Explain(explain::ExplainArgs),
    /// Run any iolab command on a board (ssh) or a phone (adb) and merge its results here.
    Remote(remote::RemoteArgs),
    /// Undo system changes left behind by an iolab run that was killed.
    Restore(restore::RestoreArgs),
    /// What this machine's block I/O is set to: its I/O cgroups' values, and a disk's scheduler, queue and tunables (read only).
    Settings(settings::SettingsArgs),
    /// Boot time under boot prefetch variants, over real boots of a qemu guest (seed 001).
    Boot(boot::BootArgs),
    /// Boot prefetch started first (as PID 1, or init's first service): prefetch or record, then exec init.
    BootInit(boot_init::BootInitArgs),
    /// Test seam: make guarded changes, then hold/fail/panic (for tests).
    #[cfg(feature = "test-seams")]
    #[command(hide = true)]
    GuardTest(guard_test::GuardTestArgs),
    /// Test seam: read exactly the given byte ranges of a file (no readahead).
    #[cfg(feature = "test-seams")]
    #[command(hide = true)]
    ReadRanges(read_ranges::ReadRangesArgs),
    /// Internal: the device-model server of a `--backend model` lab.
    #[command(name = "__model-server", hide = true)]
    ModelServer(model_server::ModelServerArgs),
}

/// A clap error as one line, like every other usage error: its message,
/// then its tips ("a similar argument exists: '--bs'"), then where help is;
/// clap's own rendering spans five lines with a usage block.
fn clap_one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut msg = String::new();
    // The first paragraph holds the message, what it lists ("the following
    // required arguments were not provided:\n  --max") and the tips.
    for line in text.lines().map(str::trim).take_while(|l| !l.is_empty()) {
        if let Some(m) = line.strip_prefix("error: ") {
            msg.push_str(m);
        } else if let Some(tip) = line.strip_prefix("tip: ") {
            msg.push_str("; ");
            msg.push_str(tip);
        } else {
            msg.push(' ');
            msg.push_str(line);
        }
    }
    if msg.is_empty() {
        msg = text.lines().next().unwrap_or("bad arguments").to_string();
    }
    msg.push_str(" (see --help)");
    msg
}

/// Parses arguments, recovers any state a killed run left behind, installs
/// the signal handlers and dispatches.
pub fn run() -> anyhow::Result<()> {
    let argv = load::fio_flags(
        std::env::args_os().collect(),
        &<Cli as clap::CommandFactory>::command(),
    );
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            e.exit()
        }
        Err(e) => return Err(iolab_sys::UsageError::new(clap_one_line(&e)).into()),
    };
    if let Command::ModelServer(a) = cli.command {
        // A lab's server: no recovery of other runs, no signal handlers of
        // a foreground command; it ends when its FUSE mount goes away.
        return model_server::run(a);
    }
    let explicit_restore = matches!(cli.command, Command::Restore(_));
    if !explicit_restore && iolab_sys::is_root() {
        for line in iolab_guard::recover_stale()? {
            iolab_sys::say!("iolab: {line}");
        }
    }
    // A rung of BPF programs named wrongly is the user's mistake: said
    // here, rather than a silent fall back to tracefs wherever BPF is
    // optional; after the recovery of a killed run, and never for
    // `restore`, so a stale variable cannot stop either undoing changes.
    if !explicit_restore {
        if let Err(e) = iolab_bio::bpf::Tracepoints::from_env() {
            return Err(iolab_sys::UsageError::new(e.0).into());
        }
    }
    iolab_guard::install_signal_handlers()?;
    remote::stop_when_stdin_ends();
    match cli.command {
        Command::Lab(c) => lab::run(c),
        Command::Load(a) => load::run(a),
        Command::Startup(a) => startup::run(a),
        Command::Probe(a) => probe::run(a),
        Command::App(a) => app::run(a),
        Command::Results(a) => results::run(a),
        Command::Report(a) => report::run(a),
        Command::Cpu(a) => cpu::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Trace(c) => trace::run(c),
        Command::Sched(c) => sched::run(c),
        Command::Cache(a) => cache::run(a),
        Command::Prefetch(a) => prefetch::run(a),
        Command::Record(a) => record::run(a),
        Command::Explain(a) => explain::run(a),
        Command::Restore(a) => restore::run(a),
        Command::Settings(a) => settings::run(a),
        Command::Remote(a) => remote::run(a),
        Command::ModelServer(a) => model_server::run(a),
        // Reached only when `boot-init` is not argv[1] (see lib.rs).
        Command::Boot(a) => boot::run(a),
        Command::Relayout(a) => relayout::run(a),
        Command::BootInit(_) => boot_init::main(std::env::args_os().skip(1).collect()),
        #[cfg(feature = "test-seams")]
        Command::GuardTest(a) => guard_test::run(a),
        #[cfg(feature = "test-seams")]
        Command::ReadRanges(a) => read_ranges::run(a),
    }
}

/// Fails with a usage error unless running as root; `what` names the action.
pub fn require_root(what: &str) -> anyhow::Result<()> {
    if iolab_sys::is_root() {
        Ok(())
    } else {
        Err(iolab_sys::UsageError::new(format!(
            "{what} changes kernel state and needs root: run it with sudo"
        ))
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
