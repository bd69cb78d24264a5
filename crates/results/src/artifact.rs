//! The documents stored with a run besides its time: one per kind and run,
//! raw samples included, written by the collectors and cell bodies of
//! `iolab-experiment` and read by the report's views.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an artifact document is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ArtifactKind {
    /// Per-request block latency histograms of the device under test
    /// (`iolab_bio::BioHistograms`).
    LatencyHist,
    /// CPU utilisation series, mpstat's columns (`iolab_sys::cpustat`).
    Cpu,
    /// Pressure stall series, /proc/pressure.
    Psi,
    /// Where the target's time went (`iolab_explain::Attribution`).
    Explain,
    /// A prefetch's report, for runs of a `prefetch:MODE` variant.
    Prefetch,
    /// The load engine's full fio-style report of a sweep run.
    Load,
    /// How long the target's tasks waited for a CPU (`iolab_sched`).
    Sched,
    /// A startup cell's background traffic by the load's own counters and
    /// by the device's, over the whole cell (stored with its last run).
    CellIo,
    /// A kind named by its writer, kept as stored: a collector's own
    /// documents under its registry name (a new collector needs no variant
    /// here unless a view reads its documents by kind), or a kind a newer
    /// iolab wrote.
    Other(String),
}

impl ArtifactKind {
    /// The kinds this version writes.
    pub const KNOWN: [ArtifactKind; 8] = [
        ArtifactKind::LatencyHist,
        ArtifactKind::Cpu,
        ArtifactKind::Psi,
        ArtifactKind::Explain,
        ArtifactKind::Prefetch,
        ArtifactKind::Load,
        ArtifactKind::Sched,
        ArtifactKind::CellIo,
    ];

    /// The word stored in the database.
    pub fn as_str(&self) -> &str {
        match self {
            ArtifactKind::LatencyHist => "latency_hist",
            ArtifactKind::Cpu => "cpu",
            ArtifactKind::Psi => "psi",
            ArtifactKind::Explain => "explain",
            ArtifactKind::Prefetch => "prefetch",
            ArtifactKind::Load => "load",
            ArtifactKind::Sched => "sched",
            ArtifactKind::CellIo => "cell_io",
            ArtifactKind::Other(s) => s,
        }
    }

    /// The kind a stored word names.
    pub fn parse(s: &str) -> ArtifactKind {
        Self::KNOWN
            .into_iter()
            .find(|k| k.as_str() == s)
            .unwrap_or_else(|| ArtifactKind::Other(s.to_string()))
    }
}

impl fmt::Display for ArtifactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for ArtifactKind {
    fn from(s: String) -> Self {
        ArtifactKind::parse(&s)
    }
}

impl From<ArtifactKind> for String {
    fn from(k: ArtifactKind) -> String {
        k.as_str().to_string()
    }
}

/// One document ready to store with a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactDoc {
    /// What it is.
    pub kind: ArtifactKind,
    /// The document.
    pub json: Value,
}

impl ArtifactDoc {
    /// Serialises `doc` as a `kind` artifact. A document that cannot be
    /// serialised is an error for the caller to report, never a stored
    /// `null`.
    pub fn of<T: Serialize + ?Sized>(
        kind: ArtifactKind,
        doc: &T,
    ) -> Result<ArtifactDoc, serde_json::Error> {
        Ok(ArtifactDoc {
            kind,
            json: serde_json::to_value(doc)?,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stored_words_are_stable() {
        let words: Vec<&str> = ArtifactKind::KNOWN
            .iter()
            .map(ArtifactKind::as_str)
            .collect();
        assert_eq!(
            words,
            [
                "latency_hist",
                "cpu",
                "psi",
                "explain",
                "prefetch",
                "load",
                "sched",
                "cell_io"
            ]
        );
        for k in ArtifactKind::KNOWN {
            assert_eq!(ArtifactKind::parse(k.as_str()), k);
        }
        assert_eq!(
            ArtifactKind::parse("flamegraph"),
            ArtifactKind::Other("flamegraph".into())
        );
    }

    #[test]
    fn a_document_that_cannot_serialise_is_an_error() {
        let mut m = std::collections::HashMap::new();
        m.insert((1, 2), 3); // JSON object keys must be strings
        assert!(ArtifactDoc::of(ArtifactKind::Cpu, &m).is_err());
        let d = ArtifactDoc::of(ArtifactKind::Cpu, &[1, 2]).unwrap();
        assert_eq!(d.json, serde_json::json!([1, 2]));
    }
}
