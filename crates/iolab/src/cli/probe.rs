//! `iolab probe` (placeholder until its work lands).

use clap::Args;

/// Arguments of `iolab probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Output JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `iolab probe`.
pub fn run(_a: ProbeArgs) -> anyhow::Result<()> {
    anyhow::bail!("iolab probe is not implemented yet")
}
