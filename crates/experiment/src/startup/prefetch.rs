//! The prefetch dimension of the startup matrix (`--prefetch LIST
//! [--prefetch-mode before|parallel]`): every repetition of a cell is
//! started without prefetch and once per mode with it, in rotating order
//! and under the same running load, each after its own cold-cache step.
//!
//! - `before`: the list is read in completely ([`read_in`]) after the cache
//!   is made cold and before the target starts: the best a prefetch can
//!   do, its cost paid up front (stored in the artifact, not in the
//!   start-up time);
//! - `parallel`: a helper thread starts reading the list in the same way
//!   just before the target starts, like seed 001's treadahead at boot;
//!   the start-up time includes the competition between the two.
//!
//! Runs with prefetch are stored with the variant `prefetch:MODE` (the
//! run's own column), so each gets its own cells (and table) while the
//! target and workload keep their meaning; each such run carries a `prefetch` artifact (the
//! prefetch report). `LIST` is a prefetch list file (`{dir}` in it is the
//! lab directory) or `record`: the target is recorded once, cold, before
//! the matrix, with every task's page-cache insertions on the lab's
//! filesystem (nothing else uses the lab then), and the list is stored in
//! the experiment's configuration so `--resume` reuses it.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::thread::JoinHandle;

use iolab_cache::prefetch::{
    self as cache_prefetch, Method, PrefetchList, PrefetchOptions, PrefetchReport,
};
use iolab_guard::Guard;
use iolab_record::{DevNo, RecordOptions, Recorder, Recording, ResolveOptions};
use iolab_results::{ArtifactDoc, ArtifactKind};
use iolab_store::RunKey;
use iolab_sys::UsageError;
use serde::{Deserialize, Serialize};

use super::cold::make_cold;
use super::config::{Cold, StartupConfig};
use crate::engine::StoredRuns;
use crate::launch::{self, LaunchSpec};
use crate::place::Resolved;
use crate::targets::Target;
use crate::ExperimentError;

/// Where the list comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum PrefetchSource {
    /// A list file (`FILE off:len,...` lines or plain paths).
    File {
        /// Its path.
        path: PathBuf,
    },
    /// Record the target once before the matrix.
    Record,
}

impl PrefetchSource {
    /// `record` or a path.
    pub fn parse(s: &str) -> PrefetchSource {
        if s == "record" {
            PrefetchSource::Record
        } else {
            PrefetchSource::File {
                path: PathBuf::from(s),
            }
        }
    }
}

pub use iolab_results::prefetch::PrefetchMode;

/// The prefetch dimension of an experiment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefetchConfig {
    /// The list.
    pub list: PrefetchSource,
    /// Modes compared with no prefetch (at least one).
    pub modes: Vec<PrefetchMode>,
    /// Workloads measured with prefetch too; empty: all.
    #[serde(default)]
    pub workloads: Vec<String>,
}

/// A loaded list, ready to be read in around starts.
#[derive(Debug)]
pub struct Prefetcher {
    list: PrefetchList,
    cfg: PrefetchConfig,
    /// The list as stored with the experiment (`{dir}` for the lab dir).
    pub stored_text: String,
    bytes: u64,
}

impl Prefetcher {
    /// Loads (or records, or takes from a resumed experiment) the list.
    pub(super) fn prepare(
        guard: &Guard,
        cfg: &StartupConfig,
        target: &Target,
        place: &Resolved,
        spec: &LaunchSpec,
        stored: Option<&str>,
    ) -> Result<Option<Prefetcher>, ExperimentError> {
        let Some(pc) = &cfg.prefetch else {
            return Ok(None);
        };
        if pc.modes.is_empty() {
            return Err(UsageError::new("--prefetch-mode: give before, parallel or both").into());
        }
        let dir = place.files_dir()?.to_string_lossy().into_owned();
        let text = match (stored, &pc.list) {
            (Some(t), _) => t.to_string(),
            (None, PrefetchSource::File { path }) => {
                let p = PathBuf::from(path.to_string_lossy().replace("{dir}", &dir));
                std::fs::read_to_string(&p).map_err(|e| {
                    UsageError::new(format!(
                        "--prefetch {}: {e}: expected a list from `iolab record` or `iolab cache -r`, or `record`",
                        p.display()
                    ))
                })?
            }
            (None, PrefetchSource::Record) => record_target(guard, cfg, target, place, spec)?,
        };
        let list = PrefetchList::parse_named(&text.replace("{dir}", &dir), "--prefetch list")?;
        if list.is_empty() {
            return Err(UsageError::new(
                "the prefetch list is empty: nothing would be read in (a recording sees only pages that were not cached)",
            )
            .into());
        }
        let bytes = list
            .entries
            .iter()
            .map(|e| match &e.ranges {
                Some(r) => r.iter().map(|r| r.len).sum(),
                None => std::fs::metadata(&e.path).map_or(0, |m| m.len()),
            })
            .sum();
        // Stored with the lab directory as `{dir}`: a resumed experiment
        // runs on a new temporary lab mounted elsewhere.
        let stored_text = if dir.is_empty() {
            text
        } else {
            text.replace(&dir, "{dir}")
        };
        Ok(Some(Prefetcher {
            list,
            cfg: pc.clone(),
            stored_text,
            bytes,
        }))
    }

