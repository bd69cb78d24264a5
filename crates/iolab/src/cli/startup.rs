//! `iolab startup` (placeholder until its work lands).

use clap::Args;

/// Arguments of `iolab startup`.
#[derive(Debug, Args)]
pub struct StartupArgs {
    /// Output JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `iolab startup`.
pub fn run(_a: StartupArgs) -> anyhow::Result<()> {
    anyhow::bail!("iolab startup is not implemented yet")
}
