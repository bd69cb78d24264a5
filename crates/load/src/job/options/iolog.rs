//! The job options of fio's I/O logs (parsed in [`crate::job::replay`]): recording
//! with `write_iolog`, replaying with `read_iolog` and its `replay_*`
//! companions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::job::model::Job;
use crate::job::value::need;

/// The options this file handles.
pub const NAMES: &[&str] = &[
    "write_iolog",
    "read_iolog",
    "read_iolog_chunked",
    "replay_no_stall",
    "replay_time_scale",
    "replay_redirect",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    match key {
        "write_iolog" => job.x.write_iolog = Some(PathBuf::from(need(key, value)?)),
        "read_iolog" => {
            let v = need(key, value)?;
            if v.contains(':') || v == "-" {
                return Err(format!(
                    "{key}={v}: one log file per job (several, or stdin, are not read)"
                ));
            }
            let text = std::fs::read_to_string(v).map_err(|e| {
                format!("{key}={v}: cannot read it: {e}; give a log written by write_iolog")
            })?;
            let r = crate::job::replay::parse(&text, Path::new(v))?;
            // The log's file unless the job names its own (fio's
            // replay_redirect); its extent unless the job sets a size.
            // Several files: the job gets them all, and a size that
            // gives each the log's extent (size counts all of a clone's
            // files).
            let mut files = 1;
            if job.filename.is_none() {
                job.filename = r.file.as_ref().map(PathBuf::from);
                if r.files.len() > 1 {
                    job.x.filenames = r.files.iter().map(PathBuf::from).collect();
                    files = r.files.len() as u64;
                }
            }
            if job.size.is_none() && r.extent > 0 {
                job.size = Some(r.extent * files);
            }
            job.x.read_iolog = Some(Arc::new(r));
        }
        // iolab reads the whole log at once; chunked reading is fio's
        // memory saving for huge logs.
        "read_iolog_chunked" => {
            crate::job::value::boolean(key, value)?;
        }
        "replay_no_stall" => job.x.replay_no_stall = crate::job::value::boolean(key, value)?,
        "replay_time_scale" => {
            let v = need(key, value)?;
            job.x.replay_scale = v.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                format!("{key}={v}: expected a percentage above 0 (100 = as logged)")
            })?;
        }
        "replay_redirect" => job.filename = Some(PathBuf::from(need(key, value)?)),
        // apply() let only NAMES in.
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}
