//! `iolab restore` — undo what killed iolab runs left behind.

use clap::Args;

/// Restore arguments.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Print what was restored as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Recovers every stale journal and reports each restored change.
pub fn run(args: RestoreArgs) -> anyhow::Result<()> {
    super::require_root("iolab restore")?;
    let lines = iolab_guard::recover_stale()?;
    if args.json {
        iolab_sys::show!("{}", serde_json::json!({ "restored": lines }));
    } else if lines.is_empty() {
        iolab_sys::show!("nothing to restore: no iolab run left system state behind");
    } else {
        for l in lines {
            iolab_sys::show!("{l}");
        }
    }
    Ok(())
}
