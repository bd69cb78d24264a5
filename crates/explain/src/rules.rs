//! The rule table that names a stall's cause from its kernel stack: data,
//! not code (`rules/default.rules`, embedded; syntax documented there),
//! extended or replaced by a user file (`--rules FILE`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::pattern::{Pattern, PatternSet};

/// The built-in table.
pub const DEFAULT_RULES: &str = include_str!("../rules/default.rules");

/// The cause of stacks no rule matches (and of stalls without a stack).
pub const OTHER: &str = "other";

/// What kind of wait a cause is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Waiting for storage, directly or through the journal or writeback.
    Io,
    /// Waiting for a kernel lock another task holds.
    Lock,
    /// Waiting for memory (reclaim, compaction, swap).
    Memory,
    /// Waiting for work, input, a timer or a child: not a system stall.
    Idle,
    /// Anything else.
    Other,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "io" => Kind::Io,
            "lock" => Kind::Lock,
            "memory" => Kind::Memory,
            "idle" => Kind::Idle,
            "other" => Kind::Other,
            _ => return None,
        })
    }
}

/// One rule: a cause and the stack conditions that name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Cause name, e.g. `journal commit wait`.
    pub cause: String,
    /// Kind of wait.
    pub kind: Kind,
    /// The stack has a frame matching one of these.
    pub any: PatternSet,
    /// ... and, when not empty, one matching one of these.
    pub also: PatternSet,
    /// ... and none matching these.
    pub unless: PatternSet,
    /// Lock names by the function that waited (the stall's site).
    pub names: Vec<(Pattern, String)>,
    /// What the cause means.
    pub doc: String,
    /// Where the rule was defined (`builtin:12`, `FILE:3`).
    pub origin: String,
}

impl Rule {
    /// True when the rule's conditions hold for `frames` (normalized).
    pub fn matches<S: AsRef<str>>(&self, frames: &[S]) -> bool {
        self.any.any_frame(frames)
            && (self.also.is_empty() || self.also.any_frame(frames))
            && !self.unless.any_frame(frames)
    }
}

/// A rule file that could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// Unreadable file.
    #[error("cannot read rules file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A line the syntax does not allow.
    #[error("{origin}: {line:?}: {why}")]
    Syntax {
        /// `FILE:LINE`.
        origin: String,
        /// The offending text.
        line: String,
        /// What would be right.
        why: String,
    },
}

/// An ordered rule table: the first matching rule names the cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSet {
    /// Rules in matching order.
    pub rules: Vec<Rule>,
    /// Wait-machinery frames skipped when naming a stall's site.
    pub skip: PatternSet,
    /// Where the table came from (`builtin`, or `FILE + builtin`).
    pub source: String,
    /// For each rule, the first rule with the same cause name: several
    /// rules may name one cause, which is then counted once.
    canon: Vec<usize>,
}

/// The cause a stack was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CauseId {
    /// The rule at this index.
    Rule(usize),
    /// No rule matched (or no stack).
    Other,
}

impl Default for RuleSet {
    fn default() -> Self {
        Self::builtin()
    }
}

impl RuleSet {
    /// The built-in table.
    pub fn builtin() -> RuleSet {
        let mut set = parse(DEFAULT_RULES, "builtin").expect("the built-in rule table parses");
        set.source = "builtin".into();
        set.index();
        set
    }

