//! `iolab __model-server` (hidden): the device-model server of a lab made
//! with `--backend model`. Started by `lab up` with the lab's `/dev/fuse`
//! descriptor already mounted (as fd 3), in a session of its own, and
//! killed by process group when the lab comes down. Not for users.

use std::os::fd::FromRawFd;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// Arguments of `iolab __model-server`.
#[derive(Debug, Args)]
pub struct ModelServerArgs {
    /// The lab's image file (the data).
    #[arg(long)]
    pub image: PathBuf,
    /// The model's parameters, JSON.
    #[arg(long)]
    pub params: String,
    /// The mounted /dev/fuse descriptor.
    #[arg(long, default_value_t = 3)]
    pub fd: i32,
}

/// Serves until the FUSE mount goes away.
pub fn run(a: ModelServerArgs) -> anyhow::Result<()> {
    let params: iolab_model::ModelParams =
        serde_json::from_str(&a.params).context("--params is not a device model")?;
    // SAFETY: the lab passes the mounted /dev/fuse descriptor as `fd` and
    // nothing else in this process owns it.
    let fuse = unsafe { std::os::fd::OwnedFd::from_raw_fd(a.fd) };
    iolab_model::serve(fuse, &a.image, params).context("device model server")
}
