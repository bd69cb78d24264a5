//! The kinds of experiment. The store keeps the kind as a word; these are
//! the words and what each implies.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What an experiment measured, and so how it is shown, compared and
/// resumed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ExperimentKind {
    /// Start-up time under background I/O (`iolab startup`, `demo`).
    Startup,
    /// Seed 002's throughput matrix (`iolab sweep`).
    Sweep,
    /// Seed 003's maximum sustainable throughput (`iolab sweep --max`).
    SweepMax,
    /// Seed 001's boot time under each boot prefetch variant (`iolab boot`).
    Boot,
    /// A kind this version does not know (an imported database from a
    /// newer iolab): kept as stored, shown as generic cells.
    Other(String),
}

impl ExperimentKind {
    /// The kinds this version runs.
    pub const KNOWN: [ExperimentKind; 4] = [
        ExperimentKind::Startup,
        ExperimentKind::Sweep,
        ExperimentKind::SweepMax,
        ExperimentKind::Boot,
    ];

    /// The word stored in the database and printed.
    pub fn as_str(&self) -> &str {
        match self {
            ExperimentKind::Startup => "startup",
            ExperimentKind::Sweep => "sweep",
            ExperimentKind::SweepMax => "sweep-max",
            ExperimentKind::Boot => "boot",
            ExperimentKind::Other(s) => s,
        }
    }

    /// The kind a stored word names.
    pub fn parse(s: &str) -> ExperimentKind {
        Self::KNOWN
            .into_iter()
            .find(|k| k.as_str() == s)
            .unwrap_or_else(|| ExperimentKind::Other(s.to_string()))
    }

    /// The key of the experiment's stored configuration under which the
    /// kind's own settings are (`{"startup": {...}, "place": ...}`).
    pub fn config_key(&self) -> Option<&'static str> {
        match self {
            ExperimentKind::Startup => Some("startup"),
            ExperimentKind::Sweep => Some("sweep"),
            ExperimentKind::SweepMax => Some("max"),
            ExperimentKind::Boot => Some("boot"),
            ExperimentKind::Other(_) => None,
        }
    }

    /// The command that resumes an experiment of this kind.
    pub fn resume_command(&self) -> Option<&'static str> {
        match self {
            ExperimentKind::Startup => Some("iolab startup --resume ID"),
            ExperimentKind::Sweep => Some("iolab sweep --resume ID"),
            ExperimentKind::SweepMax => Some("iolab sweep --max --resume ID"),
            ExperimentKind::Boot => Some("iolab boot --resume ID"),
            ExperimentKind::Other(_) => None,
        }
    }
}

impl fmt::Display for ExperimentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for ExperimentKind {
    fn from(s: String) -> Self {
        ExperimentKind::parse(&s)
    }
}

impl From<ExperimentKind> for String {
    fn from(k: ExperimentKind) -> String {
        k.as_str().to_string()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_unknown_ones_are_kept() {
        for k in ExperimentKind::KNOWN {
            assert_eq!(ExperimentKind::parse(k.as_str()), k);
            let j = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<ExperimentKind>(&j).unwrap(), k);
        }
        assert_eq!(ExperimentKind::SweepMax.as_str(), "sweep-max");
        let other = ExperimentKind::parse("fio-matrix");
        assert_eq!(other, ExperimentKind::Other("fio-matrix".into()));
        assert_eq!(other.config_key(), None);
        assert_eq!(ExperimentKind::SweepMax.config_key(), Some("max"));
    }
}
