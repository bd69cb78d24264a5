//! Shared helpers of the live tests: root check and a private guard.
#![allow(clippy::unwrap_used, dead_code)]

use iolab_guard::Guard;

/// A guard journaling in its own temp dir (tests run in parallel), or
/// `None` (after printing why) when not root.
pub fn root_guard(test: &str) -> Option<(Guard, tempfile::TempDir)> {
    if !iolab_sys::is_root() {
        iolab_testkit::skip_line(format!("skip {test}: needs root"));
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    Some((Guard::in_dir(dir.path().to_path_buf()), dir))
}

/// The calling thread's id (what `set_event_pid` and `common_pid` see).
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// Trace instances `guard` has journaled that still exist.
pub fn leftover_instances(guard: &Guard) -> Vec<String> {
    let Some(journal) = guard.journal_path() else {
        return Vec::new();
    };
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["change"]["kind"] == "trace_instance")
        .filter_map(|v| v["change"]["path"].as_str().map(str::to_string))
        .filter(|p| std::path::Path::new(p).exists())
        .collect()
}
