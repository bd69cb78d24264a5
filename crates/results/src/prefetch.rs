//! Prefetch modes, and the run variants that name them: a start made with
//! a prefetch list read in is stored with the variant `prefetch:MODE`, so
//! it forms its own cell beside the plain starts of the same scheduler and
//! workload.

use serde::{Deserialize, Serialize};

/// When the prefetch runs relative to the target's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum PrefetchMode {
    /// Read the list in completely, then start the target.
    Before,
    /// Start a helper reading the list just before the target.
    Parallel,
}

impl PrefetchMode {
    /// `before` or `parallel`.
    pub fn as_str(self) -> &'static str {
        match self {
            PrefetchMode::Before => "before",
            PrefetchMode::Parallel => "parallel",
        }
    }

    /// The variant of runs made with this mode: `prefetch:MODE`.
    pub fn variant(self) -> String {
        format!("{VARIANT_PREFIX}{}", self.as_str())
    }
}

/// What a prefetch variant starts with.
pub(crate) const VARIANT_PREFIX: &str = "prefetch:";

/// The prefetch mode of a run's variant, e.g. `before`; `None` for a plain
/// run (or a point of `--vary` without a prefetch).
pub fn mode_of(variant: Option<&str>) -> Option<&str> {
    crate::variant::prefetch_of(variant)?.strip_prefix(VARIANT_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_name_their_mode() {
        assert_eq!(PrefetchMode::Parallel.variant(), "prefetch:parallel");
        assert_eq!(mode_of(Some("prefetch:before")), Some("before"));
        assert_eq!(mode_of(Some("other:x")), None);
        assert_eq!(mode_of(None), None);
    }
}
