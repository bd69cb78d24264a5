//! Interned kernel stacks (innermost frame first), so each distinct stack
//! is stored, classified and aggregated once.

use std::collections::HashMap;

use crate::event::Frame;

/// Index of an interned stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub u32);

/// The distinct stacks seen.
#[derive(Debug, Default)]
pub struct Stacks {
    ids: HashMap<Vec<Frame>, StackId>,
    all: Vec<Vec<Frame>>,
}

impl Stacks {
    /// The id of `frames`, adding it when new; `None` for a new stack
    /// once every `u32` id is taken (the caller then counts it as missing).
    pub fn intern(&mut self, frames: Vec<Frame>) -> Option<StackId> {
        if let Some(id) = self.ids.get(&frames) {
            return Some(*id);
        }
        let id = StackId(u32::try_from(self.all.len()).ok()?);
        self.all.push(frames.clone());
        self.ids.insert(frames, id);
        Some(id)
    }

    /// The frames of `id` (empty for an unknown id).
    pub fn get(&self, id: StackId) -> &[Frame] {
        self.all.get(id.0 as usize).map_or(&[], Vec::as_slice)
    }

    /// Number of distinct stacks.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// True when none was interned.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}

/// Frames the recording itself adds on top of a stack (the tracepoint's
/// handler): not part of what the task was doing.
pub fn is_tracing_frame(name: &str) -> bool {
    name.starts_with("trace_event_raw_event_")
        || name.starts_with("__traceiter_")
        || name.starts_with("perf_trace_")
        || name.starts_with("__bpf_trace_")
        || name == "ftrace_trace_stack"
        || name == "__ftrace_trace_stack"
}

/// True when a sleep with this stack counts as waiting for I/O: the
/// kernel's `in_iowait` (what delay accounting's blkio time and `iowait`
/// count). Only `io_schedule_prepare()` sets it, and only these `__sched`
/// functions call it, so one of them is on the stack of every such sleep
/// (they are never inlined: `__sched` puts them in their own section).
/// Dirty throttling (`balance_dirty_pages` → `io_schedule_timeout`) is
/// I/O wait by this definition, as it is to the kernel.
pub fn is_io_wait<S: AsRef<str>>(frames: &[S]) -> bool {
    frames.iter().any(|f| {
        matches!(
            f.as_ref(),
            "io_schedule" | "io_schedule_timeout" | "mutex_lock_io" | "mutex_lock_io_nested"
        )
    })
}

/// The system call or fault a stack is in, from its outermost frames:
/// `__x64_sys_fsync` → `fsync`, `asm_exc_page_fault` → `page fault`.
pub fn syscall_of<S: AsRef<str>>(frames: &[S]) -> Option<String> {
    for f in frames.iter().rev().map(AsRef::as_ref) {
        for prefix in [
            "__x64_sys_",
            "__arm64_sys_",
            "__ia32_sys_",
            "__do_sys_",
            "__se_sys_",
            "ksys_",
        ] {
            if let Some(name) = f.strip_prefix(prefix) {
                return Some(name.to_string());
            }
        }
        if matches!(
            f,
            "asm_exc_page_fault" | "exc_page_fault" | "do_user_addr_fault" | "el0_da"
        ) {
            return Some("page fault".into());
        }
        if matches!(f, "kthread" | "ret_from_fork") {
            return Some("kernel thread".into());
        }
    }
    None
}

/// Parses `/proc/<tid>/stack` (`[<0>] name+0x1/0x2` lines) into frames.
pub fn parse_proc_stack(text: &str) -> Vec<Frame> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.split_once("] ").map_or(l, |(_, rest)| rest);
            let name = crate::pattern::normalize(l);
            (!name.is_empty()).then(|| Frame::from(name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_dedups() {
        let mut s = Stacks::default();
        let a = s.intern(vec!["a".into(), "b".into()]);
        let b = s.intern(vec!["a".into(), "b".into()]);
        let c = s.intern(vec!["a".into()]);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(s.len(), 2);
        assert_eq!(s.get(c.expect("an id")).len(), 1);
    }

    #[test]
    fn io_wait_is_told_by_the_frames_that_set_in_iowait() {
        assert!(is_io_wait(&[
            "io_schedule",
            "folio_wait_bit_common",
            "filemap_fault"
        ]));
        assert!(is_io_wait(&["io_schedule_timeout", "balance_dirty_pages"]));
        assert!(!is_io_wait(&[
            "schedule",
            "rwsem_down_read_slowpath",
            "filemap_fault"
        ]));
        assert!(!is_io_wait(&["schedule", "do_nanosleep"]));
    }

    #[test]
    fn syscall_names() {
        assert_eq!(
            syscall_of(&[
                "io_schedule",
                "ksys_read",
                "__x64_sys_read",
                "do_syscall_64"
            ])
            .as_deref(),
            Some("read")
        );
        assert_eq!(
            syscall_of(&["filemap_fault", "exc_page_fault", "asm_exc_page_fault"]).as_deref(),
            Some("page fault")
        );
        assert_eq!(syscall_of(&["schedule"]), None);
    }

    #[test]
    fn proc_stack() {
        let f = parse_proc_stack(
            "[<0>] poll_schedule_timeout.constprop.0+0x37/0x90\n[<0>] do_select+0x65c/0x940\n",
        );
        assert_eq!(
            f,
            vec![
                Frame::from("poll_schedule_timeout"),
                Frame::from("do_select")
            ]
        );
    }
}
