//! Prefetch lists: seed 001's `FILE off:len,off:len,...` (what `iolab cache
//! -r` prints and `iolab record` writes) and plain lists of files, one per
//! line, mixed freely.
//!
//! A line is a ranges entry when its last space-separated word is made of
//! digits, `:` and `,` only and contains a `:`; everything before that word
//! is the file name (so names may contain spaces). Any other line names a
//! whole file. Blank lines and lines starting with `#` are ignored. A name
//! that itself ends in such a word, or contains a newline, cannot be
//! written in this format.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::notes::Notes;
use crate::ranges::{self, ByteRange};
use crate::walk::{self, Visitor, WalkOptions};
use crate::CacheError;

/// Files (or parts of files) to bring into the page cache, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrefetchList {
    /// The entries, in the order they should be read.
    pub entries: Vec<ListEntry>,
}

/// One file of a prefetch list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// The file.
    pub path: PathBuf,
    /// Byte ranges to read; `None` for the whole file.
    pub ranges: Option<Vec<ByteRange>>,
}

impl PrefetchList {
    /// Reorders the entries by where their first byte to read lies on
    /// disk (device, then offset, by FIEMAP): one sweep across the disk
    /// instead of the order of first access (treadahead's sort). Entries
    /// that cannot be mapped keep their order, after the others; how many
    /// that was.
    pub fn sort_by_disk(&mut self) -> usize {
        use std::os::unix::fs::MetadataExt;
        let key = |e: &ListEntry| -> Option<(u64, u64)> {
            let dev = std::fs::metadata(&e.path).ok()?.dev();
            let first = e
                .ranges
                .as_ref()
                .and_then(|r| r.first())
                .map_or(0, |r| r.offset);
            let ex = iolab_sys::fiemap::extents(&e.path).ok()?;
            Some((dev, iolab_sys::fiemap::physical_of(&ex, first)?))
        };
        let mut keyed: Vec<(Option<(u64, u64)>, ListEntry)> =
            self.entries.drain(..).map(|e| (key(&e), e)).collect();
        let unmapped = keyed.iter().filter(|k| k.0.is_none()).count();
        // None sorts first in Option's order: put it last instead.
        keyed.sort_by_key(|(k, _)| (k.is_none(), *k));
        self.entries = keyed.into_iter().map(|(_, e)| e).collect();
        unmapped
    }

    /// Parses a list (see the module docs); errors name line and text.
    pub fn parse(text: &str) -> Result<PrefetchList, CacheError> {
        Self::parse_named(text, "list")
    }

    /// [`PrefetchList::parse`], naming the list `origin` in errors.
    pub fn parse_named(text: &str, origin: &str) -> Result<PrefetchList, CacheError> {
        let mut entries = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |why: String| CacheError::list(origin, i + 1, raw, &why);
            match split_ranges(line) {
                Some((path, list)) => {
                    if path.is_empty() {
                        return Err(err("no file name before the ranges".into()));
                    }
                    let ranges = ranges::parse_list(list).map_err(err)?;
                    entries.push(ListEntry {
                        path: PathBuf::from(path),
                        ranges: Some(ranges),
                    });
                }
                None => entries.push(ListEntry {
                    path: PathBuf::from(line),
                    ranges: None,
                }),
            }
        }
        Ok(PrefetchList { entries })
    }

    /// Reads and parses a list file.
    pub fn read_file(path: &Path) -> Result<PrefetchList, CacheError> {
        let text = std::fs::read_to_string(path).map_err(|e| CacheError::io(path, e))?;
        Self::parse_named(&text, &path.display().to_string())
    }

    /// Whole-file entries for `paths`; directories are walked recursively
    /// (symlinks inside them followed only with `follow`), in the order
    /// `iolab cache -R` prints them.
    pub fn from_paths(
        paths: &[PathBuf],
        follow: bool,
    ) -> Result<(PrefetchList, Notes), CacheError> {
        let opts = WalkOptions {
            recursive: true,
            follow,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        };
        let w = walk::walk(paths, opts, &|| Collect)?;
        if let Some(e) = w.missing {
            return Err(e);
        }
        let entries = w
            .outputs
            .into_iter()
            .flatten()
            .map(|path| ListEntry { path, ranges: None })
            .collect();
        Ok((PrefetchList { entries }, w.notes))
    }

    /// Guesses whether the start of a file is a prefetch list rather than
    /// data: text without NUL bytes whose first entry line is a ranges
    /// entry or names an existing file. `truncated`: `head` is only the
    /// start of the file, so its last line may be cut short (a ranges line
    /// can be longer than any sniffed head).
    pub fn looks_like_list(head: &[u8], truncated: bool) -> bool {
        if head.contains(&0) {
            return false;
        }
        let text = match std::str::from_utf8(head) {
            Ok(t) => t,
            // Cut in the middle of a character at the end of `head`: fine.
            Err(e) if e.error_len().is_none() => {
                head.utf8_chunks().next().map_or("", |c| c.valid())
            }
            Err(_) => return false,
        };
        let mut lines = text.lines().map(str::trim).peekable();
        while let Some(line) = lines.next() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let cut = truncated && lines.peek().is_none() && !text.ends_with('\n');
            return match split_ranges(line) {
                Some((path, list)) => !path.is_empty() && (cut || ranges::parse_list(list).is_ok()),
                None => Path::new(line).is_file(),
            };
        }
        false
    }

    /// Appends another list's entries.
    pub fn extend(&mut self, other: PrefetchList) {
        self.entries.extend(other.entries);
    }

    /// True when there is nothing to read.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Splits `FILE off:len,...` into the name and the ranges word, when the
