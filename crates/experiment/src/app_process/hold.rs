//! The app's threads' priorities after iolab sets them. Android sets them
//! again itself (docs/android.md, "What Android does to the app"):
//! zygote's SpecializeCommon resets the nice, Zygote.java sets the main
//! thread's Java priority, each new Java thread sets its own (ART's
//! SetNativePriority), HWUI's RenderThread takes PRIORITY_DISPLAY, and
//! ActivityManager boosts the top app's main and render threads. No
//! kernel event says so (setpriority(2) has no tracepoint of its own),
//! so every thread of the app is read while the start runs, every
//! [`POLL`]: a value that is not what iolab set is a drift, stored with
//! when it was seen, and re-applied when the user asked iolab to hold
//! the settings.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use iolab_sys::ioprio::IoPrio;
use serde::Serialize;

/// How often the app's threads are read while the start runs, when
/// priorities were asked for: a drift lasts at most this long when held
/// (and a shorter one between two reads is not seen).
pub const POLL: Duration = Duration::from_millis(5);

/// Drifts stored per start (a thread that flips back and forth must not
/// grow the record).
const MAX_DRIFTS: usize = 256;

/// What iolab sets on every thread of the app.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Asked {
    /// `--target-ioprio`.
    pub ioprio: Option<IoPrio>,
    /// `--target-nice`.
    pub nice: Option<i32>,
    /// `--target-hold`: re-applied whenever Android changes them.
    pub hold: bool,
}

impl Asked {
    /// Something is set on the app's threads.
    pub fn any(&self) -> bool {
        self.ioprio.is_some() || self.nice.is_some()
    }
}

/// One thread's values as the kernel gives them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadState {
    /// Its process.
    pub pid: i32,
    /// The thread.
    pub tid: i32,
    /// Its name (`/proc/PID/task/TID/comm`).
    pub comm: String,
    /// Its nice (`/proc/PID/task/TID/stat`).
    pub nice: Option<i32>,
    /// Its I/O priority (`ioprio_get`).
    pub ioprio: Option<String>,
}

/// A thread of the app found at a value iolab did not set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    /// Its process.
    pub pid: i32,
    /// The thread.
    pub tid: i32,
    /// Its name when last seen: a new thread has its creator's name
    /// until it gives itself its own (HWUI's RenderThread, a Java
    /// thread), and may drift before it does.
    pub comm: String,
    /// `nice` or `ioprio`.
    pub what: &'static str,
    /// What iolab had set.
    pub asked: String,
    /// What the kernel said.
    pub found: String,
    /// When it was seen, ms from the launch (negative: before it, in a
    /// warm or hot start's app).
    pub at_ms: f64,
    /// Set back by iolab (`--target-hold`).
    pub reapplied: bool,
    /// CLOCK_MONOTONIC ns of the look; made `at_ms` at the end.
    #[serde(skip)]
    pub at_ns: u64,
}

/// The threads of the app's processes iolab has set or seen.
#[derive(Debug, Default)]
pub struct Threads {
    /// Threads seen, per process.
    seen: HashMap<i32, Vec<i32>>,
    /// Drifts, first sight of each (thread, value).
    pub drifts: Vec<Drift>,
    /// Drifts beyond [`MAX_DRIFTS`], counted only.
    pub drifts_not_stored: u64,
    /// Values set back (`--target-hold`).
    pub reapplied: u64,
    /// Looks at every thread.
    pub polls: u64,
    /// Settings and looks that failed (a thread gone meanwhile is not
    /// one).
    pub errors: Vec<String>,
}

