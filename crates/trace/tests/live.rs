//! Live sessions on the real kernel (root): exact event counts, pid
//! following, cross-CPU ordering, stacks, cleanup.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{gettid, leftover_instances, root_guard};
use iolab_trace::{EventRequest, SessionConfig, TraceSession};

#[test]
fn forks_and_execs_of_children_are_counted_exactly() {
    let Some((guard, _dir)) = root_guard("forks_and_execs_of_children_are_counted_exactly") else {
        return;
    };
    let me = gettid();
    let mut config = SessionConfig::new(vec![
        EventRequest::new("sched", "sched_process_fork"),
        EventRequest::new("sched", "sched_process_exec"),
    ]);
    config.pids = Some(vec![me]);
    config.buffer_kib_per_cpu = 1024;
    let mut session = TraceSession::start(&guard, config).unwrap();
    let fork = session
        .format("sched", "sched_process_fork")
        .unwrap()
        .clone();
    let (parent, child) = (
        fork.field("parent_pid").unwrap().clone(),
        fork.field("child_pid").unwrap().clone(),
    );
    let mut forks = BTreeSet::new();
    let mut execs = BTreeSet::new();
    let mut sink = |r: &iolab_trace::Record| {
        if r.is("sched", "sched_process_fork") {
            assert_eq!(parent.i64(r.data), me as i64);
            assert_eq!(r.pid, me);
            forks.insert(u32::try_from(child.i64(r.data)).unwrap());
        } else if r.is("sched", "sched_process_exec") {
            assert!(
                r.str("filename").unwrap().ends_with("true"),
                "{:?}",
                r.str("filename")
            );
            execs.insert(u32::try_from(r.i64("pid").unwrap()).unwrap());
        }
    };
    let mut spawned = BTreeSet::new();
    for i in 0..20 {
        let mut c = Command::new("/bin/true").spawn().unwrap();
        spawned.insert(c.id());
        c.wait().unwrap();
        if i % 5 == 0 {
            session.poll(&mut sink).unwrap();
        }
    }
    let stats = session.finish(&mut sink).unwrap();
    assert_eq!(forks, spawned);
    assert_eq!(execs, spawned);
    assert_eq!(stats.lost, 0, "{stats:?}");
    assert_eq!(stats.events, 40, "{stats:?}");
    assert_eq!(leftover_instances(&guard), Vec::<String>::new());
}

