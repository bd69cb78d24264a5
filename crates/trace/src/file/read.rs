//! Reading trace files back into time-ordered records.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{EndSection, FileMeta, END, FORMAT, KALLSYMS, MAGIC, PAGE, START, VERSION};
use crate::format::{Format, Formats};
use crate::kallsyms::Kallsyms;
use crate::merge::{Merger, StackFormat};
use crate::record::{Record, TraceStats};
use crate::TraceError;

/// The largest page a trace file may hold: ring-buffer sub-buffers are at
/// most 1 MiB (`buffer_subbuf_size_kb`), pages as written are trimmed.
const MAX_PAGE_BYTES: u32 = 1 << 20;

/// The page layout START declares must describe a page the decoder can
/// walk: offsets inside a page of at most [`MAX_PAGE_BYTES`], a commit
/// word of 4 or 8 bytes (what `PageLayout::parse` accepts when recording).
fn check_layout(m: &FileMeta) -> Result<(), String> {
    let l = &m.layout;
    let max = MAX_PAGE_BYTES as usize;
    if l.page_size == 0 || l.page_size > max {
        return Err(format!("page size {} (expected 1..={max})", l.page_size));
    }
    if !matches!(l.commit_size, 4 | 8)
        || l.commit_offset >= l.page_size
        || l.data_offset >= l.page_size
    {
        return Err(format!(
            "page layout commit {}+{}, data {} does not fit a {}-byte page",
            l.commit_offset, l.commit_size, l.data_offset, l.page_size
        ));
    }
    Ok(())
}

/// A trace file opened for decoding.
pub struct TraceFile {
    path: PathBuf,
    file: File,
    meta: FileMeta,
    formats: Formats,
    kallsyms: Option<Kallsyms>,
    /// Per CPU index: (payload offset, length) of each PAGE section.
    pages: Vec<Vec<(u64, u32)>>,
}

impl TraceFile {
    /// Opens `path` and reads everything but the pages.
    pub fn open(path: &Path) -> Result<TraceFile, TraceError> {
        let mut file = File::open(path).map_err(|e| TraceError::io(path, e))?;
        let size = file.metadata().map_err(|e| TraceError::io(path, e))?.len();
        let mut head = [0u8; 16];
        file.read_exact(&mut head)
            .map_err(|_| TraceError::file(path, "shorter than its 16-byte header"))?;
        if &head[0..8] != MAGIC {
            return Err(TraceError::file(path, "it does not start with IOLABTRC"));
        }
        let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        if version != VERSION {
            return Err(TraceError::file(
                path,
                format!("version {version}; this iolab reads version {VERSION}"),
            ));
        }
        let mut meta: Option<FileMeta> = None;
        let mut formats = Formats::new();
        let mut kallsyms = None;
        let mut end: Option<EndSection> = None;
        let mut pages: Vec<Vec<(u64, u32)>> = Vec::new();
        let mut pos = 16u64;
        while pos + 16 <= size {
            let mut h = [0u8; 16];
            file.read_exact_at(&mut h, pos)
                .map_err(|e| TraceError::io(path, e))?;
            let kind = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
            let arg = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
            let len = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
            let body = pos + 16;
            // Lengths come from the file: checked arithmetic, so a crafted
            // length can neither wrap around nor point past the end.
            let Some(next) = body.checked_add(len).filter(|&n| n <= size) else {
                // A recording cut short mid-write: keep what is whole.
                break;
            };
            pos = next;
            if kind == PAGE {
                // The CPU index must be one START listed, and a page no
                // bigger than a ring-buffer sub-buffer can be: otherwise a
                // crafted index or length would size allocations.
                let cpus = meta.as_ref().map_or(0, |m| m.cpus.len());
                let i = arg as usize;
                if i >= cpus {
                    return Err(TraceError::file(
                        path,
                        format!(
                            "PAGE section at byte {} is for CPU index {i}, but START lists {cpus} CPUs",
                            body - 16
                        ),
                    ));
                }
                let Some(page_len) = u32::try_from(len).ok().filter(|&l| l <= MAX_PAGE_BYTES)
                else {
                    return Err(TraceError::file(
                        path,
                        format!(
                            "PAGE section at byte {} is {len} bytes: a ring-buffer page is at most {MAX_PAGE_BYTES}",
                            body - 16
                        ),
                    ));
                };
                if pages.len() < cpus {
                    pages.resize(cpus, Vec::new());
                }
                pages[i].push((body, page_len));
                continue;
            }
            // At most the file's size (checked above), but read from the
            // file: a section this machine cannot address is an error.
            let len = usize::try_from(len).map_err(|_| {
                TraceError::file(
                    path,
                    format!(
                        "section at byte {} is {len} bytes: too large to read",
                        body - 16
                    ),
                )
            })?;
            let mut buf = vec![0u8; len];
            file.read_exact_at(&mut buf, body)
                .map_err(|e| TraceError::io(path, e))?;
            let text = String::from_utf8_lossy(&buf);
            let bad = |what: &str, e: &dyn std::fmt::Display| {
                TraceError::file(
                    path,
                    format!("bad {what} section at byte {}: {e}", body - 16),
                )
            };
            match kind {
                START => {
                    let m: FileMeta = serde_json::from_slice(&buf).map_err(|e| bad("START", &e))?;
                    check_layout(&m).map_err(|e| bad("START", &e))?;
                    meta = Some(m);
                }
                FORMAT => {
                    let (system, text) = text
                        .split_once('\n')
                        .ok_or_else(|| bad("FORMAT", &"no system line"))?;
                    formats.insert(Format::parse(system, text, path)?);
                }
                KALLSYMS => kallsyms = Some(Kallsyms::parse(&text, path)?),
                END => end = Some(serde_json::from_slice(&buf).map_err(|e| bad("END", &e))?),
                // HEADER_PAGE is kept for other readers: START carries the
                // parsed layout. Unknown kinds are skipped (forward compat).
                _ => {}
            }
        }
        let mut meta = meta.ok_or_else(|| TraceError::file(path, "no START section"))?;
        if let Some(end) = end {
            meta.end_ns = Some(end.end_ns);
            meta.stats = Some(end.stats);
        }
        pages.resize(meta.cpus.len().max(pages.len()), Vec::new());
        file.seek(SeekFrom::Start(0))
            .map_err(|e| TraceError::io(path, e))?;
        Ok(TraceFile {
            path: path.to_path_buf(),
            file,
            meta,
            formats,
            kallsyms,
            pages,
        })
    }

