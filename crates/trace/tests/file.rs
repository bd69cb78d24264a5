//! Trace files: what a recording decodes to equals what a live session
//! saw of the same kernel events, and damaged files are refused.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::{gettid, leftover_instances, root_guard};
use iolab_trace::{EventRequest, Record, Recorder, SessionConfig, TraceFile, TraceSession};

/// What must agree between two instances that saw the same event (each
/// instance stamps its own copy, so timestamps differ by a few ns).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    cpu: u32,
    pid: i32,
    name: String,
    data: Vec<u8>,
    stack: Option<Vec<u64>>,
}

/// Tasks a record is about: both sides of a switch, parent and child of a
/// fork, the task of an exec.
fn tasks(r: &Record) -> Vec<i64> {
    ["prev_pid", "next_pid", "parent_pid", "child_pid", "pid"]
        .iter()
        .filter_map(|f| r.i64(f))
        .collect()
}

fn seen(r: &Record) -> (u64, Vec<i64>, Seen) {
    (
        r.ts_ns,
        tasks(r),
        Seen {
            cpu: r.cpu,
            pid: r.pid,
            name: r.name().to_string(),
            data: r.data.to_vec(),
            stack: r.stack.map(<[u64]>::to_vec),
        },
    )
}

/// Timestamp of the fork of `pid` (`child` is the `child_pid` field).
fn fork_ts(all: &[(u64, Vec<i64>, Seen)], child: &iolab_trace::Field, pid: u32) -> u64 {
    all.iter()
        .find(|(_, _, s)| s.name == "sched_process_fork" && child.u64(&s.data) == pid as u64)
        .unwrap()
        .0
}

/// Records of `cpu` in a time range about the tasks both instances
/// follow. (Each instance also follows what was forked between its own
/// start and the other's, such as the other's reader thread.)
fn on_cpu<'a>(
    all: &'a [(u64, Vec<i64>, Seen)],
    followed: &[i64],
    cpu: u32,
    from: u64,
    to: u64,
) -> Vec<&'a Seen> {
    all.iter()
        .filter(|(t, who, s)| {
            s.cpu == cpu && (from..=to).contains(t) && who.iter().any(|p| followed.contains(p))
        })
        .map(|(_, _, s)| s)
        .collect()
}

#[test]
fn recorded_file_decodes_like_a_live_session() {
    let Some((guard, dir)) = root_guard("recorded_file_decodes_like_a_live_session") else {
        return;
    };
    let me = gettid();
    let mut config = SessionConfig::new(vec![
        EventRequest::new("sched", "sched_process_fork"),
        EventRequest::new("sched", "sched_process_exec"),
        EventRequest::new("sched", "sched_switch").stacktrace("prev_state & 3"),
    ]);
    config.pids = Some(vec![me]);
    config.buffer_kib_per_cpu = 2048;
    let out = dir.path().join("t.iolabtrace");
    let mut live = TraceSession::start(&guard, config.clone()).unwrap();
    let rec = Recorder::start(&guard, config, &out).unwrap();
    let child = live
        .format("sched", "sched_process_fork")
        .unwrap()
        .field("child_pid")
        .unwrap()
        .clone();

    let mut live_seen = Vec::new();
    let mut children = Vec::new();
    for _ in 0..10 {
        let mut c = Command::new("/bin/sleep").arg("0.01").spawn().unwrap();
        children.push(c.id());
        c.wait().unwrap();
        live.poll(&mut |r| live_seen.push(seen(r))).unwrap();
    }
    let live_stats = live.finish(&mut |r| live_seen.push(seen(r))).unwrap();
    let rec_stats = rec.finish().unwrap();
    assert_eq!((live_stats.lost, rec_stats.lost), (0, 0));

    let file = TraceFile::open(&out).unwrap();
    assert!(file.meta().complete());
    assert!(file.kallsyms().is_some_and(|k| !k.is_empty()));
    let mut file_seen = Vec::new();
    let mut last = 0;
    let file_stats = file
        .for_each(&mut |r| {
            assert!(r.ts_ns >= last);
            last = r.ts_ns;
            file_seen.push(seen(r));
        })
        .unwrap();
    assert_eq!(file_stats.lost, 0);

    // The same kernel events, each instance stamping its own copy a few
    // ns apart: per CPU, what the live session saw between the first and
    // last child's fork (1 ms inside, so both edges are clear) appears in
    // the file as the same contiguous sequence.
    let from = fork_ts(&live_seen, &child, children[0]) + 1_000_000;
    let to = fork_ts(&live_seen, &child, children[children.len() - 1]) - 1_000_000;
    let mut followed: Vec<i64> = children.iter().map(|&c| c as i64).collect();
    followed.push(me as i64);
    let mut compared = 0;
    for cpu in 0..64 {
        let a = on_cpu(&live_seen, &followed, cpu, from, to);
        let b = on_cpu(&file_seen, &followed, cpu, from - 1_000_000, to + 1_000_000);
        let found = a.is_empty() || b.windows(a.len()).any(|w| w == a.as_slice());
        if !found {
            let show = |v: &[&Seen]| {
                v.iter()
                    .map(|s| format!("{}:{}:{}", &s.name[6..], s.pid, s.stack.is_some()))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            panic!(
                "cpu {cpu}: live records not in the file\nlive {}\nfile {}",
                show(&a),
                show(&b)
            );
        }
        compared += a.len();
    }
    assert!(compared > 50, "only {compared} records compared");
    let live_w: Vec<&Seen> = live_seen.iter().map(|(_, _, s)| s).collect();
    assert!(
        live_w
            .iter()
            .filter(|s| s.name == "sched_process_exec")
            .count()
            >= 9
    );
    assert!(
        live_w.iter().any(|s| s.stack.is_some()),
        "sleeps have stacks"
    );
    assert_eq!(leftover_instances(&guard), Vec::<String>::new());
}

#[test]
fn damaged_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    std::fs::write(&p, b"not a trace file at all").unwrap();
    let e = TraceFile::open(&p).err().unwrap();
    assert!(e.to_string().contains("IOLABTRC"), "{e}");
    std::fs::write(&p, b"IOLABTRC\x01\0\0\0\0\0\0\0").unwrap();
    let e = TraceFile::open(&p).err().unwrap();
    assert!(e.to_string().contains("no START"), "{e}");
    std::fs::write(&p, b"IOLABTRC\x09\0\0\0\0\0\0\0").unwrap();
    let e = TraceFile::open(&p).err().unwrap();
    assert!(e.to_string().contains("version 9"), "{e}");
}
