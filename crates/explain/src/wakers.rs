//! Who woke a sleeping task, and where it was: names grouped for tables,
//! and the first frame of the waker's stack past the wakeup machinery.

use std::sync::Arc;

use crate::event::Frame;

/// Waker names grouped for per-cause tables: `kworker/u8:2-flush-7:0:812`
/// and `kworker/u8:3-flush-7:0:977` are the same kind of waker, so the pid
/// and kworker numbering are dropped.
pub(crate) fn waker_group(name: &str) -> Arc<str> {
    let base = name.rsplit_once(':').map_or(name, |(b, pid)| {
        if pid.chars().all(|c| c.is_ascii_digit()) {
            b
        } else {
            name
        }
    });
    if let Some(rest) = base.strip_prefix("kworker/") {
        // kworker/u8:2-flush-7:0 → kworker/flush-7:0
        let work = rest.split_once('-').map(|(_, w)| w);
        return match work {
            Some(w) => format!("kworker/{w}").into(),
            None => "kworker".into(),
        };
    }
    base.into()
}

/// Frames of the wakeup machinery, skipped to find where a waker was.
const WAKE_MACHINERY: &[&str] = &[
    "try_to_wake_up",
    "wake_up_process",
    "wake_up_state",
    "wake_up_q",
    "wake_q_add",
    "__wake_up",
    "__wake_up_common",
    "__wake_up_common_lock",
    "__wake_up_sync_key",
    "__wake_up_locked_key",
    "__wake_up_sync",
    "__wake_up_locked",
    "__wake_up_bit",
    "wake_up_bit",
    "wake_up_var",
    "__wake_up_pollfree",
    "autoremove_wake_function",
    "wake_page_function",
    "wake_bit_function",
    "var_wake_function",
    "default_wake_function",
    "woken_wake_function",
    "pollwake",
    "ep_poll_callback",
    "complete",
    "complete_all",
    "swake_up_one",
    "swake_up_all",
    "swake_up_locked",
    "rwsem_wake",
    "rwsem_mark_wake",
    "up_read",
    "up_write",
    "up",
    "__mutex_unlock_slowpath",
    "mutex_unlock",
    "folio_wake_bit",
    "folio_unlock",
    "folio_end_writeback",
    "folio_end_read",
    "__folio_end_writeback",
    "wake_up_new_task",
    "signal_wake_up_state",
    "complete_signal",
    "hrtimer_wakeup",
    "__hrtimer_run_queues",
    "futex_wake_mark",
    "futex_wake",
    "do_futex",
    "unlock_buffer",
    "end_buffer_read_sync",
    "end_buffer_async_write",
    "end_buffer_write_sync",
    "wake_up_page_bit",
    "rcuwait_wake_up",
    "child_wait_callback",
    "__wake_up_parent",
    "do_notify_parent",
    "__send_signal_locked",
    "send_signal_locked",
    "complete_vfork_done",
    "sbitmap_queue_wake_up",
    "__sbitmap_queue_wake_up",
    "folio_end_writeback_no_dropbehind",
];

/// Where a waker was: the first frame of its stack past the wakeup
/// machinery (and the tracing frames).
pub(crate) fn waker_site(frames: &[Frame]) -> Option<Frame> {
    frames
        .iter()
        .find(|f| !WAKE_MACHINERY.contains(&f.as_ref()) && !crate::stacks::is_tracing_frame(f))
        .cloned()
}
