//! Before each start, what the previous one left must not bill it (S
//! waits likewise): its process group is gone, with no task of it left in
//! uninterruptible sleep (a killed task in D state ends only when its I/O
//! does), and the data it dirtied on the place is written back. Both waits
//! are bounded and what they found is stored with the start; `--pause`
//! adds a fixed rest after them.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::ExperimentError;

/// How long each wait may take before the start goes ahead anyway.
const LIMIT: Duration = Duration::from_secs(30);

/// What the waits found.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Settled {
    /// Time until the previous start's group was gone, s.
    pub group_wait_s: f64,
    /// Its tasks still there when the wait gave up: `pid state comm`.
    pub left: Vec<String>,
    /// Time the place's filesystem took to write back its dirty data, s.
    pub writeback_s: f64,
    /// False when the writeback was still going when the wait gave up.
    pub written_back: bool,
    /// The rest asked for with `--pause`, s.
    pub pause_s: f64,
}

/// Waits for the previous start's group `prev` to be gone and `mount`'s
/// dirty data to be written, then rests `pause`.
pub(super) fn settle(
    prev: Option<i32>,
    mount: &Path,
    pause: Duration,
) -> Result<Settled, ExperimentError> {
    let t0 = Instant::now();
    let mut left = Vec::new();
    if let Some(pgid) = prev {
        loop {
            let members = iolab_sys::process::live_group_members(pgid)
                .map_err(|e| iolab_sys::SysError::io("/proc", e))?;
            if members.is_empty() {
                break;
            }
            if t0.elapsed() >= LIMIT {
                left = members.iter().map(|&p| describe(p)).collect();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let group_wait_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let f = std::fs::File::open(mount).map_err(|e| iolab_sys::SysError::io(mount, e))?;
    let (tx, rx) = std::sync::mpsc::channel();
    // syncfs cannot be interrupted: a thread waits for it, so the start
    // can go ahead after the bound (and say so).
    std::thread::spawn(move || {
        let _ = tx.send(rustix::fs::syncfs(&f));
    });
    let written_back = match rx.recv_timeout(LIMIT) {
        Ok(r) => {
            r.map_err(|e| iolab_sys::SysError::io(mount, e.into()))?;
            true
        }
        Err(_) => false,
    };
    let writeback_s = t1.elapsed().as_secs_f64();
    if !pause.is_zero() {
        crate::engine::sleep_unless_stopped(pause);
    }
    Ok(Settled {
        group_wait_s,
        left,
        writeback_s,
        written_back,
        pause_s: pause.as_secs_f64(),
    })
}

/// `1234 D dd`.
fn describe(pid: i32) -> String {
    let stat =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_else(|_| String::new());
    let comm = stat
        .split_once('(')
        .and_then(|(_, r)| r.rsplit_once(')'))
        .map_or("?", |(c, _)| c);
    let state = iolab_sys::process::parse_state_and_pgrp(&stat).map_or('?', |(s, _)| s);
    format!("{pid} {state} {comm}")
}

impl Settled {
    /// A line for the user when a wait gave up, else `None`.
    pub(super) fn problem(&self) -> Option<String> {
        match (self.left.is_empty(), self.written_back) {
            (true, true) => None,
            (false, _) => Some(format!(
                "the previous start's tasks were still there after {:.0} s ({}); this start went ahead beside them",
                self.group_wait_s,
                self.left.join(", ")
            )),
            (true, false) => Some(format!(
                "the filesystem was still writing back after {:.0} s; this start went ahead during it",
                self.writeback_s
            )),
        }
    }
}
