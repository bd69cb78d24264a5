//! What the kernel held at each plan point, from the cells' `cell_io`
//! documents: every setting as read back after it was written, and the
//! bytes iolab's cgroups were charged against what the disk did
//! (/proc/diskstats) over the same cell.

use serde::Serialize;

use iolab_results::{variant, ArtifactKind};
use iolab_store::ExperimentReport;

/// One loaded cell at a point.
#[derive(Debug, Clone, Serialize)]
pub struct AppliedCell {
    /// Scheduler.
    pub scheduler: String,
    /// Workload.
    pub workload: String,
    /// The point's text.
    pub point: String,
    /// `name=read` for each setting written, `!` marking one not applied.
    pub settings: Vec<String>,
    /// Every setting read back as asked.
    pub all_applied: bool,
    /// The groups' (target + load) read bytes and the disk's.
    pub read_bytes: Option<(u64, u64)>,
    /// The groups' written bytes and the disk's.
    pub write_bytes: Option<(u64, u64)>,
}

/// The cells of a plan with points or settings, in run order; empty
/// otherwise.
pub fn applied(r: &ExperimentReport) -> Vec<AppliedCell> {
    r.artifacts
        .iter()
        .filter(|a| a.kind == ArtifactKind::CellIo)
        .filter_map(|a| {
            let j = &a.json;
            // A cell of no point still held the plan's settings, if any.
            let point = match variant::point_of(a.variant.as_deref()) {
                Some(p) => p,
                None if j["settings"].as_array().is_some_and(|s| !s.is_empty()) => String::new(),
                None => return None,
            };
            // `null` in a cell that applied nothing.
            let settings: Vec<(String, String, bool)> = j["settings"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| {
                    (
                        x["name"].as_str().unwrap_or("?").to_string(),
                        x["read"].as_str().unwrap_or("?").to_string(),
                        x["applied"].as_bool() == Some(true),
                    )
                })
                .collect();
            let g = &j["groups"];
            let sum = |k: &str| -> Option<u64> {
                Some(g["target"][k].as_u64()? + g["load"][k].as_u64()?)
            };
            let pair = |k: &str, d: &str| Some((sum(k)?, j[d].as_u64()?));
            Some(AppliedCell {
                scheduler: a.scheduler.clone(),
                workload: a.workload.clone(),
                point,
                all_applied: settings.iter().all(|s| s.2),
                settings: settings
                    .iter()
                    .map(|(n, v, ok)| {
                        format!(
                            "{n}={}{}",
                            v.lines().next().unwrap_or(""),
                            if *ok { "" } else { " !" }
                        )
                    })
                    .collect(),
                read_bytes: pair("read_bytes", "device_read_bytes"),
                write_bytes: pair("write_bytes", "device_write_bytes"),
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iolab_store::testutil::{experiment, run};
    use iolab_store::{Artifact, RunId};

    fn doc(variant: &str, json: serde_json::Value) -> Artifact {
        Artifact {
            run_id: RunId(1),
            scheduler: "bfq".into(),
            workload: "1w".into(),
            target: "app".into(),
            rep: 1,
            variant: Some(variant.into()),
            kind: ArtifactKind::CellIo,
            json,
        }
    }

    #[test]
    fn settings_and_bytes_come_from_each_cells_document() {
        let mut r = ExperimentReport::new(
            experiment(iolab_results::ExperimentKind::Startup),
            vec![run("bfq", "1w", 1, 1.0)],
        );
        r.artifacts = vec![
            doc(
                "wbt_lat_usec=-",
                serde_json::json!({"settings": [], "groups": null,
                "device_read_bytes": 5, "device_write_bytes": 7}),
            ),
            doc(
                "wbt_lat_usec=0",
                serde_json::json!({
                "settings": [{"name": "wbt_lat_usec", "read": "0", "applied": true}],
                "groups": {"target": {"read_bytes": 1, "write_bytes": 2},
                           "load": {"read_bytes": 3, "write_bytes": 4}},
                "device_read_bytes": 5, "device_write_bytes": 7}),
            ),
        ];
        let a = applied(&r);
        assert_eq!(a.len(), 2);
        assert!(a[0].settings.is_empty() && a[0].read_bytes.is_none());
        assert_eq!(a[1].settings, ["wbt_lat_usec=0"]);
        assert!(a[1].all_applied);
        assert_eq!(a[1].read_bytes, Some((4, 5)));
        assert_eq!(a[1].write_bytes, Some((6, 7)));
    }
}
