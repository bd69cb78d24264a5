//! Exit codes: 0 ok, 1 failure, 2 bad usage or input, 130/143 interrupted.
//! Errors print as one line `iolab: <what> : <why>` without a backtrace.

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

/// 2 when a `UsageError` is anywhere in the error's chain, else 1.
pub fn code_for(err: &anyhow::Error) -> i32 {
    if iolab_sys::is_usage(err.as_ref()) {
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
    #![allow(clippy::unwrap_used)]
    use super::*;

    use std::path::Path;

    use iolab_experiment::collect::CollectError;
    use iolab_experiment::launch::LaunchError;
    use iolab_experiment::ExperimentError;
    use iolab_sys::UsageError;

    /// `err` as the binary sees it, under a context: its exit code and the
    /// line it prints after the context.
    fn seen(err: impl Into<anyhow::Error>) -> (i32, String) {
        let err = err.into().context("ctx");
        let line = one_line(&err);
        let line = line.strip_prefix("ctx: ").unwrap_or(&line).to_string();
        (code_for(&err), line)
    }

    /// A usage error: exit code 2, its message said once, unchanged.
    fn usage(err: impl Into<anyhow::Error>, text: &str) {
        assert_eq!(seen(err), (2, text.to_string()));
    }

    /// As [`usage`], also inside an `ExperimentError` (how a startup or
    /// sweep carries it).
    fn usage_also_in_experiment<E>(make: impl Fn() -> E)
    where
        E: std::error::Error + Send + Sync + 'static,
        ExperimentError: From<E>,
    {
        let text = make().to_string();
        usage(make(), &text);
        usage(ExperimentError::from(make()), &text);
    }

    fn u(msg: &str) -> UsageError {
        UsageError::new(msg)
    }

    fn junk_file(dir: &Path, name: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, vec![b'x'; 4096]).unwrap();
        p
    }

    #[test]
    fn every_crates_usage_errors_exit_2_however_wrapped() {
        let dir = tempfile::tempdir().unwrap();
        let junk = junk_file(dir.path(), "junk");

        // sys
        usage(u("bad size"), "bad size");
        usage_also_in_experiment(|| u("bad size"));
        usage_also_in_experiment(|| ExperimentError::Usage(u("bad reps")));

        // guard, alone and under every layer that wraps it
        let guard = || iolab_guard::GuardError::Usage(u("no scheduler kyber"));
        usage_also_in_experiment(guard);
        usage_also_in_experiment(|| iolab_lab::LabError::Guard(guard()));
        usage_also_in_experiment(|| iolab_load::LoadError::Guard(guard()));
        usage_also_in_experiment(|| CollectError::Guard(guard()));
        usage_also_in_experiment(|| LaunchError::Guard(guard()));
        usage(
            iolab_trace::TraceError::Guard(guard()),
            "no scheduler kyber",
        );

        // lab
        usage_also_in_experiment(|| iolab_lab::LabError::Usage(u("lab x already exists")));

        // load: a job file's line, a flag, a named workload
        let at = |origin: &iolab_load::Origin| iolab_load::LoadError::at(origin, "bad bs");
        let file = iolab_load::Origin::File {
            path: "job.fio".into(),
            line: 3,
        };
        usage_also_in_experiment(|| at(&file));
        assert_eq!(at(&file).to_string(), "job.fio:3: bad bs");
        usage_also_in_experiment(|| at(&iolab_load::Origin::Flag));
        usage_also_in_experiment(|| at(&iolab_load::Origin::Named("S".into())));

        // store: an uncreatable directory, an unopenable file, a newer
        // schema, an id it does not hold
        let store_err = |p: &Path| iolab_store::Store::open(p).err().unwrap();
        usage_also_in_experiment(|| store_err(&junk.join("results.db")));
        usage_also_in_experiment(|| store_err(&junk));
        let db = dir.path().join("results.db");
        let store = iolab_store::Store::open(&db).unwrap();
        let no_such = || {
            store
                .experiment(iolab_store::ExperimentId(999))
                .err()
                .unwrap()
        };
        usage_also_in_experiment(no_such);
        assert!(no_such().to_string().contains("results list"));
        drop(store);
        let newer = dir.path().join("newer.db");
        drop(iolab_store::Store::open(&newer).unwrap());
        set_user_version(&newer, 99);
        usage_also_in_experiment(|| store_err(&newer));
        assert!(store_err(&newer).to_string().contains("schema version 99"));

        // trace: a file that is not a trace (a refused filter is built the
        // same way, as a `TraceError::Usage`; see the trace crate's tests)
        let trace = || iolab_trace::TraceFile::open(&junk).err().unwrap();
        let text = trace().to_string();
        assert!(text.contains("not a readable iolab trace file"), "{text}");
        usage(trace(), &text);
        usage(
            iolab_trace::TraceError::Usage(u("no event x")),
            "no event x",
        );
        let traced = || iolab_bio::BioError::Trace(trace());
        usage_also_in_experiment(|| CollectError::Bio(traced()));
        usage(
            ExperimentError::from(CollectError::collector("sched", trace())),
            &format!("sched: {text}"),
        );

        // bio
        usage_also_in_experiment(|| CollectError::Bio(iolab_bio::BioError::Usage(u("no pid 0"))));

        // sched: its own and a trace file that is not one
        usage(iolab_sched::SchedError::Usage(u("--sort x")), "--sort x");
        usage(iolab_sched::SchedError::Trace(trace()), &text);

        // cache: a missing path, a bad list line (the binary's hint on a
        // missing path: cli::cache's tests)
        let missing = || {
            iolab_cache::CacheError::io(
                dir.path().join("gone"),
                std::io::ErrorKind::NotFound.into(),
            )
        };
        usage_also_in_experiment(missing);
        let list = || {
            iolab_cache::prefetch::PrefetchList::parse("a 0:0\n")
                .err()
                .unwrap()
        };
        usage_also_in_experiment(list);
        assert!(list().to_string().contains("expected `FILE`"));
        usage_also_in_experiment(|| iolab_cache::CacheError::usage("no file name"));

        // spawn: empty, not found, a NUL byte, a failed exec
        let hold = |argv: &[&str]| {
            let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
            iolab_spawn::hold(&iolab_spawn::Spec::new(&argv))
        };
        let spawn_errors = || {
            let not_exec = junk.display().to_string();
            [
                hold(&[]).err().unwrap(),
                hold(&["no-such-program-iolab"]).err().unwrap(),
                hold(&["true", "a\0b"]).err().unwrap(),
                hold(&[&not_exec]).unwrap().release().err().unwrap(),
            ]
        };
        for (i, e) in spawn_errors().into_iter().enumerate() {
            let text = e.to_string();
            usage(e, &text);
            let again = || spawn_errors().into_iter().nth(i).unwrap();
            usage_also_in_experiment(|| LaunchError::Spawn(again()));
            usage_also_in_experiment(|| iolab_record::RecordError::Spawn(again()));
        }

        // record
        usage_also_in_experiment(|| iolab_record::RecordError::Usage(u("nothing to record")));

        // explain: a bad rule file, a pid that does not exist
        let rules = || {
            let bad = iolab_explain::RuleSet::with_text("kind io\n", "f.rules")
                .err()
                .unwrap();
            iolab_explain::ExplainError::from(bad)
        };
        usage_also_in_experiment(|| CollectError::Explain(rules()));
        let run_dir = dir.path().join("run");
        let no_proc = dir.path().join("proc");
        std::fs::create_dir(&no_proc).unwrap();
        let no_such_pid = || {
            let config = iolab_explain::ExplainerConfig {
                proc: no_proc.clone(),
                ..Default::default()
            };
            let guard = iolab_guard::Guard::in_dir(run_dir.clone());
            iolab_explain::Explainer::start_with(&guard, 4242, config)
                .err()
                .unwrap()
        };
        assert!(no_such_pid().to_string().contains("no process 4242"));
        usage_also_in_experiment(|| CollectError::Explain(no_such_pid()));

        // remote: a binary that is not an ELF file, as the boot body wraps it
        let remote = || iolab_remote::binary::elf_arch(&junk).err().unwrap();
        let text = remote().to_string();
        usage(remote(), &text);
        usage(
            ExperimentError::from(CollectError::collector("ssh", remote())),
            &format!("ssh: {text}"),
        );
    }

    /// Sets a closed SQLite file's `user_version` (big-endian at byte 60 of
    /// its header), as a newer iolab would have left it.
    fn set_user_version(db: &Path, v: u32) {
        let mut bytes = std::fs::read(db).unwrap();
        bytes[60..64].copy_from_slice(&v.to_be_bytes());
        std::fs::write(db, bytes).unwrap();
    }

    #[test]
    fn failures_exit_1() {
        let failures: Vec<anyhow::Error> = vec![
            std::io::Error::other("EIO").into(),
            iolab_sys::SysError::io("/sys/block/x/queue/scheduler", std::io::Error::other("EIO"))
                .into(),
            ExperimentError::from(iolab_sys::SysError::io(
                "/proc/x",
                std::io::Error::other("EIO"),
            ))
            .into(),
            ExperimentError::RunFailed {
                run: "bfq/idle/0".into(),
                why: "disk full".into(),
            }
            .into(),
            iolab_cache::CacheError::io("/root/x", std::io::ErrorKind::PermissionDenied.into())
                .into(),
            iolab_load::LoadError::io("/x", std::io::Error::other("EIO")).into(),
            ExperimentError::from(LaunchError::Spawn(iolab_spawn::SpawnError::Os {
                program: "ls".into(),
                call: "fork",
                error: std::io::Error::other("EAGAIN"),
            }))
            .into(),
            // A bug of ours reported by a collector is not the user's.
            ExperimentError::from(CollectError::collector(
                "sched",
                std::io::Error::other("its reader thread panicked"),
            ))
            .into(),
            iolab_store::StoreError::Corrupt {
                path: "r.db".into(),
                what: "x".into(),
            }
            .into(),
        ];
        for err in failures {
            let err = err.context("ctx");
            assert_eq!(code_for(&err), 1, "{}", one_line(&err));
        }
    }

    #[test]
    fn a_cause_already_in_its_parents_message_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let err = anyhow::Error::new(iolab_sys::SysError::io("/x", io)).context("evicting");
        let line = one_line(&err);
        assert_eq!(line.matches("not found").count(), 1, "{line}");
        assert!(line.starts_with("evicting: /x: "), "{line}");
    }
}
