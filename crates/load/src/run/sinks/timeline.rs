//! One clone's timeline: when it started, when the ramp ends and
//! measurement begins (with the CPU reading taken then), and when the
//! runtime is over. Engines advance it with the clock readings they take
//! anyway, so it costs no extra clock read per I/O.

use std::time::{Duration, Instant};

use crate::job::model::Job;
use crate::run::sinks::cpu::CpuUse;

/// Ramp, measurement window and deadline of one clone.
pub struct Timeline {
    pub(crate) go: Instant,
    ramp_end: Instant,
    runtime: Option<Duration>,
    /// The latest clock reading.
    pub now: Instant,
    pub(crate) measure_start: Option<Instant>,
    deadline: Option<Instant>,
    pub(crate) cpu_start: CpuUse,
}

impl Timeline {
    pub(crate) fn new(job: &Job, go: Instant) -> Timeline {
        let mut t = Timeline {
            go,
            ramp_end: go + job.ramp_time,
            runtime: job.runtime,
            now: go,
            measure_start: None,
            deadline: None,
            cpu_start: CpuUse::default(),
        };
        t.tick(go);
        t
    }

    /// Advances the clock; measurement starts once the ramp is over.
    #[inline]
    pub fn tick(&mut self, now: Instant) {
        self.now = now;
        if self.measure_start.is_none() && now >= self.ramp_end {
            self.measure_start = Some(now);
            self.cpu_start = CpuUse::this_thread();
            self.deadline = self.runtime.map(|r| now + r);
        }
    }

    /// True while I/O is being measured (ramp over).
    #[inline]
    pub fn measuring(&self) -> bool {
        self.measure_start.is_some()
    }

    /// Measurement starts over at `now` (latency_target's final window).
    pub(crate) fn restart(&mut self, now: Instant) {
        self.now = now;
        self.measure_start = Some(now);
        self.cpu_start = CpuUse::this_thread();
    }

    /// When the runtime ends, once measuring.
    #[inline]
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// True once the runtime has elapsed.
    #[inline]
    pub fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| self.now >= d)
    }
}
