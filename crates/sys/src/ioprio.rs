//! I/O priorities (ioprio_set(2), Documentation/block/ioprio.rst).
//!
//! A priority is a class (real-time, best-effort, idle) and a level 0..7
//! (0 highest). `IOPRIO_WHO_PROCESS` with a thread id changes just that
//! thread, which is how the workload engine gives its worker threads the
//! priority the experiment asks for without touching the rest of iolab.
//! Changing a priority is not journaled: it belongs to the thread or the
//! process iolab itself started and dies with it.

use std::fmt;
use std::str::FromStr;

use crate::UsageError;

const IOPRIO_CLASS_SHIFT: u32 = 13;
const IOPRIO_PRIO_MASK: i32 = (1 << IOPRIO_CLASS_SHIFT) - 1;
const IOPRIO_CLASS_NONE: i32 = 0;
const IOPRIO_CLASS_RT: i32 = 1;
const IOPRIO_CLASS_BE: i32 = 2;
const IOPRIO_CLASS_IDLE: i32 = 3;
const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// An I/O priority class and level, written `rt:N`, `be:N` or `idle`.
/// Stored and shown as that text (`"rt:0"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoPrio {
    /// No priority set: the kernel derives one from the CPU nice value.
    None,
    /// Real-time class, level 0 (highest) to 7. Needs CAP_SYS_ADMIN or
    /// CAP_SYS_NICE.
    RealTime(u8),
    /// Best-effort class (the default), level 0 (highest) to 7.
    BestEffort(u8),
    /// Idle class: served only when nobody else wants the disk.
    Idle,
}

impl IoPrio {
    /// The value ioprio_set(2) takes.
    pub fn raw(self) -> i32 {
        let (class, level) = match self {
            IoPrio::None => (IOPRIO_CLASS_NONE, 0),
            IoPrio::RealTime(l) => (IOPRIO_CLASS_RT, l),
            IoPrio::BestEffort(l) => (IOPRIO_CLASS_BE, l),
            IoPrio::Idle => (IOPRIO_CLASS_IDLE, 0),
        };
        (class << IOPRIO_CLASS_SHIFT) | i32::from(level)
    }

    /// Decodes a value returned by ioprio_get(2).
    pub fn from_raw(raw: i32) -> IoPrio {
        let level = (raw & IOPRIO_PRIO_MASK).clamp(0, 7) as u8;
        match raw >> IOPRIO_CLASS_SHIFT {
            IOPRIO_CLASS_RT => IoPrio::RealTime(level),
            IOPRIO_CLASS_BE => IoPrio::BestEffort(level),
            IOPRIO_CLASS_IDLE => IoPrio::Idle,
            _ => IoPrio::None,
        }
    }

    /// Sets this priority on a thread (by tid) or a process (by pid; for a
    /// multi-threaded process this changes only its main thread, as the
    /// kernel's `IOPRIO_WHO_PROCESS` does). 0 means the calling thread.
    pub fn set_for(self, tid: i32) -> std::io::Result<()> {
        // SAFETY: ioprio_set takes three integers and touches no memory.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_long,
                self.raw() as libc::c_long,
            )
        };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Reads the priority of a thread or process (0 = the calling thread).
    pub fn get_for(tid: i32) -> std::io::Result<IoPrio> {
        // SAFETY: ioprio_get takes two integers and touches no memory.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ioprio_get,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_long,
            )
        };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            // ioprio_get(2) returns an int (IOPRIO_PRIO_VALUE, 16 bits).
            let raw = i32::try_from(r).map_err(|_| {
                std::io::Error::other(format!(
                    "ioprio_get({tid}) returned {r}, which is not an I/O priority"
                ))
            })?;
            Ok(IoPrio::from_raw(raw))
        }
    }
}

/// The calling thread's kernel thread id (what `set_for` takes).
pub fn current_tid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

impl FromStr for IoPrio {
    type Err = UsageError;

    fn from_str(text: &str) -> Result<Self, UsageError> {
        let bad = || {
            UsageError::new(format!(
                "invalid I/O priority {text:?}: expected rt:N (real-time), be:N (best-effort) \
                 with N from 0 (highest) to 7, or idle"
            ))
        };
        let t = text.trim().to_ascii_lowercase();
        match t.as_str() {
            "idle" => return Ok(IoPrio::Idle),
            "none" => return Ok(IoPrio::None),
            _ => {}
        }
        let (class, level) = t.split_once(':').ok_or_else(bad)?;
        let level: u8 = level.parse().map_err(|_| bad())?;
        if level > 7 {
            return Err(bad());
        }
        match class {
            "rt" => Ok(IoPrio::RealTime(level)),
            "be" => Ok(IoPrio::BestEffort(level)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for IoPrio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoPrio::None => write!(f, "none"),
            IoPrio::RealTime(l) => write!(f, "rt:{l}"),
            IoPrio::BestEffort(l) => write!(f, "be:{l}"),
            IoPrio::Idle => write!(f, "idle"),
        }
    }
}

impl serde::Serialize for IoPrio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for IoPrio {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <String as serde::Deserialize>::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms() {
        assert_eq!("rt:0".parse::<IoPrio>().unwrap(), IoPrio::RealTime(0));
        assert_eq!("be:7".parse::<IoPrio>().unwrap(), IoPrio::BestEffort(7));
        assert_eq!("IDLE".parse::<IoPrio>().unwrap(), IoPrio::Idle);
        for p in [
            IoPrio::None,
            IoPrio::RealTime(0),
            IoPrio::BestEffort(4),
            IoPrio::Idle,
        ] {
            let j = serde_json::to_value(p).unwrap();
            assert_eq!(j, serde_json::json!(p.to_string()));
            assert_eq!(serde_json::from_value::<IoPrio>(j).unwrap(), p);
        }
        assert!(serde_json::from_value::<IoPrio>(serde_json::json!("rt:9")).is_err());
        for bad in ["rt", "be:8", "xx:1", "rt:-1", ""] {
            let e = bad.parse::<IoPrio>().unwrap_err();
            assert!(e.0.contains("rt:N"), "{bad}: {e}");
        }
    }

    #[test]
    fn raw_round_trips() {
        for p in [
            IoPrio::RealTime(0),
            IoPrio::BestEffort(4),
            IoPrio::Idle,
            IoPrio::None,
        ] {
            assert_eq!(IoPrio::from_raw(p.raw()), p);
        }
        assert_eq!(IoPrio::BestEffort(4).raw(), (2 << 13) | 4);
        assert_eq!(IoPrio::RealTime(3).to_string(), "rt:3");
    }

    #[test]
    fn sets_a_single_thread() {
        // Lowering our own best-effort level needs no privilege.
        let h = std::thread::spawn(|| {
            let tid = current_tid();
            IoPrio::BestEffort(6).set_for(tid).unwrap();
            (tid, IoPrio::get_for(tid).unwrap())
        });
        let (tid, got) = h.join().unwrap();
        assert_eq!(got, IoPrio::BestEffort(6));
        assert_ne!(tid, current_tid());
        // The main thread kept its own priority.
        assert_ne!(IoPrio::get_for(0).unwrap(), IoPrio::BestEffort(6));
    }

    #[test]
    fn real_time_needs_privilege() {
        let r = std::thread::spawn(|| IoPrio::RealTime(0).set_for(0))
            .join()
            .unwrap();
        if crate::is_root() {
            assert!(r.is_ok(), "{r:?}");
        } else {
            assert!(r.is_err());
        }
    }
}
