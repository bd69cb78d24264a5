//! fio's `zonemode=strided`: the job's I/O stays in one zone of
//! `zonerange` bytes until `zonesize` bytes were transferred there, then
//! moves to the next zone (`zoneskip` bytes further), wrapping from the
//! end of the file back to the first zone at `offset`. Inside a zone the
//! job's pattern runs as over a file of `zonerange` bytes, a fresh pass
//! (a fresh random map) for every `zonerange` bytes.

/// The zone a clone is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zones {
    range: u64,
    size: u64,
    skip: u64,
    first: u64,
    /// Zones start below this (the file's size).
    limit: u64,
    start: u64,
    in_zone: u64,
}

impl Zones {
    /// Zones of `range` bytes from `first`, `size` bytes each visit,
    /// `skip` between them, inside a file of `limit` bytes.
    pub fn new(range: u64, size: u64, skip: u64, first: u64, limit: u64) -> Zones {
        Zones {
            range: range.max(1),
            size: size.max(1),
            skip,
            first,
            limit,
            start: first,
            in_zone: 0,
        }
    }

    /// The absolute offset of `inner` (an offset inside the zone).
    pub fn place(&self, inner: u64) -> u64 {
        self.start + inner
    }

    /// Counts an I/O of `len` bytes; true when it filled the zone's
    /// `zonesize` and the next I/O goes to the next zone.
    pub fn done(&mut self, len: u64) -> bool {
        self.in_zone += len;
        if self.in_zone < self.size {
            return false;
        }
        self.in_zone = 0;
        self.start += self.range + self.skip;
        if self.start >= self.limit {
            self.start = self.first;
        }
        true
    }

    /// Bytes a zone spans (the pattern's file size).
    pub fn range(&self) -> u64 {
        self.range
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_stride_and_wrap_like_fio() {
        // strided.py test 1: 4 KiB zones from 32 KiB in a 64 KiB file.
        let mut z = Zones::new(4096, 4096, 0, 8 * 4096, 16 * 4096);
        let mut starts = Vec::new();
        for _ in 0..10 {
            starts.push(z.place(0));
            assert!(z.done(4096));
        }
        let k: Vec<u64> = starts.iter().map(|s| s / 4096).collect();
        assert_eq!(k, [8, 9, 10, 11, 12, 13, 14, 15, 8, 9]);
        // zonesize twice the range: two I/Os of 4 KiB per zone.
        let mut z = Zones::new(4096, 8192, 0, 0, 16 * 4096);
        assert!(!z.done(4096));
        assert!(z.done(4096));
        assert_eq!(z.place(0), 4096);
    }
}
