//! The one event `iolab record` consumes: `filemap:mm_filemap_add_to_page_cache`
//! (include/trace/events/filemap.h), fired in `__filemap_add_folio` each
//! time a folio of a file enters the page cache, in the context of the task
//! that added it — the reader for synchronous and asynchronous readahead
//! alike, since readahead allocates and inserts its folios when it submits
//! the reads (their completion, in interrupt context, only marks them
//! up to date).
//!
//! Fields on 6.x kernels: `i_ino`, `index` (first page of the folio),
//! `s_dev` (the superblock's device, kernel encoding `major << 20 | minor`),
//! `order` (the folio spans `1 << order` pages; absent before large folios,
//! then 0), `pfn`. They are read through the event's `format` file, never
//! at fixed offsets.

use std::fmt;
use std::str::FromStr;

use iolab_trace::{Field, Field32, Format, Record};

/// A device number (`major:minor`) as mountinfo and `ls -l` print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevNo {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl DevNo {
    /// From the kernel's internal `dev_t` (`MAJOR(dev) = dev >> 20`,
    /// `MINOR(dev) = dev & 0xfffff`, include/linux/kdev_t.h), as tracepoints
    /// carry it.
    pub fn from_kernel(dev: u32) -> DevNo {
        DevNo {
            major: dev >> 20,
            minor: dev & 0xf_ffff,
        }
    }

    /// The kernel's internal encoding, for event filters (`s_dev == N`).
    pub fn to_kernel(self) -> u32 {
        (self.major << 20) | (self.minor & 0xf_ffff)
    }

    /// From a user-space `st_dev` (glibc's `makedev` encoding).
    pub fn from_st_dev(dev: u64) -> DevNo {
        DevNo {
            major: libc::major(dev),
            minor: libc::minor(dev),
        }
    }
}

impl fmt::Display for DevNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl FromStr for DevNo {
    type Err = String;

    /// Parses `major:minor` in decimal.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?} is not major:minor"))?;
        let n = |t: &str| {
            t.parse::<u32>()
                .map_err(|_| format!("{s:?} is not major:minor (decimal numbers)"))
        };
        Ok(DevNo {
            major: n(a)?,
            minor: n(b)?,
        })
    }
}

/// Identifies a file's page cache: its filesystem's device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileKey {
    /// The filesystem's device (`s_dev`).
    pub dev: DevNo,
    /// Inode number.
    pub ino: u64,
}

/// One folio added to the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageEvent {
    /// CLOCK_MONOTONIC ns.
    pub ts_ns: u64,
    /// The task that added it.
    pub pid: i32,
    /// Whose page cache.
    pub file: FileKey,
    /// First page index in the file.
    pub index: u64,
    /// Pages in the folio (`1 << order`).
    pub pages: u64,
}

/// Reads [`PageEvent`]s out of records, with the fields resolved once.
#[derive(Debug, Clone)]
pub struct PageDecoder {
    id: u16,
    ino: Field,
    index: Field,
    dev: Field32,
    order: Option<Field>,
}

/// Event system and name.
pub const EVENT: (&str, &str) = ("filemap", "mm_filemap_add_to_page_cache");

impl PageDecoder {
    /// Resolves the fields in `format`; `None` when the kernel's event
    /// lacks one of `i_ino`, `index`, `s_dev`, or its `s_dev` is wider
    /// than the kernel's 32-bit `dev_t`.
    pub fn new(format: &Format) -> Option<PageDecoder> {
        Some(PageDecoder {
            id: format.id,
            ino: format.field("i_ino")?.clone(),
            index: format.field("index")?.clone(),
            dev: format.field("s_dev")?.narrow32()?,
            order: format.field("order").cloned(),
        })
    }

    /// The event, when `rec` is one.
    pub fn decode(&self, rec: &Record<'_>) -> Option<PageEvent> {
        if rec.format.id != self.id {
            return None;
        }
        let order = self.order.as_ref().map_or(0, |f| f.u64(rec.data)).min(20);
        Some(PageEvent {
            ts_ns: rec.ts_ns,
            pid: rec.pid,
            file: FileKey {
                dev: DevNo::from_kernel(self.dev.u32(rec.data)),
                ino: self.ino.u64(rec.data),
            },
            index: self.index.u64(rec.data),
            pages: 1 << order,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::Path;

    const FORMAT: &str = "name: mm_filemap_add_to_page_cache
ID: 600
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned long i_ino;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long index;\toffset:24;\tsize:8;\tsigned:0;
\tfield:dev_t s_dev;\toffset:32;\tsize:4;\tsigned:0;
\tfield:unsigned char order;\toffset:36;\tsize:1;\tsigned:0;

print fmt: \"dev %d:%d ino %lx\"
";

    #[test]
    fn decodes_the_6_18_layout() {
        let format = Format::parse("filemap", FORMAT, Path::new("format")).unwrap();
        let d = PageDecoder::new(&format).unwrap();
        let mut data = vec![0u8; 40];
        data[0..2].copy_from_slice(&600u16.to_le_bytes());
        data[4..8].copy_from_slice(&77i32.to_le_bytes());
        data[16..24].copy_from_slice(&1234u64.to_le_bytes());
        data[24..32].copy_from_slice(&9u64.to_le_bytes());
        data[32..36].copy_from_slice(&((254u32 << 20) | 3).to_le_bytes());
        data[36] = 2;
        let rec = Record {
            format: &format,
            ts_ns: 5,
            cpu: 0,
            pid: 77,
            data: &data,
            stack: None,
        };
        let e = d.decode(&rec).unwrap();
        assert_eq!(
            e.file.dev,
            DevNo {
                major: 254,
                minor: 3
            }
        );
        assert_eq!((e.file.ino, e.index, e.pages, e.pid), (1234, 9, 4, 77));
    }

    #[test]
    fn device_numbers_round_trip_both_encodings() {
        let d = DevNo {
            major: 259,
            minor: 1_048_575,
        };
        assert_eq!(DevNo::from_kernel(d.to_kernel()), d);
        assert_eq!(
            DevNo::from_st_dev(libc::makedev(8, 17)),
            DevNo {
                major: 8,
                minor: 17
            }
        );
        assert_eq!("7:3".parse::<DevNo>().unwrap().to_string(), "7:3");
        assert!("7".parse::<DevNo>().is_err());
    }
}
