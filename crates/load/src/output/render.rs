//! One report in one of `iolab load`'s formats, with what the collectors
//! that observed it saw (handed in by the session, which runs them): in
//! JSON under each collector's name (`"cpu"`, `"bio"`), in text as their
//! lines after the report. Notes go into the document, not to stderr:
//! fio's harness and scripts take anything on stderr for a failure.

use serde_json::Value;

use crate::error::LoadError;
use crate::run::report::LoadReport;

/// The formats `--output-format` takes.
pub const FORMATS: [&str; 5] = ["normal", "terse", "json", "json+", "table"];

/// `report` as `format` renders it (one of [`FORMATS`]), with each
/// collector's document (`(name, document)`, JSON formats) or lines
/// (`(name, text)`, the others).
pub fn render(
    format: &str,
    report: &LoadReport,
    documents: &[(&str, Value)],
    lines: &[(&str, String)],
) -> Result<String, LoadError> {
    if format.starts_with("json") {
        let mut doc = fio_document(report, format == "json+")?;
        for (name, d) in documents {
            doc[*name] = d.clone();
        }
        return Ok(serde_json::to_string_pretty(&doc).map_err(ser)? + "\n");
    }
    if format == "terse" {
        return Ok(super::terse::render(report));
    }
    // normal: fio's report layout, from the same document as JSON;
    // table: iolab's compact tables.
    let mut t = if format == "normal" {
        let members: Vec<_> = report
            .jobs
            .iter()
            .map(|j| {
                (
                    j.clones,
                    j.thread_ids.first().copied().unwrap_or(0),
                    super::normal::Style {
                        sig: usize::from(j.sig_figs),
                        si: j.kb_base == 1000,
                        bits: j.bits,
                    },
                )
            })
            .collect();
        super::normal::render_with(&fio_document(report, false)?, &members)
    } else {
        super::table::render(report)
    };
    for (_, l) in lines {
        t.push('\n');
        t.push_str(l);
    }
    Ok(t)
}

/// fio's JSON (json+ with the latency bins), with iolab's notes.
fn fio_document(report: &LoadReport, plus: bool) -> Result<Value, LoadError> {
    let doc = if plus {
        super::json::to_fio_json_plus(report)
    } else {
        super::json::to_fio_json(report)
    };
    let mut doc = serde_json::to_value(doc).map_err(ser)?;
    if !report.warnings.is_empty() {
        doc["iolab notes"] = serde_json::json!(report.warnings);
    }
    Ok(doc)
}

fn ser(e: serde_json::Error) -> LoadError {
    LoadError::io(
        "the report",
        std::io::Error::other(format!("serialising it: {e}")),
    )
}
