//! Exporters: one small trait, one file per format (as hyperfine does).
//! Each turns an experiment's [`ExperimentView`] into bytes; the caller
//! decides where they go (stdout or `-o FILE`).

mod csv;
mod json;
pub mod lava;

use std::fmt;
use std::str::FromStr;

use iolab_sys::UsageError;

pub use self::csv::CsvExporter;
pub use self::json::JsonExporter;
pub use self::lava::LavaExporter;
use crate::view::ExperimentView;
use iolab_store::StoreError;

/// Serializes an experiment in one format.
pub trait Exporter {
    /// The experiment as this format's bytes.
    fn serialize(&self, view: &ExperimentView) -> Result<Vec<u8>, StoreError>;
}

/// The HTML report of one experiment.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn serialize(&self, view: &ExperimentView) -> Result<Vec<u8>, StoreError> {
        let html = crate::html::render(&crate::html::HtmlInput {
            views: std::slice::from_ref(view),
            comparison: None,
        })
        .map_err(|e| StoreError::Export {
            format: "html",
            why: e.to_string(),
        })?;
        Ok(html.into_bytes())
    }
}

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Everything: experiment, environment, runs, cell statistics.
    Json,
    /// One row per run.
    Csv,
    /// The self-contained HTML report (`iolab report ID`).
    Html,
    /// LAVA test-case signal lines, one per cell and metric.
    Lava,
}

impl ExportFormat {
    /// Every format, for help texts.
    pub const ALL: [ExportFormat; 4] = [
        ExportFormat::Json,
        ExportFormat::Csv,
        ExportFormat::Html,
        ExportFormat::Lava,
    ];

    /// The format's exporter.
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            ExportFormat::Json => Box::new(JsonExporter),
            ExportFormat::Csv => Box::new(CsvExporter),
            ExportFormat::Html => Box::new(HtmlExporter),
            ExportFormat::Lava => Box::new(LavaExporter),
        }
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Json => "json",
            ExportFormat::Csv => "csv",
            ExportFormat::Html => "html",
            ExportFormat::Lava => "lava",
        }
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ExportFormat {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, UsageError> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                UsageError::new(format!(
                    "unknown export format {s:?}: use json, csv, html or lava"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_by_name() {
        assert_eq!("json".parse::<ExportFormat>(), Ok(ExportFormat::Json));
        assert_eq!("CSV".parse::<ExportFormat>(), Ok(ExportFormat::Csv));
        let err = "xml".parse::<ExportFormat>().expect_err("unknown");
        assert!(err.0.contains("json, csv, html or lava"));
    }
}
