//! `iolab read-ranges` (hidden, built with the `test-seams` feature only):
//! reads exactly the given byte ranges of a file, for `iolab record`'s tests.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use iolab_sys::UsageError;

/// Arguments of the hidden `iolab read-ranges` test seam.
#[derive(Debug, Args)]
pub struct ReadRangesArgs {
    /// The file.
    pub file: PathBuf,
    /// Byte ranges `off:len,off:len,...`.
    pub ranges: String,
}

/// Reads exactly the given ranges of a file: POSIX_FADV_RANDOM first, so
/// the kernel reads only the pages asked for (no readahead window), which
/// lets tests compare `iolab record`'s output with known ranges.
pub fn run(a: ReadRangesArgs) -> anyhow::Result<()> {
    let ranges = iolab_cache::ranges::parse_list(&a.ranges).map_err(UsageError::new)?;
    let f = std::fs::File::open(&a.file).with_context(|| a.file.display().to_string())?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::Random)?;
    let mut buf = Vec::new();
    for r in ranges {
        buf.resize(iolab_sys::cast::usize_of(r.len), 0);
        let mut done = 0;
        while done < buf.len() {
            let n = rustix::io::pread(&f, &mut buf[done..], r.offset + done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
    }
    Ok(())
}
