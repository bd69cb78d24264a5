//! `iolab load` — the workload engine's command line.
//! (Owned by the load work; placeholder until it lands.)

use clap::Args;

/// Load arguments.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Job file.
    pub jobfile: Option<std::path::PathBuf>,
}

/// Runs a load.
pub fn run(_a: LoadArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
