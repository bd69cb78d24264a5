//! The schedulers an experiment compares, in column order: given once on
//! the command line (`all` or a list without repeats) and resolved once
//! against the device the place brought up.

use iolab_sys::block::BlockDev;
use iolab_sys::UsageError;
use serde::{Deserialize, Serialize};

use crate::ExperimentError;

/// A list of scheduler names without repeats; empty means every scheduler
/// the device offers (`--schedulers all`). Stored as a JSON list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Schedulers(Vec<String>);

impl Schedulers {
    /// Every scheduler the device offers.
    pub fn all() -> Schedulers {
        Schedulers(Vec::new())
    }

    /// `--schedulers` as typed: `all`, or names each given once.
    pub fn parse(list: &[String]) -> Result<Schedulers, UsageError> {
        if list.iter().any(|s| s == "all") {
            if list.len() > 1 {
                return Err(UsageError::new(format!(
                    "--schedulers {}: `all` already means every scheduler the device offers; give `all` or a list",
                    list.join(",")
                )));
            }
            return Ok(Schedulers::all());
        }
        Self::of(list.to_vec())
    }

    /// A list of names, refused when one is given twice.
    pub fn of(names: Vec<String>) -> Result<Schedulers, UsageError> {
        for (i, s) in names.iter().enumerate() {
            if s.is_empty() {
                return Err(UsageError::new(
                    "--schedulers has an empty name: give names like none,bfq or `all`",
                ));
            }
            if names[..i].contains(s) {
                return Err(UsageError::new(format!(
                    "--schedulers lists {s} twice: give each scheduler once"
                )));
            }
        }
        Ok(Schedulers(names))
    }

    /// The names given (empty for `all`; once resolved by the engine, the
    /// names compared).
    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// True for `all`.
    pub fn is_all(&self) -> bool {
        self.0.is_empty()
    }

    /// The names, in order, against the devices under test: for `all`,
    /// those every one of them offers (in the first one's order); else the
    /// list, each checked to be offered by all (a configuration read back
    /// for `--resume` is checked here too, repeats included).
    pub fn resolve(&self, devs: &[BlockDev]) -> Result<Vec<String>, ExperimentError> {
        let mut offered: Vec<(String, Vec<String>)> = Vec::new();
        for d in devs {
            offered.push((d.name.clone(), d.schedulers()?.available));
        }
        let common: Vec<String> = match offered.first() {
            Some((_, first)) => first
                .iter()
                .filter(|s| offered.iter().all(|(_, a)| a.contains(s)))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        if self.is_all() {
            return Ok(common);
        }
        let list = Schedulers::of(self.0.clone())?.0;
        for s in &list {
            if let Some((dev, avail)) = offered.iter().find(|(_, a)| !a.contains(s)) {
                return Err(UsageError::new(format!(
                    "scheduler {s:?} is not offered by {dev}: available are {} (or use --schedulers all)",
                    avail.join(", ")
                ))
                .into());
            }
        }
        Ok(list)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn all_lists_and_repeats() {
        assert!(Schedulers::parse(&strs(&["all"])).unwrap().is_all());
        let l = Schedulers::parse(&strs(&["bfq", "none"])).unwrap();
        assert_eq!(
            serde_json::to_value(&l).unwrap(),
            serde_json::json!(["bfq", "none"])
        );
        let e = Schedulers::parse(&strs(&["bfq", "bfq"])).unwrap_err();
        assert!(e.0.contains("twice"), "{e}");
        assert!(Schedulers::parse(&strs(&["all", "bfq"]))
            .unwrap_err()
            .0
            .contains("all"));
        let stored: Schedulers = serde_json::from_value(serde_json::json!([])).unwrap();
        assert!(stored.is_all());
    }
}
