//! Ring-buffer pages as `per_cpu/cpuN/trace_pipe_raw` returns them.
//!
//! Layout (`events/header_page`, kernel/trace/ring_buffer.c): a u64 page
//! timestamp, a `local_t` commit (bytes of data; bit 31 RB_MISSED_EVENTS =
//! events were lost before this page, bit 30 RB_MISSED_STORED = their count
//! is stored as an unsigned long right after the data), then the data.
//!
//! Each entry starts with a u32 header `type_len:5 | time_delta:27 << 5`
//! (`events/header_event`): type_len 0 = the payload length is in the next
//! u32 (and includes it); 1..=28 = payload of type_len*4 bytes; 29 padding
//! (a discarded event, or the rest of the page when time_delta is 0); 30
//! time extend (delta = next u32 << 27 | time_delta); 31 absolute
//! timestamp. Mirrors trace-cmd's lib/traceevent kbuffer-parse.c.

use std::path::Path;

use crate::format::{read_u32, read_uint};
use crate::TraceError;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// Upper timestamp bits an absolute-timestamp entry does not carry.
const TS_MSB: u64 = 0xf8 << 56;

/// Where the parts of a page are (from `events/header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageLayout {
    /// Bytes per page (`trace_pipe_raw` returns one page per read).
    pub page_size: usize,
    /// Offset of the commit word.
    pub commit_offset: usize,
    /// Size of the commit word (`sizeof(local_t)`).
    pub commit_size: usize,
    /// Offset of the data.
    pub data_offset: usize,
}

impl PageLayout {
    /// Parses `events/header_page`; `page_size` comes from the instance's
    /// `buffer_subbuf_size_kb` (4096 where that file does not exist).
    pub fn parse(text: &str, page_size: usize, path: &Path) -> Result<PageLayout, TraceError> {
        let mut commit = None;
        let mut data = None;
        for line in text.lines() {
            let Some(f) = crate::format::Format::parse_field_line(line) else {
                continue;
            };
            match f.name.as_str() {
                "commit" => commit = Some((f.offset, f.size)),
                "data" => data = Some(f.offset),
                _ => {}
            }
        }
        match (commit, data) {
            (Some((commit_offset, commit_size)), Some(data_offset))
                if matches!(commit_size, 4 | 8) && data_offset < page_size =>
            {
                Ok(PageLayout {
                    page_size,
                    commit_offset,
                    commit_size,
                    data_offset,
                })
            }
            _ => Err(TraceError::parse(
                path,
                text,
                "expected `commit` (4 or 8 bytes) and `data` fields",
            )),
        }
    }

    /// Reads a page's header: timestamp, data length and events the
    /// kernel lost just before it.
    pub fn header(&self, page: &[u8]) -> PageHeader {
        let ts = read_uint(page, 0, 8);
        let commit = read_uint(page, self.commit_offset, self.commit_size);
        let len =
            ((commit & COMMIT_MASK) as usize).min(page.len().saturating_sub(self.data_offset));
        let missed = if commit & MISSED_EVENTS == 0 {
            Missed::None
        } else if commit & MISSED_STORED != 0 {
            Missed::Count(read_uint(page, self.data_offset + len, self.commit_size))
        } else {
            Missed::Unknown
        };
        PageHeader { ts, len, missed }
    }

    /// Bytes of `page` worth keeping (header, data and the stored missed
    /// count); the rest of a partly filled page is zeros.
    pub fn used_len(&self, page: &[u8]) -> usize {
        let h = self.header(page);
        let extra = if matches!(h.missed, Missed::Count(_)) {
            self.commit_size
        } else {
            0
        };
        (self.data_offset + h.len + extra).min(page.len())
    }
}

/// Events lost before a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// None.
    None,
    /// Some, count not stored.
    Unknown,
    /// This many.
    Count(u64),
}

/// A page's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Timestamp of the page (the base for the first delta).
    pub ts: u64,
    /// Bytes of data.
    pub len: usize,
    /// Events lost before this page.
    pub missed: Missed,
}

/// One data entry of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Timestamp (trace clock ns).
    pub ts: u64,
    /// Offset of the payload in the page.
    pub start: usize,
    /// Payload length (may include alignment padding at the end).
    pub len: usize,
}

/// A cursor over the entries of one page.
#[derive(Debug, Clone, Copy)]
pub struct Cursor {
    pos: usize,
    end: usize,
    ts: u64,
}

impl Cursor {
    /// A cursor at the first entry of `page`.
    pub fn new(layout: &PageLayout, page: &[u8]) -> Cursor {
        let h = layout.header(page);
        Cursor {
            pos: layout.data_offset,
            end: layout.data_offset + h.len,
            ts: h.ts,
        }
    }

