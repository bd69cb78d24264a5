//! One boot of a board `iolab boot --ssh` drives: a machine that reboots
//! itself, reached over ssh, with the prefetch unit and the marker unit
//! of scripts/guest/boot/debian/ installed (docs/boot.md). The host
//! writes what the next boot should do, reboots the board (the link
//! drops: that is the normal case), waits until ssh answers from a new
//! boot (another boot_id), then until the marker left its record, and
//! copies the record here.
//!
//! There is no console to time it from outside; what the host checks
//! instead is that a boot really happened between its reboot command and
//! its reading: another boot_id, and an uptime no longer than the host's
//! clock has run since the command.

use std::path::Path;
use std::time::{Duration, Instant};

use iolab_remote::Transport;

use super::guest::BootSeen;
use crate::ExperimentError;

/// The record's files the host copies.
const FILES: &[&str] = &[
    "done",
    "diskstats",
    "systemd",
    "helper-wait",
    "iolab-helper.json",
    "iolab-boot-scheduler",
    "boot.list",
    "boot_id",
];

fn remote(e: iolab_remote::RemoteError) -> ExperimentError {
    iolab_collect::CollectError::collector("ssh", e).into()
}

/// Boots the board once doing `line` (see iolab-boot-start); what its
/// record showed, in `work`. No ssh reaches the board for `quiet` after
/// the reboot is asked: each connection costs the booting board a
/// process and a key exchange (seconds of CPU under TCG), so polling a
/// board that is still booting would slow the boot it times.
pub fn boot(
    t: &Transport,
    line: &str,
    quiet: Duration,
    timeout: Duration,
    work: &Path,
) -> Result<BootSeen, ExperimentError> {
    let before = t
        .output("cat /proc/sys/kernel/random/boot_id")
        .map_err(remote)?;
    let before = before.trim().to_string();
    // The reboot is started in the background so that this ssh returns
    // before the link drops.
    let script = format!(
        "printf '%s\\n' {} > /var/lib/iolab/boot.next && rm -rf /var/lib/iolab/boot-record && sync && \
         (sleep 1; systemctl reboot) > /dev/null 2>&1 < /dev/null &",
        iolab_remote::quote::sh_word(line)
    );
    t.output(&script).map_err(remote)?;
    let t0 = Instant::now();
    let end = t0 + timeout;
    let mut seen = BootSeen::default();
    let mut polls = 0u32;
    while t0.elapsed() < quiet && !iolab_guard::stop_requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Back from a new boot, with the marker's record complete.
    let (now_id, uptime) = loop {
        if iolab_guard::stop_requested() {
            seen.interrupted = true;
            return Ok(seen);
        }
        if Instant::now() >= end {
            seen.wall = t0.elapsed();
            seen.console_tail =
                format!("the board did not come back with a boot record within {timeout:?}");
            return Ok(seen);
        }
        std::thread::sleep(Duration::from_secs(1));
        polls += 1;
        // ssh fails while the board is down: that is expected.
        let Ok(out) = t.output(
            "test -f /var/lib/iolab/boot-record/complete && cat /proc/sys/kernel/random/boot_id /proc/uptime",
        ) else {
            continue;
        };
        let mut l = out.lines();
        let (Some(id), Some(up)) = (l.next(), l.next()) else {
            continue;
        };
        if id.trim() == before {
            continue;
        }
        break (
            id.trim().to_string(),
            up.split_whitespace()
                .next()
                .and_then(|u| u.parse::<f64>().ok()),
        );
    };
    seen.wall = t0.elapsed();
    seen.exit_ok = Some(true);
    let dir = work.join("results");
    std::fs::create_dir_all(&dir).map_err(|e| iolab_sys::SysError::io(&dir, e))?;
    for f in FILES {
        if let Ok(text) = t.output(&format!(
            "cat /var/lib/iolab/boot-record/{f} 2>/dev/null || true"
        )) {
            if !text.is_empty() {
                let p = dir.join(f);
                std::fs::write(&p, text).map_err(|e| iolab_sys::SysError::io(&p, e))?;
            }
        }
    }
    seen.done_s = std::fs::read_to_string(dir.join("done"))
        .ok()
        .and_then(|d| d.trim().parse().ok());
    seen.results = dir;
    seen.reboot = Some(super::guest::RebootCheck {
        boot_id_before: before,
        boot_id_after: now_id,
        uptime_at_read_s: uptime,
        host_since_reboot_s: seen.wall.as_secs_f64(),
        quiet_s: quiet.as_secs_f64(),
        polls,
    });
    Ok(seen)
}
