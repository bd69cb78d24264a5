//! `--vmstat`: the kernel's memory-management counters (/proc/vmstat)
//! over each run, as vmstat(8) and `sar -B` read them. The document keeps
//! every counter before and after (the raw samples) and their change; the
//! headline is what a start under memory pressure pays: major faults, KiB
//! read and written from and to block devices (`pgpgin`/`pgpgout`, which
//! the kernel reports in KiB), and file pages read again soon after
//! reclaim took them (`workingset_refault_file`, `workingset_refault`
//! before Linux 5.9). System-wide, like vmstat: cells are compared, not
//! attributed.

use std::collections::BTreeMap;
use std::path::Path;

use iolab_results::{ArtifactDoc, ArtifactKind};
use iolab_sys::SysError;
use serde_json::json;

use super::{Collected, Collector, Entry, Flag, Needs, RunEnd, Scope};
use crate::CollectError;

/// The registry entry.
pub const ENTRY: Entry = Entry {
    name: "vmstat",
    flag: Flag::Switch("vmstat"),
    help: "read /proc/vmstat before and after every run (as vmstat(8)); each run stores every counter and its change, and shows major faults, KiB paged in and out and page-cache refaults",
    needs: Needs::Nothing,
    root: false,
    start,
};

const FILE: &str = "/proc/vmstat";

struct VmStat {
    before: BTreeMap<String, i64>,
}

fn start(_: &Scope<'_>) -> Result<Box<dyn Collector>, CollectError> {
    Ok(Box::new(VmStat {
        before: read(Path::new(FILE))?,
    }))
}

/// Every `name value` line; one that does not parse is an error naming the
/// file, never a counter of 0.
fn read(path: &Path) -> Result<BTreeMap<String, i64>, SysError> {
    let text = std::fs::read_to_string(path).map_err(|e| SysError::io(path, e))?;
    parse(path, &text)
}

fn parse(path: &Path, text: &str) -> Result<BTreeMap<String, i64>, SysError> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let parsed = line
            .split_once(' ')
            .and_then(|(k, v)| Some((k.to_string(), v.trim().parse::<i64>().ok()?)));
        let (k, v) = parsed.ok_or_else(|| SysError::Parse {
            path: path.to_path_buf(),
            text: line.to_string(),
            why: "expected `name value`".into(),
        })?;
        out.insert(k, v);
    }
    Ok(out)
}

impl Collector for VmStat {
    fn stop(self: Box<Self>, _: &RunEnd) -> Result<Collected, CollectError> {
        let after = read(Path::new(FILE))?;
        // Counters only grow; the nr_* gauges may fall: signed changes.
        let delta: BTreeMap<&str, i64> = after
            .iter()
            .filter_map(|(k, a)| Some((k.as_str(), a - self.before.get(k)?)))
            .collect();
        let refault = if delta.contains_key("workingset_refault_file") {
            "workingset_refault_file"
        } else {
            "workingset_refault"
        };
        let mut headline = serde_json::Map::new();
        for (name, key) in [
            ("major_faults", "pgmajfault"),
            ("paged_in_kib", "pgpgin"),
            ("paged_out_kib", "pgpgout"),
            ("refaults_file", refault),
        ] {
            // A counter this kernel lacks is left out, not shown as 0.
            if let Some(v) = delta.get(key) {
                headline.insert(name.into(), json!(v));
            }
        }
        let doc = json!({
            "file": FILE,
            "before": self.before,
            "after": after,
            "delta": delta,
        });
        let lines = format!(
            "vmstat over the run: {}\n",
            headline
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(Collected {
            docs: vec![
                ArtifactDoc::of(ArtifactKind::Other(ENTRY.name.into()), &doc)
                    .map_err(CollectError::serialise("the vmstat counters"))?,
            ],
            summary: Some(json!({ "headline": headline })),
            document: Some(doc),
            lines: Some(lines),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_a_counter_and_a_bad_one_is_an_error() {
        let p = Path::new("/proc/vmstat");
        let m = parse(p, "nr_free_pages 10\npgpgin 2048\n\n").unwrap();
        assert_eq!((m["nr_free_pages"], m["pgpgin"]), (10, 2048));
        let e = parse(p, "pgpgin lots\n").unwrap_err().to_string();
        assert!(
            e.contains("/proc/vmstat") && e.contains("pgpgin lots"),
            "{e}"
        );
        // This machine's own file reads whole.
        assert!(read(p).unwrap().contains_key("pgmajfault"));
    }
}
