//! The flags that choose how a lab is slowed, shared by `lab up`,
//! `startup`, `sweep` and `demo` (one definition, flattened into each).

use clap::Args;
use iolab_lab::{Backend, LabSpec, ModelText};
use iolab_model::ModelParams;
use iolab_sys::UsageError;

/// `--backend`, `--device-model` and the model's overrides.
#[derive(Debug, Clone, Default, Args)]
pub struct ModelArgs {
    /// How the lab is slowed: `model` (a device model served in user
    /// space over FUSE: any Linux) or `throttle` (cgroup-v1 blkio on a
    /// lower loop device) [default: throttle where cgroup v1 works, else
    /// model].
    #[arg(long, value_name = "model|throttle")]
    pub backend: Option<String>,
    /// Device model profile: emmc, sd, ufs or hdd (figures and sources in
    /// docs/device-models.md); implies --backend model.
    #[arg(long, value_name = "PROFILE")]
    pub device_model: Option<String>,
    /// Model: sequential read rate, e.g. 80MB/s.
    #[arg(long, value_name = "RATE")]
    pub model_read_bw: Option<String>,
    /// Model: sequential write rate, e.g. 30MB/s.
    #[arg(long, value_name = "RATE")]
    pub model_write_bw: Option<String>,
    /// Model: fixed part of a read's service time, e.g. 350us.
    #[arg(long, value_name = "DURATION")]
    pub model_read_latency: Option<String>,
    /// Model: fixed part of a write's service time, e.g. 1.8ms.
    #[arg(long, value_name = "DURATION")]
    pub model_write_latency: Option<String>,
    /// Model: requests the device serves at once (1 for eMMC/SD).
    #[arg(long, value_name = "N")]
    pub model_queue_depth: Option<String>,
    /// Model: cost of a cache flush (fsync), e.g. 5ms.
    #[arg(long, value_name = "DURATION")]
    pub model_flush: Option<String>,
    /// Model: extra time of a non-sequential request (a disk's seek), e.g. 8ms.
    #[arg(long, value_name = "DURATION")]
    pub model_seek: Option<String>,
}

impl ModelArgs {
    /// The model flags as the lab parses them.
    pub fn text(&self) -> ModelText<'_> {
        ModelText {
            read_bw: self.model_read_bw.as_deref(),
            write_bw: self.model_write_bw.as_deref(),
            read_latency: self.model_read_latency.as_deref(),
            write_latency: self.model_write_latency.as_deref(),
            queue_depth: self.model_queue_depth.as_deref(),
            flush: self.model_flush.as_deref(),
            seek: self.model_seek.as_deref(),
        }
    }

    /// True when any of these flags was given.
    pub fn any(&self) -> bool {
        self.backend.is_some() || self.device_model.is_some() || self.text() != ModelText::default()
    }

    /// The backend asked for and the model, for a new lab slowed by `bw`
    /// and `iops` (if given).
    pub fn resolve(
        &self,
        bw_bytes: Option<u64>,
        iops: Option<u64>,
    ) -> Result<(Option<Backend>, Option<ModelParams>), UsageError> {
        let spec = LabSpec {
            bw_bytes,
            iops,
            ..LabSpec::default()
        };
        iolab_lab::slowing_from_text(
            &spec,
            self.backend.as_deref(),
            self.device_model.as_deref(),
            &self.text(),
        )
    }

    /// The place of a new lab of `size_bytes` (formatted `fs`), slowed to
    /// `bw_bytes`/`iops` by the backend these flags choose (or this
    /// device model): the one builder of startup's, sweep's and demo's
    /// `Place::NewLab`.
    pub fn new_lab(
        &self,
        size_bytes: u64,
        fs: iolab_lab::Fs,
        bw_bytes: Option<u64>,
        iops: Option<u64>,
    ) -> Result<iolab_experiment::place::Place, UsageError> {
        let (backend, model) = self.resolve(bw_bytes, iops)?;
        Ok(iolab_experiment::place::Place::NewLab {
            size_bytes,
            fs,
            bw_bytes,
            iops,
            backend,
            model,
        })
    }

    /// Refuses these flags where no new lab is made (`--lab`, `--device`).
    pub fn refuse_with(&self, other: &str) -> Result<(), UsageError> {
        if self.any() {
            return Err(UsageError::new(format!(
                "--backend, --device-model and --model-* shape a new lab; {other} uses an existing device: drop one of them"
            )));
        }
        Ok(())
    }
}
