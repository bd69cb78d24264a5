//! The boot guest's root disk on phone storage (`iolab boot --disk emmc`):
//! the root image served by iolab's device model (per-request latency, a
//! queue of the model's depth, sequential and random rates) as qemu's
//! drive, with no throttle in qemu, and the guest's virtio queue as deep
//! as the model's (`virtio_blk.queue_depth=`), so requests beyond it wait
//! in the guest's own I/O scheduler, where its priorities order them.
//!
//! Why FUSE and not NBD, vhost-user-blk or ublk: the model already serves
//! a file through FUSE for labs (one model, one set of tests); qemu opens
//! that file with O_DIRECT (`cache=none`), so no host page cache sits
//! between the guest and the model; this kernel has no ublk, and NBD or
//! vhost-user would add a second server speaking the same model.
//!
//! What the path itself costs (virtio, qemu, FUSE and the server, under
//! TCG: the guest's own block layer runs emulated) is measured from inside
//! the guest by fio on an instant model of the same depth (calibrate.rs)
//! and taken off each request's modelled time, as a lab does with its loop
//! device's round trip.
//!
//! Every boot gets a fresh copy of the root image (writes reach the model
//! as a phone's do, and the next boot starts from the same disk); the
//! copy, the FUSE mount and the server are undone after the boot.

use std::path::{Path, PathBuf};

use iolab_guard::Guard;
use iolab_model::server::PathCost;
use iolab_model::stats::ModelStats;
use iolab_model::ModelParams;
use serde::{Deserialize, Serialize};

use crate::ExperimentError;

/// A modelled root disk: the profile and the guest path's round trip
/// taken off each request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelDisk {
    pub params: ModelParams,
    /// What the guest's path costs a read and a write, taken off each
    /// request's modelled time (calibrate.rs; nothing for an instant
    /// disk).
    pub read_path: PathCost,
    pub write_path: PathCost,
}

impl ModelDisk {
    /// The same depth answering at once: what calibration measures the
    /// path on.
    pub fn instant(depth: u32) -> ModelDisk {
        ModelDisk {
            params: ModelParams {
                profile: "instant".into(),
                read_bw: u64::MAX / 4,
                write_bw: u64::MAX / 4,
                read_latency_ns: 0,
                write_latency_ns: 0,
                seek_ns: 0,
                queue_depth: depth,
                flush_ns: 0,
                duplex: false,
            },
            read_path: PathCost::default(),
            write_path: PathCost::default(),
        }
    }

    /// The kernel command line's part: the guest's queue as deep as the
    /// model's.
    ///
    /// And the scheduler's queue as deep as the real device's: its blk-mq
    /// tags (an eMMC's 64, a UFS's 32) give the scheduler twice that to
    /// hold (the kernel's default nr_requests), where the guest's queue of
    /// the model's depth would leave it 2.
    pub fn cmdline(&self) -> String {
        format!(
            "virtio_blk.queue_depth={} iolab.nr_requests={}",
            self.params.queue_depth,
            2 * self.blk_mq_tags()
        )
    }

    /// The blk-mq tag depth the real device's driver has: Linux's mmc
    /// block driver has 64 (MMC_QUEUE_DEPTH) whatever the card's own
    /// queue; otherwise the model's depth.
    pub fn blk_mq_tags(&self) -> u32 {
        if self.params.queue_depth == 1 {
            64
        } else {
            self.params.queue_depth
        }
    }
}

/// A served disk for one boot.
pub struct Served {
    /// qemu's drive file.
    pub drive: PathBuf,
    name: String,
    mark: iolab_guard::Mark,
    copy: Option<PathBuf>,
}

/// Serves `root` (a fresh copy of it in `work` when `copy`, else the image
/// itself: the recording boot writes its list there) through the model.
pub fn serve(
    guard: &Guard,
    disk: &ModelDisk,
    root: &Path,
    work: &Path,
    copy: bool,
) -> Result<Served, ExperimentError> {
    let io = |p: &Path, e| ExperimentError::from(iolab_sys::SysError::io(p, e));
    let mark = guard.mark()?;
    let image = if copy {
        let c = work.join("root-copy.img");
        copy_sparse(root, &c).map_err(|e| io(&c, e))?;
        c
    } else {
        root.to_path_buf()
    };
    let name = format!("boot-disk-{}", std::process::id());
    let served = iolab_lab::model::serve(guard, &name, &image, &disk.params).and_then(|mnt| {
        iolab_lab::model::set_transport(&name, disk.read_path, disk.write_path).map(|()| mnt)
    });
    match served {
        Ok(mnt) => Ok(Served {
            drive: mnt.join(iolab_model::server::FILE_NAME),
            name,
            mark,
            copy: copy.then_some(image),
        }),
        Err(e) => {
            let _ = guard.undo_since(mark);
            if copy {
                let _ = std::fs::remove_file(&image);
            }
            Err(e.into())
        }
    }
}

impl Served {
    /// The model's counters now (the outside check of the guest's
    /// diskstats), then the server, its mount and the copy undone.
    pub fn finish(self, guard: &Guard) -> (Option<ModelStats>, Vec<String>) {
        let stats = iolab_model::stats::read(&iolab_lab::model::stats_path(&self.name));
        let errors = guard
            .undo_since(self.mark)
            .into_iter()
            .filter_map(Result::err)
            .collect();
        if let Some(c) = self.copy {
            let _ = std::fs::remove_file(c);
        }
        (stats, errors)
    }
}

/// Copies `from` to `to` keeping its holes (a root image is mostly empty).
fn copy_sparse(from: &Path, to: &Path) -> std::io::Result<()> {
    let st = std::process::Command::new("cp")
        .args(["--sparse=always", "--reflink=auto"])
        .arg(from)
        .arg(to)
        .status()?;
    if st.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "cp {} {}: {st}",
            from.display(),
            to.display()
        )))
    }
}
