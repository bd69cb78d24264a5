//! What is written and checked: buffer contents (patterns, compressibility, refills) and `verify` with its companions.

#![allow(clippy::wildcard_imports)]
use super::prelude::*;
use crate::job::value::*;

/// The options of this concern.
pub const NAMES: &[&str] = &[
    "scramble_buffers",
    "buffer_pattern",
    "zero_buffers",
    "refill_buffers",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "verify",
    "serialize_overlap",
    "experimental_verify",
    "verify_state_save",
    "verify_state_load",
    "do_verify",
    "verify_fatal",
    "verify_backlog",
    "verify_interval",
    "verify_pattern",
    "verify_dump",
    "verify_async",
    "verify_write_sequence",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let x = &mut job.x;
    match key {
        "scramble_buffers" => {
            if boolean(key, value)? {
                return Err(format!(
                    "{key}=1 is not supported: iolab writes random, unscrambled buffers; use {key}=0"
                ));
            }
        }
        "buffer_pattern" => {
            x.buffer = BufferFill::Pattern(verify::parse_pattern(key, need(key, value)?)?);
        }
        "zero_buffers" => {
            if boolean(key, value)? {
                x.buffer = BufferFill::Zero;
            }
        }
        "refill_buffers" => x.refill_buffers = boolean(key, value)?,
        "dedupe_percentage" | "dedupe_mode" | "dedupe_working_set_percentage" | "dedupe_global" => {
            let d = x.dedupe.get_or_insert(crate::job::extra::Dedupe {
                percent: 0,
                working_set: false,
                working_set_percent: 5,
                global: false,
            });
            if key == "dedupe_global" {
                d.global = boolean(key, value)?;
                return Ok(());
            }
            let v = need(key, value)?;
            match key {
                "dedupe_percentage" => d.percent = percent(key, v)?,
                "dedupe_working_set_percentage" => d.working_set_percent = percent(key, v)?,
                _ => {
                    d.working_set = match v {
                        "repeat" => false,
                        "working_set" => true,
                        _ => return Err(format!("{key}={v}: expected repeat or working_set")),
                    }
                }
            }
        }
        "buffer_compress_percentage" => {
            let p = percent(key, need(key, value)?)?;
            let chunk = match x.buffer {
                BufferFill::Compressible { chunk, .. } => chunk,
                _ => 512,
            };
            x.buffer = BufferFill::Compressible { percent: p, chunk };
        }
        "buffer_compress_chunk" => {
            // A chunk past the buffer is the whole buffer: saturating is exact.
            let c = iolab_sys::cast::usize_of(size(key, need(key, value)?)?);
            if c == 0 {
                return Err(format!("{key}=0: expected a chunk size, e.g. 4k"));
            }
            let percent = match x.buffer {
                BufferFill::Compressible { percent, .. } => percent,
                _ => 0,
            };
            x.buffer = BufferFill::Compressible { percent, chunk: c };
        }
        "verify" => {
            let v = need(key, value)?;
            match VerifyKind::parse(v)? {
                None => x.verify = None,
                Some(k) => verify_opts(job).kind = k,
            }
        }
        // fio's experimental_verify re-derives the written offsets by
        // resetting its random generator instead of keeping a list; iolab
        // keeps the list either way, so the same blocks are checked.
        // Only a queue of depth > 1 can hold overlapping I/O; the
        // queueing engines hold an overlapping I/O back until the one in
        // flight completes.
        "serialize_overlap" => x.serialize_overlap = boolean(key, value)?,
        "experimental_verify" => {
            boolean(key, value)?;
        }
        "verify_state_save" => {
            let b = boolean(key, value)?;
            verify_opts(job).state_save = b;
        }
        "verify_state_load" => {
            let b = boolean(key, value)?;
            verify_opts(job).state_load = b;
        }
        "do_verify" => {
            let b = boolean(key, value)?;
            verify_opts(job).do_verify = b;
        }
        "verify_fatal" => {
            let b = boolean(key, value)?;
            verify_opts(job).fatal = b;
        }
        "verify_backlog" => {
            let n = number(key, need(key, value)?)?;
            verify_opts(job).backlog = n;
        }
        "verify_interval" => {
            let n = size(key, need(key, value)?)?;
            if n < 64 {
                return Err(format!(
                    "{key}={n}: expected at least 64 bytes (the header)"
                ));
            }
            verify_opts(job).interval = Some(n);
        }
        "verify_pattern" => {
            let p = verify::parse_pattern(key, need(key, value)?)?;
            let v = verify_opts(job);
            v.pattern = Some(p);
        }
        "verify_dump" => {
            let b = boolean(key, value)?;
            verify_opts(job).dump = b;
        }
        "verify_async" => {
            need(key, value)?;
            note(
                job,
                format!(
                    "job {}: verify_async: iolab checks blocks in the job's own thread",
                    job.name
                ),
            );
        }
        "verify_write_sequence" => {
            if boolean(key, value)? {
                return Err(format!("{key}=1 is not supported: iolab's verify header has no write sequence number; use {key}=0"));
            }
        }
        // apply() let only NAMES in.
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}