impl Threads {
    /// Sets every thread of `pid` not seen yet, listing them again until
    /// none is new (a thread not yet set may have made another
    /// meanwhile); how many were set.
    pub fn set_new(&mut self, pid: i32, asked: &Asked) -> usize {
        let mut total = 0;
        for _ in 0..16 {
            let tids = match tids(pid) {
                Ok(t) => t,
                Err(e) => {
                    self.error(format!("threads of {pid}: /proc/{pid}/task: {e}"), &e);
                    break;
                }
            };
            let new: Vec<i32> = tids
                .into_iter()
                .filter(|t| !self.seen.get(&pid).is_some_and(|s| s.contains(t)))
                .collect();
            if new.is_empty() {
                break;
            }
            for tid in new {
                self.seen.entry(pid).or_default().push(tid);
                total += 1;
                self.set(tid, asked);
            }
        }
        total
    }

    fn set(&mut self, tid: i32, asked: &Asked) {
        if let Some(p) = asked.ioprio {
            if let Err(e) = p.set_for(tid) {
                self.error(format!("ioprio of thread {tid}: {e}"), &e);
            }
        }
        if let Some(n) = asked.nice {
            if let Err(e) = set_nice(tid, n) {
                self.error(format!("nice of thread {tid}: {e}"), &e);
            }
        }
    }

    /// A look that failed (/proc unlistable), stored once.
    pub fn note(&mut self, what: String) {
        if self.errors.len() < 64 && !self.errors.contains(&what) {
            self.errors.push(what);
        }
    }

    /// A setting that failed, once per thread and kind (a thread gone
    /// meanwhile is not one): holding retries it every look.
    fn error(&mut self, what: String, e: &std::io::Error) {
        if e.raw_os_error() != Some(libc::ESRCH)
            && self.errors.len() < 64
            && !self.errors.contains(&what)
        {
            self.errors.push(what);
        }
    }

    /// One look at every thread of `pids`: a value that is not what was
    /// asked is a drift (a thread made since, by Android's own code, is
    /// one too), set back when holding.
    pub fn check(&mut self, pids: &[i32], asked: &Asked, now_ns: u64) {
        if !asked.any() {
            return;
        }
        self.polls += 1;
        for &pid in pids {
            let threads = match read_some(pid, asked.ioprio.is_some()) {
                Ok(t) => t,
                Err(e) => {
                    self.error(format!("threads of {pid}: /proc/{pid}/task: {e}"), &e);
                    continue;
                }
            };
            for t in threads {
                if !self.seen.get(&pid).is_some_and(|s| s.contains(&t.tid)) {
                    self.seen.entry(pid).or_default().push(t.tid);
                }
                self.rename(&t);
                let mut drifted = false;
                if let (Some(want), Some(found)) = (asked.nice, t.nice) {
                    if want != found {
                        drifted = true;
                        self.drift(
                            &t,
                            "nice",
                            want.to_string(),
                            found.to_string(),
                            asked.hold,
                            now_ns,
                        );
                    }
                }
                if let (Some(want), Some(found)) = (asked.ioprio, t.ioprio.as_deref()) {
                    if want.to_string() != found {
                        drifted = true;
                        self.drift(
                            &t,
                            "ioprio",
                            want.to_string(),
                            found.to_string(),
                            asked.hold,
                            now_ns,
                        );
                    }
                }
                if drifted && asked.hold {
                    self.reapplied += 1;
                    self.set(t.tid, asked);
                }
            }
        }
    }

    /// A drifted thread that renamed itself since is named as it is now.
    fn rename(&mut self, t: &ThreadState) {
        for d in self.drifts.iter_mut() {
            if d.tid == t.tid && d.comm != t.comm {
                d.comm.clone_from(&t.comm);
            }
        }
    }

    fn drift(
        &mut self,
        t: &ThreadState,
        what: &'static str,
        asked: String,
        found: String,
        reapplied: bool,
        at_ns: u64,
    ) {
        if self
            .drifts
            .iter()
            .any(|d| d.tid == t.tid && d.what == what && d.found == found)
        {
            return;
        }
        if self.drifts.len() >= MAX_DRIFTS {
            self.drifts_not_stored += 1;
            return;
        }
        self.drifts.push(Drift {
            pid: t.pid,
            tid: t.tid,
            comm: t.comm.clone(),
            what,
            asked,
            found,
            at_ms: 0.0,
            reapplied,
            at_ns,
        });
    }
}

