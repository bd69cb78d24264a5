//! Block tracing in the background, for commands that do something else
//! meanwhile (`iolab load --trace bio`, `iolab startup --trace bio`):
//! [`BioTracer::start`] returns once tracing is on; [`BioTracer::stop`]
//! returns every request completed in between.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use iolab_guard::Guard;

use crate::disks::Disk;
use crate::result::BioTrace;
use crate::session::{BioError, BioOptions, BioSession};

/// How often the background thread drains the trace.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// A block trace running on its own thread.
pub struct BioTracer {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<BioTrace, BioError>>,
}

impl BioTracer {
    /// Traces `disks` (every disk when empty), keeping every request.
    pub fn start(guard: &Guard, disks: Vec<Disk>) -> Result<BioTracer, BioError> {
        BioTracer::start_with(
            guard,
            BioOptions {
                disks,
                ..BioOptions::default()
            },
        )
    }

    /// Traces with full options.
    pub fn start_with(guard: &Guard, opts: BioOptions) -> Result<BioTracer, BioError> {
        // Started here, so setup errors reach the caller and tracing is on
        // when this returns.
        let mut session = BioSession::start(guard, opts)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("iolab-bio".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    session.poll(&mut |_, _| {})?;
                    std::thread::sleep(POLL_INTERVAL);
                }
                session.finish(&mut |_, _| {})
            })
            .map_err(|e| BioError::Thread(e.to_string()))?;
        Ok(BioTracer { stop, thread })
    }

    /// Stops tracing and returns the trace.
    pub fn stop(self) -> Result<BioTrace, BioError> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|p| BioError::Thread(panic_text(&p)))?
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