    /// The next data entry, skipping padding and time entries; `None` at
    /// the end of the page (or at a malformed entry, which ends it).
    #[inline]
    pub fn next(&mut self, page: &[u8]) -> Option<Entry> {
        loop {
            if self.pos + 4 > self.end {
                return None;
            }
            let head = read_u32(page, self.pos);
            let type_len = head & 0x1f;
            let delta = (head >> 5) as u64;
            let body = self.pos + 4;
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // A null event: nothing more on this page.
                        self.pos = self.end;
                        return None;
                    }
                    // A length read from the page: one running past the
                    // data ends the page (as the next entry's bound check
                    // did before), and never overflows `pos`.
                    let len = usize::try_from(read_u32(page, body)).unwrap_or(usize::MAX);
                    if len > self.end - body {
                        self.pos = self.end;
                        return None;
                    }
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = body + len;
                }
                TYPE_TIME_EXTEND => {
                    self.ts = self
                        .ts
                        .wrapping_add((read_uint(page, body, 4) << 27).wrapping_add(delta));
                    self.pos = body + 4;
                }
                TYPE_TIME_STAMP => {
                    let abs = (read_uint(page, body, 4) << 27) | delta;
                    self.ts = abs | (self.ts & TS_MSB);
                    self.pos = body + 4;
                }
                0 => {
                    // Bounded against the data by `self.data` below.
                    let raw = usize::try_from(read_u32(page, body)).unwrap_or(usize::MAX);
                    if raw < 4 {
                        self.pos = self.end;
                        return None;
                    }
                    let len = (raw - 4 + 3) & !3;
                    let start = body + 4;
                    return self.data(start, len, delta);
                }
                n => return self.data(body, n as usize * 4, delta),
            }
        }
    }

    #[inline]
    fn data(&mut self, start: usize, len: usize, delta: u64) -> Option<Entry> {
        if start > self.end || len > self.end - start {
            self.pos = self.end;
            return None;
        }
        // Timestamps come from the page: a damaged one must wrap, not panic.
        self.ts = self.ts.wrapping_add(delta);
        self.pos = start + len;
        Some(Entry {
            ts: self.ts,
            start,
            len,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";

    fn layout() -> PageLayout {
        PageLayout::parse(HEADER_PAGE, 4096, Path::new("hp")).unwrap()
    }

    /// Builds a page from (type_len, delta, words) entries.
    fn page(ts: u64, entries: &[(u32, u32, &[u32])], flags: u64, stored: Option<u64>) -> Vec<u8> {
        let mut data = Vec::new();
        for (t, d, words) in entries {
            data.extend_from_slice(&(t | (d << 5)).to_le_bytes());
            for w in *words {
                data.extend_from_slice(&w.to_le_bytes());
            }
        }
        let mut p = vec![0u8; 4096];
        p[0..8].copy_from_slice(&ts.to_le_bytes());
        p[8..16].copy_from_slice(&(data.len() as u64 | flags).to_le_bytes());
        p[16..16 + data.len()].copy_from_slice(&data);
        if let Some(n) = stored {
            p[16 + data.len()..24 + data.len()].copy_from_slice(&n.to_le_bytes());
        }
        p
    }

    #[test]
    fn layout_from_header_page() {
        let l = layout();
        assert_eq!((l.commit_offset, l.commit_size, l.data_offset), (8, 8, 16));
        assert!(PageLayout::parse("junk", 4096, Path::new("hp")).is_err());
    }

    #[test]
    fn walks_every_entry_kind() {
        let p = page(
            1000,
            &[
                (2, 5, &[0xaa, 0xbb]),     // 8 bytes at ts 1005
                (30, 3, &[1]),             // extend by (1<<27)+3
                (0, 1, &[12, 0xcc, 0xdd]), // long form: 8 bytes of data
                (29, 2, &[8, 0]),          // discarded event: 8 bytes from its array word
                (31, 7, &[0]),             // absolute ts = 7
                (1, 1, &[0xee]),
            ],
            0,
            None,
        );
        let l = layout();
        let mut c = Cursor::new(&l, &p);
        let e = c.next(&p).unwrap();
        assert_eq!((e.ts, e.len), (1005, 8));
        assert_eq!(read_uint(&p, e.start, 4), 0xaa);
        let e = c.next(&p).unwrap();
        assert_eq!((e.ts, e.len), (1005 + (1 << 27) + 3 + 1, 8));
        assert_eq!(read_uint(&p, e.start, 4), 0xcc);
        let e = c.next(&p).unwrap();
        assert_eq!((e.ts, e.len), (8, 4));
        assert!(c.next(&p).is_none());
        assert_eq!(l.header(&p).missed, Missed::None);
    }

    #[test]
    fn missed_events_and_truncation() {
        let l = layout();
        let p = page(0, &[(1, 1, &[7])], MISSED_EVENTS | MISSED_STORED, Some(42));
        assert_eq!(l.header(&p).missed, Missed::Count(42));
        assert_eq!(l.used_len(&p), 16 + 8 + 8);
        let p = page(0, &[(1, 1, &[7])], MISSED_EVENTS, None);
        assert_eq!(l.header(&p).missed, Missed::Unknown);
        // A length running past the commit ends the page instead of panicking.
        let p = page(0, &[(0, 1, &[4000])], 0, None);
        assert!(Cursor::new(&l, &p).next(&p).is_none());
        // So does a u32::MAX length, of data (type 0) or of padding (29).
        for t in [0, 29] {
            let p = page(0, &[(t, 1, &[u32::MAX]), (1, 1, &[7])], 0, None);
            assert!(Cursor::new(&l, &p).next(&p).is_none(), "type {t}");
        }
    }
}
