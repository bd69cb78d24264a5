//! Rendering of `iolab cache` output: the table with its bar (seed 001's
//! `[####  ##]`), the ranges list, and JSON with fincore's field names
//! (`file`, `size`, `pages` = cached pages, `res` = cached bytes).
//!
//! Per-file lines are written into byte buffers by the scanning threads;
//! the functions taking a `ScanResult` assemble the whole output.

use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use iolab_sys::units::format_bytes;

use crate::inspect::Measured;
use crate::ranges::ByteRange;
use crate::scan::{percent, Action, Output, ScanOptions, ScanResult, Totals};

/// Column layout of the table, fixed before the scan so every thread
/// renders lines that line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bar width in characters.
    pub bar: usize,
    /// Pages per row of the full map (`-v`).
    pub row: usize,
    /// Dirty/writeback/evicted columns (cachestat available).
    pub cachestat: bool,
    /// A BEFORE column (`--evict`/`--touch`).
    pub before: bool,
}

/// Room kept for the file name when sizing the bar.
const NAME_ROOM: usize = 30;

impl Layout {
    /// Sizes the bar so that numbers, bar and a file name of ~30
    /// characters fit the terminal.
    pub fn new(opts: &ScanOptions, cachestat: bool) -> Layout {
        let columns = match opts.output {
            Output::Table { columns, .. } => columns,
            _ => 80,
        };
        let before = opts.action != Action::Inspect;
        let fixed = 26 + if cachestat { 24 } else { 0 } + if before { 10 } else { 0 } + 6;
        Layout {
            bar: columns.saturating_sub(fixed + NAME_ROOM).clamp(8, 100),
            row: (columns.saturating_sub(14) & !7).max(8),
            cachestat,
            before,
        }
    }

    fn numbers(&self, out: &mut Vec<u8>, before: &str, cols: [&str; 6]) {
        if self.before {
            let _ = write!(out, "{before:>9} ");
        }
        let _ = write!(out, "{:>9} {:>9} {:>6}", cols[0], cols[1], cols[2]);
        if self.cachestat {
            let _ = write!(out, " {:>7} {:>7} {:>8}", cols[3], cols[4], cols[5]);
        }
    }

