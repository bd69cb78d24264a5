//! Live progress on stderr (indicatif): read and write rates, totals,
//! elapsed time and, when the end is known, an ETA. Only shown when the
//! caller asks (the CLI asks when stderr is a terminal).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use iolab_sys::cast;
use iolab_sys::units::{format_bytes, format_rate};

use crate::job::kinds::Dir;
use crate::run::live::LiveCounters;

/// What the bar measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Extent {
    /// The load runs until stopped: no ETA.
    UntilStopped,
    /// The load ends after this long.
    Time(Duration),
    /// The load ends after this many bytes.
    Bytes(u64),
}

/// A bar over a byte count (used for file layout).
pub fn bytes_bar(total: u64, prefix: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({eta}) {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(prefix.to_string());
    bar
}

/// The running load's bar; stops when dropped or finished.
pub struct LoadProgress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LoadProgress {
    /// Starts drawing. `counters` are every clone's live counters.
    pub fn spawn(counters: Vec<Arc<LiveCounters>>, extent: Extent) -> LoadProgress {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("iolab-progress".into())
            .spawn(move || draw(&counters, extent, &flag))
            .ok();
        LoadProgress { stop, thread }
    }

    /// Stops drawing and clears the bar.
    pub fn finish(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LoadProgress {
    fn drop(&mut self) {
        self.halt();
    }
}

fn totals(counters: &[Arc<LiveCounters>]) -> [u64; 2] {
    let mut t = [0u64; 2];
    for c in counters {
        t[0] += c.read(Dir::Read).0;
        t[1] += c.read(Dir::Write).0;
    }
    t
}

fn draw(counters: &[Arc<LiveCounters>], extent: Extent, stop: &AtomicBool) {
    let (bar, template) = match extent {
        Extent::UntilStopped => (
            ProgressBar::new_spinner(),
            "{spinner} [{elapsed_precise}] {msg} (until stopped: Ctrl-C)",
        ),
        Extent::Time(d) => (
            ProgressBar::new(cast::duration_ms(d)),
            "[{elapsed_precise}] {wide_bar} ETA {eta} {msg}",
        ),
        Extent::Bytes(b) => (
            ProgressBar::new(b),
            "[{elapsed_precise}] {wide_bar} ETA {eta} {msg}",
        ),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let mut last = (start, [0u64; 2]);
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let now = Instant::now();
        let t = totals(counters);
        let dt = now.duration_since(last.0).as_secs_f64().max(1e-3);
        let rate = |d: usize| (t[d].saturating_sub(last.1[d])) as f64 / dt;
        bar.set_message(format!(
            "read {} ({})  write {} ({})",
            format_rate(rate(0)),
            format_bytes(t[0]),
            format_rate(rate(1)),
            format_bytes(t[1])
        ));
        match extent {
            Extent::UntilStopped => bar.tick(),
            Extent::Time(_) => bar.set_position(cast::duration_ms(now.duration_since(start))),
            Extent::Bytes(_) => bar.set_position(t[0] + t[1]),
        }
        last = (now, t);
    }
    bar.finish_and_clear();
}
