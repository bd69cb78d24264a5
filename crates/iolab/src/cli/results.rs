//! `iolab results list | show ID | export ID --format json|csv`: browse the
//! results store. All numbers come from `iolab_store::ExperimentReport`, so
//! the table, `--json` and the exports agree.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use iolab_report::export::{ExportFormat, Exporter, JsonExporter};
use iolab_report::text::render_key_values;
use iolab_report::ExperimentView;
use iolab_store::{ExperimentId, ExperimentReport, ExperimentSummary, Store};
use iolab_sys::UsageError;

/// Arguments of `iolab results`.
#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// Results database [default: the user's data dir, e.g.
    /// ~/.local/share/iolab/results.db].
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
    #[command(subcommand)]
    command: ResultsCommand,
}

#[derive(Debug, Subcommand)]
enum ResultsCommand {
    /// List stored experiments.
    List {
        /// Output JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one experiment: configuration, environment, per-cell statistics.
    Show {
        /// Experiment id (see `iolab results list`).
        id: ExperimentId,
        /// Output the full report as JSON (statistics and raw runs).
        #[arg(long)]
        json: bool,
    },
    /// Export one experiment: JSON (everything), CSV (one row per run), HTML or LAVA lines.
    Export {
        /// Experiment id (see `iolab results list`).
        id: ExperimentId,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Write to FILE instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Compare two experiments of the same kind cell by cell (or two
    /// cells): A, B, seed 004's table (average, median, min, max, stddev,
    /// diff %), the ratio B/A with its 95 % interval and a verdict.
    #[command(after_help = "\
The metric is the one the experiment kind is judged by (start-up time,
sweep throughput, --max IOPS) unless --metric names another: `duration`
or any numeric field of the runs' `extra` (`results show ID --json`), e.g.
`clat_ns.percentile.99.000000`. The verdict is Welch's test at 95 %, read
off Fieller's interval of the ratio of means: significant when it excludes 1.

Examples:
  iolab results compare 3 4
  iolab results compare 3 4 --cells bfq/seq-write,mq-deadline/seq-write
  iolab results compare 7 7 --cells bfq/seq-read-4j-1qd,none/seq-read-4j-1qd --json")]
    Compare {
        /// A, the reference experiment.
        a: ExperimentId,
        /// B, the experiment compared with A.
        b: ExperimentId,
        /// The metric: `duration` or a field of the runs' `extra`.
        #[arg(long, value_name = "NAME")]
        metric: Option<String>,
        /// Compare these two cells only: A's and B's, each
        /// SCHEDULER/WORKLOAD or TARGET/SCHEDULER/WORKLOAD.
        #[arg(long, value_name = "A_CELL,B_CELL", value_delimiter = ',')]
        cells: Vec<String>,
        /// Output JSON.
        #[arg(long)]
        json: bool,
    },
    /// Merge another machine's results database (a board's, a phone's)
    /// into this one; each experiment keeps the host it ran on.
    #[command(after_help = "\
The file is not changed: a copy is read. Importing the same database again
replaces experiments that changed there (a resumed run) under the same
local id and leaves the others alone. `iolab remote` imports by itself.

Example:
  scp root@rpi4:.local/share/iolab/results.db rpi4.db && iolab results import rpi4.db")]
    Import {
        /// The database to import (another iolab's results.db).
        file: PathBuf,
        /// Host name for experiments that do not record one (databases
        /// written by an iolab older than 0.17).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Output JSON.
        #[arg(long)]
        json: bool,
    },
    /// Internal (`iolab remote`): a consistent copy of the database, taken
    /// while an experiment may still write to it.
    #[command(hide = true)]
    Snapshot {
        /// Where to write the copy (must not exist).
        file: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// Experiment, environment, every run and per-cell statistics.
    Json,
    /// One row per run (fio/S-style column names).
    Csv,
    /// The self-contained HTML report, as `iolab report ID`.
    Html,
    /// LAVA test-case lines (`<LAVA_SIGNAL_TESTCASE ...>`), one per cell and metric.
    Lava,
}

impl From<Format> for ExportFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Json => ExportFormat::Json,
            Format::Csv => ExportFormat::Csv,
            Format::Html => ExportFormat::Html,
            Format::Lava => ExportFormat::Lava,
        }
    }
}

/// Runs `iolab results`.
pub fn run(a: ResultsArgs) -> anyhow::Result<()> {
    let path = super::db::path(a.db.as_deref())?;
    let store = Store::open(&path)?;
    let mut out = std::io::stdout().lock();
    match a.command {
        ResultsCommand::List { json } => {
            let list = store.list()?;
            if json {
                serde_json::to_writer_pretty(&mut out, &list)?;
                writeln!(out)?;
            } else if list.is_empty() {
                iolab_sys::say!(
                    "no experiments in {} yet: `iolab startup` or `iolab demo` records them",
                    path.display()
                );
            } else {
                out.write_all(list_table(&list).as_bytes())?;
            }
        }
        ResultsCommand::Show { id, json } => {
            let report = store.report(id)?;
            if json {
                out.write_all(&JsonExporter.serialize(&ExperimentView::of(&report))?)?;
            } else {
                out.write_all(show_text(&report, &store).as_bytes())?;
            }
        }
        ResultsCommand::Compare {
            a,
            b,
            metric,
            cells,
            json,
        } => {
            let (ra, rb) = (store.report(a)?, store.report(b)?);
            let cells = match cells.as_slice() {
                [] => None,
                [x, y] => Some((x.as_str(), y.as_str())),
                _ => {
                    return Err(UsageError::new(format!(
                        "--cells {}: expected two cells, A's and B's, e.g. --cells bfq/seq-write,mq-deadline/seq-write",
                        cells.join(",")
                    ))
                    .into())
                }
            };
            let c = iolab_store::compare::compare(&ra, &rb, metric.as_deref(), cells)
                .map_err(UsageError::new)?;
            if json {
                serde_json::to_writer_pretty(&mut out, &c)?;
                writeln!(out)?;
            } else {
                out.write_all(iolab_report::text::compare::render(&c, a.0, b.0).as_bytes())?;
            }
        }
        ResultsCommand::Import { file, host, json } => {
            let from = iolab_store::ImportFrom {
                via: None,
                host_label: host,
            };
            let imported = store.import(&file, &from)?;
            write_imported(&mut out, &imported, json)?;
        }
        ResultsCommand::Snapshot { file } => store.snapshot(&file)?,
        ResultsCommand::Export { id, format, output } => {
            let report = store.report(id)?;
            let bytes = ExportFormat::from(format)
                .exporter()
                .serialize(&ExperimentView::of(&report))?;
            match output {
                Some(file) => std::fs::write(&file, bytes).map_err(|e| {
                    UsageError::new(format!(
                        "cannot write export to {}: {e}; choose a writable -o FILE",
                        file.display()
                    ))
                })?,
                None => out.write_all(&bytes)?,
            }
        }
    }
    Ok(())
}

/// What an import did, one line per experiment (or JSON).
pub fn write_imported(
    out: &mut impl Write,
    imported: &[iolab_store::Imported],
    json: bool,
) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut *out, imported)?;
        writeln!(out)?;
        return Ok(());
    }
    let mut rows = vec![["local id", "host", "remote id", "runs", "import"]
        .map(str::to_string)
        .to_vec()];
    for i in imported {
        rows.push(vec![
            i.local_id.to_string(),
            i.hostname.clone(),
            i.remote_id.to_string(),
            i.runs.to_string(),
            serde_json::to_value(i.action)?
                .as_str()
                .unwrap_or("?")
                .to_string(),
        ]);
    }
    out.write_all(iolab_report::text::align_columns(&rows).as_bytes())?;
    Ok(())
}

