//! `iolab report ID [ID...] -o report.html`: one self-contained HTML file
//! of stored experiments (charts, flame graphs, environment, the command
//! line that reproduces each), with the comparison of the first two when
//! they are of the same kind. `demo`, `startup` and `sweep` write one per
//! experiment through [`write_default`].

use std::path::{Path, PathBuf};

use clap::Args;
use iolab_store::{ExperimentId, ExperimentReport, Store};
use iolab_sys::UsageError;

/// Arguments of `iolab report`.
#[derive(Debug, Args)]
#[command(after_help = "\
Two experiments of the same kind also get a comparison section: A is the
first id, B the second, as `iolab results compare A B` (same --metric and
--cells).

Examples:
  iolab report 7 -o startup.html
  iolab report 3 4 -o before-after.html
  iolab report 5 5 --cells bfq/1w,mq-deadline/1w -o bfq-vs-deadline.html")]
pub struct ReportArgs {
    /// Experiment ids (see `iolab results list`).
    #[arg(required = true, num_args = 1..)]
    ids: Vec<ExperimentId>,
    /// Output file [default: iolab-report-ID[-ID...].html in the current directory].
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The compared metric: `duration` or a field of the runs' `extra`.
    #[arg(long, value_name = "NAME")]
    metric: Option<String>,
    /// Compare these two cells only: A's and B's.
    #[arg(long, value_name = "A_CELL,B_CELL", value_delimiter = ',')]
    cells: Vec<String>,
    #[command(flatten)]
    db: super::db::DbArgs,
    /// Print where the report went as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `iolab report`.
pub fn run(a: ReportArgs) -> anyhow::Result<()> {
    let store = Store::open(a.db.path()?)?;
    let reports = a
        .ids
        .iter()
        .map(|id| store.report(*id))
        .collect::<Result<Vec<_>, _>>()?;
    let explicit = a.metric.is_some() || !a.cells.is_empty();
    let cells = match a.cells.as_slice() {
        [] => None,
        [x, y] => Some((x.as_str(), y.as_str())),
        _ => {
            return Err(UsageError::new(format!(
                "--cells {}: expected two cells, A's and B's, e.g. --cells bfq/1w,mq-deadline/1w",
                a.cells.join(",")
            ))
            .into())
        }
    };
    let comparison = match reports.as_slice() {
        [ra, rb, ..] => {
            match iolab_store::compare::compare(ra, rb, a.metric.as_deref(), cells) {
                Ok(c) => Some(c),
                // Asked for explicitly: a wrong metric or cell is an error.
                Err(e) if explicit => return Err(UsageError::new(e).into()),
                Err(e) => {
                    iolab_sys::say!("iolab report: no comparison section: {e}");
                    None
                }
            }
        }
        [_] if explicit => {
            return Err(UsageError::new(
                "--metric and --cells need two experiment ids, A and B (the same id twice compares two cells of one)",
            )
            .into())
        }
        _ => None,
    };
    let out = a.output.unwrap_or_else(|| {
        let ids: Vec<String> = a.ids.iter().map(|i| i.0.to_string()).collect();
        PathBuf::from(format!("iolab-report-{}.html", ids.join("-")))
    });
    let started = std::time::Instant::now();
    let html = iolab_report::html_report(&reports, comparison.as_ref())?;
    write(&out, &html)?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    if a.json {
        iolab_sys::show!(
            "{}",
            serde_json::json!({"path": out, "bytes": html.len(), "generation_ms": ms})
        );
    } else {
        iolab_sys::show!(
            "report: {} ({}, {ms:.0} ms)",
            out.display(),
            iolab_sys::units::format_bytes(html.len() as u64)
        );
    }
    Ok(())
}

fn write(out: &Path, html: &str) -> anyhow::Result<()> {
    std::fs::write(out, html).map_err(|e| {
        UsageError::new(format!(
            "cannot write the report to {}: {e}; choose a writable -o FILE",
            out.display()
        ))
        .into()
    })
}

/// Writes an experiment's report next to the database
/// (`<db dir>/reports/experiment-ID.html`) and returns its path. A failure
/// is returned, never fatal to the caller: the results are stored already.
pub fn write_default(store_db: &Path, report: &ExperimentReport) -> anyhow::Result<PathBuf> {
    let dir = store_db
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("reports");
    std::fs::create_dir_all(&dir)?;
    let out = dir.join(format!("experiment-{}.html", report.experiment.id.0));
    write(
        &out,
        &iolab_report::html_report(std::slice::from_ref(report), None)?,
    )?;
    Ok(out)
}

/// Writes the report and says where it went (on stderr when stdout is
/// JSON or CSV, so that stays parseable), or why there is none.
pub fn write_and_say(store_db: &Path, report: &ExperimentReport, stdout_is_data: bool) {
    match write_default(store_db, report) {
        Ok(p) => {
            let line = format!("report: {} (open it in a browser)", p.display());
            if stdout_is_data {
                iolab_sys::say!("iolab: {line}");
            } else {
                iolab_sys::show!("{line}");
            }
        }
        Err(e) => iolab_sys::say!(
            "iolab: no HTML report written ({e}); `iolab report {} -o FILE` makes one",
            report.experiment.id.0
        ),
    }
}
