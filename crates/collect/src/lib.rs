//! Collectors: the event sources a run can be observed with, each behind
//! one trait (retis's pattern). A collector starts on a [`Scope`] (the
//! place's devices, the target's process tree when there is a target, or
//! the whole machine), stops when the run ends, and returns typed
//! artifacts (and, where it has one, a small summary stored in the run's
//! `extra.observed`). Every command that observes runs the same ones,
//! chosen by one option group (`--trace bio`, `--cpu`, `--explain`, ...)
//! stored as an [`Observe`] set with the experiment.
//!
//! A new event source is one file here holding its `impl Collector` and
//! its [`Entry`], and one line in [`REGISTRY`]; the command-line flags,
//! the stored configuration and the store follow from the entry.

mod bio;
mod cpu;
mod error;
mod explain;
pub mod main_thread;
pub use error::{to_json, CollectError};
pub use explain::delay_accounting;
mod sched;
mod vmstat;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use iolab_guard::Guard;
use iolab_results::ArtifactDoc;
use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Every collector iolab has, in the order their flags are listed.
pub const REGISTRY: &[Entry] = &[
    bio::ENTRY,
    cpu::ENTRY,
    explain::ENTRY,
    sched::ENTRY,
    vmstat::ENTRY,
];

/// What a collector observes.
pub struct Scope<'a> {
    /// The guard its tracing state is undone through.
    pub guard: &'a Guard,
    /// The devices whose I/O is under test.
    pub devices: &'a [BlockDev],
    /// The target's process, held before exec (its tree is followed);
    /// `None` when the run has no target (a sweep).
    pub target: Option<i32>,
    /// Sizes chosen by the kind of run.
    pub tuning: Tuning,
}

/// Sizes that depend on the kind of run being observed.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// How often CPU and pressure are sampled: often enough to see the
    /// shape of a run of this kind.
    pub cpu_interval: Duration,
    /// Trace ring buffer per CPU, KiB.
    pub trace_buffer_kib: u32,
}

/// What is known when a run ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunEnd {
    /// CPU time of the target's whole tree (wait4), ns.
    pub target_cpu_ns: Option<u64>,
    /// The start's measured window, CLOCK_MONOTONIC ns (launch to ready,
    /// or to the timeout); `None` for a run without a target.
    pub window_ns: Option<(u64, u64)>,
}

/// What a collector returns.
#[derive(Debug, Default)]
pub struct Collected {
    /// Its documents, stored with the run.
    pub docs: Vec<ArtifactDoc>,
    /// A few numbers for the run's `extra.observed.NAME` (comparable with
    /// `results compare --metric observed.NAME.FIELD`).
    pub summary: Option<Value>,
    /// What a one-shot command (`iolab load`) puts under `NAME` in its
    /// JSON report, when the collector has such a view.
    pub document: Option<Value>,
    /// The lines a one-shot command's text report prints for it.
    pub lines: Option<String>,
}

/// One event source, running.
pub trait Collector: Send {
    /// Stops it and returns what it saw.
    fn stop(self: Box<Self>, end: &RunEnd) -> Result<Collected, CollectError>;

    /// Follows `pid` too, a process of the start's outside the launched
    /// tree (an app zygote forked). False: this collector cannot.
    fn follow(&mut self, _pid: i32) -> Result<bool, CollectError> {
        Ok(false)
    }
}

/// What a collector needs of a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: it observes devices or the machine.
    Nothing,
    /// A target process to follow.
    Target,
}

/// How a collector is asked for on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// `--NAME`.
    Switch(&'static str),
    /// `--LONG VALUE`, one of the values several collectors share
    /// (`--trace bio`).
    Value {
        /// The flag.
        long: &'static str,
        /// This collector's value.
        value: &'static str,
    },
}

