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
            iolab_sys::say!("iolab: {}", one_line(&err));
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
            || e.downcast_ref::<iolab_experiment::collect::CollectError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_lab::LabError>()
                .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<iolab_experiment::ExperimentError>()
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
            || e.downcast_ref::<iolab_remote::RemoteError>()
                .is_some_and(|s| s.is_usage())
    });
    if usage {
        2
    } else {
        1
    }
}

/// The error chain joined with ": " (as `{:#}`), skipping a cause whose
/// text its parent already ends with: errors that print their source in
/// their own message (`path: No such file or directory`) would otherwise
/// say it twice.
pub fn one_line(err: &anyhow::Error) -> String {
    let mut msg = String::new();
    for e in err.chain() {
        let s = e.to_string();
        if msg.ends_with(&s) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&s);
    }
    msg
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_in_its_parents_message_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let err = anyhow::Error::new(iolab_sys::SysError::io("/x", io)).context("evicting");
        let line = one_line(&err);
        assert_eq!(line.matches("not found").count(), 1, "{line}");
        assert!(line.starts_with("evicting: /x: "), "{line}");
    }
}