    /// The recording's metadata.
    pub fn meta(&self) -> &FileMeta {
        &self.meta
    }

    /// Formats of the recorded events.
    pub fn formats(&self) -> &Formats {
        &self.formats
    }

    /// Kernel symbols of the recording machine (when stacks were recorded).
    pub fn kallsyms(&self) -> Option<&Kallsyms> {
        self.kallsyms.as_ref()
    }

    /// Decodes every record, in timestamp order across CPUs, as a live
    /// session would have delivered them. The returned stats count the
    /// records delivered and the recording's lost events.
    pub fn for_each(&self, sink: &mut dyn FnMut(&Record)) -> Result<TraceStats, TraceError> {
        let mut merger = Merger::new(
            self.meta.layout,
            &self.meta.cpus,
            StackFormat::from_formats(&self.formats),
            self.meta
                .events
                .iter()
                .filter(|e| e.stacktrace.is_some())
                .filter_map(|e| self.formats.find(&e.system, &e.name).map(|f| f.id))
                .collect(),
        );
        let mut next = vec![0usize; self.pages.len()];
        let mut error = None;
        let mut refill = |i: usize| -> Option<Vec<u8>> {
            let &(off, len) = self.pages.get(i)?.get(next[i])?;
            next[i] += 1;
            let mut buf = vec![0u8; len as usize];
            match self.file.read_exact_at(&mut buf, off) {
                Ok(()) => Some(buf),
                Err(e) => {
                    error = Some(TraceError::io(&self.path, e));
                    None
                }
            }
        };
        merger.drain(&self.formats, u64::MAX, true, u64::MAX, &mut refill, sink);
        if let Some(e) = error {
            return Err(e);
        }
        let mut per_cpu = merger.cpu_stats();
        if let Some(rec) = &self.meta.stats {
            for (s, r) in per_cpu.iter_mut().zip(&rec.per_cpu) {
                s.lost = s.lost.max(r.lost);
            }
        }
        Ok(TraceStats {
            events: per_cpu.iter().map(|c| c.events).sum(),
            lost: per_cpu.iter().fold(0u64, |a, c| a.saturating_add(c.lost)),
            out_of_order: merger.out_of_order,
            per_cpu,
        })
    }
}