    /// The variants of one repetition of `workload`, in the order to run
    /// them: no prefetch and each mode, rotated by the repetition so no
    /// variant always runs first.
    pub(super) fn variants(&self, workload: &str, rep: u32) -> Vec<Option<PrefetchMode>> {
        variants(Some(&self.cfg), workload, rep)
    }

    /// Starts a prefetch for `mode`; [`Running::finish`] returns its report.
    pub(super) fn begin(&self, mode: PrefetchMode) -> Result<Running, ExperimentError> {
        Ok(match mode {
            PrefetchMode::Before => Running::Done(read_in(&self.list)?),
            PrefetchMode::Parallel => {
                let list = self.list.clone();
                Running::Helper(std::thread::spawn(move || read_in(&list)))
            }
        })
    }

    /// The `prefetch` artifact of a run.
    pub(super) fn artifact(
        &self,
        mode: PrefetchMode,
        report: &PrefetchReport,
    ) -> Result<ArtifactDoc, ExperimentError> {
        ArtifactDoc::of(
            ArtifactKind::Prefetch,
            &PrefetchArtifact {
                mode,
                list_files: self.list.entries.len(),
                list_bytes: self.bytes,
                report,
            },
        )
        .map_err(ExperimentError::serialise("the prefetch report"))
    }
}

/// The `prefetch` artifact: the report of one prefetch, with its list's size.
#[derive(Serialize)]
struct PrefetchArtifact<'a> {
    /// `before` or `parallel`.
    mode: PrefetchMode,
    /// Files in the list.
    list_files: usize,
    /// Bytes the list names.
    list_bytes: u64,
    /// What the prefetch did.
    report: &'a PrefetchReport,
}

/// Reads the whole list in and returns when every byte has been read: all
/// ranges submitted at once with readahead(2) (a deep queue, as a boot-time
/// helper does), then read through with pread(2), which waits for pages
/// still in flight. Neither pass alone will do: reading range after range
/// keeps one range in flight (under a background reader with mq-deadline
/// that took 4.3 s instead of 0.8 s here), and residency after readahead
/// counts pages still being read (cachestat counts every page present).
fn read_in(list: &PrefetchList) -> Result<PrefetchReport, iolab_cache::CacheError> {
    let submit = cache_prefetch::run(list, &PrefetchOptions::default())?;
    let read = cache_prefetch::run(
        list,
        &PrefetchOptions {
            method: Method::Read,
            ..PrefetchOptions::default()
        },
    )?;
    let duration_s = (read.end.mono_ns.saturating_sub(submit.start.mono_ns)) as f64 / 1e9;
    let device_read_bytes = submit.device_read_bytes + read.device_read_bytes;
    Ok(PrefetchReport {
        method: Method::Readahead,
        cached_pages_before: submit.cached_pages_before,
        submit_s: submit.submit_s,
        wait_s: read.duration_s,
        duration_s,
        device_read_bytes,
        device_read_bytes_per_s: if duration_s > 0.0 {
            device_read_bytes as f64 / duration_s
        } else {
            0.0
        },
        start: submit.start,
        ..read
    })
}

/// Variants of a repetition (see [`Prefetcher::variants`]).
pub(super) fn variants(
    cfg: Option<&PrefetchConfig>,
    workload: &str,
    rep: u32,
) -> Vec<Option<PrefetchMode>> {
    let mut v = vec![None];
    if let Some(c) = cfg {
        if c.workloads.is_empty() || c.workloads.iter().any(|w| w == workload) {
            v.extend(c.modes.iter().copied().map(Some));
        }
    }
    let n = v.len();
    v.rotate_left((rep.saturating_sub(1) as usize) % n);
    v
}

/// A prefetch under way.
pub(super) enum Running {
    /// Finished before the target started.
    Done(PrefetchReport),
    /// A helper thread reading alongside the target.
    Helper(JoinHandle<Result<PrefetchReport, iolab_cache::CacheError>>),
}

