//! The app's own process, when iolab does not start it: on Android `am
//! start` asks ActivityManager, and zygote forks the app, outside iolab's
//! process group and long after `am` (itself a script running `cmd
//! activity`) was launched. Per-process options (`--target-ioprio`,
//! `--target-nice`) must land on that process, not on `am`.
//!
//! Found by name, as Android names it: zygote's child takes the package
//! name as its argv[0] (`/proc/PID/cmdline`) when it specialises. New
//! processes are noticed cheaply: `/proc/sys/kernel/ns_last_pid` (one
//! small read a millisecond) says when pids were handed out, and only
//! those pids are looked at; a new pid that does not carry the name yet
//! (zygote's fresh fork, still called `zygote64`) is looked at again until
//! it does or exits. Once found, every thread it has gets the settings
//! (ioprio and nice are per thread in Linux; threads made afterwards
//! inherit them from their maker), and threads that appear later in the
//! window are set too.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_sys::ioprio::IoPrio;
use serde::Serialize;

/// The app's process as found during one start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppProcess {
    /// Its pid.
    pub pid: i32,
    /// Time from the launch to the moment its first threads were set, ms:
    /// how long it ran with the default priorities.
    pub set_after_ms: f64,
    /// Time from the process's birth (its fork by zygote: `/proc/PID/stat`
    /// starttime, 10 ms ticks) to that moment, ms: the part of its life
    /// it ran under the defaults (zygote's specialisation, before it takes
    /// the package name, and up to 1 ms of iolab's polling).
    pub set_after_birth_ms: Option<f64>,
    /// Threads set (those it had then, and those it made later while the
    /// start lasted).
    pub threads_set: usize,
    /// Its main thread's I/O priority read back after setting it.
    pub ioprio: Option<String>,
    /// Its main thread's nice value read back (`/proc/PID/stat`).
    pub nice: Option<i32>,
    /// Its own I/O (`/proc/PID/io` at the end of the start; born after
    /// the launch, all of it is this start's, except in a hot start,
    /// where it is the app's life so far): the app's, where wait4 gives
    /// only am's.
    pub io: Option<iolab_sys::process::IoCounters>,
    /// Settings that failed (a thread gone meanwhile is not one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// A watcher thread looking for the app during one start.
pub struct AppWatch {
    stop: Arc<AtomicBool>,
    /// The app's pid once found (0 until then).
    pid: Arc<std::sync::atomic::AtomicI32>,
    handle: std::thread::JoinHandle<Option<AppProcess>>,
}

impl AppWatch {
    /// Starts looking for a process named `name` begun from now on (or,
    /// with `live`, one running already: a hot start's), to give it
    /// `ioprio` and `nice`.
    pub fn start(
        name: &str,
        live: bool,
        ioprio: Option<IoPrio>,
        nice: Option<i32>,
        t0: Instant,
    ) -> AppWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let name = name.to_string();
        let s = stop.clone();
        let pid = Arc::new(std::sync::atomic::AtomicI32::new(0));
        let p = pid.clone();
        // Read here, not in the thread: a process started right after
        // this call must count as new.
        let base = last_pid();
        let running = if live {
            running_named(&name)
        } else {
            Vec::new()
        };
        let handle =
            std::thread::spawn(move || watch(&name, base?, running, ioprio, nice, t0, &s, &p));
        AppWatch { stop, pid, handle }
    }

    /// The app's pid, once found: the process whose memory
    /// `--ready-rss-stable` watches.
    pub fn pid(&self) -> Option<i32> {
        Some(self.pid.load(Ordering::Relaxed)).filter(|&p| p > 0)
    }

    /// Stops looking; what was found, if anything.
    pub fn finish(self) -> Option<AppProcess> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().ok().flatten()
    }
}

fn last_pid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// argv[0] of `pid`, None when it is gone.
fn argv0(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let first = raw.split(|&b| b == 0).next().unwrap_or_default();
    Some(String::from_utf8_lossy(first).into_owned())
}

/// Processes alive now whose argv[0] is `name`, oldest (lowest pid) first.
fn running_named(name: &str) -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .filter(|&p| argv0(p).as_deref() == Some(name))
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

