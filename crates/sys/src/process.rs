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

/// This process's own (pid, start time).
pub fn me() -> (i32, u64) {
    let pid = std::process::id() as i32;
    (pid, start_time(pid).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_skips_odd_comm() {
        let line =
            "1234 (a b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_time(line), Some(987654));
    }

    #[test]
    fn self_is_alive() {
        let (pid, st) = me();
        assert!(st > 0);
        assert!(is_alive(pid, st));
        assert!(!is_alive(pid, st + 1));
    }
}
