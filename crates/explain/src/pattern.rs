//! Frame names and the glob patterns rules match them with.

/// A kernel symbol name as rules see it: without `+0xoff/0xlen`, without a
/// `[module]` tag and without compiler suffixes (`.constprop.0`,
/// `.isra.0`, `.part.0`, `.cold`, `.llvm.123`), which change from one
/// kernel build to the next while the function stays the same.
pub fn normalize(frame: &str) -> &str {
    let name = frame.trim();
    let name = name.split_whitespace().next().unwrap_or("");
    let name = name.split('+').next().unwrap_or(name);
    match name.find('.') {
        // A leading dot is part of a few assembler symbols; keep those.
        Some(i) if i > 0 => &name[..i],
        _ => name,
    }
}

/// A symbol pattern: a name where `*` matches any run of characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    parts: Vec<String>,
    anchored_start: bool,
    anchored_end: bool,
}

impl Pattern {
    /// Compiles `text` (`ext4_*`, `*_slowpath`, `do_wait`).
    pub fn new(text: &str) -> Pattern {
        Pattern {
            text: text.to_string(),
            parts: text
                .split('*')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect(),
            anchored_start: !text.starts_with('*'),
            anchored_end: !text.ends_with('*'),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when `name` (already normalized) matches.
    pub fn matches(&self, name: &str) -> bool {
        if !self.text.contains('*') {
            return name == self.text;
        }
        let mut rest = name;
        for (i, part) in self.parts.iter().enumerate() {
            let last = i + 1 == self.parts.len();
            if i == 0 && self.anchored_start {
                match rest.strip_prefix(part.as_str()) {
                    Some(r) => rest = r,
                    None => return false,
                }
                if last && self.anchored_end {
                    return rest.is_empty();
                }
            } else if last && self.anchored_end {
                return rest.ends_with(part.as_str());
            } else {
                match rest.find(part.as_str()) {
                    Some(at) => rest = &rest[at + part.len()..],
                    None => return false,
                }
            }
        }
        true
    }
}

/// Any of several patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatternSet(pub Vec<Pattern>);

impl PatternSet {
    /// True when one of the patterns matches `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.0.iter().any(|p| p.matches(name))
    }

    /// True when one of the patterns matches one of `frames`.
    pub fn any_frame<S: AsRef<str>>(&self, frames: &[S]) -> bool {
        frames.iter().any(|f| self.matches(f.as_ref()))
    }

    /// True when there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_strips_offsets_modules_and_suffixes() {
        assert_eq!(
            normalize("folio_wait_bit_common+0x12/0x40"),
            "folio_wait_bit_common"
        );
        assert_eq!(
            normalize("ext4_fsync_nojournal.constprop.0"),
            "ext4_fsync_nojournal"
        );
        assert_eq!(normalize("loop_queue_rq+0x1/0x2 [loop]"), "loop_queue_rq");
        assert_eq!(normalize(" schedule "), "schedule");
        assert_eq!(normalize("0xffffffffc0001234"), "0xffffffffc0001234");
    }

    #[test]
    fn globs() {
        let p = Pattern::new("ext4_*");
        assert!(p.matches("ext4_map_blocks"));
        assert!(!p.matches("xfs_ext4_"));
        assert!(Pattern::new("*_slowpath").matches("rwsem_down_read_slowpath"));
        assert!(!Pattern::new("*_slowpath").matches("rwsem_slowpath_x"));
        assert!(Pattern::new("rwsem_down_*_slowpath").matches("rwsem_down_write_slowpath"));
        assert!(!Pattern::new("rwsem_down_*_slowpath").matches("rwsem_down_write"));
        assert!(Pattern::new("*wait*").matches("folio_wait_bit"));
        assert!(Pattern::new("do_wait").matches("do_wait"));
        assert!(!Pattern::new("do_wait").matches("do_wait4"));
        assert!(Pattern::new("a*a").matches("aa"));
        assert!(!Pattern::new("ab*ab").matches("ab"));
        assert!(Pattern::new("*").matches("anything"));
    }
}
