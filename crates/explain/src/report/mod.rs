//! Renderers of an [`crate::Attribution`]: one file per format (`--json`
//! is the struct itself through serde).

pub mod folded;
pub mod perfetto;
pub mod text;

/// Milliseconds, for tables.
pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Frames that only say "this came from a system call" — left out of
/// short stack summaries (not of `--folded`).
pub(crate) fn is_entry_frame(f: &str) -> bool {
    matches!(
        f,
        "do_syscall_64"
            | "entry_SYSCALL_64_after_hwframe"
            | "entry_SYSCALL_64"
            | "x64_sys_call"
            | "el0_svc"
            | "el0t_64_sync"
            | "ret_from_fork_asm"
    )
}
