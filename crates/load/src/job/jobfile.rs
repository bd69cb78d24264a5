//! fio-style INI job files, iolab's dialect of fio's format (fio(1), "JOB
//! FILE FORMAT"):
//!
//! ```ini
//! ; comment            # also a comment
//! [global]             ; options every later job inherits
//! directory=/mnt/lab
//! bs=4k
//!
//! [reader]             ; a job; its name names its files
//! rw=randread
//! time_based           ; a boolean option without '=' means 1
//! runtime=${RUNTIME}   ; environment variables are expanded
//! ```
//!
//! Differences from fio, all reported rather than guessed at: an option
//! iolab does not support, a bad value, an option outside a section, a
//! malformed header or an unset `${VAR}` is an error naming the file and
//! line. A `[global]` section affects the jobs after it, as in fio. A `;`
//! or `#` after whitespace starts a comment at the end of a line too.

use std::path::Path;

use crate::error::{LoadError, Origin};
use crate::job::model::Job;
use crate::job::options;

/// Reads and parses a job file.
pub fn read(path: &Path) -> Result<Vec<Job>, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        LoadError::usage(format!(
            "cannot read job file {}: {e}: expected a fio-style job file or one of the named workloads ({})",
            path.display(),
            crate::job::named::NAMES.join(", ")
        ))
    })?;
    parse(&text, path)
}

/// Parses job-file text; `path` is used in error messages only.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Job>, LoadError> {
    // iolab's own spelling of fio's command-line jobs keeps their order.
    let sorted = path != Path::new("<command line>");
    let mut global = Job::new("global");
    let mut jobs: Vec<(Job, usize)> = Vec::new();
    // The section being filled: None before the first header.
    let mut current: Option<Section> = None;
    // fio applies a section's kb_base before its other options (parse.c
    // sorts them by priority), so `size=1000k` after or before
    // `kb_base=1000` is 1000000 bytes either way.
    let lines: Vec<&str> = text.lines().collect();
    let kb_base_of = |from: usize| -> Option<String> {
        lines[from..]
            .iter()
            .map(|l| strip_comment(l).trim())
            .take_while(|l| !l.starts_with('['))
            .filter_map(|l| {
                // A bare `kb_base` is refused where the line is applied.
                let (k, v) = split_option(l);
                k.eq_ignore_ascii_case("kb_base").then_some(v?.to_string())
            })
            .last()
    };
    if let Some(v) = kb_base_of(0) {
        global.x.kb_base = if v.trim() == "1000" { 1000 } else { 1024 };
    }
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        let origin = Origin::File {
            path: path.to_path_buf(),
            line,
        };
        let content = strip_comment(raw.trim_start_matches('\u{feff}')).trim();
        if content.is_empty() {
            continue;
        }
        if content.starts_with('[') {
            let name = section_name(content).map_err(|why| LoadError::at(&origin, why))?;
            if let Some(done) = current.take() {
                done.finish(&mut jobs, sorted);
            }
            let kb = kb_base_of(idx + 1).map(|v| if v.trim() == "1000" { 1000 } else { 1024 });
            current = Some(if name == "global" {
                if let Some(k) = kb {
                    global.x.kb_base = k;
                }
                Section::Global
            } else {
                let mut job = global.clone();
                job.name = name.to_string();
                job.options.clear();
                if let Some(k) = kb {
                    job.x.kb_base = k;
                }
                Section::Job(Box::new(job), line)
            });
            continue;
        }
        let (key, value) = split_option(content);
        if key.starts_with("include ") || key == "include" {
            return Err(LoadError::at(
                &origin,
                "include directives are not supported: put the jobs in one file",
            ));
        }
        let value = value
            .map(|v| expand_env(v).map_err(|why| LoadError::at(&origin, why)))
            .transpose()?;
        let (target, section) = match current.as_mut() {
            None => {
                return Err(LoadError::at(
                    &origin,
                    format!(
                    "option {key:?} is outside a section: put it under [global] or a [job] header"
                ),
                ))
            }
            Some(Section::Global) => (&mut global, "global".to_string()),
            Some(Section::Job(job, _)) => {
                let name = job.name.clone();
                (&mut **job, name)
            }
        };
        options::apply(target, &key.to_ascii_lowercase(), value.as_deref())
            .map_err(|why| LoadError::at(&origin, format!("[{section}] {why}")))?;
    }
    if let Some(done) = current.take() {
        done.finish(&mut jobs, sorted);
    }
    if jobs.is_empty() {
        return Err(LoadError::at(
            &Origin::File {
                path: path.to_path_buf(),
                line: text.lines().count().max(1),
            },
            "no jobs: the file needs at least one [job] section besides [global]",
        ));
    }
    jobs.into_iter()
        .map(|(job, line)| {
            job.validate().map_err(|why| {
                LoadError::at(
                    &Origin::File {
                        path: path.to_path_buf(),
                        line,
                    },
                    format!("[{}] {why}", job.name),
                )
            })?;
            Ok(job)
        })
        .collect()
}

enum Section {
    Global,
    Job(Box<Job>, usize),
}

impl Section {
    /// Ends the section; `sorted`: its options in the order fio applies
    /// a job file's, which its JSON's "job options" follows.
    fn finish(self, jobs: &mut Vec<(Job, usize)>, sorted: bool) {
        if let Section::Job(mut job, line) = self {
            if sorted {
                fio_order(&mut job.options);
            }
            jobs.push((*job, line));
        }
    }
}

/// fio sorts a job file's options by their priority before applying them
/// (parse.c, sort_options: a stable sort, glibc's merge sort), so that
/// `filename` comes after `directory`: kb_base, unit_base, lockfile and
/// cpus_allowed_policy first, filename and filename_format last, the rest
/// as written. Command-line jobs keep the order given.
fn fio_order(options: &mut [(String, String)]) {
    options.sort_by_key(|(k, _)| match k.as_str() {
        "kb_base" | "unit_base" | "lockfile" | "cpus_allowed_policy" => 0,
        "filename" | "filename_format" => 2,
        _ => 1,
    });
}

/// Removes a trailing `; ...` or `# ...` comment (a whole-line comment
/// becomes empty). A `;`/`#` inside a word, e.g. a file name, is kept.
fn strip_comment(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with(';') || t.starts_with('#') {
        return "";
    }
    let b = line.as_bytes();
    for i in 1..b.len() {
        if (b[i] == b';' || b[i] == b'#') && b[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

fn section_name(content: &str) -> Result<&str, String> {
    let inner = content
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(|| format!("bad section header {content:?}: expected [name]"))?
        .trim();
    if inner.is_empty() {
        return Err("empty section name []: expected [global] or [jobname]".into());
    }
    if inner.contains('[') || inner.contains(']') {
        return Err(format!(
            "bad section header {content:?}: expected [name] without brackets inside"
        ));
    }
    Ok(inner)
}

fn split_option(content: &str) -> (&str, Option<&str>) {
    match content.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim())),
        None => (content, None),
    }
}

/// Expands `${NAME}` from the environment, as fio does.
fn expand_env(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unterminated ${{ in {value:?}: expected ${{NAME}}"))?;
        let name = &after[..end];
        let v = std::env::var(name)
            .map_err(|_| format!("environment variable {name} (used as ${{{name}}}) is not set"))?;
        out.push_str(&v);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "jobfile_tests.rs"]
mod tests;
