//! Process identity that survives pid reuse: (pid, start time in clock ticks
//! since boot, field 22 of /proc/PID/stat, see proc(5)).

/// Start time of `pid` in clock ticks since boot, or `None` if it is gone.
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// Extracts field 22 from a /proc/PID/stat line. The comm field (2) may hold
/// spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ')' come fields 3.. ; starttime is field 22 → index 19 here.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// True while the process that had `start` as its start time still runs.
pub fn is_alive(pid: i32, start: u64) -> bool {
    start_time(pid) == Some(start)
}

/// Every process's pid under `proc_root` (`/proc`), in order: the one
/// walk of /proc. /proc unreadable is an error, never "no processes".
pub fn pids(proc_root: &std::path::Path) -> std::io::Result<Vec<i32>> {
    numbered(std::fs::read_dir(proc_root)?)
}

/// Every thread id of `pid` under `proc_root`, in order; a process that
/// is gone has none (its task directory went with it), while any other
/// failure to read the directory is an error.
pub fn tids(proc_root: &std::path::Path, pid: i32) -> std::io::Result<Vec<i32>> {
    let dir = proc_root.join(pid.to_string()).join("task");
    match std::fs::read_dir(&dir) {
        Ok(rd) => numbered(rd),
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ESRCH) =>
        {
            Ok(Vec::new())
        }
        Err(e) => Err(e),
    }
}

fn numbered(rd: std::fs::ReadDir) -> std::io::Result<Vec<i32>> {
    let mut v = Vec::new();
    for e in rd {
        if let Some(n) = e?.file_name().to_str().and_then(|n| n.parse().ok()) {
            v.push(n);
        }
    }
    v.sort_unstable();
    Ok(v)
}

/// The `stat` of every process for which `keep(pid, stat)` holds: a
/// process gone between the walk and the read is skipped (it has no stat).
fn with_stat(keep: impl Fn(i32, &str) -> bool) -> std::io::Result<Vec<i32>> {
    let root = std::path::Path::new("/proc");
    Ok(pids(root)?
        .into_iter()
        .filter(|&pid| {
            std::fs::read_to_string(root.join(pid.to_string()).join("stat"))
                .is_ok_and(|stat| keep(pid, &stat))
        })
        .collect())
}

/// Pids of the processes in group `pgid` that still run (zombies, which
/// have run their last instruction, excluded), from /proc/PID/stat's state
/// (field 3) and pgrp (field 5).
pub fn live_group_members(pgid: i32) -> std::io::Result<Vec<i32>> {
    with_stat(|_, stat| {
        parse_state_and_pgrp(stat).is_some_and(|(state, pgrp)| pgrp == pgid && state != 'Z')
    })
}

/// A process's proportional set size (`Pss:` of /proc/PID/smaps_rollup,
/// what Android's `dumpsys meminfo` totals: a page shared by n processes
/// counts 1/n in each), in bytes; its RSS (/proc/PID/statm) where
/// smaps_rollup is missing (kernels before 4.14). `None` once it is gone.
pub fn memory_bytes(pid: i32) -> Option<u64> {
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
        if let Some(kb) = parse_pss_kb(&text) {
            return Some(kb * 1024);
        }
    }
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

