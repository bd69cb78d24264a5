//! Laying out files before the load, like fio's "Laying out IO file":
//! reading jobs need their files to hold `size` bytes of data, so missing
//! or short files are extended with random data (incompressible, so zram
//! and compressing filesystems see real work) in 1 MiB writes, then
//! fsynced, so the load's measurement starts without layout I/O pending.
//! Existing data is kept; files are reused by later runs.

use std::fs::OpenOptions;
use std::os::fd::AsFd;

use iolab_sys::cast;
use iolab_sys::units::format_bytes;

use crate::error::LoadError;
use crate::run::buffer::AlignedBuf;
use crate::run::plan::LayoutItem;

const CHUNK: usize = 1 << 20;

/// Writes every item; `progress` shows a bar on stderr.
pub fn lay_out(items: &[LayoutItem], progress: bool) -> Result<(), LoadError> {
    if items.is_empty() {
        return Ok(());
    }
    let total: u64 = items.iter().map(|i| i.to - i.from).sum();
    let bar = progress.then(|| crate::run::progress::bytes_bar(total, "laying out"));
    let mut buf = AlignedBuf::random(CHUNK, 0x1a70);
    for item in items {
        if let Some(b) = &bar {
            b.set_message(format!(
                "Laying out IO file {} ({})",
                item.path.display(),
                format_bytes(item.to)
            ));
        }
        write_item(item, buf.as_mut_slice(), |n| {
            if let Some(b) = &bar {
                b.inc(n);
            }
        })?;
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(())
}

fn write_item(item: &LayoutItem, buf: &[u8], mut tick: impl FnMut(u64)) -> Result<(), LoadError> {
    let path = &item.path;
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| LoadError::io(path, e))?;
    let mut off = item.from;
    while off < item.to {
        if iolab_guard::stop_requested() {
            return Err(LoadError::Interrupted {
                what: format!("laying out {}", path.display()),
            });
        }
        let len = cast::usize_of((item.to - off).min(buf.len() as u64));
        match rustix::io::pwrite(file.as_fd(), &buf[..len], off) {
            Ok(n) => {
                off += n as u64;
                tick(n as u64);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::NOSPC) => {
                return Err(LoadError::usage(format!(
                    "disk full while laying out {} ({} of {} written): free space or lower size",
                    path.display(),
                    format_bytes(off),
                    format_bytes(item.to)
                )))
            }
            Err(e) => return Err(LoadError::io(path, e.into())),
        }
    }
    file.sync_all().map_err(|e| LoadError::io(path, e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn extends_files_keeping_their_data() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"keep").unwrap();
        let item = LayoutItem {
            path: p.clone(),
            from: 4,
            to: (3 << 20) + 5,
        };
        lay_out(&[item], false).unwrap();
        let data = std::fs::read(&p).unwrap();
        assert_eq!(data.len(), (3 << 20) + 5);
        assert_eq!(&data[..4], b"keep");
        // Random, not zeros.
        assert!(data[4..4100].iter().filter(|&&b| b != 0).count() > 4000);
    }
}
