//! `iolab app` (placeholder until its work lands).

use clap::Args;

/// Arguments of `iolab app`.
#[derive(Debug, Args)]
pub struct AppArgs {
    /// Output JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `iolab app`.
pub fn run(_a: AppArgs) -> anyhow::Result<()> {
    anyhow::bail!("iolab app is not implemented yet")
}