    /// The table's header line.
    pub fn header(&self) -> String {
        let mut out = Vec::new();
        self.numbers(
            &mut out,
            "BEFORE",
            ["RES", "PAGES", "%", "DIRTY", "WBACK", "EVICTED"],
        );
        let _ = writeln!(out, "  {:<w$}  FILE", "MAP", w = self.bar + 2);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Writes the bar of `map` in `width` cells: one cell per page when the file
/// has no more pages than cells, otherwise `#` for a cell whose pages are all
/// cached, `+` for partly cached, blank for none. Padded to `width`.
pub fn bar(out: &mut Vec<u8>, map: &[u8], width: usize) {
    out.push(b'[');
    let n = map.len();
    let cells = n.min(width);
    for i in 0..cells {
        let (lo, hi) = (i * n / cells, (i + 1) * n / cells);
        let cached = map[lo..hi].iter().filter(|&&b| b != 0).count();
        out.push(match cached {
            0 => b' ',
            c if c == hi - lo => b'#',
            _ => b'+',
        });
    }
    out.push(b']');
    out.resize(out.len() + (width - cells), b' ');
}

/// One table line (and with `full`, the whole page map below it).
pub fn table_line(
    out: &mut Vec<u8>,
    layout: &Layout,
    path: &Path,
    m: &Measured,
    before: Option<u64>,
    map: &[u8],
    full: bool,
) {
    let s = m.stat.unwrap_or_default();
    let pct = format!("{:.1}", percent(m.resident, m.total_pages));
    let num = |v: u64| v.to_string();
    layout.numbers(
        out,
        &before.map(num).unwrap_or_default(),
        [
            &num(m.resident),
            &num(m.total_pages),
            &pct,
            &num(s.dirty),
            &num(s.writeback),
            &num(s.evicted),
        ],
    );
    out.extend_from_slice(b"  ");
    bar(out, map, layout.bar);
    out.extend_from_slice(b"  ");
    out.extend_from_slice(path.as_os_str().as_bytes());
    out.push(b'\n');
    if full {
        for (i, row) in map.chunks(layout.row).enumerate() {
            let _ = write!(out, "{:>12}  ", i * layout.row);
            out.extend(row.iter().map(|&b| if b != 0 { b'#' } else { b'.' }));
            out.push(b'\n');
        }
    }
}

/// `FILE off:len,off:len,...`
pub fn ranges_line(out: &mut Vec<u8>, path: &Path, ranges: &[ByteRange]) {
    out.extend_from_slice(path.as_os_str().as_bytes());
    out.push(b' ');
    let mut s = String::new();
    crate::ranges::write_list(ranges, &mut s);
    out.extend_from_slice(s.as_bytes());
    out.push(b'\n');
}

/// One file's JSON object.
pub struct JsonFile<'a> {
    /// The file.
    pub path: &'a Path,
    /// Size in bytes.
    pub size: u64,
    /// Page size.
    pub page: u64,
    /// Its residency.
    pub m: &'a Measured,
    /// Cached pages before `--evict`/`--touch`.
    pub before: Option<u64>,
    /// Cached byte ranges, when asked for.
    pub ranges: Option<&'a [ByteRange]>,
    /// The page map, when asked for.
    pub map: Option<&'a [u8]>,
    /// A hard link to a file already counted.
    pub dup: bool,
}

/// Writes `,{...}` (the leading comma is dropped for the first file when the
/// document is assembled).
pub fn json_file(out: &mut Vec<u8>, f: &JsonFile<'_>) {
    let m = f.m;
    out.extend_from_slice(b",{\"file\":");
    json_str(out, f.path);
    let _ = write!(
        out,
        ",\"size\":{},\"pages\":{},\"res\":{},\"total_pages\":{},\"percent\":{:.2}",
        f.size,
        m.resident,
        m.resident * f.page,
        m.total_pages,
        percent(m.resident, m.total_pages)
    );
    if let Some(s) = m.stat {
        let _ = write!(
            out,
            ",\"dirty_pages\":{},\"writeback_pages\":{},\"evicted_pages\":{},\"recently_evicted_pages\":{}",
            s.dirty, s.writeback, s.evicted, s.recently_evicted
        );
    }
    if let Some(b) = f.before {
        let _ = write!(out, ",\"before_pages\":{b}");
    }
    if let Some(r) = f.ranges {
        out.extend_from_slice(b",\"ranges\":[");
        for (i, r) in r.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            let _ = write!(out, "{sep}[{},{}]", r.offset, r.len);
        }
        out.push(b']');
    }
    if let Some(map) = f.map {
        out.extend_from_slice(b",\"map\":\"");
        out.extend(map.iter().map(|&b| if b != 0 { b'#' } else { b'.' }));
        out.push(b'"');
    }
    if f.dup {
        out.extend_from_slice(b",\"hardlink_counted_once\":true");
    }
    out.push(b'}');
}

fn json_str(out: &mut Vec<u8>, path: &Path) {
    let text = String::from_utf8_lossy(path.as_os_str().as_bytes());
    // Serializing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &*text);
}

/// The totals line of the table.
pub fn totals_line(t: &Totals) -> String {
    let mut s = format!(
        "total: {} files, {}/{} pages cached ({:.1} %), {} of {}",
        t.files,
        t.pages,
        t.total_pages,
        t.percent,
        format_bytes(t.res),
        format_bytes(t.size)
    );
    if let Some(b) = t.before_pages {
        s.push_str(&format!(" (before: {b} pages)"));
    }
    if let (Some(d), Some(w), Some(e), Some(r)) = (
        t.dirty_pages,
        t.writeback_pages,
        t.evicted_pages,
        t.recently_evicted_pages,
    ) {
        s.push_str(&format!(
            "; dirty {d}, writeback {w}, evicted {e}, recently evicted {r} pages"
        ));
    }
    s
}

/// The totals line, and after `--evict` what stayed cached and why.
fn write_totals(w: &mut impl Write, r: &ScanResult) -> io::Result<()> {
    writeln!(w, "{}", totals_line(&r.totals))?;
    if let Action::Evict { sync } = r.action {
        writeln!(w, "{}", evict_line(&r.totals, sync))?;
    }
    Ok(())
}