/// last word looks like ranges.
fn split_ranges(line: &str) -> Option<(&str, &str)> {
    let (path, last) = line.rsplit_once([' ', '\t'])?;
    let rangey = last.contains(':')
        && last
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b':' || b == b',');
    rangey.then(|| (path.trim_end(), last))
}

impl fmt::Display for PrefetchList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        for e in &self.entries {
            s.clear();
            if let Some(r) = &e.ranges {
                ranges::write_list(r, &mut s);
                writeln!(f, "{} {s}", e.path.display())?;
            } else {
                writeln!(f, "{}", e.path.display())?;
            }
        }
        Ok(())
    }
}

struct Collect;

impl Visitor for Collect {
    type Out = Vec<PathBuf>;
    fn begin(&mut self) -> Vec<PathBuf> {
        Vec::new()
    }
    fn file(
        &mut self,
        _: std::os::fd::BorrowedFd<'_>,
        _: &std::ffi::CStr,
        path: &Path,
        out: &mut Vec<PathBuf>,
        _: &mut Notes,
    ) {
        out.push(path.to_path_buf());
    }
    fn opened(
        &mut self,
        _: std::os::fd::OwnedFd,
        path: &Path,
        out: &mut Vec<PathBuf>,
        _: &mut Notes,
    ) {
        out.push(path.to_path_buf());
    }
    fn is_empty(out: &Vec<PathBuf>) -> bool {
        out.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_seed_001_lines_plain_lines_and_comments() {
        let l = PrefetchList::parse(
            "# boot\nGallery3D.apk 0:131072,172032:393216,602112:180224\n\n/system/app/My App.apk\n",
        )
        .unwrap();
        assert_eq!(l.entries.len(), 2);
        assert_eq!(l.entries[0].path, Path::new("Gallery3D.apk"));
        assert_eq!(l.entries[0].ranges.as_ref().unwrap()[2].len, 180224);
        assert_eq!(l.entries[1].path, Path::new("/system/app/My App.apk"));
        assert!(l.entries[1].ranges.is_none());
    }

    #[test]
    fn bad_ranges_name_the_line() {
        let e = PrefetchList::parse("a 0:1\nb 0:0\n").unwrap_err();
        let s = e.to_string();
        assert!(s.contains(":2:"), "{s}");
        assert!(s.contains("length 0"), "{s}");
        assert!(iolab_sys::is_usage(&e));
    }

    #[test]
    fn detects_lists_and_data() {
        assert!(PrefetchList::looks_like_list(b"x.apk 0:4096\n", false));
        assert!(PrefetchList::looks_like_list(b"# c\n/bin/sh\n", false));
        assert!(!PrefetchList::looks_like_list(b"\x7fELF\0\0", true));
        assert!(!PrefetchList::looks_like_list(b"hello world\n", false));
        // A long ranges line cut by the sniffing buffer is still a list.
        assert!(PrefetchList::looks_like_list(b"x.apk 0:4096,8192:", true));
        assert!(!PrefetchList::looks_like_list(b"x.apk 0:4096,8192:", false));
    }

    fn name() -> impl Strategy<Value = String> {
        // Names without newlines, surrounding blanks, a leading '#', or a
        // trailing word that looks like ranges: what the format can hold.
        "[a-zA-Z0-9_./-][a-zA-Z0-9_. /:-]{0,30}[a-zA-Z0-9_./-]"
            .prop_filter("representable", |s| split_ranges(s).is_none())
    }

    fn entry() -> impl Strategy<Value = ListEntry> {
        let range =
            (0u64..1 << 40, 1u64..1 << 30).prop_map(|(offset, len)| ByteRange { offset, len });
        (
            name(),
            proptest::option::of(proptest::collection::vec(range, 1..6)),
        )
            .prop_map(|(path, ranges)| ListEntry {
                path: PathBuf::from(path),
                ranges,
            })
    }

    proptest! {
        #[test]
        fn list_text_round_trips(entries in proptest::collection::vec(entry(), 0..20)) {
            let list = PrefetchList { entries };
            let text = list.to_string();
            let back = PrefetchList::parse(&text).unwrap();
            prop_assert_eq!(back, list);
        }
    }
}
