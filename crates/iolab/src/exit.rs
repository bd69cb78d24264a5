//! Exit codes: 0 ok, 1 failure, 2 bad usage or input, 130/143 interrupted.
//! Errors print as one line `iolab: <what> : <why>` without a backtrace.

use iolab_sys::UsageError;

/// Runs `f`, prints its error, if any, and returns the process exit code.
pub fn run_and_report(f: fn() -> anyhow::Result<()>) -> i32 {
    let result = f();
    // Interrupted runs exit 128+signal even when they stopped cleanly and
    // printed partial results, so scripts can tell them from complete ones.
    let interrupted = iolab_guard::stop_signal().map(|s| 128 + s);
    match result {
        Ok(()) => interrupted.unwrap_or(0),
        Err(err) => {
            if is_broken_pipe(&err) {
                return 0;
            }
            eprintln!("iolab: {err:#}");
            interrupted.unwrap_or_else(|| code_for(&err))
        }
    }
}

/// 2 when anything in the error's chain is a usage error, else 1.
pub fn code_for(err: &anyhow::Error) -> i32 {
    let usage = err.chain().any(|e| {
        e.downcast_ref::<UsageError>().is_some()
            || e.downcast_ref::<iolab_guard::GuardError>()
                .is_some_and(|g| g.is_usage())
            || e.downcast_ref::<iolab_store::StoreError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_load::LoadError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_lab::LabError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_experiment::startup::StartupError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_experiment::sweep::SweepError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_trace::TraceError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_bio::BioError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_cache::CacheError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_record::RecordError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_sched::SchedError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_explain::ExplainError>()
                .is_some_and(|s| s.is_usage())
    });
    if usage {
        2
    } else {
        1
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