/// A collector as registered.
#[derive(Clone, Copy)]
pub struct Entry {
    /// Its stored name, also the `extra.observed` key.
    pub name: &'static str,
    /// Its flag.
    pub flag: Flag,
    /// The flag's help.
    pub help: &'static str,
    /// What it needs.
    pub needs: Needs,
    /// True when it needs root (it traces the kernel).
    pub root: bool,
    /// Starts it; tracing is on when this returns.
    pub start: fn(&Scope<'_>) -> Result<Box<dyn Collector>, CollectError>,
}

/// The per-CPU trace buffer `iolab trace bio` uses, for a one-shot
/// command that has no run kind to size it by.
pub fn default_trace_buffer_kib() -> u32 {
    iolab_bio::BioOptions::default().buffer_kib_per_cpu
}

/// The entry of `name`.
pub fn entry(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Which collectors observe every run: a set of registered names, stored
/// as `{"bio": true, "cpu": true}` (v5 wrote `trace_bio` for `bio`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observe(BTreeSet<&'static str>);

impl Observe {
    /// The set of `names`, each checked to be registered.
    pub fn of<'n>(names: impl IntoIterator<Item = &'n str>) -> Result<Observe, UsageError> {
        let mut set = BTreeSet::new();
        for n in names {
            let e = entry(n).ok_or_else(|| {
                UsageError::new(format!(
                    "no collector {n:?}: iolab has {}",
                    REGISTRY
                        .iter()
                        .map(|e| e.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            set.insert(e.name);
        }
        Ok(Observe(set))
    }

    /// True when `name` observes.
    pub fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// True when nothing observes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Both sets.
    pub fn union(&self, other: &Observe) -> Observe {
        Observe(self.0.union(&other.0).copied().collect())
    }

    /// The entries, in registry order.
    pub fn entries(&self) -> impl Iterator<Item = &'static Entry> + '_ {
        REGISTRY.iter().filter(|e| self.0.contains(e.name))
    }

    /// Refuses a collector that needs a target where runs have none.
    pub fn check(&self, has_target: bool, command: &str) -> Result<(), UsageError> {
        match self
            .entries()
            .find(|e| e.needs == Needs::Target && !has_target)
        {
            Some(e) => Err(UsageError::new(format!(
                "{} follows a target's processes, and {command} runs have none: drop it",
                flag_words(e.flag)
            ))),
            None => Ok(()),
        }
    }
}

/// `--cpu`, `--trace bio`.
pub fn flag_words(f: Flag) -> String {
    match f {
        Flag::Switch(s) => format!("--{s}"),
        Flag::Value { long, value } => format!("--{long} {value}"),
    }
}

impl Serialize for Observe {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m: BTreeMap<&str, bool> = self.0.iter().map(|n| (*n, true)).collect();
        m.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Observe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = BTreeMap::<String, bool>::deserialize(d)?;
        let on =
            m.iter()
                .filter(|(_, on)| **on)
                .map(|(k, _)| if k == "trace_bio" { "bio" } else { k.as_str() });
        Observe::of(on).map_err(serde::de::Error::custom)
    }
}

/// The collectors of one run, running.
pub struct Observers {
    running: Vec<(&'static str, Box<dyn Collector>)>,
    best_effort: Observe,
    failed: Vec<(&'static str, String)>,
}

/// What the collectors of one run returned.
#[derive(Debug, Default)]
pub struct Observed {
    /// Every document, to store with the run.
    pub docs: Vec<ArtifactDoc>,
    /// Summaries by collector name.
    pub summaries: BTreeMap<&'static str, Value>,
    /// Best-effort collectors that failed, and why.
    pub failed: Vec<(&'static str, String)>,
    /// One-shot documents by collector name, in registry order (see
    /// [`Collected::document`]).
    pub documents: Vec<(&'static str, Value)>,
    /// One-shot text lines by collector name, in registry order.
    pub lines: Vec<(&'static str, String)>,
}

impl Observed {
    /// The summaries as the run's `extra.observed` (`None` when empty).
    pub fn extra(&self) -> Option<Value> {
        (!self.summaries.is_empty()).then(|| {
            Value::Object(
                self.summaries
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            )
        })
    }
}

impl Observers {
    /// Starts every collector of `observe`; one of `best_effort` that
    /// fails is noted (the run goes on without it), any other failure is
    /// the run's.
    pub fn start(
        scope: &Scope<'_>,
        observe: &Observe,
        best_effort: &Observe,
    ) -> Result<Observers, CollectError> {
        let mut o = Observers {
            running: Vec::new(),
            best_effort: best_effort.clone(),
            failed: Vec::new(),
        };
        for e in observe.union(best_effort).entries() {
            if e.root && observe.has(e.name) && !iolab_sys::is_root() {
                return Err(UsageError::new(format!(
                    "{} traces the kernel and needs root: run it with sudo",
                    flag_words(e.flag)
                ))
                .into());
            }
            match (e.start)(scope) {
                Ok(c) => o.running.push((e.name, c)),
                Err(err) if best_effort.has(e.name) && !observe.has(e.name) => {
                    o.failed.push((e.name, err.to_string()))
                }
                Err(err) => return Err(err),
            }
        }
        Ok(o)
    }

    /// Has every collector follow `pid` too (see [`Collector::follow`]).
    pub fn follow(&mut self, pid: i32) -> Result<(), CollectError> {
        for (_, c) in &mut self.running {
            c.follow(pid)?;
        }
        Ok(())
    }

    /// Stops them all, in the order they started.
    pub fn stop(self, end: &RunEnd) -> Result<Observed, CollectError> {
        let mut out = Observed {
            failed: self.failed,
            ..Observed::default()
        };
        for (name, c) in self.running {
            match c.stop(end) {
                Ok(got) => {
                    out.docs.extend(got.docs);
                    if let Some(s) = got.summary {
                        out.summaries.insert(name, s);
                    }
                    if let Some(d) = got.document {
                        out.documents.push((name, d));
                    }
                    if let Some(l) = got.lines {
                        out.lines.push((name, l));
                    }
                }
                Err(err) if self.best_effort.has(name) => out.failed.push((name, err.to_string())),
                Err(err) => return Err(err),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn v5_observe_reads_back_and_unknown_names_are_refused() {
        let v5: Observe = serde_json::from_value(
            serde_json::json!({"trace_bio": true, "cpu": false, "explain": true}),
        )
        .unwrap();
        assert!(v5.has("bio") && v5.has("explain") && !v5.has("cpu"));
        assert_eq!(
            serde_json::to_value(&v5).unwrap(),
            serde_json::json!({"bio": true, "explain": true})
        );
        let back: Observe = serde_json::from_value(serde_json::to_value(&v5).unwrap()).unwrap();
        assert_eq!(back, v5);
        assert!(serde_json::from_value::<Observe>(serde_json::json!({"perf": true})).is_err());
        assert!(Observe::of(["bio"]).unwrap().check(false, "sweep").is_ok());
        let e = Observe::of(["explain"])
            .unwrap()
            .check(false, "sweep")
            .unwrap_err();
        assert!(e.0.contains("--explain"), "{e}");
    }

    #[test]
    fn every_entry_has_its_own_name_and_flag() {
        let names: BTreeSet<&str> = REGISTRY.iter().map(|e| e.name).collect();
        assert_eq!(names.len(), REGISTRY.len());
        let flags: BTreeSet<String> = REGISTRY.iter().map(|e| flag_words(e.flag)).collect();
        assert_eq!(flags.len(), REGISTRY.len());
    }
}
