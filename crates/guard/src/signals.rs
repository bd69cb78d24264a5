//! SIGINT, SIGTERM and SIGHUP: the first one asks the run to stop
//! cooperatively (loads stop, partial results are printed and stored, guards
//! drop and restore). If the run has not finished within the grace period,
//! or a second signal arrives, the signal thread restores every live guard
//! itself and exits with 128+signal.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::guard::State;
use crate::GuardError;

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static LIVE: Mutex<Vec<Weak<Mutex<State>>>> = Mutex::new(Vec::new());
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// How long a cooperative stop may take before the guard forces it.
const GRACE: Duration = Duration::from_secs(5);

/// True once a stop was requested (signal or [`request_stop`]); long loops
/// poll it and end early with what they measured.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The signal that asked for the stop, if one did (for the exit code).
pub fn stop_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// Asks long-running work to stop, as a first Ctrl-C would.
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

pub(crate) fn register(state: &Arc<Mutex<State>>) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    live.retain(|w| w.strong_count() > 0);
    live.push(Arc::downgrade(state));
}

fn restore_all_live() {
    let live: Vec<_> = LIVE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for state in live.iter().rev() {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        for line in st.restore() {
            match line {
                Ok(s) => iolab_sys::say!("iolab: restored: {s}"),
                Err(e) => iolab_sys::say!("iolab: restore FAILED: {e}"),
            }
        }
    }
}

/// Installs the handlers (once per process).
pub fn install_signal_handlers() -> Result<(), GuardError> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| GuardError::io("signal handlers", e))?;
    std::thread::Builder::new()
        .name("iolab-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                SIGNAL.store(sig, Ordering::Relaxed);
                if STOP.swap(true, Ordering::SeqCst) {
                    iolab_sys::say!("iolab: second signal: restoring system state now");
                    restore_all_live();
                    std::process::exit(128 + sig);
                }
                iolab_sys::say!("iolab: stopping (signal {sig}); again to force");
                std::thread::spawn(move || {
                    std::thread::sleep(GRACE);
                    iolab_sys::say!(
                        "iolab: still running {}s after the signal: restoring now",
                        GRACE.as_secs()
                    );
                    restore_all_live();
                    std::process::exit(128 + sig);
                });
            }
        })
        .map_err(|e| GuardError::io("signal thread", e))?;
    Ok(())
}
