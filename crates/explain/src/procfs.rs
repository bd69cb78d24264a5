//! What /proc says about the tasks to follow: the tree under a pid, each
//! thread's state and sleeping stack (for tasks already running when
//! tracing starts), comms of wakers, and on-CPU time (`schedstat`) for the
//! cross-check. Every reader takes the procfs root, so tests use fixtures.

use std::collections::HashMap;
use std::path::Path;

use crate::event::Frame;

/// Threads of `pid` and of all its descendants (pid order), `pid` first.
/// A directory that cannot be listed is an error: the tasks it hides would
/// be missing from the attribution.
pub fn tree_tids(proc: &Path, pid: i32) -> Result<Vec<i32>, crate::ExplainError> {
    let unlisted =
        |path: std::path::PathBuf| move |source| crate::ExplainError::Proc { path, source };
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in iolab_sys::process::pids(proc).map_err(unlisted(proc.to_path_buf()))? {
        if let Some(pp) = stat_field(proc, p, p, 4).and_then(|s| s.parse::<i32>().ok()) {
            children.entry(pp).or_default().push(p);
        }
    }
    let mut procs = vec![pid];
    let mut i = 0;
    while i < procs.len() {
        if let Some(c) = children.get(&procs[i]) {
            let mut c = c.clone();
            c.sort_unstable();
            procs.extend(c);
        }
        i += 1;
    }
    let mut tids = Vec::new();
    for p in procs {
        let mut t = iolab_sys::process::tids(proc, p)
            .map_err(unlisted(proc.join(p.to_string()).join("task")))?;
        // Gone since: the pid itself, which the trace then never sees.
        if t.is_empty() {
            t.push(p);
        }
        t.sort_unstable_by_key(|&x| (x != p, x));
        tids.extend(t);
    }
    Ok(tids)
}

/// Field `n` (1-based, as in proc(5)) of `/proc/<pid>/task/<tid>/stat`;
/// the comm (field 2, may hold spaces and parentheses) is skipped safely.
fn stat_field(proc: &Path, pid: i32, tid: i32, n: usize) -> Option<String> {
    let text = std::fs::read_to_string(
        proc.join(pid.to_string())
            .join("task")
            .join(tid.to_string())
            .join("stat"),
    )
    .or_else(|_| std::fs::read_to_string(proc.join(tid.to_string()).join("stat")))
    .ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    rest.split_whitespace()
        .nth(n.checked_sub(3)?)
        .map(str::to_string)
}

/// State letter of a thread (`R`, `S`, `D`, ...).
pub fn state(proc: &Path, tid: i32) -> Option<char> {
    stat_field(proc, tid, tid, 3)?.chars().next()
}

/// A thread's comm.
pub fn comm(proc: &Path, tid: i32) -> Option<String> {
    std::fs::read_to_string(proc.join(tid.to_string()).join("comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// A sleeping thread's kernel stack (`/proc/<tid>/stack`, root only).
pub fn stack(proc: &Path, tid: i32) -> Option<Vec<Frame>> {
    let text = std::fs::read_to_string(proc.join(tid.to_string()).join("stack")).ok()?;
    let frames = crate::stacks::parse_proc_stack(&text);
    (!frames.is_empty()).then_some(frames)
}

/// A thread's total on-CPU time, ns (first field of `schedstat`).
pub fn on_cpu_ns(proc: &Path, tid: i32) -> Option<u64> {
    std::fs::read_to_string(proc.join(tid.to_string()).join("schedstat"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn tree_of_fixture() {
        let d = std::env::temp_dir().join(format!("iolab-procfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        // 10 (sh) → 11 (cat, threads 11 and 13), 12 unrelated.
        write(&d, "10/stat", "10 (sh) S 1 10 10 0");
        write(&d, "10/task/10/stat", "10 (sh) S 1 10 10 0");
        write(&d, "11/stat", "11 (a (b) c) D 10 10 10 0");
        write(&d, "11/task/11/stat", "11 (a (b) c) D 10 10 10 0");
        write(&d, "11/task/13/stat", "13 (a (b) c) R 10 10 10 0");
        write(&d, "12/stat", "12 (x) S 1 12 12 0");
        write(&d, "11/schedstat", "12345 678 9\n");
        write(
            &d,
            "11/stack",
            "[<0>] io_schedule+0x1/0x2\n[<0>] folio_wait_bit_common+0x3/0x4\n",
        );
        assert_eq!(tree_tids(&d, 10).unwrap(), vec![10, 11, 13]);
        assert_eq!(state(&d, 11), Some('D'));
        assert_eq!(on_cpu_ns(&d, 11), Some(12345));
        assert_eq!(stack(&d, 11).unwrap().len(), 2);
        // A task directory that cannot be listed (a file where the
        // directory should be) is an error naming it, not a tree of one.
        std::fs::remove_dir_all(d.join("11/task")).unwrap();
        std::fs::write(d.join("11/task"), "").unwrap();
        let e = tree_tids(&d, 10).unwrap_err().to_string();
        assert!(
            e.contains("11/task") && e.contains("Not a directory"),
            "{e}"
        );
        // And /proc itself.
        let e = tree_tids(&d.join("12/stat"), 10).unwrap_err().to_string();
        assert!(e.contains("12/stat"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
