//! `/proc/self/mountinfo` (proc(5)): which devices are mounted where.

use std::path::{Path, PathBuf};

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Mount {
    /// `major:minor` of the mounted device (`0:N` for virtual filesystems).
    pub devno: String,
    /// Mount point.
    pub target: PathBuf,
    /// Filesystem type.
    pub fstype: String,
    /// Mount source (`/dev/loop3`).
    pub source: String,
    /// Per-mount and per-superblock options joined with commas.
    pub options: String,
}

/// Parses mountinfo text.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

fn unescape(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo octal.
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(v as char);
                i += 4;
                continue;
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

fn parse_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split_whitespace().collect();
    let r: Vec<&str> = right.split_whitespace().collect();
    if l.len() < 6 || r.len() < 2 {
        return None;
    }
    let super_opts = r.get(2).copied().unwrap_or("");
    Some(Mount {
        devno: l[2].to_string(),
        target: PathBuf::from(unescape(l[4])),
        fstype: r[0].to_string(),
        source: unescape(r[1]),
        options: format!("{},{}", l[5], super_opts),
    })
}

/// All mounts of the calling process's namespace; empty when mountinfo
/// cannot be read (see [`try_read`] where that must not pass unseen).
pub fn read() -> Vec<Mount> {
    try_read().unwrap_or_else(|_| Vec::new())
}

/// All mounts of the calling process's namespace, or why they cannot be
/// read.
pub fn try_read() -> std::io::Result<Vec<Mount>> {
    std::fs::read_to_string("/proc/self/mountinfo").map(|t| parse(&t))
}

/// Mounts whose device is `devno` (`7:3`).
pub fn of_device(devno: &str) -> Vec<Mount> {
    read().into_iter().filter(|m| m.devno == devno).collect()
}

/// The mount that holds `path` (longest mount-point prefix).
pub fn containing(path: &Path) -> Option<Mount> {
    let path = std::fs::canonicalize(path).ok()?;
    read()
        .into_iter()
        .filter(|m| path.starts_with(&m.target))
        .max_by_key(|m| m.target.as_os_str().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mountinfo() {
        let t = "36 35 7:3 / /run/iolab/labs/a\\040b rw,relatime shared:1 - ext4 /dev/loop3 rw,data=ordered\n";
        let m = parse(t);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].devno, "7:3");
        assert_eq!(m[0].target, PathBuf::from("/run/iolab/labs/a b"));
        assert_eq!(m[0].fstype, "ext4");
        assert_eq!(m[0].source, "/dev/loop3");
        assert!(m[0].options.contains("data=ordered"));
    }

    #[test]
    fn root_is_mounted() {
        assert!(containing(Path::new("/")).is_some());
    }
}
