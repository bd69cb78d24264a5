//! Which files: names, directories, several files per job and the choice between them, creation and removal.

#![allow(clippy::wildcard_imports)]
use super::prelude::*;
use crate::job::value::*;

/// The options of this concern.
pub const NAMES: &[&str] = &[
    "filename",
    "directory",
    "nrfiles",
    "nr_files",
    "file_service_type",
    "openfiles",
    "filename_format",
    "create_on_open",
    "create_serialize",
    "unlink",
    "allow_file_create",
    "fallocate",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let x = &mut job.x;
    match key {
        "filename" => {
            // fio's list of files (`a:b:c`, a backslash before a colon keeps it in the name).
            let names = split_names(need_raw(key, value)?);
            job.filename = names.first().cloned();
            job.x.filenames = if names.len() > 1 { names } else { Vec::new() };
        }
        "directory" => {
            let v = need_raw(key, value)?;
            if v.contains(':') {
                return Err(format!(
                    "directory={v:?}: several directories (':') are not supported"
                ));
            }
            job.directory = Some(PathBuf::from(v));
        }
        "nrfiles" | "nr_files" => x.nrfiles = count(key, need(key, value)?, 1)?,
        "file_service_type" => {
            x.file_service = crate::job::kinds::FileService::parse(need(key, value)?)?
        }
        "openfiles" => {
            need(key, value)?;
            note(
                job,
                format!(
                    "job {}: openfiles: iolab keeps every file of a clone open for the whole job",
                    job.name
                ),
            );
        }
        "filename_format" => x.filename_format = Some(need(key, value)?.to_string()),
        "create_on_open" => x.create_on_open = boolean(key, value)?,
        // iolab lays files out one at a time before any job starts: what
        // create_serialize=1 asks; 0 (parallel layout) is not done.
        "create_serialize" => {
            boolean(key, value)?;
        }
        "unlink" => x.unlink = boolean(key, value)?,
        "allow_file_create" => x.no_create = !boolean(key, value)?,
        "fallocate" => {
            let v = need(key, value)?;
            if !matches!(v, "none" | "0") {
                return Err(format!(
                    "fallocate={v}: iolab lays files out by writing them and does not preallocate; use fallocate=none"
                ));
            }
        }
        // apply() let only NAMES in.
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}

/// Splits fio's `filename=a:b:c` list; `\:` is a colon inside a name.
fn split_names(v: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(PathBuf::from(cur));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_fio() {
        assert_eq!(
            split_names("a:b\\:c::/dev/x"),
            [PathBuf::from("a"), "b:c".into(), "/dev/x".into()]
        );
    }
}
