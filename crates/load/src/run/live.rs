//! What running workers share with the rest of the process: stop flags,
//! live counters for progress and snapshots, and the start gate.
//!
//! Counters are written only by their own worker, with plain relaxed
//! stores of its local totals (no read-modify-write, no lock per I/O), and
//! padded to a cache line so workers do not slow each other down.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use crate::job::kinds::Dir;

/// Load-wide control.
#[derive(Debug, Default)]
pub struct Control {
    /// Set by `stop()`.
    pub stop: AtomicBool,
}

impl Control {
    /// True once the load or the whole process was asked to stop.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || iolab_guard::stop_requested()
    }
}

/// One clone's running totals (ramp included), and whether it has ended.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct LiveCounters {
    bytes: [AtomicU64; 3],
    ios: [AtomicU64; 3],
    ended: AtomicBool,
    /// Why it ended, when an error ended it (written once, at the end).
    failure: Mutex<Option<String>>,
}

impl LiveCounters {
    /// Marks the clone as ended (by its own runtime/size, an error, or a
    /// stop), with the error if one ended it.
    pub fn end(&self, failure: Option<String>) {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = failure;
        self.ended.store(true, Ordering::Release);
    }

    /// `None` while the clone runs (or has not started); once it ended,
    /// `Some(error)` with the error that ended it, if any.
    pub fn ended(&self) -> Option<Option<String>> {
        self.ended.load(Ordering::Acquire).then(|| {
            self.failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        })
    }

    /// Publishes the worker's totals for a direction.
    #[inline]
    pub fn publish(&self, dir: Dir, bytes: u64, ios: u64) {
        self.bytes[dir as usize].store(bytes, Ordering::Relaxed);
        self.ios[dir as usize].store(ios, Ordering::Relaxed);
    }

    /// (bytes, ios) for a direction.
    pub fn read(&self, dir: Dir) -> (u64, u64) {
        (
            self.bytes[dir as usize].load(Ordering::Relaxed),
            self.ios[dir as usize].load(Ordering::Relaxed),
        )
    }
}

/// Holds workers after their setup until every clone of the group is ready
/// (so they start together), or tells them to give up.
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

impl Gate {
    /// Opens the gate: `true` = go, `false` = abort.
    pub fn open(&self, go: bool) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *s = Some(go);
        self.cv.notify_all();
    }

    /// Waits for the gate; returns whether to go.
    pub fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(go) = *s {
                return go;
            }
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn gate_releases_waiters() {
        let g = Arc::new(Gate::default());
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || g.wait())
            })
            .collect();
        g.open(true);
        assert!(hs.into_iter().all(|h| h.join().unwrap()));
        let c = LiveCounters::default();
        c.publish(Dir::Write, 10, 2);
        assert_eq!(c.read(Dir::Write), (10, 2));
        assert_eq!(c.read(Dir::Read), (0, 0));
        assert_eq!(std::mem::align_of::<LiveCounters>(), 64);
    }
}
