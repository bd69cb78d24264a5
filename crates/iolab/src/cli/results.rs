//! `iolab results` (placeholder until its work lands).

use clap::Args;

/// Arguments of `iolab results`.
#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// Output JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `iolab results`.
pub fn run(_a: ResultsArgs) -> anyhow::Result<()> {
    anyhow::bail!("iolab results is not implemented yet")
}
