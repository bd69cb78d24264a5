//! fio's I/O logs: `write_iolog` records every I/O a clone issues, in
//! fio's trace format v3 (`fio version 3 iolog`, each line led by the
//! microseconds since the clone started, as fio 3.33 writes it);
//! `read_iolog` replays a v2 or v3 log: the same reads and writes at the
//! same offsets and lengths, at the logged times (v3 timestamps, v2 `wait`
//! lines) unless `replay_no_stall`, scaled by `replay_time_scale`.
//!
//! How it relates to `iolab record`: `record` captures which file ranges a
//! command brings into the page cache, as a prefetch list; an iolog is the
//! exact I/O a fio job issued, replayed to reproduce a load. A replayed
//! iolog goes onto the files it names, in the order it names them, unless
//! the job names its own (`filename`, or `replay_redirect`: every file's
//! I/O onto that one, as fio).

use std::path::Path;

use crate::job::kinds::Dir;

/// One logged action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A read, write or trim of `len` bytes at `offset` of the file with
    /// this index: `Io(dir, file, offset, len)`.
    Io(Dir, usize, u64, u64),
    /// fsync of the file with this index.
    Sync(usize),
    /// fdatasync of the file with this index.
    DataSync(usize),
}

/// A log to replay.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Replay {
    /// `(microseconds from the start, action)` in log order.
    #[serde(skip)]
    pub entries: Vec<(u64, Action)>,
    /// The first file the log names (`None` when it names none).
    pub file: Option<String>,
    /// Every file it names, in order of appearance (an I/O names its file
    /// by its index here).
    pub files: Vec<String>,
    /// True when the log has reads / writes.
    pub reads: bool,
    /// See `reads`.
    pub writes: bool,
    /// The end of the furthest I/O (the file must be at least this big).
    pub extent: u64,
    /// The longest I/O (the buffers must hold it).
    pub max_len: u64,
    /// True when the log trims.
    pub trims: bool,
}

/// Parses a v2 or v3 log; `path` is for messages only.
pub fn parse(text: &str, path: &Path) -> Result<Replay, String> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l.trim()).unwrap_or("");
    let v3 = match header {
        "fio version 3 iolog" => true,
        "fio version 2 iolog" => false,
        h => {
            return Err(format!(
                "{}: first line {h:?}: expected \"fio version 2 iolog\" or \"fio version 3 iolog\" (blktrace and v1 logs are not read)",
                path.display()
            ))
        }
    };
    let mut r = Replay::default();
    let mut clock = 0u64;
    for (i, line) in lines {
        let at = |why: String| format!("{}:{}: {why}", path.display(), i + 1);
        let mut f = line.split_whitespace();
        if v3 {
            let Some(t) = f.next() else { continue };
            clock = t
                .parse()
                .map_err(|_| at(format!("timestamp {t:?}: expected microseconds")))?;
        }
        let (Some(file), Some(action)) = (f.next(), f.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(at(format!(
                "{line:?}: expected FILE ACTION [OFFSET LENGTH]"
            )));
        };
        let mut num = |what: &str| -> Result<u64, String> {
            let v = f
                .next()
                .ok_or_else(|| at(format!("{action} needs {what}")))?;
            v.parse()
                .map_err(|_| at(format!("{what} {v:?}: expected a number of bytes")))
        };
        // fio reads an I/O's length as 32 bits (`%u`); the engines too
        // take it so (an io_uring SQE's length).
        let length = |n: u64| -> Result<u64, String> {
            if n > u64::from(u32::MAX) {
                return Err(at(format!(
                    "length {n}: expected at most {} bytes, as fio reads it",
                    u32::MAX
                )));
            }
            Ok(n)
        };
        let k = match r.files.iter().position(|f| f == file) {
            Some(k) => k,
            None => {
                r.files.push(file.to_string());
                r.files.len() - 1
            }
        };
        let act = match action {
            "add" | "open" | "close" => None,
            "read" | "write" => {
                let (off, len) = (num("an offset")?, length(num("a length")?)?);
                let dir = if action == "read" {
                    Dir::Read
                } else {
                    Dir::Write
                };
                r.reads |= dir == Dir::Read;
                r.writes |= dir == Dir::Write;
                r.extent = r.extent.max(off.saturating_add(len));
                r.max_len = r.max_len.max(len);
                Some(Action::Io(dir, k, off, len))
            }
            "sync" => Some(Action::Sync(k)),
            "datasync" => Some(Action::DataSync(k)),
            "wait" if !v3 => {
                clock += num("microseconds")?;
                None
            }
            "trim" => {
                let (off, len) = (num("an offset")?, length(num("a length")?)?);
                r.writes = true;
                r.trims = true;
                r.extent = r.extent.max(off.saturating_add(len));
                Some(Action::Io(Dir::Trim, k, off, len))
            }
            a => {
                return Err(at(format!(
                    "action {a:?}: expected add, open, close, read, write, sync, datasync{}",
                    if v3 { "" } else { " or wait" }
                )))
            }
        };
        if r.file.is_none() {
            r.file = Some(file.to_string());
        }
        if let Some(a) = act {
            r.entries.push((clock, a));
        }
    }
    Ok(r)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_fio_v3_and_v2_logs() {
        // As fio 3.33 writes it (write_iolog, rw=randrw).
        let v3 = "fio version 3 iolog\n31 /tmp/f add\n245 /tmp/f open\n251 /tmp/f read 0 4096\n989 /tmp/f write 28672 4096\n2558 /tmp/f close\n";
        let r = parse(v3, Path::new("x")).unwrap();
        assert_eq!(r.file.as_deref(), Some("/tmp/f"));
        assert_eq!(
            r.entries,
            vec![
                (251, Action::Io(Dir::Read, 0, 0, 4096)),
                (989, Action::Io(Dir::Write, 0, 28672, 4096))
            ]
        );
        assert!(r.reads && r.writes);
        assert_eq!(r.extent, 32768);
        let v2 = "fio version 2 iolog\nf add\nf open\nf read 0 512\nf wait 1000 0\nf write 512 512\nf sync 0 0\nf close\n";
        let r = parse(v2, Path::new("x")).unwrap();
        assert_eq!(r.entries[1], (1000, Action::Io(Dir::Write, 0, 512, 512)));
        assert_eq!(r.entries[2], (1000, Action::Sync(0)));
        // A log of several files: each file's I/O keeps its file.
        let two = parse(
            "fio version 3 iolog\n1 f read 0 4096\n2 g read 8192 4096\n3 g sync 0 0\n",
            Path::new("x"),
        )
        .unwrap();
        assert_eq!(two.files, ["f", "g"]);
        assert_eq!(two.entries[1], (2, Action::Io(Dir::Read, 1, 8192, 4096)));
        assert_eq!(two.entries[2], (3, Action::Sync(1)));
        assert_eq!(two.extent, 12288);
        for bad in [
            "fio version 1 iolog\n",
            "fio version 3 iolog\nx f read 0 4096\n",
            // Past fio's 32-bit length (io_uring's too).
            "fio version 3 iolog\n1 f read 0 4294967296\n",
        ] {
            assert!(parse(bad, Path::new("x")).is_err(), "{bad}");
        }
    }
}