/// The `Pss:` line of smaps_rollup, in kB.
pub fn parse_pss_kb(smaps_rollup: &str) -> Option<u64> {
    smaps_rollup
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The memory of every live process of group `pgid` together (see
/// [`memory_bytes`]).
pub fn group_memory_bytes(pgid: i32) -> std::io::Result<u64> {
    Ok(live_group_members(pgid)?
        .into_iter()
        .filter_map(memory_bytes)
        .sum())
}

/// State letter and process group of a /proc/PID/stat line (fields are
/// counted after the last `)`, as comm may hold spaces).
pub fn parse_state_and_pgrp(stat: &str) -> Option<(char, i32)> {
    let mut f = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = f.next()?.chars().next()?;
    let pgrp = f.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Parent pid (field 4) of a /proc/PID/stat line.
pub fn parse_ppid(stat: &str) -> Option<i32> {
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Pids whose parent is `parent` (zombies included: a child not yet
/// reaped is still one), from /proc/PID/stat.
pub fn children_of(parent: i32) -> std::io::Result<Vec<i32>> {
    with_stat(|_, stat| parse_ppid(stat) == Some(parent))
}

/// `comm` of a process, `?` once it is gone.
pub fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// This process's pid as the kernel's `pid_t` (`std::process::id` gives
/// it as a u32, whose `as i32` would hide the conversion).
pub fn own_pid() -> i32 {
    rustix::process::getpid().as_raw_nonzero().get()
}

/// This process's own (pid, start time).
pub fn me() -> (i32, u64) {
    let pid = own_pid();
    (pid, start_time(pid).unwrap_or(0))
}

/// I/O counters of a process, `/proc/PID/io` (proc(5)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IoCounters {
    /// Bytes passed through read-like syscalls (read, pread, readv...),
    /// from cache or not.
    pub rchar: u64,
    /// Bytes passed through write-like syscalls.
    pub wchar: u64,
    /// Bytes this process caused to be fetched from storage, page faults
    /// on mapped files and readahead included.
    pub read_bytes: u64,
    /// Bytes this process caused to be sent to storage (dirtied pages).
    pub write_bytes: u64,
}

/// Reads `<proc>/<pid>/io`; `None` if the process is gone or the kernel
/// lacks task I/O accounting.
pub fn io_counters(proc_root: &std::path::Path, pid: i32) -> Option<IoCounters> {
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("io")).ok()?;
    parse_io(&text)
}

/// Parses the `name: value` lines of `/proc/PID/io`.
pub fn parse_io(text: &str) -> Option<IoCounters> {
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?
            .trim()
            .parse()
            .ok()
    };
    Some(IoCounters {
        rchar: field("rchar")?,
        wchar: field("wchar")?,
        read_bytes: field("read_bytes")?,
        write_bytes: field("write_bytes")?,
    })
}

/// Threads of the listed processes (`/proc/PID/task/*`) that are waiting
/// to go on (see [`task_waiting`]).
pub fn threads_waiting(pids: &[i32]) -> std::io::Result<Vec<String>> {
    let root = std::path::Path::new("/proc");
    let mut out = Vec::new();
    for &pid in pids {
        for tid in tids(root, pid)? {
            let dir = root
                .join(pid.to_string())
                .join("task")
                .join(tid.to_string());
            out.extend(task_waiting(&dir));
        }
    }
    Ok(out)
}

/// `tid (wchan)` for a task in uninterruptible sleep ([`task_in_d`]), and
/// `tid (runnable)` for one in state R: ready to run and waiting for a CPU
/// (on a busy one-CPU guest a load's writer can wait seconds for one while
/// the flusher's kworkers write its pages out). `None` otherwise.
pub fn task_waiting(dir: &std::path::Path) -> Option<String> {
    if let Some(d) = task_in_d(dir) {
        return Some(d);
    }
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    if parse_state_and_pgrp(&stat)?.0 != 'R' {
        return None;
    }
    let tid = dir.file_name()?.to_string_lossy();
    Some(format!("{tid} (runnable)"))
}

/// `tid (wchan)` when the task whose /proc directory is `dir` is in
/// uninterruptible sleep (state `D`: waiting in the kernel, for I/O or for
/// the dirty-page limit); the kernel function is `?` where wchan hides it.
/// `None` when it is in another state or gone.
pub fn task_in_d(dir: &std::path::Path) -> Option<String> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    if parse_state_and_pgrp(&stat)?.0 != 'D' {
        return None;
    }
    let wchan = std::fs::read_to_string(dir.join("wchan"))
        .ok()
        .filter(|w| !w.is_empty() && w != "0")
        .unwrap_or_else(|| "?".into());
    let tid = dir.file_name()?.to_string_lossy();
    Some(format!("{tid} ({wchan})"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn start_time_skips_odd_comm() {
        let line =
            "1234 (a b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_time(line), Some(987654));
    }

    #[test]
    fn parent_skips_odd_comm_and_this_process_is_its_parents_child() {
        assert_eq!(parse_ppid("1234 (a b) c) S 42 77 1234 0"), Some(42));
        let me = own_pid();
        let parent = parse_ppid(&std::fs::read_to_string("/proc/self/stat").unwrap()).unwrap();
        assert!(children_of(parent).unwrap().contains(&me));
    }

    #[test]
    fn state_and_group_skip_odd_comm() {
        let line = "1234 (a b) c) Z 1 77 1234 0";
        assert_eq!(parse_state_and_pgrp(line), Some(('Z', 77)));
        let me = own_pid();
        let pgrp = rustix::process::getpgrp().as_raw_nonzero().get();
        assert!(live_group_members(pgrp).unwrap().contains(&me));
    }

    #[test]
    fn self_is_alive() {
        let (pid, st) = me();
        assert!(st > 0);
        assert!(is_alive(pid, st));
        assert!(!is_alive(pid, st + 1));
    }

    #[test]
    fn parses_proc_io() {
        let t = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        let io = parse_io(t).unwrap();
        assert_eq!(
            (io.rchar, io.wchar, io.read_bytes, io.write_bytes),
            (10, 20, 4096, 8192)
        );
        assert!(parse_io("rchar: 1\n").is_none());
        let me = io_counters(std::path::Path::new("/proc"), own_pid());
        assert!(me.is_some_and(|io| io.rchar > 0));
    }
}
