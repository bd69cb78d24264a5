//! Progress over a whole experiment: on a terminal one bar (ETA from
//! finished runs, the current cell and the last result in its message);
//! elsewhere (nohup, ssh, CI, a log file) one plain line per finished run,
//! as S prints one per start. Notes that must not be lost go to stderr.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown (`--progress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal, plain lines otherwise.
    #[default]
    Auto,
    /// The bar (drawn only on a terminal).
    Bar,
    /// One line per finished run on stderr.
    Plain,
    /// Nothing but notes.
    None,
}

/// The experiment's progress.
pub struct Progress {
    bar: ProgressBar,
    plain: bool,
    unit: String,
    what: String,
    last: String,
    started: Instant,
}

impl Progress {
    /// Progress over `total` runs, counted in `unit` (`starts`, `runs`,
    /// `points`).
    pub fn new(total: u64, unit: &str, mode: ProgressMode) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let (bar_on, plain) = match mode {
            ProgressMode::Auto => (tty, !tty),
            ProgressMode::Bar => (tty, false),
            ProgressMode::Plain => (false, true),
            ProgressMode::None => (false, false),
        };
        let bar = ProgressBar::new(total);
        if bar_on {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(&format!(
                "{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {unit}  ETA {{eta}}  {{msg}}"
            )) {
                bar.set_style(style.progress_chars("=> "));
            }
        } else {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        Progress {
            bar,
            plain,
            unit: unit.to_string(),
            what: String::new(),
            last: String::new(),
            started: Instant::now(),
        }
    }

    /// More runs than planned (a round added until a difference resolves).
    pub fn grow(&mut self, more: u64) {
        self.bar.inc_length(more);
    }

    /// A run (or a cell's warm-up) begins: `what` names it.
    pub fn begin(&mut self, what: &str) {
        self.what = what.to_string();
        self.bar.set_message(format!("{what}{}", self.last));
    }

    /// A run ended; `last` is its result in a few characters (`1.23s`,
    /// `40.0MiB/s`, `>timeout`).
    pub fn done(&mut self, last: &str) {
        self.last = format!("  last {last}");
        self.bar.inc(1);
        if self.plain {
            let (pos, len) = (self.bar.position(), self.bar.length().unwrap_or(0));
            let elapsed = self.started.elapsed().as_secs_f64();
            let eta = if pos > 0 && len >= pos {
                format!(", ETA {}", clock(elapsed / pos as f64 * (len - pos) as f64))
            } else {
                String::new()
            };
            iolab_sys::say!(
                "iolab: {pos}/{len} {}: {}: {last} (elapsed {}{eta})",
                self.unit,
                self.what,
                clock(elapsed)
            );
        }
    }

    /// A message that must not be lost: printed above the bar on a
    /// terminal, on stderr otherwise.
    pub fn note(&self, msg: &str) {
        if self.bar.is_hidden() {
            iolab_sys::say!("iolab: {msg}");
        } else {
            self.bar.println(format!("iolab: {msg}"));
        }
    }
}

/// `1:02:03` or `2:03`.
pub(crate) fn clock(secs: f64) -> String {
    let s = iolab_sys::cast::round_u64(secs);
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

impl Drop for Progress {
    /// The bar goes however the experiment ends (an error included), so
    /// the error's line is not printed over it.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_reads_as_elapsed_time() {
        assert_eq!(super::clock(62.4), "1:02");
        assert_eq!(super::clock(3723.0), "1:02:03");
        assert_eq!(super::clock(-1.0), "0:00");
    }
}
