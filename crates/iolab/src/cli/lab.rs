//! `iolab lab up|down|status|list` — disposable lab devices.
//! (Owned by the lab work; placeholder until it lands.)

use clap::Subcommand;

/// Lab subcommands.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// List labs.
    List,
}

/// Runs a lab subcommand.
pub fn run(_c: LabCommand) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