/// setpriority(2) on one thread.
fn set_nice(tid: i32, nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority(2) on a thread id; no memory involved.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The threads of `pid`, now: none once it is gone; a task directory
/// that cannot be read is the caller's error to store (the threads it
/// hides were neither set nor checked).
pub fn tids(pid: i32) -> std::io::Result<Vec<i32>> {
    iolab_sys::process::tids(Path::new("/proc"), pid)
}

/// Every thread of `pid` with the values the kernel gives it now.
pub fn read(pid: i32) -> std::io::Result<Vec<ThreadState>> {
    read_some(pid, true)
}

/// As [`read`], the I/O priority only `with_ioprio`: one file read per
/// thread (its `stat` holds the name and the nice), the look taken every
/// [`POLL`] while a start runs.
fn read_some(pid: i32, with_ioprio: bool) -> std::io::Result<Vec<ThreadState>> {
    Ok(tids(pid)?
        .into_iter()
        .filter_map(|tid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
            let comm = stat.split_once(" (")?.1.rsplit_once(')')?.0.to_string();
            Some(ThreadState {
                pid,
                tid,
                comm,
                nice: nice_in(&stat),
                // A thread that exited since is not one of the app's.
                ioprio: match with_ioprio.then(|| IoPrio::get_for(tid)) {
                    Some(Ok(p)) => Some(p.to_string()),
                    Some(Err(e)) if e.raw_os_error() == Some(libc::ESRCH) => return None,
                    _ => None,
                },
            })
        })
        .collect())
}

/// Field 19 of a `stat` file's text.
pub fn nice_in(stat: &str) -> Option<i32> {
    // After the command name's closing parenthesis: state is field 3.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(16)?
        .parse()
        .ok()
}

/// What Android means by a nice value it gives an app's thread (AOSP's
/// android.os.Process and system/core thread_defs.h), for the reason
/// a start is stored invalid.
pub fn android_meaning(nice: &str) -> Option<&'static str> {
    Some(match nice {
        "0" => "THREAD_PRIORITY_DEFAULT: zygote's reset in SpecializeCommon, Thread.NORM_PRIORITY, or ART's SetNativePriority of a new Java thread",
        "-10" => "THREAD_PRIORITY_TOP_APP_BOOST: ActivityManager's OomAdjuster boosting the top app's main and render threads",
        "-4" => "THREAD_PRIORITY_DISPLAY: HWUI's RenderThread, or its value once the app leaves the top",
        "-8" => "THREAD_PRIORITY_URGENT_DISPLAY",
        "10" => "THREAD_PRIORITY_BACKGROUND",
        _ => return None,
    })
}

