//! Progress over the whole matrix: one bar, ETA from completed starts, the
//! current cell in the message. Hidden when stderr is not a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The matrix progress bar.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `total` starts; hidden unless `show` and stderr is a TTY.
    pub fn new(total: u64, show: bool) -> Progress {
        let bar = ProgressBar::new(total);
        if show && std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} starts  ETA {eta}  {msg}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
        } else {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        Progress { bar }
    }

    /// A new cell begins (warm-up included).
    pub fn cell(&self, scheduler: &str, workload: &str) {
        self.bar.set_message(format!("{scheduler} / {workload}"));
    }

    /// A repetition begins.
    pub fn rep(&self, rep: u32) {
        let msg = self.bar.message();
        let base = msg.split(" rep ").next().unwrap_or("").to_string();
        self.bar.set_message(format!("{base} rep {rep}"));
    }

    /// A start finished.
    pub fn done_run(&self, duration_ns: u64, censored: bool) {
        let msg = self.bar.message();
        let base = msg.split(" last ").next().unwrap_or("").to_string();
        let last = if censored {
            ">timeout".to_string()
        } else {
            format!("{:.2}s", duration_ns as f64 / 1e9)
        };
        self.bar.set_message(format!("{base} last {last}"));
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

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