impl Running {
    /// Waits for the helper (if any) and returns the report.
    pub(super) fn finish(self) -> Result<PrefetchReport, ExperimentError> {
        match self {
            Running::Done(r) => Ok(r),
            Running::Helper(h) => match h.join() {
                Ok(r) => Ok(r?),
                Err(_) => Err(UsageError::new("the prefetch helper thread panicked").into()),
            },
        }
    }
}

/// Records the target once, cold, on the idle lab: every task's
/// page-cache insertions on the lab's filesystem while it starts.
fn record_target(
    guard: &Guard,
    cfg: &StartupConfig,
    target: &Target,
    place: &Resolved,
    spec: &LaunchSpec,
) -> Result<String, ExperimentError> {
    let cold = if cfg.cold == Cold::None {
        Cold::Evict
    } else {
        cfg.cold
    };
    make_cold(guard, cold, &target.files(&cfg.evict), place.mount()?)?;
    let dir = place.files_dir()?;
    let dev = std::fs::metadata(dir)
        .map(|m| DevNo::from_st_dev(m.dev()))
        .map_err(|e| iolab_sys::SysError::io(dir, e))?;
    let mut names = iolab_record::candidates::Candidates::default();
    names.add_argv(&target.argv());
    let opts = RecordOptions {
        pids: None,
        devices: vec![dev],
        ..RecordOptions::default()
    };
    let rec = Recorder::start(guard, &opts, names)?;
    let outcome = launch::launch(guard, spec);
    let raw = rec.finish()?;
    let outcome = outcome?;
    if outcome.failed() || outcome.interrupted {
        return Err(UsageError::new(format!(
            "recording the prefetch list: the target did not start cleanly (exit {:?}); its last output:\n{}",
            outcome.exit_code, outcome.output_tail
        ))
        .into());
    }
    let recording = Recording::build(
        raw,
        target.argv(),
        "all",
        vec![dev.to_string()],
        None,
        ResolveOptions::default(),
    );
    Ok(format!(
        "# iolab startup --prefetch record: {}\n{}",
        recording.summary(),
        recording.list_text()
    ))
}

/// True when every variant of a repetition is stored.
pub(super) fn rep_done(
    cfg: Option<&PrefetchConfig>,
    done: &StoredRuns,
    scheduler: &str,
    workload: &str,
    rep: u32,
    point: Option<&str>,
) -> bool {
    variants(cfg, workload, rep).into_iter().all(|v| {
        let prefetch = v.map(PrefetchMode::variant);
        done.contains(
            &RunKey::new(scheduler, workload, rep)
                .with_variant(iolab_results::variant::join(point, prefetch.as_deref()).as_deref()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(workloads: &[&str]) -> PrefetchConfig {
        PrefetchConfig {
            list: PrefetchSource::Record,
            modes: vec![PrefetchMode::Before, PrefetchMode::Parallel],
            workloads: workloads.iter().map(|w| w.to_string()).collect(),
        }
    }

    #[test]
    fn variants_rotate_and_respect_workloads() {
        let c = cfg(&["idle"]);
        let b = Some(PrefetchMode::Before);
        let p = Some(PrefetchMode::Parallel);
        assert_eq!(variants(Some(&c), "idle", 1), [None, b, p]);
        assert_eq!(variants(Some(&c), "idle", 2), [b, p, None]);
        assert_eq!(variants(Some(&c), "idle", 4), [None, b, p]);
        assert_eq!(variants(Some(&c), "1r", 2), [None]);
        assert_eq!(variants(None, "1r", 2), [None]);
        assert_eq!(variants(Some(&cfg(&[])), "1r", 1).len(), 3);
    }

    #[test]
    fn a_rep_is_done_only_with_every_variant() {
        let c = cfg(&[]);
        let mut done = StoredRuns::new();
        let key = |v: Option<&str>| RunKey::new("bfq", "idle", 1).with_variant(v);
        done.insert(key(None));
        done.insert(key(Some("prefetch:before")));
        assert!(!rep_done(Some(&c), &done, "bfq", "idle", 1, None));
        done.insert(key(Some("prefetch:parallel")));
        assert!(rep_done(Some(&c), &done, "bfq", "idle", 1, None));
        assert!(rep_done(None, &done, "bfq", "idle", 1, None));
        assert!(!rep_done(None, &done, "bfq", "idle", 2, None));
    }

    #[test]
    fn source_and_mode_names() {
        assert_eq!(PrefetchSource::parse("record"), PrefetchSource::Record);
        assert_eq!(
            PrefetchSource::parse("./record"),
            PrefetchSource::File {
                path: "./record".into()
            }
        );
    }
}
