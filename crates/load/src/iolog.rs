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

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::job::Dir;

/// One logged action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A read or write of `len` bytes at `offset`.
    Io(Dir, u64, u64),
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
    /// Every file it names, in order of appearance; an I/O's offset names
    /// its file as in [`crate::file_set`].
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
                let (off, len) = (num("an offset")?, num("a length")?);
                let dir = if action == "read" {
                    Dir::Read
                } else {
                    Dir::Write
                };
                r.reads |= dir == Dir::Read;
                r.writes |= dir == Dir::Write;
                r.extent = r.extent.max(off + len);
                r.max_len = r.max_len.max(len);
                Some(Action::Io(dir, crate::file_set::virt(k, off), len))
            }
            "sync" => Some(Action::Sync(k)),
            "datasync" => Some(Action::DataSync(k)),
            "wait" if !v3 => {
                clock += num("microseconds")?;
                None
            }
            "trim" => {
                let (off, len) = (num("an offset")?, num("a length")?);
                r.writes = true;
                r.trims = true;
                r.extent = r.extent.max(off.saturating_add(len));
                Some(Action::Io(Dir::Trim, crate::file_set::virt(k, off), len))
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

/// A clone's place in a replay.
#[derive(Debug)]
pub struct Cursor {
    pos: usize,
    /// Replay as fast as possible (`replay_no_stall`).
    pub no_stall: bool,
    /// `replay_time_scale`, percent of the logged rate.
    pub scale: u32,
}

impl Cursor {
    /// At the start of the log.
    pub fn new(no_stall: bool, scale: u32) -> Cursor {
        Cursor {
            pos: 0,
            no_stall,
            scale: scale.max(1),
        }
    }

    /// The next action, or how long until it is due, or `None` at the end.
    pub fn next(
        &mut self,
        log: &Replay,
        since_start: Duration,
    ) -> Option<Result<Action, Duration>> {
        let &(at_us, action) = log.entries.get(self.pos)?;
        if !self.no_stall {
            // scale 200 = twice the logged rate: half the time.
            let due = Duration::from_micros(at_us.saturating_mul(100) / u64::from(self.scale));
            if due > since_start {
                return Some(Err(due - since_start));
            }
        }
        self.pos += 1;
        Some(Ok(action))
    }
}

/// `write_iolog`: one clone's issued I/O, fio's v3 format.
pub struct Writer {
    w: BufWriter<File>,
    start: Instant,
    files: Vec<String>,
}

impl Writer {
    /// Creates the log (fio appends; iolab starts it afresh so a rerun does
    /// not leave two headers in one file) and writes `add` and `open`.
    pub fn create(path: &Path, files: &[PathBuf], start: Instant) -> Result<Writer, String> {
        let f = File::create(path)
            .map_err(|e| format!("write_iolog={}: cannot create it: {e}", path.display()))?;
        let mut files: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        if files.is_empty() {
            files.push("-".into());
        }
        let mut w = Writer {
            w: BufWriter::new(f),
            start,
            files,
        };
        let mut res = writeln!(w.w, "fio version 3 iolog");
        for k in 0..w.files.len() {
            res = res
                .and_then(|()| w.line(start, k, "add"))
                .and_then(|()| w.line(start, k, "open"));
        }
        res.map_err(|e| format!("write_iolog={}: {e}", path.display()))?;
        Ok(w)
    }

    fn line(&mut self, now: Instant, file: usize, what: &str) -> std::io::Result<()> {
        let us = now.saturating_duration_since(self.start).as_micros();
        writeln!(self.w, "{us} {} {what}", self.files[file])
    }

    /// An I/O issued at `now` (its offset names the file, see
    /// [`crate::file_set`]).
    pub fn io(&mut self, now: Instant, dir: Dir, offset: u64, len: u64) -> std::io::Result<()> {
        let what = match dir {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Trim => "trim",
        };
        let (k, off) = if self.files.len() == 1 {
            (0, offset)
        } else {
            crate::file_set::split(offset)
        };
        let k = k.min(self.files.len() - 1);
        self.line(now, k, &format!("{what} {off} {len}"))
    }

    /// Writes `close` for every file and flushes.
    pub fn finish(mut self, now: Instant) -> std::io::Result<()> {
        for k in 0..self.files.len() {
            self.line(now, k, "close")?;
        }
        self.w.flush()
    }
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
                (251, Action::Io(Dir::Read, 0, 4096)),
                (989, Action::Io(Dir::Write, 28672, 4096))
            ]
        );
        assert!(r.reads && r.writes);
        assert_eq!(r.extent, 32768);
        let v2 = "fio version 2 iolog\nf add\nf open\nf read 0 512\nf wait 1000 0\nf write 512 512\nf sync 0 0\nf close\n";
        let r = parse(v2, Path::new("x")).unwrap();
        assert_eq!(r.entries[1], (1000, Action::Io(Dir::Write, 512, 512)));
        assert_eq!(r.entries[2], (1000, Action::Sync(0)));
        // A log of several files: each file's I/O keeps its file.
        let two = parse(
            "fio version 3 iolog\n1 f read 0 4096\n2 g read 8192 4096\n3 g sync 0 0\n",
            Path::new("x"),
        )
        .unwrap();
        assert_eq!(two.files, ["f", "g"]);
        assert_eq!(
            two.entries[1],
            (
                2,
                Action::Io(Dir::Read, crate::file_set::virt(1, 8192), 4096)
            )
        );
        assert_eq!(two.entries[2], (3, Action::Sync(1)));
        assert_eq!(two.extent, 12288);
        for bad in [
            "fio version 1 iolog\n",
            "fio version 3 iolog\nx f read 0 4096\n",
        ] {
            assert!(parse(bad, Path::new("x")).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cursor_keeps_the_logged_time_scaled() {
        let r = Replay {
            entries: vec![(0, Action::Sync(0)), (1_000_000, Action::DataSync(0))],
            ..Default::default()
        };
        let mut c = Cursor::new(false, 200);
        assert_eq!(c.next(&r, Duration::ZERO), Some(Ok(Action::Sync(0))));
        // At twice the rate, the second is due at 0.5 s.
        assert_eq!(
            c.next(&r, Duration::from_millis(100)),
            Some(Err(Duration::from_millis(400)))
        );
        assert_eq!(
            c.next(&r, Duration::from_millis(500)),
            Some(Ok(Action::DataSync(0)))
        );
        assert_eq!(c.next(&r, Duration::from_secs(9)), None);
        let mut fast = Cursor::new(true, 100);
        fast.next(&r, Duration::ZERO);
        assert_eq!(fast.next(&r, Duration::ZERO), Some(Ok(Action::DataSync(0))));
    }
}
