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
        let err = |e: serde_json::Error| StoreError::Export {
            format: "json",
            why: e.to_string(),
        };
        // Everything stored; and a plan's verdict, which is derived from it
        // (absent without points, so older experiments export as before).
        let mut doc = serde_json::to_value(view.stored).map_err(err)?;
        if let (Some(v), Some(obj)) = (&view.verdict, doc.as_object_mut()) {
            obj.insert("verdict".into(), serde_json::to_value(v).map_err(err)?);
        }
        let mut out = serde_json::to_vec_pretty(&doc).map_err(err)?;
        out.push(b'\n');
        Ok(out)
    }
}
