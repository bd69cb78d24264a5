//! What a target leaves behind outside its process group. A launcher that
//! daemonises (setsid, double fork) escapes the group kill that ends each
//! start, and its daemon keeps the target's files mapped — so the next
//! "cold" start would be warm — and loads the machine. iolab makes itself
//! the subreaper of its descendants (PR_SET_CHILD_SUBREAPER): such a
//! daemon, orphaned, becomes iolab's child, and after the start iolab
//! kills and reaps it.
//!
//! Which of iolab's children are leftovers: those that were not its
//! children before the launch, are not in iolab's own process group (its
//! plain helpers, `sh -c` for `--prepare`), and are not the group of
//! another launch still running in this process (tests launch in
//! parallel). Helpers iolab starts in their own group (the memory-pressure
//! helper, a model lab's server, logcat) start before the launch, so are
//! among the children before.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Process groups of the launches now running in this process.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// One launch, registered from its fork until its leftovers are gone.
pub(crate) struct Launch {
    pgid: i32,
    before: Vec<i32>,
}

impl Launch {
    /// Forks the target with `hold` (which must put it in a group of its
    /// own, pgid = pid) and registers the launch: under the registry's
    /// lock, so no scan sees the new child unregistered.
    pub(crate) fn hold<E: From<iolab_sys::SysError>>(
        hold: impl FnOnce() -> Result<iolab_spawn::Held, E>,
    ) -> Result<(iolab_spawn::Held, Launch), E> {
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        let before = iolab_sys::process::children_of(me())
            .map_err(|e| iolab_sys::SysError::io("/proc", e))?;
        let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        let held = hold()?;
        let pgid = held.pid();
        running.push(pgid);
        Ok((held, Launch { pgid, before }))
    }

    /// Kills and reaps the launch's leftovers (once its own group is
    /// killed and reaped): `pid comm` of each. A killed one's children
    /// are adopted in turn, so this repeats until none is new, bounded (a
    /// task in uninterruptible sleep dies when its I/O ends).
    pub(crate) fn kill_left_over(self) -> Vec<String> {
        // libc's, not rustix's getpgrp: a process started by an init
        // that never made a group (a shell as PID 1, an initramfs) is in
        // group 0, which rustix's Pid cannot hold.
        // SAFETY: getpgrp has no arguments and cannot fail.
        let (me, own_group) = (me(), unsafe { libc::getpgrp() });
        let mut named: Vec<(i32, String)> = Vec::new();
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let found = {
                let running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
                // /proc unreadable: no leftover can be found (nor
                // killed); said as one, never as "none left".
                let children = match iolab_sys::process::children_of(me) {
                    Ok(c) => c,
                    Err(e) => {
                        named.push((0, format!("(/proc unreadable: {e})")));
                        break;
                    }
                };
                let left: Vec<i32> = children
                    .into_iter()
                    .filter(|p| !self.before.contains(p))
                    .filter(|&p| match group_of(p) {
                        Some(g) => g != own_group && (g == self.pgid || !running.contains(&g)),
                        None => false,
                    })
                    .collect();
                for &pid in &left {
                    if !named.iter().any(|(p, _)| *p == pid) {
                        named.push((pid, iolab_sys::process::comm(pid)));
                    }
                    if let Some(p) = rustix::process::Pid::from_raw(pid) {
                        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                        let _ =
                            rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
                    }
                }
                !left.is_empty()
            };
            if !found || Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        named.into_iter().map(|(p, c)| format!("{p} {c}")).collect()
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        running.retain(|&g| g != self.pgid);
    }
}

fn me() -> i32 {
    rustix::process::getpid().as_raw_nonzero().get()
}

/// Process group of `pid`, `None` once it is gone.
fn group_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    iolab_sys::process::parse_state_and_pgrp(&stat).map(|(_, g)| g)
}
