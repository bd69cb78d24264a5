//! One clone of a job, on its own thread: setup (priority, files,
//! engine), then its engine's loop over the clone's [`Run`], then the
//! result.

use crate::run::clone::spec::seed_for;
use crate::run::clone::{CloneResult, CloneSpec, Failure, Run};

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use iolab_sys::ioprio::IoPrio;
use rand::SeedableRng;

use crate::job::kinds::IoEngine;
use crate::job::model::Job;
use crate::run::engine::{self, Engine};
use crate::run::files::file_set::{drop_cache, Files};
use crate::run::sinks::cpu::CpuUse;
use crate::run::sinks::stats::DirAcc;

/// Runs one clone to its end; never panics on I/O errors.
pub fn run_clone(spec: CloneSpec) -> CloneResult {
    let result = run_clone_inner(&spec);
    // Published for health checks of a load running in the background
    // (`iolab startup` checks it before and after every start).
    spec.live
        .end(result.failure.as_ref().map(|f| f.message.clone()));
    let me = &spec.shared.jobs[spec.job_idx];
    let ended = me.ended.fetch_add(1, Ordering::AcqRel) + 1;
    if spec.job.x.exitall && ended == 1 && spec.shared.exit_all(spec.job_idx, spec.job.x.exit_what)
    {
        spec.ctl.stop.store(true, Ordering::Relaxed);
    }
    if spec.job.x.unlink && ended >= me.numjobs {
        for p in spec.targets.iter().filter(|p| !p.starts_with("/dev")) {
            let _ = std::fs::remove_file(p);
        }
    }
    result
}

fn run_clone_inner(spec: &CloneSpec) -> CloneResult {
    let tid = iolab_sys::ioprio::current_tid();
    let mut result = CloneResult {
        job_idx: spec.job_idx,
        number: spec.number,
        tid,
        dirs: [DirAcc::new(false), DirAcc::new(false), DirAcc::new(false)],
        cpu: CpuUse::default(),
        syncs: 0,
        measured: None,
        failure: None,
        continued: Default::default(),
        lat_depth: None,
        zone_resets: None,
        seed: seed_for(spec),
        fx: Default::default(),
    };
    let setup = setup(spec);
    let outcome = setup.as_ref().map(|_| tid).map_err(Clone::clone);
    let _ = spec.ready.send((spec.job_idx, outcome));
    let (file, mut eng) = match setup {
        Ok(s) => s,
        Err(why) => {
            result.failure = Some(Failure {
                errno: 0,
                message: format!("job {}: {why}", spec.job.name),
            });
            return result;
        }
    };
    if !spec.gate.wait() {
        return result;
    }
    if !wait_to_start(spec) {
        return result;
    }
    let mut run = match Run::new(spec, Instant::now()) {
        Ok(r) => r,
        Err(why) => {
            result.failure = Some(Failure {
                errno: 0,
                message: format!("job {}: {why}", spec.job.name),
            });
            return result;
        }
    };
    match (&mut eng, &file) {
        (Engine::Cpu, _) => engine::cpuio::run(&mut run),
        (e, Some(f)) => engine::run(e, &mut run, f),
        _ => {}
    }
    if let Some(files) = &file {
        if run.failure.is_none() {
            run.verify_all(files);
        }
        if spec.job.end_fsync && run.failure.is_none() && !spec.ctl.stopping() {
            run.end_fsync(files);
        }
    }
    run.finish(&mut result);
    result
}

/// `startdelay` and `wait_for`: false when the load stopped meanwhile.
fn wait_to_start(spec: &CloneSpec) -> bool {
    let (lo, hi) = spec.job.x.startdelay;
    let delay = if hi > lo {
        use rand::Rng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed_for(spec));
        lo + (hi - lo).mul_f64(rng.random::<f64>())
    } else {
        lo
    };
    let until = Instant::now() + delay;
    let waited_job = spec
        .job
        .x
        .wait_for
        .as_ref()
        .and_then(|n| spec.shared.jobs.iter().position(|j| &j.name == n));
    loop {
        if spec.ctl.stopping() || spec.shared.jobs[spec.job_idx].stop.load(Ordering::Relaxed) {
            return false;
        }
        let waiting =
            Instant::now() < until || waited_job.is_some_and(|w| !spec.shared.job_done(w));
        if !waiting {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn setup(spec: &CloneSpec) -> Result<(Option<Files>, Engine), String> {
    let job = &spec.job;
    if let Some(p) = job.x.prio.or(spec.ioprio) {
        p.set_for(0).map_err(|e| {
            let hint = if matches!(p, IoPrio::RealTime(_)) {
                " (the real-time class needs root)"
            } else {
                ""
            };
            format!("cannot set I/O priority {p}: {e}{hint}")
        })?;
    }
    let Some(path) = spec.targets.first() else {
        if job.ioengine == IoEngine::Null {
            // The null engine moves nothing; /dev/null stands in for the
            // file the loop's bookkeeping expects.
            let f = File::open("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?;
            let files = Files::new(vec![f], vec![PathBuf::from("/dev/null")]);
            let eng = engine::setup(job, &files, 0, spec.size, seed_for(spec))?;
            return Ok((Some(files), eng));
        }
        return Ok((None, Engine::Cpu));
    };
    let mut opened = Vec::with_capacity(spec.targets.len());
    for p in &spec.targets {
        let file = open(job, p)?;
        if job.invalidate {
            drop_cache(&file);
        }
        opened.push(file);
    }
    let files = Files::new(opened, spec.targets.clone());
    let seed = seed_for(spec);
    let base = spec.base;
    let eng = engine::setup(job, &files, base, spec.size, seed).map_err(|e| {
        format!(
            "{} engine on {}: {e}",
            job.ioengine.as_str(),
            path.display()
        )
    })?;
    Ok((Some(files), eng))
}

fn open(job: &Job, path: &Path) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if job.writes() {
        o.write(true)
            .create(!path.starts_with("/dev") && !job.x.no_create);
    } else if job.x.create_on_open && !path.starts_with("/dev") {
        o.write(true).create(true);
    }
    if job.direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path).map_err(|e| {
        let hint = if job.direct && e.raw_os_error() == Some(libc::EINVAL) {
            " (this filesystem does not support O_DIRECT: use direct=0)"
        } else if job.x.no_create && e.kind() == std::io::ErrorKind::NotFound {
            " (allow_file_create=0 forbids creating it)"
        } else {
            ""
        };
        format!("cannot open {}: {e}{hint}", path.display())
    })
}
