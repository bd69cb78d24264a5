//! The guard: the only code in iolab allowed to change system state.
//!
//! Every change (I/O scheduler, iosched tunables, queue attributes, sysctls,
//! blkio throttles, cgroups, tracefs instances, loop and zram devices,
//! mounts, started process groups) is first written to a journal and fsynced,
//! then made. A guard undoes its journal newest-first when dropped (normal
//! exit, error, panic unwinding), when SIGINT/SIGTERM/SIGHUP arrive (see
//! [`install_signal_handlers`]), and — after a SIGKILL — on the next iolab
//! run of any subcommand ([`recover_stale`]) or `iolab restore`.
//!
//! Journals live in `/run/iolab` (override: `$IOLAB_RUN_DIR`). `/run` is a
//! tmpfs cleared at boot, exactly when the kernel state the journals describe
//! (loop devices, mounts, sysfs values) is reset too, so a journal can never
//! "restore" a value over a fresh boot's defaults.
//!
//! Locking: each journal is flocked by its owner for its lifetime (stale =
//! lockable, immune to pid reuse), and each device or sysctl has a lock file
//! under `locks/`, held while a guard has changes on it, so two concurrent
//! runs cannot interleave changes to the same device and then restore each
//! other's values.
#![deny(missing_docs)]

mod change;
mod devices;
mod error;
mod guard;
mod journal;
mod knobs;
mod signals;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

pub use change::{loops_backed_by, remove_trace_instance, Change};
pub use error::GuardError;
pub use guard::{read_throttle, Guard, Mark, Recorded, Throttle, BLKIO_ROOT};
pub use journal::Journal;
pub use knobs::exact_dirty_limit;
pub use signals::{install_signal_handlers, request_stop, stop_requested, stop_signal};

/// The directory holding journals and locks: `IOLAB_RUN_DIR`, else the
/// system's machine directory (`/run/iolab`; on Android
/// `/data/local/tmp/iolab/run`, see `iolab_sys::paths`).
pub fn run_dir() -> PathBuf {
    std::env::var_os("IOLAB_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(iolab_sys::paths::machine_dir)
}

static INSTANCE: AtomicU64 = AtomicU64::new(0);

pub(crate) fn next_instance() -> u64 {
    INSTANCE.fetch_add(1, Ordering::Relaxed)
}

/// Undoes the journals of iolab runs that died without restoring (SIGKILL,
/// power loss of the process). Returns one human line per journal and per
/// restored change, to be printed so the user knows what happened.
pub fn recover_stale() -> Result<Vec<String>, GuardError> {
    recover_stale_in(&run_dir())
}

/// [`recover_stale`] under a custom run directory.
pub fn recover_stale_in(dir: &std::path::Path) -> Result<Vec<String>, GuardError> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(GuardError::io(dir, e)),
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("journal-") && n.ends_with(".jsonl"))
        })
        .collect();
    paths.sort();
    for path in paths {
        let mut j = match Journal::adopt(&path) {
            Ok(Some(j)) => j,
            Ok(None) => continue, // a live run owns it
            Err(e) => {
                // One unreadable journal (e.g. written by a newer iolab)
                // must not stop this run or the recovery of the others.
                out.push(format!(
                    "cannot restore {}: {e}; undo it with the iolab version that wrote it",
                    path.display()
                ));
                continue;
            }
        };
        let (pid, cmd) = j.owner.clone().unwrap_or((0, "?".into()));
        if j.pending.is_empty() {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        out.push(format!(
            "restoring {} change(s) left by iolab pid {pid} ({cmd}), which ended without cleaning up:",
            j.pending.len()
        ));
        for line in j.undo_all() {
            match line {
                Ok(s) => out.push(format!("  restored: {s}")),
                Err(e) => out.push(format!("  FAILED: {e}")),
            }
        }
    }
    // A tracefs mount left for instances whose owners were killed.
    if let Some(s) = change::unmount_left_tracefs(std::path::Path::new("/sys/kernel/tracing")) {
        out.push(format!("restored: {s}"));
    }
    Ok(out)
}

/// Runs an external tool and returns its stdout, or its stderr as the error.
pub fn run_cmd(prog: &str, args: &[&str]) -> Result<String, GuardError> {
    let out = std::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| GuardError::Command {
            command: format!("{prog} {}", args.join(" ")),
            stderr: format!("{e} (is {prog} installed?)"),
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(GuardError::Command {
            command: format!("{prog} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_stale_journal_is_reported_and_skipped() {
        let run = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::write(
            run.path().join("journal-1-1-0.jsonl"),
            "{\"op\":\"begin\"\n{\"op\":\"from-the-future\"}\n",
        )
        .unwrap();
        // A good stale journal next to it is still restored.
        let mut j = Journal::create(run.path()).unwrap();
        let f = work.path().join("made");
        std::fs::write(&f, "x").unwrap();
        j.record(Change::File { path: f.clone() }).unwrap();
        drop(j);
        let lines = recover_stale_in(run.path()).unwrap();
        assert!(
            lines.iter().any(|l| l.starts_with("cannot restore")),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("restored: removed")),
            "{lines:?}"
        );
        assert!(!f.exists());
    }
}
