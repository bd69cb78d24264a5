//! CPU use of one worker thread, from getrusage(RUSAGE_THREAD): user and
//! system time, context switches and page faults, the raw material of
//! fio's `usr_cpu`, `sys_cpu`, `ctx`, `majf` and `minf`.

use std::time::Duration;

/// One reading (or a difference of two).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuUse {
    /// User time.
    pub usr: Duration,
    /// System time.
    pub sys: Duration,
    /// Voluntary plus involuntary context switches.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
}

impl CpuUse {
    /// The calling thread's use so far.
    pub fn this_thread() -> CpuUse {
        // SAFETY: getrusage fills the struct we pass and nothing else.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: RUSAGE_THREAD with a valid pointer cannot fail on Linux
        // >= 2.6.26; on failure the struct stays zeroed.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        CpuUse {
            usr: tv(ru.ru_utime),
            sys: tv(ru.ru_stime),
            ctx: (ru.ru_nvcsw + ru.ru_nivcsw).max(0) as u64,
            majf: ru.ru_majflt.max(0) as u64,
            minf: ru.ru_minflt.max(0) as u64,
        }
    }

    /// `self - earlier`.
    pub fn since(&self, earlier: &CpuUse) -> CpuUse {
        CpuUse {
            usr: self.usr.saturating_sub(earlier.usr),
            sys: self.sys.saturating_sub(earlier.sys),
            ctx: self.ctx.saturating_sub(earlier.ctx),
            majf: self.majf.saturating_sub(earlier.majf),
            minf: self.minf.saturating_sub(earlier.minf),
        }
    }

    /// Sum of two.
    pub fn plus(&self, o: &CpuUse) -> CpuUse {
        CpuUse {
            usr: self.usr + o.usr,
            sys: self.sys + o.sys,
            ctx: self.ctx + o.ctx,
            majf: self.majf + o.majf,
            minf: self.minf + o.minf,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_uses_user_time() {
        // The thread's CPU clock is the outside truth: spin until it says
        // 40 ms were used, however long a busy machine takes to give them
        // (a wall-clock spin once got 5 ms of CPU while the suite ran).
        let thread_cpu = || {
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `t` is a valid timespec to write.
            assert_eq!(
                unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) },
                0
            );
            Duration::new(
                u64::try_from(t.tv_sec).unwrap(),
                u32::try_from(t.tv_nsec).unwrap(),
            )
        };
        let (used, clock) = std::thread::spawn(move || {
            let a = CpuUse::this_thread();
            let c0 = thread_cpu();
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while thread_cpu() - c0 < Duration::from_millis(40)
                && t.elapsed() < Duration::from_secs(20)
            {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            (CpuUse::this_thread().since(&a), thread_cpu() - c0)
        })
        .join()
        .unwrap();
        assert!(
            clock >= Duration::from_millis(40),
            "the spin got {clock:?} of CPU in 20 s"
        );
        // getrusage and the CPU clock count the same time, getrusage at
        // the kernel's accounting granularity.
        assert!(
            used.usr + used.sys >= clock - Duration::from_millis(10),
            "{used:?} against {clock:?}"
        );
        assert_eq!(used.plus(&CpuUse::default()), used);
    }
}
