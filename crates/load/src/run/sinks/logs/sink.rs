//! A log file on disk, plain or zlib-compressed, and the expansion of a
//! compressed one (`--inflate-log`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// One open log file; its path names it in errors.
pub(super) struct Sink {
    pub(super) w: Out,
    pub(super) path: PathBuf,
}

/// A log file, plain or zlib-compressed (`log_store_compressed=1`,
/// `PREFIX_TYPE.log.fz`, which `iolab load --inflate-log` expands). The
/// compressed text is iolab's own: fio's `.fz` holds its binary samples, so
/// each tool's `--inflate-log` reads its own files (checked: fio 3.33 prints
/// garbage for iolab's).
pub(super) enum Out {
    Plain(BufWriter<File>),
    Zlib(flate2::write::ZlibEncoder<BufWriter<File>>),
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Plain(w) => w.write(b),
            Out::Zlib(w) => w.write(b),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Plain(w) => w.flush(),
            // The stream's end, so the file is complete when the log is.
            Out::Zlib(w) => w.try_finish().and_then(|()| w.get_mut().flush()),
        }
    }
}

impl Sink {
    pub(super) fn create(path: PathBuf, compressed: bool) -> Result<Sink, String> {
        let path = if compressed {
            PathBuf::from(format!("{}.fz", path.display()))
        } else {
            path
        };
        let f = File::create(&path)
            .map_err(|e| format!("cannot create log {}: {e}", path.display()))?;
        let b = BufWriter::with_capacity(1 << 16, f);
        Ok(Sink {
            w: if compressed {
                Out::Zlib(flate2::write::ZlibEncoder::new(
                    b,
                    flate2::Compression::default(),
                ))
            } else {
                Out::Plain(b)
            },
            path,
        })
    }

    /// Ends the file; the error names it.
    pub(super) fn close(&mut self) -> Result<(), String> {
        self.w
            .flush()
            .map_err(|e| format!("writing {}: {e}", self.path.display()))
    }
}

/// Expands a compressed log (`--inflate-log`): one or more zlib streams
/// one after another, written out as text.
pub fn inflate(path: &Path, out: &mut dyn Write) -> Result<(), String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rest: &[u8] = &data;
    while !rest.is_empty() {
        let mut d = flate2::bufread::ZlibDecoder::new(rest);
        std::io::copy(&mut d, out)
            .map_err(|e| format!("{}: not a zlib-compressed fio log: {e}", path.display()))?;
        // Bytes of `rest` the stream took: at most rest.len().
        let used = iolab_sys::cast::usize_of(d.total_in());
        if used == 0 {
            break;
        }
        rest = &rest[used..];
    }
    Ok(())
}
