//! `iolab app`: prepare or launch the synthetic Android-like app.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use iolab_experiment::targets::app::{self, StartReport};
use iolab_sys::units::format_bytes;

/// Shown by `iolab app --help` after the options.
const HELP: &str = "\
`iolab app --prepare --dir DIR` creates the file set once (60.5 MiB at
scale 1: a 24 MiB base.apk, 8 native libraries of 0.25-6 MiB, base.odex
8 MiB, base.vdex 6 MiB, base.art 2 MiB, 200 resource files of 1-64 KiB,
a 2 MiB database, 8 KiB of preferences). `iolab app --dir DIR` launches
it, in Android's order: central directory of the APK; base.art read
whole, odex/vdex mapped with 15 %/10 % of their pages touched; each
library's ELF header read, then mapped with 20 % of its pages touched in
clusters at random places; preferences, database header and 64 random
pages read; 2 journaled transactions (journal, fsync, pages, fsync,
delete); resources.arsc and 48 APK entries read; 2 of 3 resource files
read; preferences rewritten with fsync. In all 8.5 MiB read(2), 4.8 MiB
of pages touched through mappings, 105 KiB written, 5 fsyncs; cold,
27-40 MiB come from storage (more with a bigger read_ahead_kb), about
1.1-1.9 s on an idle 20 MiB/s device. Reads go through the page cache:
`iolab startup` makes them cold; on its own, pass --evict.";

/// Arguments of `iolab app`; see [`HELP`].
#[derive(Debug, Args)]
#[command(after_long_help = HELP)]
pub struct AppArgs {
    /// Directory of the app's file set.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Create the file set (once; a no-op if DIR already holds it).
    #[arg(long)]
    pub prepare: bool,
    /// Sizes and counts relative to the documented profile (0.25 to 4;
    /// 0.5 lighter, 2 heavier). A launch uses the scale DIR was prepared
    /// with; giving a different one is an error.
    #[arg(long, value_name = "FACTOR", value_parser = super::values::scale)]
    pub scale: Option<f64>,
    /// Seed of the content and of the access pattern.
    #[arg(long, default_value_t = app::DEFAULT_SEED)]
    pub seed: u64,
    /// Evict the app's files from the page cache first, so the launch is cold.
    #[arg(long)]
    pub evict: bool,
    /// Print `ready` on stderr when the launch is done (for --ready-line).
    #[arg(long)]
    pub ready: bool,
    /// Output JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Instead of the synthetic app, replay an S suite start-up trace
    /// (comm_startup_lat's xterm.trace, gnometerm.trace, lowriter.trace)
    /// with S's semantics on per-process files in DIR (--prepare makes them).
    #[arg(long, value_name = "FILE.trace", conflicts_with_all = ["scale", "evict"])]
    pub replay: Option<PathBuf>,
    /// With --replay: issue as fast as possible, as S's replay-startup-io
    /// does, instead of keeping the trace's inter-arrival delays.
    #[arg(long, requires = "replay")]
    pub no_delays: bool,
}

/// Runs `iolab app`.
pub fn run(a: AppArgs) -> anyhow::Result<()> {
    if let Some(trace) = &a.replay {
        return replay(&a, trace);
    }
    if a.prepare {
        return prepare(&a);
    }
    let m = app::Manifest::load(&a.dir)?;
    if let Some(s) = a.scale.filter(|&s| s != m.scale) {
        return Err(iolab_sys::UsageError::new(format!(
            "{} was prepared with --scale {}, not {s}: prepare another --dir with --scale {s}",
            a.dir.display(),
            m.scale
        ))
        .into());
    }
    if a.evict {
        iolab_sys::pagecache::evict(&app::manifest_files(&a.dir)?)
            .context("evicting the app's files")?;
    }
    let report = app::start(&a.dir, &m).context("launching the app")?;
    finish(a.ready, a.json, &report, || render(&report))
}