/// What stayed cached after eviction: dirty pages and pages under
/// writeback cannot be dropped (unless written back first: `--sync`); clean
/// pages that stayed are mapped by a process or otherwise in use.
pub fn evict_line(t: &Totals, sync: bool) -> String {
    if t.pages == 0 {
        return format!(
            "evicted: {} pages, nothing stayed cached",
            t.before_pages.unwrap_or(0)
        );
    }
    let mut s = format!(
        "evicted: {} pages; {} stayed cached",
        t.before_pages.unwrap_or(0).saturating_sub(t.pages),
        t.pages
    );
    if let (Some(d), Some(wb)) = (t.dirty_pages, t.writeback_pages) {
        let busy = t.pages.saturating_sub(d + wb);
        s.push_str(&format!(
            ": {d} dirty, {wb} under writeback{}, {busy} mapped by processes or in use",
            if sync || d + wb == 0 {
                ""
            } else {
                " (--sync writes them back first)"
            }
        ));
    } else {
        s.push_str(" (dirty or mapped; this kernel has no cachestat to tell which)");
    }
    s
}

/// Writes the whole output of a scan in the requested form (notes go to
/// the caller, who prints them on stderr, except in JSON where they are
/// part of the document).
pub fn write_output(w: &mut impl Write, r: &ScanResult, output: Output) -> io::Result<()> {
    match output {
        Output::Table { .. } => {
            w.write_all(r.layout.header().as_bytes())?;
            for c in &r.chunks {
                w.write_all(c)?;
            }
            write_totals(w, r)
        }
        Output::Summary => write_totals(w, r),
        Output::Ranges => r.chunks.iter().try_for_each(|c| w.write_all(c)),
        Output::Json { .. } => write_json(w, r),
    }
}

fn write_json(w: &mut impl Write, r: &ScanResult) -> io::Result<()> {
    w.write_all(b"{\"files\":[")?;
    for (i, c) in r.chunks.iter().enumerate() {
        w.write_all(if i == 0 { &c[1..] } else { c })?;
    }
    w.write_all(b"],\"totals\":")?;
    serde_json::to_writer(&mut *w, &r.totals)?;
    let skipped: serde_json::Map<String, serde_json::Value> = r
        .notes
        .counts()
        .into_iter()
        .map(|(k, n)| (k.to_string(), n.into()))
        .collect();
    w.write_all(b",\"skipped\":")?;
    serde_json::to_writer(&mut *w, &skipped)?;
    w.write_all(b",\"notes\":")?;
    serde_json::to_writer(&mut *w, &r.notes.sentences())?;
    writeln!(
        w,
        ",\"cachestat\":{},\"interrupted\":{}}}",
        r.cachestat, r.interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar_of(map: &[u8], w: usize) -> String {
        let mut v = Vec::new();
        bar(&mut v, map, w);
        String::from_utf8(v).unwrap_or_default()
    }

    #[test]
    fn bar_is_one_cell_per_page_for_small_files() {
        assert_eq!(bar_of(&[1, 1, 0, 1], 8), "[## #]    ");
        assert_eq!(bar_of(&[], 3), "[]   ");
    }

    #[test]
    fn bar_cells_summarise_runs_of_pages() {
        let map = [1, 1, 1, 1, 1, 0, 0, 0];
        assert_eq!(bar_of(&map, 4), "[##+ ]");
    }

    #[test]
    fn json_file_is_valid_json_with_fincore_names() {
        let m = Measured {
            total_pages: 4,
            resident: 2,
            stat: None,
        };
        let r = [ByteRange {
            offset: 0,
            len: 8192,
        }];
        let mut out = Vec::new();
        json_file(
            &mut out,
            &JsonFile {
                path: Path::new("/a \"b\""),
                size: 16000,
                page: 4096,
                m: &m,
                before: Some(4),
                ranges: Some(&r),
                map: None,
                dup: false,
            },
        );
        let v: serde_json::Value = serde_json::from_slice(&out[1..]).unwrap_or_default();
        assert_eq!(v["file"], "/a \"b\"");
        assert_eq!(v["pages"], 2);
        assert_eq!(v["res"], 8192);
        assert_eq!(v["percent"], 50.0);
        assert_eq!(v["ranges"][0][1], 8192);
        assert_eq!(v["before_pages"], 4);
    }
}
