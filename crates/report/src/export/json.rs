//! JSON export: the whole [`ExperimentReport`] — experiment, configuration,
//! environment, every run and the per-cell statistics — pretty-printed.
//! Field meanings are the `///` comments on the serialized structs.

use super::Exporter;
use iolab_store::{ExperimentReport, StoreError};

/// Exports a report as pretty-printed JSON.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn serialize(&self, report: &ExperimentReport) -> Result<Vec<u8>, StoreError> {
        let mut out = serde_json::to_vec_pretty(report).map_err(|e| StoreError::Export {
            format: "json",
            why: e.to_string(),
        })?;
        out.push(b'\n');
        Ok(out)
    }
}
