//! One bar over the sweep's runs, ETA from finished runs, the current run
//! and the last throughput in the message. Hidden when stderr is not a
//! terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The sweep's progress bar.
pub struct Progress {
    bar: ProgressBar,
    last: String,
}

impl Progress {
    /// A bar over `total` runs; hidden unless `show` and stderr is a TTY.
    pub fn new(total: u64, show: bool) -> Progress {
        let bar = ProgressBar::new(total);
        if show && std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} runs  ETA {eta}  {msg}",
            ) {
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

    /// A run begins: `what` names it (repetition, scheduler, workload).
    pub fn start(&self, what: &str) {
        self.bar.set_message(format!("{what}{}", self.last));
    }

    /// A run finished at `bw_bytes` per second.
    pub fn done(&mut self, bw_bytes: f64) {
        self.last = format!("  last {}", iolab_sys::units::format_rate(bw_bytes));
        self.bar.inc(1);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