#[test]
fn records_are_time_ordered_across_cpus() {
    let Some((guard, _dir)) = root_guard("records_are_time_ordered_across_cpus") else {
        return;
    };
    let mut config = SessionConfig::new(vec![EventRequest::new("sched", "sched_switch")]);
    config.buffer_kib_per_cpu = 4096;
    let mut session = TraceSession::start(&guard, config).unwrap();
    let start = session.start_ns();
    let mut last = 0u64;
    let mut cpus = BTreeSet::new();
    let mut n = 0u64;
    let mut sink = |r: &iolab_trace::Record| {
        assert!(r.ts_ns >= last, "{} after {last}", r.ts_ns);
        assert!(r.ts_ns >= start.saturating_sub(1_000_000_000));
        last = r.ts_ns;
        cpus.insert(r.cpu);
        n += 1;
    };
    // Busy children on every CPU make switches everywhere.
    let burn: Vec<_> = (0..4)
        .map(|_| {
            Command::new("sh")
                .args(["-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in burn {
        while c.try_wait().unwrap().is_none() {
            session.poll(&mut sink).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let stats = session.finish(&mut sink).unwrap();
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(n > 50, "only {n} switches");
    assert_eq!(stats.events, n);
    assert_eq!(stats.out_of_order, 0);
    assert_eq!(cpus.len(), online, "switches seen on {cpus:?}");
    assert!(
        last <= iolab_trace::monotonic_ns(),
        "trace clock is CLOCK_MONOTONIC"
    );
}

#[test]
fn stacktrace_trigger_attaches_scheduler_stacks() {
    let Some((guard, _dir)) = root_guard("stacktrace_trigger_attaches_scheduler_stacks") else {
        return;
    };
    let me = gettid();
    let mut config = SessionConfig::new(vec![EventRequest::new("sched", "sched_switch")
        .filter(&format!("prev_pid == {me}"))
        .stacktrace("prev_state & 3")]);
    config.buffer_kib_per_cpu = 1024;
    let session = TraceSession::start(&guard, config).unwrap();
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let syms = iolab_trace::Kallsyms::shared().unwrap();
    let (mut with, mut sleeping, mut naps) = (0, 0, 0);
    let stats = session
        .finish(&mut |r| {
            assert_eq!(r.i64("prev_pid"), Some(me as i64));
            let blocked = r.i64("prev_state").unwrap() & 3 != 0;
            if blocked {
                sleeping += 1;
            }
            if let Some(stack) = r.stack {
                assert!(blocked, "stack on a preemption");
                with += 1;
                let names: Vec<_> = stack.iter().map(|&a| syms.name(a).into_owned()).collect();
                assert!(
                    names.iter().any(|n| n == "schedule" || n == "__schedule"),
                    "{names:?}"
                );
                // Other sleeps (e.g. on a tracefs mutex in finish) have
                // other stacks; the 20 naps must be there.
                naps += u32::from(names.iter().any(|n| n.contains("nanosleep")));
                let top = syms.skip_trace_frames(stack);
                assert!(syms.name(top[0]).contains("schedule"), "{names:?}");
            }
        })
        .unwrap();
    assert!(sleeping >= 20, "{sleeping} sleeps");
    assert_eq!(with, sleeping, "every sleep has its stack");
    assert!(naps >= 20, "{naps} nanosleep stacks");
    assert_eq!(stats.lost, 0);
}

#[test]
fn missing_events_fail_or_are_skipped() {
    let Some((guard, _dir)) = root_guard("missing_events_fail_or_are_skipped") else {
        return;
    };
    let bad = SessionConfig::new(vec![EventRequest::new("sched", "no_such_event_iolab")]);
    let err = TraceSession::start(&guard, bad).err().unwrap();
    assert!(
        iolab_sys::is_usage(&err) && err.to_string().contains("no_such_event_iolab"),
        "{err}"
    );
    let ok = SessionConfig::new(vec![
        EventRequest::new("sched", "no_such_event_iolab").optional(),
        EventRequest::new("sched", "sched_process_exit"),
    ]);
    let s = TraceSession::start(&guard, ok).unwrap();
    assert!(!s.is_enabled("sched", "no_such_event_iolab"));
    assert!(s.is_enabled("sched", "sched_process_exit"));
    s.finish(&mut |_| {}).unwrap();
    let filter = SessionConfig::new(vec![
        EventRequest::new("sched", "sched_switch").filter("no_field == 1")
    ]);
    let err = TraceSession::start(&guard, filter).err().unwrap();
    assert!(
        iolab_sys::is_usage(&err) && err.to_string().contains("no_field"),
        "{err}"
    );
    assert_eq!(leftover_instances(&guard), Vec::<String>::new());
}

#[test]
fn instance_is_removed_when_a_session_is_dropped_in_a_panic() {
    let Some((guard, _dir)) =
        root_guard("instance_is_removed_when_a_session_is_dropped_in_a_panic")
    else {
        return;
    };
    let path = std::panic::catch_unwind(|| {
        let config = SessionConfig::new(vec![
            EventRequest::new("sched", "sched_switch").stacktrace("")
        ]);
        let s = TraceSession::start(&guard, config).unwrap();
        let path = s.instance_path().to_path_buf();
        assert!(path.exists());
        std::panic::panic_any(path);
    })
    .err()
    .unwrap()
    .downcast::<std::path::PathBuf>()
    .unwrap();
    assert!(
        !Path::new(&*path).exists(),
        "{} left behind",
        path.display()
    );
    // The guard's journal entry finds nothing left to undo.
    for line in guard.restore() {
        assert!(line.is_ok(), "{line:?}");
    }
}

#[test]
fn a_full_buffer_counts_every_lost_event() {
    let Some((guard, _dir)) = root_guard("a_full_buffer_counts_every_lost_event") else {
        return;
    };
    let me = gettid();
    let mut config =
        SessionConfig::new(vec![EventRequest::new("raw_syscalls", "sys_enter").filter(
            &format!("common_pid == {me} && id == {}", libc::SYS_getppid),
        )]);
    // A small buffer nobody reads during the flood: most events are lost.
    config.buffer_kib_per_cpu = 64;
    config.read_interval = std::time::Duration::from_secs(60);
    let session = TraceSession::start(&guard, config).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    const N: u64 = 50_000;
    for _ in 0..N {
        std::hint::black_box(rustix::process::getppid());
    }
    let t = std::time::Instant::now();
    let mut got = 0;
    let stats = session.finish(&mut |_| got += 1).unwrap();
    assert!(
        t.elapsed().as_secs() < 10,
        "finish must not wait out the reader's nap"
    );
    assert!(stats.lost > 0, "{stats:?}");
    assert_eq!(got, stats.events);
    assert_eq!(stats.events + stats.lost, N, "{stats:?}");
}
