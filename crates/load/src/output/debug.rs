//! fio's `--debug=TYPE[,TYPE]`: which types iolab knows (fio 3.33's) and
//! what it prints for them. Only `random` prints anything (each clone's
//! seeds, as fio's `rand_seeds[]` lines); the other types are accepted and
//! print nothing, because their subjects are fio's internals.

use std::fmt::Write as _;

use iolab_sys::UsageError;

use crate::run::report::LoadReport;

/// fio's `--debug` types (fio 3.33's `debug_levels`).
pub const TYPES: [&str; 19] = [
    "process",
    "file",
    "io",
    "mem",
    "blktrace",
    "verify",
    "random",
    "parse",
    "diskutil",
    "job",
    "mutex",
    "profile",
    "time",
    "net",
    "rate",
    "compress",
    "steadystate",
    "helperthread",
    "zbd",
];

/// What `--debug` asked for that iolab prints.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Debug {
    /// `random`: print the seeds.
    pub random: bool,
}

/// Parses `--debug=TYPE[,TYPE]` (`all` for every type).
pub fn parse(spec: &str) -> Result<Debug, UsageError> {
    let mut d = Debug::default();
    for t in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match t {
            "all" | "random" => d.random = true,
            t if TYPES.contains(&t) => {}
            t => {
                return Err(UsageError::new(format!(
                    "--debug {t}: expected one or more of {}, or all (comma separated)",
                    TYPES.join(", ")
                )))
            }
        }
    }
    Ok(d)
}

/// fio's `--debug=?`: the types, one a line.
pub fn list() -> String {
    format!("Available debug options:\n{}", TYPES.join("\n"))
}

/// fio's `--debug=random` lines for every clone, as fio writes them (type,
/// pid, message); random_seed.py and people diffing runs read them.
pub fn random(r: &LoadReport) -> String {
    let pid = std::process::id();
    let mut out = String::new();
    for j in &r.jobs {
        for &seed in &j.seeds {
            let seeds = crate::run::clone::clone_seeds(seed);
            let _ = writeln!(out, "random   {pid:<6} FIO_RAND_NR_OFFS={}", seeds.len());
            for (i, s) in seeds.iter().enumerate() {
                let _ = writeln!(out, "random   {pid:<6} rand_seeds[{i}]={s}");
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn debug_types_are_fios() {
        assert!(parse("random").unwrap().random);
        assert!(parse("all").unwrap().random);
        assert!(!parse("io,file").unwrap().random);
        assert!(parse("bogus").is_err());
    }
}
