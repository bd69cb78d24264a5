//! The observe option group every command that observes its runs shares
//! (`--trace bio`, `--cpu`, `--explain`, ...): built from the collector
//! registry, so a new collector brings its own flag and help here without
//! a line of this file changing.

use std::collections::BTreeMap;

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use iolab_experiment::collect::{Flag, Observe, REGISTRY};

/// The collectors asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct ObserveArgs {
    names: Vec<&'static str>,
}

impl ObserveArgs {
    /// The set asked for.
    pub fn observe(&self) -> Result<Observe, iolab_sys::UsageError> {
        Observe::of(self.names.iter().copied())
    }

    /// The names asked for, unchecked: for a command that checks them
    /// where its other values are checked (`iolab load`'s session).
    pub fn names(&self) -> Vec<&'static str> {
        self.names.clone()
    }
}

impl FromArgMatches for ObserveArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut a = ObserveArgs::default();
        a.update_from_arg_matches(m)?;
        Ok(a)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for e in REGISTRY {
            let on = match e.flag {
                Flag::Switch(long) => m.get_flag(long),
                Flag::Value { long, value } => m
                    .get_many::<String>(long)
                    .is_some_and(|mut v| v.any(|x| x == value)),
            };
            if on && !self.names.contains(&e.name) {
                self.names.push(e.name);
            }
        }
        Ok(())
    }
}

impl Args for ObserveArgs {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd;
        let mut valued: BTreeMap<&'static str, Vec<(&'static str, &'static str)>> = BTreeMap::new();
        for e in REGISTRY {
            match e.flag {
                Flag::Switch(long) => {
                    cmd = cmd.arg(
                        Arg::new(long)
                            .long(long)
                            .action(ArgAction::SetTrue)
                            .help(e.help),
                    );
                }
                Flag::Value { long, value } => {
                    valued.entry(long).or_default().push((value, e.help))
                }
            }
        }
        for (long, values) in valued {
            let names: Vec<&'static str> = values.iter().map(|(v, _)| *v).collect();
            let help: Vec<String> = values.iter().map(|(v, h)| format!("`{v}`: {h}")).collect();
            cmd = cmd.arg(
                Arg::new(long)
                    .long(long)
                    .value_name("WHAT")
                    .value_parser(clap::builder::PossibleValuesParser::new(names))
                    .action(ArgAction::Append)
                    .help(format!("Observe every run: {}", help.join("; "))),
            );
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, clap::Parser)]
    struct T {
        #[command(flatten)]
        o: ObserveArgs,
    }

    #[test]
    fn every_registered_collector_has_its_flag() {
        use clap::Parser;
        let t = T::try_parse_from(["t", "--trace", "bio", "--cpu", "--explain"]).unwrap();
        let o = t.o.observe().unwrap();
        assert!(o.has("bio") && o.has("cpu") && o.has("explain"));
        assert!(T::try_parse_from(["t", "--trace", "nope"]).is_err());
        assert!(T::try_parse_from(["t"])
            .unwrap()
            .o
            .observe()
            .unwrap()
            .is_empty());
    }
}
