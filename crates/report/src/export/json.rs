//! JSON export: the whole stored report — experiment, configuration,
//! environment, every run and the per-cell statistics — pretty-printed.
//! Field meanings are the `///` comments on the serialized structs.

use super::Exporter;
use crate::view::ExperimentView;
use iolab_store::StoreError;

/// Exports a report as pretty-printed JSON.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn serialize(&self, view: &ExperimentView) -> Result<Vec<u8>, StoreError> {
        let mut out = serde_json::to_vec_pretty(view.stored).map_err(|e| StoreError::Export {
            format: "json",
            why: e.to_string(),
        })?;
        out.push(b'\n');
        Ok(out)
    }
}
