//! fio's `verify_state_save` / `verify_state_load`: a writing job saves
//! which blocks it wrote, so a later job (another run) verifies exactly
//! those. The file is named as fio names its own (`JOB-CLONE-verify.state`,
//! in the job's directory), but holds iolab's text: `iolab verify state 1`
//! then one `OFFSET LENGTH` line per written block; fio's binary state and
//! iolab's are not interchangeable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::job::model::Job;

const HEADER: &str = "iolab verify state 1";

/// Where a clone's state lives.
pub fn path(job: &Job, clone: u32) -> PathBuf {
    let dir = job
        .x
        .aux_path
        .clone()
        .or_else(|| job.directory.clone())
        .unwrap_or_else(|| PathBuf::from("."));
    dir.join(format!("{}-{clone}-verify.state", job.name))
}

/// Saves the written blocks.
pub fn save(p: &Path, blocks: &BTreeMap<u64, u64>) -> Result<(), String> {
    let mut text = String::from(HEADER);
    text.push('\n');
    for (o, l) in blocks {
        text.push_str(&format!("{o} {l}\n"));
    }
    std::fs::write(p, text).map_err(|e| format!("verify_state_save: writing {}: {e}", p.display()))
}

/// Loads a saved state.
pub fn load(p: &Path) -> Result<BTreeMap<u64, u64>, String> {
    let text = std::fs::read_to_string(p).map_err(|e| {
        format!(
            "verify_state_load: cannot read {}: {e}; run the writing job with verify_state_save=1 first",
            p.display()
        )
    })?;
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err(format!(
            "verify_state_load: {} is not an iolab verify state (fio's binary states are not read)",
            p.display()
        ));
    }
    lines
        .map(|l| {
            let mut f = l.split_whitespace().map(str::parse::<u64>);
            match (f.next(), f.next()) {
                (Some(Ok(o)), Some(Ok(n))) => Ok((o, n)),
                _ => Err(format!(
                    "verify_state_load: {}: bad line {l:?}",
                    p.display()
                )),
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_state_round_trips_and_a_foreign_one_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j-0-verify.state");
        let m: BTreeMap<u64, u64> = [(0, 4096), (8192, 4096)].into_iter().collect();
        save(&p, &m).unwrap();
        assert_eq!(load(&p).unwrap(), m);
        std::fs::write(&p, b"\x00\x01binary").unwrap();
        assert!(load(&p).unwrap_err().contains("not an iolab verify state"));
        assert!(load(&d.path().join("none"))
            .unwrap_err()
            .contains("verify_state_save=1"));
    }
}
