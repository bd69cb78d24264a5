//! Byte ranges of a file: runs of cached pages found in a page map, merged,
//! and written as seed 001's `off:len,off:len,...` (bytes).

use std::fmt::Write as _;

/// A contiguous byte range of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ByteRange {
    /// First byte.
    pub offset: u64,
    /// Length in bytes (never 0 in a parsed or computed list).
    pub len: u64,
}

impl ByteRange {
    /// One past the last byte (saturating).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }

    /// This range cut to a file of `size` bytes (`None` when nothing is left).
    pub fn clip(&self, size: u64) -> Option<ByteRange> {
        let end = self.end().min(size);
        (end > self.offset).then(|| ByteRange {
            offset: self.offset,
            len: end - self.offset,
        })
    }

    /// Index of the first page and the number of pages the range touches.
    pub fn pages(&self, page: u64) -> (u64, u64) {
        if self.len == 0 {
            return (self.offset / page, 0);
        }
        let first = self.offset / page;
        let last = (self.end() - 1) / page;
        (first, last - first + 1)
    }
}

/// Appends to `out` the runs of cached pages (`map[i] & 1 == 1`) as byte
/// ranges, the last one clipped to the file's `size`.
pub fn resident_ranges(map: &[u8], page: u64, size: u64, out: &mut Vec<ByteRange>) {
    let mut i = 0;
    while i < map.len() {
        if map[i] & 1 == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < map.len() && map[i] & 1 == 1 {
            i += 1;
        }
        let r = ByteRange {
            offset: start as u64 * page,
            len: (i - start) as u64 * page,
        };
        if let Some(r) = r.clip(size) {
            out.push(r);
        }
    }
}

/// Sorts `ranges` and merges overlapping or touching ones, dropping empty
/// ranges.
pub fn merge(ranges: &mut Vec<ByteRange>) {
    ranges.retain(|r| r.len > 0);
    ranges.sort_unstable_by_key(|r| r.offset);
    let mut merged: Vec<ByteRange> = Vec::with_capacity(ranges.len());
    for r in ranges.drain(..) {
        match merged.last_mut() {
            Some(last) if r.offset <= last.end() => {
                let end = last.end().max(r.end());
                last.len = end - last.offset;
            }
            _ => merged.push(r),
        }
    }
    *ranges = merged;
}

/// Writes `off:len,off:len,...`.
pub fn write_list(ranges: &[ByteRange], out: &mut String) {
    for (i, r) in ranges.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}:{}", r.offset, r.len);
    }
}

/// Parses `off:len,off:len,...`; the error says which item is wrong.
pub fn parse_list(text: &str) -> Result<Vec<ByteRange>, String> {
    text.split(',')
        .map(|item| {
            let (o, l) = item
                .split_once(':')
                .ok_or_else(|| format!("range {item:?} has no ':'"))?;
            let offset = o
                .parse::<u64>()
                .map_err(|_| format!("offset {o:?} is not a byte count"))?;
            let len = l
                .parse::<u64>()
                .map_err(|_| format!("length {l:?} is not a byte count"))?;
            if len == 0 {
                return Err(format!("range {item:?} has length 0"));
            }
            if offset.checked_add(len).is_none() {
                return Err(format!("range {item:?} ends past 2^64"));
            }
            Ok(ByteRange { offset, len })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn r(offset: u64, len: u64) -> ByteRange {
        ByteRange { offset, len }
    }

    #[test]
    fn runs_of_pages_become_byte_ranges() {
        let map = [1, 1, 0, 0, 1, 0, 1, 1, 1];
        let mut out = Vec::new();
        resident_ranges(&map, 4096, 9 * 4096, &mut out);
        assert_eq!(out, [r(0, 8192), r(16384, 4096), r(24576, 12288)]);
    }

    #[test]
    fn last_range_is_clipped_to_the_file() {
        let mut out = Vec::new();
        resident_ranges(&[0, 1], 4096, 4096 + 100, &mut out);
        assert_eq!(out, [r(4096, 100)]);
    }

    #[test]
    fn merge_joins_touching_and_overlapping() {
        let mut v = vec![r(100, 50), r(0, 100), r(120, 100), r(500, 0), r(400, 10)];
        merge(&mut v);
        assert_eq!(v, [r(0, 220), r(400, 10)]);
    }

    #[test]
    fn list_text_round_trips_and_errors_name_the_item() {
        let v = vec![r(0, 131072), r(172032, 393216)];
        let mut s = String::new();
        write_list(&v, &mut s);
        assert_eq!(s, "0:131072,172032:393216");
        assert_eq!(parse_list(&s).unwrap(), v);
        assert!(parse_list("0:0").unwrap_err().contains("length 0"));
        assert!(parse_list("x:1").unwrap_err().contains("\"x\""));
        assert!(parse_list("5").unwrap_err().contains("no ':'"));
    }

    #[test]
    fn pages_touched() {
        assert_eq!(r(0, 4096).pages(4096), (0, 1));
        assert_eq!(r(4095, 2).pages(4096), (0, 2));
        assert_eq!(r(8192, 1).pages(4096), (2, 1));
        assert_eq!(r(5, 0).pages(4096), (0, 0));
        assert_eq!(r(10, 5).clip(12), Some(r(10, 2)));
        assert_eq!(r(10, 5).clip(10), None);
    }
}