    /// The built-in table with `path`'s rules first (they win), or
    /// `path`'s alone when it starts with `replace`.
    pub fn with_file(path: &Path) -> Result<RuleSet, RuleError> {
        let text = std::fs::read_to_string(path).map_err(|source| RuleError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::with_text(&text, &path.display().to_string())
    }

    /// As [`RuleSet::with_file`], for text already read; `name` is shown
    /// in errors and as the source.
    pub fn with_text(text: &str, name: &str) -> Result<RuleSet, RuleError> {
        let mut user = parse(text, name)?;
        let replace = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .find(|l| !l.is_empty())
            == Some("replace");
        if replace {
            user.source = name.to_string();
        } else {
            let builtin = Self::builtin();
            user.rules.extend(builtin.rules);
            user.skip.0.extend(builtin.skip.0);
            user.source = format!("{name} + builtin");
        }
        user.index();
        Ok(user)
    }

    fn index(&mut self) {
        self.canon = (0..self.rules.len())
            .map(|i| {
                let name = &self.rules[i].cause;
                self.rules
                    .iter()
                    .position(|r| &r.cause == name)
                    .unwrap_or(i)
            })
            .collect();
    }

    /// The index counting a rule's cause: the first rule of that name.
    pub fn canonical(&self, id: CauseId) -> CauseId {
        match id {
            CauseId::Rule(i) => CauseId::Rule(self.canon.get(i).copied().unwrap_or(i)),
            CauseId::Other => CauseId::Other,
        }
    }

    /// The cause of a stack (innermost frame first, normalized names).
    pub fn classify<S: AsRef<str>>(&self, frames: &[S]) -> CauseId {
        self.rules
            .iter()
            .position(|r| r.matches(frames))
            .map_or(CauseId::Other, CauseId::Rule)
    }

    /// Name of a cause.
    pub fn name(&self, id: CauseId) -> &str {
        match id {
            CauseId::Rule(i) => self.rules.get(i).map_or(OTHER, |r| r.cause.as_str()),
            CauseId::Other => OTHER,
        }
    }

    /// Kind of a cause.
    pub fn kind(&self, id: CauseId) -> Kind {
        match id {
            CauseId::Rule(i) => self.rules.get(i).map_or(Kind::Other, |r| r.kind),
            CauseId::Other => Kind::Other,
        }
    }

    /// The function the task blocked in: the innermost frame that is not
    /// wait machinery (`skip` lines).
    pub fn site<'a, S: AsRef<str>>(&self, frames: &'a [S]) -> Option<&'a str> {
        frames
            .iter()
            .map(AsRef::as_ref)
            .find(|f| !self.skip.matches(f))
    }

    /// The lock's name, when the cause's rule names the lock waited for at
    /// `site`.
    pub fn lock_name(&self, id: CauseId, site: &str) -> Option<&str> {
        let CauseId::Rule(i) = id else { return None };
        self.rules
            .get(i)?
            .names
            .iter()
            .find(|(p, _)| p.matches(site))
            .map(|(_, n)| n.as_str())
    }
}

fn parse(text: &str, name: &str) -> Result<RuleSet, RuleError> {
    let mut set = RuleSet {
        rules: Vec::new(),
        skip: PatternSet::default(),
        source: name.to_string(),
        canon: Vec::new(),
    };
    for (n, raw) in text.lines().enumerate() {
        let origin = format!("{name}:{}", n + 1);
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line == "replace" {
            continue;
        }
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let err = |why: &str| RuleError::Syntax {
            origin: origin.clone(),
            line: raw.trim().to_string(),
            why: why.to_string(),
        };
        let patterns = || rest.split_whitespace().map(Pattern::new);
        if word == "skip" {
            set.skip.0.extend(patterns());
            continue;
        }
        if word == "cause" {
            if rest.is_empty() {
                return Err(err("expected `cause NAME`"));
            }
            set.rules.push(Rule {
                cause: rest.to_string(),
                kind: Kind::Other,
                any: PatternSet::default(),
                also: PatternSet::default(),
                unless: PatternSet::default(),
                names: Vec::new(),
                doc: String::new(),
                origin: origin.clone(),
            });
            continue;
        }
        let Some(rule) = set.rules.last_mut() else {
            return Err(err("expected `cause NAME` (or `skip`) before rule lines"));
        };
        if rest.is_empty() {
            return Err(err(&format!("`{word}` needs a value")));
        }
        match word {
            "kind" => {
                rule.kind = Kind::parse(rest)
                    .ok_or_else(|| err("expected kind io, lock, memory, idle or other"))?;
            }
            "any" => rule.any.0.extend(patterns()),
            "also" => rule.also.0.extend(patterns()),
            "unless" => rule.unless.0.extend(patterns()),
            "name" => {
                for pair in rest.split_whitespace() {
                    let (f, l) = pair
                        .split_once('=')
                        .ok_or_else(|| err("expected `name FUNCTION=LOCK ...`"))?;
                    rule.names.push((Pattern::new(f), l.to_string()));
                }
            }
            "doc" => {
                if !rule.doc.is_empty() {
                    rule.doc.push(' ');
                }
                rule.doc.push_str(rest);
            }
            _ => {
                return Err(err(
                    "expected one of skip, cause, kind, any, also, unless, name, doc",
                ))
            }
        }
    }
    if let Some(r) = set.rules.iter().find(|r| r.any.is_empty()) {
        return Err(RuleError::Syntax {
            origin: r.origin.clone(),
            line: format!("cause {}", r.cause),
            why: "the rule has no `any PATTERN...` line, so it could never match".into(),
        });
    }
    Ok(set)
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