/// The drifts of one start as one sentence: grouped by what changed,
/// with the threads' names and, where Android has a name for the value,
/// what gives it.
pub fn describe(drifts: &[Drift]) -> String {
    // (what, asked, found) → the drifts of that change.
    type Change<'a> = (&'a str, &'a str, &'a str);
    let mut groups: Vec<(Change, Vec<&Drift>)> = Vec::new();
    for d in drifts {
        let key = (d.what, d.asked.as_str(), d.found.as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(d),
            None => groups.push((key, vec![d])),
        }
    }
    groups
        .iter()
        .map(|((what, asked, found), v)| {
            let mut names: Vec<String> = v
                .iter()
                .map(|d| {
                    if d.tid == d.pid {
                        format!("main thread {}", d.tid)
                    } else {
                        format!("{} {}", d.comm, d.tid)
                    }
                })
                .collect();
            let more = names.len().saturating_sub(6);
            names.truncate(6);
            if more > 0 {
                names.push(format!("{more} more"));
            }
            let first = v.iter().map(|d| d.at_ms).fold(f64::INFINITY, f64::min);
            let meaning = (*what == "nice")
                .then(|| android_meaning(found))
                .flatten()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            format!(
                "{what} {asked} → {found}{meaning} on {} from {first:.0} ms",
                names.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn d(tid: i32, comm: &str, found: &str, at_ms: f64) -> Drift {
        Drift {
            pid: 100,
            tid,
            comm: comm.into(),
            what: "nice",
            asked: "5".into(),
            found: found.into(),
            at_ms,
            reapplied: false,
            at_ns: 0,
        }
    }

    /// What the tests on a child process ask: nice 15, not held.
    const NICE_15: Asked = Asked {
        ioprio: None,
        nice: Some(15),
        hold: false,
    };

    #[test]
    fn drifts_are_named_as_android_names_them() {
        let s = describe(&[
            d(100, "rigapp", "-10", 40.0),
            d(104, "RenderThread", "-10", 61.0),
            d(101, "HeapTaskDaemon", "0", 17.0),
        ]);
        assert!(
            s.starts_with("nice 5 → -10 (THREAD_PRIORITY_TOP_APP_BOOST"),
            "{s}"
        );
        assert!(
            s.contains("on main thread 100, RenderThread 104 from 40 ms"),
            "{s}"
        );
        assert!(s.contains("nice 5 → 0 (THREAD_PRIORITY_DEFAULT"), "{s}");
        assert!(s.contains("HeapTaskDaemon 101 from 17 ms"), "{s}");
    }

    #[test]
    fn the_nice_is_field_19_even_with_a_parenthesis_in_the_name() {
        let stat = "42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 -10 3 0 99 0 0";
        assert_eq!(nice_in(stat), Some(-10));
    }

    /// A process this test sets is read back by the kernel; a drift made
    /// behind iolab's back (another setpriority) is seen, and set back
    /// only when holding.
    #[test]
    fn a_drift_is_seen_and_set_back_only_when_held() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let asked = NICE_15;
        let mut th = Threads::default();
        assert_eq!(th.set_new(pid, &asked), 1);
        assert_eq!(read(pid).unwrap()[0].nice, Some(15));
        // Raising a nice needs no privilege: the drift goes up, to 19.
        set_nice(pid, 19).unwrap();
        th.check(&[pid], &asked, 1);
        assert_eq!(th.drifts.len(), 1, "{:?}", th.drifts);
        assert_eq!((th.drifts[0].found.as_str(), th.reapplied), ("19", 0));
        assert_eq!(read(pid).unwrap()[0].nice, Some(19));
        if rustix::process::geteuid().is_root() {
            // Setting it back lowers it: CAP_SYS_NICE.
            let held = Asked {
                hold: true,
                ..asked
            };
            th.check(&[pid], &held, 2);
            assert_eq!(th.reapplied, 1);
            assert_eq!(read(pid).unwrap()[0].nice, Some(15));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A thread that drifts before it names itself (a RenderThread born
    /// with its creator's name and nice) is named as /proc names it now.
    #[test]
    fn a_drifted_thread_that_renames_itself_is_named_as_it_is_now() {
        use std::io::Write;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read _; exec sleep 5"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let asked = NICE_15;
        let mut th = Threads::default();
        th.set_new(pid, &asked);
        set_nice(pid, 19).unwrap();
        th.check(&[pid], &asked, 1);
        assert_eq!(th.drifts[0].comm, "sh", "{:?}", th.drifts);
        // The exec renames it: /proc's comm is the outside truth.
        writeln!(child.stdin.as_mut().unwrap()).unwrap();
        let comm = format!("/proc/{pid}/comm");
        let t0 = std::time::Instant::now();
        while std::fs::read_to_string(&comm).unwrap().trim() != "sleep" {
            assert!(t0.elapsed().as_secs() < 10, "sh never ran sleep");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        th.check(&[pid], &asked, 2);
        assert_eq!(th.drifts.len(), 1, "{:?}", th.drifts);
        assert_eq!(th.drifts[0].comm, "sleep");
        let _ = child.kill();
        let _ = child.wait();
    }
}
