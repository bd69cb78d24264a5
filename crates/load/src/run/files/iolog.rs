//! fio's I/O logs as a clone uses them: `write_iolog` records every I/O
//! it issues, in fio's trace format v3 ([`Writer`]); `read_iolog` replays
//! a log parsed with the job ([`crate::job::replay`]) at its logged times
//! ([`Cursor`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::job::kinds::Dir;
use crate::job::replay::{Action, Replay};

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
    /// [`crate::run::files::file_set`]).
    pub fn io(&mut self, now: Instant, dir: Dir, offset: u64, len: u64) -> std::io::Result<()> {
        let what = match dir {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Trim => "trim",
        };
        let (k, off) = if self.files.len() == 1 {
            (0, offset)
        } else {
            crate::run::files::file_set::split(offset)
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
