//! Progress over a whole experiment: one bar, the ETA from finished runs,
//! the current cell and the last result in the message. Hidden when stderr
//! is not a terminal; notes that must not be lost go to stderr then.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The experiment's progress bar.
pub struct Progress {
    bar: ProgressBar,
    last: String,
}

impl Progress {
    /// A bar over `total` runs, counted in `unit` (`starts`, `runs`,
    /// `points`); hidden unless `show` and stderr is a TTY.
    pub fn new(total: u64, unit: &str, show: bool) -> Progress {
        let bar = ProgressBar::new(total);
        if show && std::io::stderr().is_terminal() {
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
            last: String::new(),
        }
    }

    /// A run (or a cell's warm-up) begins: `what` names it.
    pub fn begin(&self, what: &str) {
        self.bar.set_message(format!("{what}{}", self.last));
    }

    /// A run ended; `last` is its result in a few characters (`1.23s`,
    /// `40.0MiB/s`).
    pub fn done(&mut self, last: &str) {
        self.last = format!("  last {last}");
        self.bar.inc(1);
    }

    /// A message that must not be lost: printed above the bar on a
    /// terminal, on stderr otherwise.
    pub fn note(&self, msg: &str) {
        if self.bar.is_hidden() {
            eprintln!("iolab: {msg}");
        } else {
            self.bar.println(format!("iolab: {msg}"));
        }
    }
}

impl Drop for Progress {
    /// The bar goes however the experiment ends (an error included), so
    /// the error's line is not printed over it.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
