//! Was the background load still loading the disk during one start?
//!
//! The load's own counters count completed I/Os, so a start in which they
//! did not move is not proof of a dead load: a buffered writer can sit
//! for seconds at the dirty-page limit (or behind a journal commit) while
//! the device writes its pages out, a reader's request can wait in the
//! scheduler behind the target's, a writer can wait for a CPU on a busy
//! one-vCPU guest (runnable, while kworkers write its pages out: seen in
//! the guest once memory control charged the writeback to the load's
//! group), and a rate-limited load may not be due to complete anything in
//! a short window. Each of those is the cell's
//! condition holding, and is stored as a sample with the reason; only a
//! load that neither completed nor waited on a busy device is not.

use iolab_sys::cast;
use iolab_sys::units::format_bytes;

/// Shorter starts are not judged: a load can legitimately move nothing
/// for a few hundred milliseconds.
pub(super) const MIN_WINDOW_S: f64 = 1.0;

/// Below this many completions expected in the window (at the warm-up's
/// rate), none at all is no surprise: a Poisson count with mean 3 is 0 one
/// time in twenty.
const EXPECTED_COMPLETIONS: f64 = 3.0;

/// What the load and its device did during one start.
#[derive(Debug, Default)]
pub(super) struct Window {
    pub seconds: f64,
    /// Bytes the load completed (its own counters).
    pub moved_bytes: u64,
    /// The load's threads in state D at the window's end, `tid (wchan)`.
    pub blocked: Vec<String>,
    /// Bytes the load's device read and wrote during the window.
    pub device_bytes: Option<u64>,
    /// Requests in flight on the device at the window's end.
    pub device_in_flight: Option<u64>,
    /// Read and write bytes/s during the warm-up (the load's counters).
    pub warmup_rate: Option<(f64, f64)>,
    /// Completions/s during the warm-up (the load's counters), where known.
    pub warmup_ios_per_s: Option<f64>,
}

/// The verdict on one start's load.
#[derive(Debug, PartialEq)]
pub(super) enum Liveness {
    /// It completed I/O, or the window was too short (or the warm-up
    /// showed no rate) to judge.
    Live,
    /// It completed nothing but was live; why, stored with the start.
    LiveWithout(String),
    /// It was not loading the disk: the start is not a sample of the cell.
    Stalled(String),
}

impl Window {
    pub(super) fn judge(&self) -> Liveness {
        let Some((r, w)) = self.warmup_rate else {
            return Liveness::Live;
        };
        if self.moved_bytes > 0 || self.seconds < MIN_WINDOW_S || r + w <= 0.0 {
            return Liveness::Live;
        }
        if let Some(expected) = self.warmup_ios_per_s.map(|n| n * self.seconds) {
            if expected < EXPECTED_COMPLETIONS {
                return Liveness::LiveWithout(format!(
                    "the background load completed no I/O during this {:.1} s start; at its \
                     warm-up rate it was due {expected:.1}",
                    self.seconds
                ));
            }
        }
        let device_busy =
            self.device_bytes.unwrap_or(0) > 0 || self.device_in_flight.unwrap_or(0) > 0;
        if !self.blocked.is_empty() && device_busy {
            return Liveness::LiveWithout(format!(
                "the background load completed no I/O during this {:.1} s start, its \
                 thread(s) waiting in the kernel or for a CPU ({}) while the device moved {} \
                 and had {} request(s) in flight",
                self.seconds,
                self.blocked.join(", "),
                format_bytes(self.device_bytes.unwrap_or(0)),
                self.device_in_flight.unwrap_or(0)
            ));
        }
        let threads = if self.blocked.is_empty() {
            "none of its threads waited in the kernel or for a CPU".to_string()
        } else {
            format!(
                "its thread(s) {} waited in the kernel on an idle device",
                self.blocked.join(", ")
            )
        };
        Liveness::Stalled(format!(
            "the background load moved no bytes during this {:.1} s start and {threads} \
             (during the warm-up: {} read, {} written per second)",
            self.seconds,
            format_bytes(cast::floor_u64(r)),
            format_bytes(cast::floor_u64(w))
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stuck() -> Window {
        Window {
            seconds: 1.2,
            warmup_rate: Some((0.0, 60e6)),
            warmup_ios_per_s: Some(60.0),
            ..Window::default()
        }
    }

    #[test]
    fn a_load_that_moved_bytes_is_live() {
        let w = Window {
            moved_bytes: 1,
            ..stuck()
        };
        assert_eq!(w.judge(), Liveness::Live);
    }

    #[test]
    fn a_short_window_or_no_warmup_rate_is_not_judged() {
        let short = Window {
            seconds: 0.5,
            ..stuck()
        };
        assert_eq!(short.judge(), Liveness::Live);
        let no_rate = Window {
            warmup_rate: None,
            ..stuck()
        };
        assert_eq!(no_rate.judge(), Liveness::Live);
    }

    #[test]
    fn a_writer_held_at_the_dirty_limit_on_a_busy_device_is_live() {
        let w = Window {
            blocked: vec!["123 (balance_dirty_pages)".into()],
            device_bytes: Some(40 << 20),
            device_in_flight: Some(0),
            ..stuck()
        };
        match w.judge() {
            Liveness::LiveWithout(why) => assert!(why.contains("balance_dirty_pages"), "{why}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_writer_waiting_for_a_cpu_on_a_busy_device_is_live() {
        let w = Window {
            blocked: vec!["123 (runnable)".into()],
            device_bytes: Some(30 << 20),
            ..stuck()
        };
        match w.judge() {
            Liveness::LiveWithout(why) => assert!(why.contains("runnable"), "{why}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_reader_held_in_the_scheduler_is_live() {
        let w = Window {
            blocked: vec!["7 (io_schedule)".into()],
            device_bytes: Some(0),
            device_in_flight: Some(1),
            ..stuck()
        };
        assert!(matches!(w.judge(), Liveness::LiveWithout(_)));
    }

    #[test]
    fn a_load_waiting_on_an_idle_device_or_not_in_the_kernel_is_stalled() {
        let frozen = Window {
            blocked: vec!["7 (percpu_rwsem_wait)".into()],
            device_bytes: Some(0),
            device_in_flight: Some(0),
            ..stuck()
        };
        match frozen.judge() {
            Liveness::Stalled(why) => assert!(why.contains("idle device"), "{why}"),
            v => panic!("{v:?}"),
        }
        // The device busy with someone else's I/O does not make a load
        // that is not waiting on it live.
        let asleep = Window {
            device_bytes: Some(1 << 30),
            ..stuck()
        };
        match asleep.judge() {
            Liveness::Stalled(why) => assert!(why.contains("none of its threads"), "{why}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_slow_load_due_no_completion_is_live() {
        let w = Window {
            warmup_rate: Some((4096.0, 0.0)),
            warmup_ios_per_s: Some(1.0),
            ..stuck()
        };
        assert!(matches!(w.judge(), Liveness::LiveWithout(_)));
        // Due 72 completions: none is a stall.
        assert!(matches!(stuck().judge(), Liveness::Stalled(_)));
    }
}