fn list_table(list: &[ExperimentSummary]) -> String {
    let mut rows = vec![[
        "id", "created", "kind", "host", "status", "cells", "runs", "command",
    ]
    .map(str::to_string)
    .to_vec()];
    for e in list {
        let runs = if e.censored > 0 {
            format!("{} ({} timed out)", e.runs, e.censored)
        } else {
            e.runs.to_string()
        };
        rows.push(vec![
            e.id.to_string(),
            short_time(&e.created),
            e.kind.to_string(),
            e.host.clone().unwrap_or_else(|| "-".to_string()),
            e.status.to_string(),
            e.cells.to_string(),
            runs,
            e.command_line.clone(),
        ]);
    }
    iolab_report::text::align_columns(&rows)
}

fn show_text(report: &ExperimentReport, store: &Store) -> String {
    let e = &report.experiment;
    let mut out = format!(
        "experiment {} ({}, {}), created {}\ncommand: {}\ndatabase: {}\n",
        e.id,
        e.kind,
        e.status,
        short_time(&e.created),
        e.command_line,
        store.path().display()
    );
    out.push_str("\nconfig:\n");
    out.push_str(&render_key_values(&e.config, "  "));
    if let Some(origin) = &e.origin {
        out.push_str("\nran on (imported):\n");
        out.push_str(&render_key_values(origin, "  "));
    }
    out.push_str("\nenvironment:\n");
    out.push_str(&render_key_values(&e.environment, "  "));
    out.push('\n');
    out.push_str(&iolab_report::text::tables(report));
    out
}

/// `2025-11-22T03:04:05.678Z` → `2025-11-22T03:04:05Z`: seconds are enough
/// to tell experiments apart in a table.
fn short_time(rfc3339: &str) -> String {
    match rfc3339.split_once('.') {
        Some((head, _)) => format!("{head}Z"),
        None => rfc3339.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_time_drops_milliseconds() {
        assert_eq!(
            short_time("2025-11-22T03:04:05.678Z"),
            "2025-11-22T03:04:05Z"
        );
        assert_eq!(short_time("odd"), "odd");
    }
}
