//! `iolab demo` (placeholder until its work lands).

use clap::Args;

/// Arguments of `iolab demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Output JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `iolab demo`.
pub fn run(_a: DemoArgs) -> anyhow::Result<()> {
    anyhow::bail!("iolab demo is not implemented yet")
}