#[allow(clippy::too_many_arguments)]
fn watch(
    name: &str,
    base: i32,
    running: Vec<i32>,
    ioprio: Option<IoPrio>,
    nice: Option<i32>,
    t0: Instant,
    stop: &AtomicBool,
    found_pid: &std::sync::atomic::AtomicI32,
) -> Option<AppProcess> {
    let mut seen = base;
    let mut pending: Vec<i32> = running;
    let mut found: Option<AppProcess> = None;
    let mut set_tids: Vec<i32> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match &mut found {
            None => {
                if let Some(now) = last_pid() {
                    if now > seen {
                        pending.extend(seen + 1..=now);
                    } else if now < seen {
                        // The pid counter wrapped: from the bottom.
                        pending.extend(1..=now);
                    }
                    seen = now;
                }
                // Pids that are gone leave; the app's is kept when seen.
                let mut hit = None;
                pending.retain(|&p| match argv0(p) {
                    None => false,
                    Some(a) if a == name => {
                        // The first (oldest) match: a child the app forks
                        // carries its name until it execs.
                        hit = hit.or(Some(p));
                        false
                    }
                    Some(_) => true,
                });
                // Bounded: a fork storm must not make each pass slower.
                if pending.len() > 4096 {
                    pending.drain(..pending.len() - 4096);
                }
                if let Some(mut pid) = hit {
                    // A parent of the same name is the app itself (the
                    // child was seen first, in a pass that began before the
                    // parent took its name).
                    while let Some(pp) =
                        parent_of(pid).filter(|&pp| argv0(pp).as_deref() == Some(name))
                    {
                        pid = pp;
                    }
                    let mut app = AppProcess {
                        pid,
                        set_after_ms: 0.0,
                        set_after_birth_ms: None,
                        threads_set: 0,
                        ioprio: None,
                        nice: None,
                        io: None,
                        errors: Vec::new(),
                    };
                    set_threads(&mut app, &mut set_tids, ioprio, nice);
                    app.set_after_ms = t0.elapsed().as_secs_f64() * 1e3;
                    app.set_after_birth_ms = age_ms(pid);
                    app.ioprio = IoPrio::get_for(pid).ok().map(|p| p.to_string());
                    app.nice = nice_of(pid);
                    found_pid.store(pid, Ordering::Relaxed);
                    found = Some(app);
                }
            }
            Some(app) => {
                set_threads(app, &mut set_tids, ioprio, nice);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    found.map(|mut a| {
        a.io = iolab_sys::process::io_counters(Path::new("/proc"), a.pid);
        a
    })
}

/// Sets every thread of the app not set yet.
fn set_threads(
    app: &mut AppProcess,
    done: &mut Vec<i32>,
    ioprio: Option<IoPrio>,
    nice: Option<i32>,
) {
    let Ok(rd) = std::fs::read_dir(Path::new("/proc").join(app.pid.to_string()).join("task"))
    else {
        return;
    };
    for tid in rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
    {
        if done.contains(&tid) {
            continue;
        }
        done.push(tid);
        app.threads_set += 1;
        if let Some(p) = ioprio {
            if let Err(e) = p.set_for(tid) {
                if e.raw_os_error() != Some(libc::ESRCH) {
                    app.errors.push(format!("ioprio of thread {tid}: {e}"));
                }
            }
        }
        if let Some(n) = nice {
            // SAFETY: setpriority(2) on a thread id; no memory involved.
            let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, n) };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ESRCH) {
                    app.errors.push(format!("nice of thread {tid}: {e}"));
                }
            }
        }
    }
}

/// The parent of `pid`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    iolab_sys::process::parse_ppid(&stat)
}

/// How long `pid` has lived, ms: now (`/proc/uptime`, boot time) less
/// its start time (clock ticks since boot).
fn age_ms(pid: i32) -> Option<f64> {
    let ticks = iolab_sys::process::start_time(pid)? as f64;
    let up: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (hz > 0.0).then(|| ((up - ticks / hz) * 1e3).max(0.0))
}

/// Field 19 of `/proc/PID/stat`.
fn nice_of(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name's closing parenthesis: state is field 3.
    s.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(16)?
        .parse()
        .ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A process forked by someone else (here a shell's background job,
    /// as zygote's child) that renames itself after a while is found, and
    /// it and the threads it has get the settings; the kernel's own view
    /// (ioprio_get, /proc/PID/stat) is the judge.
    #[test]
    fn a_process_named_later_is_found_and_set() {
        let t0 = Instant::now();
        let w = AppWatch::start("com.example.rig", false, Some(IoPrio::Idle), Some(7), t0);
        // exec -a sets argv[0]; the sleep before it is zygote's
        // specialisation time.
        let mut child = std::process::Command::new("bash")
            .args(["-c", "sleep 0.2; exec -a com.example.rig sleep 2"])
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(3);
        let pid = child.id() as i32;
        while argv0(pid).as_deref() != Some("com.example.rig") && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(50));
        let app = w.finish().expect("found");
        let kernel_ioprio = IoPrio::get_for(pid).unwrap();
        let kernel_nice = nice_of(pid);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(app.pid, pid);
        assert_eq!(kernel_ioprio, IoPrio::Idle);
        assert_eq!(kernel_nice, Some(7));
        assert_eq!(app.nice, Some(7));
        assert!(app.set_after_ms >= 150.0, "{app:?}");
        // Born (forked) right away, named after 0.2 s: set after that.
        let age = app.set_after_birth_ms.unwrap();
        assert!((150.0..2000.0).contains(&age), "{app:?}");
        assert!(app.threads_set >= 1 && app.errors.is_empty(), "{app:?}");
    }
}