/// After a launch: `ready` on stderr when asked (for --ready-line), then
/// the report as JSON or text.
fn finish<T: serde::Serialize>(
    ready: bool,
    json: bool,
    report: &T,
    text: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    if ready {
        iolab_sys::say!("ready");
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", text())?;
    }
    Ok(())
}

fn prepare(a: &AppArgs) -> anyhow::Result<()> {
    let scale = a.scale.unwrap_or(1.0);
    let (m, verb) = match app::check_prepared(&a.dir, scale, a.seed)? {
        Some(m) => (m, "already prepared"),
        None => (
            app::prepare(&a.dir, scale, a.seed).context("preparing the app")?,
            "prepared",
        ),
    };
    let t = app::totals(&m, &app::plan(&m));
    if a.json {
        let v = serde_json::json!({ "dir": a.dir, "manifest": m, "profile": t });
        iolab_sys::show!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        iolab_sys::show!(
            "{verb} {}: {} files, {} (scale {}, seed {}); a launch reads {}, touches {} pages, writes {}, {} fsyncs",
            a.dir.display(),
            m.files.len(),
            format_bytes(m.total_bytes()),
            m.scale,
            m.seed,
            format_bytes(t.read_bytes),
            t.touched_pages,
            format_bytes(t.write_bytes),
            t.fsyncs
        );
    }
    Ok(())
}

fn render(r: &StartReport) -> String {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut t = format!(
        "app launch: {:.1} ms{}\n",
        ms(r.elapsed_ns),
        if r.interrupted { " (interrupted)" } else { "" }
    );
    for p in &r.phases {
        t += &format!("  {:<13} {:>9.1} ms\n", p.name, ms(p.elapsed_ns));
    }
    let d = &r.done;
    t += &format!(
        "  {} files, read(2) {} in {} calls, {} pages touched in {} mappings, {} written, {} fsyncs\n",
        d.files_opened,
        format_bytes(d.read_bytes),
        r.read_calls,
        d.touched_pages,
        d.mapped_files,
        format_bytes(d.write_bytes),
        d.fsyncs
    );
    if let Some(io) = &r.proc_io {
        t += &format!("  from storage: {} read\n", format_bytes(io.read_bytes));
    }
    for s in &r.recovered {
        t += &format!("  cleaned up after a killed launch: {s}\n");
    }
    t
}

/// `iolab app --replay FILE.trace`.
fn replay(a: &AppArgs, path: &std::path::Path) -> anyhow::Result<()> {
    use iolab_experiment::targets::replay::{self as r, ReplayOptions, Trace};
    let text = std::fs::read_to_string(path).map_err(|e| {
        iolab_sys::UsageError::new(format!(
            "cannot read trace {}: {e}; expected one of S's comm_startup_lat traces",
            path.display()
        ))
    })?;
    let trace = Trace::parse(&text)
        .map_err(|e| iolab_sys::UsageError::new(format!("{}: {e}", path.display())))?;
    if a.prepare {
        r::prepare(&a.dir, &trace).context("creating the replay files")?;
        iolab_sys::say!(
            "prepared {} file(s) of {} in {}",
            trace.procs.len(),
            format_bytes(r::FILE_BYTES),
            a.dir.display()
        );
        return Ok(());
    }
    let seed = a.seed;
    let report = r::replay(
        &a.dir,
        &trace,
        ReplayOptions {
            delays: !a.no_delays,
            seed,
        },
    )
    .context("replaying the trace")?;
    finish(a.ready, a.json, &report, || {
        format!(
            "replayed {}: {} requests, {} read by {} thread(s) in {:.3} s{}\n",
            path.display(),
            report.requests,
            format_bytes(report.bytes),
            trace.procs.len(),
            report.duration_s,
            if report.async_readahead {
                ""
            } else {
                " (readahead synchronous: no io_uring here)"
            }
        )
    })
}
