//! Decode throughput and recording cost, measured, not asserted (timing
//! is not a pass/fail matter). Run:
//! `cargo test --release -p iolab-trace --test throughput -- --ignored --nocapture`
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Instant;

use common::{gettid, root_guard};
use iolab_trace::{EventRequest, Recorder, SessionConfig, TraceFile, TraceSession};

/// `n` cheap syscalls; returns ns per syscall.
fn syscalls(n: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(rustix::process::getppid());
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn config(me: i32) -> SessionConfig {
    let filter = format!("common_pid == {me}");
    let mut c = SessionConfig::new(vec![
        EventRequest::new("raw_syscalls", "sys_enter").filter(&filter),
        EventRequest::new("raw_syscalls", "sys_exit").filter(&filter),
    ]);
    c.buffer_kib_per_cpu = 64 * 1024;
    c
}

#[test]
#[ignore = "measurement; run by hand in release mode"]
fn measure_throughput() {
    let Some((guard, dir)) = root_guard("measure_throughput") else {
        return;
    };
    let me = gettid();
    const N: u64 = 1_000_000;
    let base = syscalls(N);

    // Live session, polled every 100k syscalls.
    let mut s = TraceSession::start(&guard, config(me)).unwrap();
    let mut got = 0u64;
    let t = Instant::now();
    for _ in 0..10 {
        syscalls(N / 10);
        s.poll(&mut |_| got += 1).unwrap();
    }
    let live_ns = t.elapsed().as_nanos() as f64 / N as f64;
    let stats = s.finish(&mut |_| got += 1).unwrap();
    println!(
        "syscall: {base:.0} ns untraced, {live_ns:.0} ns traced live (2 events each, decode included); {stats}"
    );

    // The kernel's own cost: the reader sleeps through the loop.
    let mut c = config(me);
    c.read_interval = std::time::Duration::from_secs(30);
    let s = TraceSession::start(&guard, c).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    let kernel_ns = syscalls(N / 2);
    let stats = s.finish(&mut |_| {}).unwrap();
    println!("syscall: {kernel_ns:.0} ns traced, reader asleep (kernel cost only); {stats}");

    // Recording: no decoding at all.
    let out = dir.path().join("t.iolabtrace");
    let rec = Recorder::start(&guard, config(me), &out).unwrap();
    let rec_ns = syscalls(N);
    let rstats = rec.finish().unwrap();
    let size = std::fs::metadata(&out).unwrap().len();
    println!(
        "recording: {rec_ns:.0} ns per syscall; {rstats}; file {:.1} MiB ({:.1} B/event)",
        size as f64 / 1048576.0,
        size as f64 / rstats.events.max(1) as f64
    );

    // Decoding the file: merge + one field read per record.
    let f = TraceFile::open(&out).unwrap();
    let id = f
        .formats()
        .find("raw_syscalls", "sys_enter")
        .unwrap()
        .field("id")
        .unwrap()
        .clone();
    let mut best = f64::MAX;
    let mut n = 0;
    for _ in 0..3 {
        let mut sum = 0u64;
        n = 0;
        let t = Instant::now();
        f.for_each(&mut |r| {
            sum = sum.wrapping_add(id.u64(r.data));
            n += 1;
        })
        .unwrap();
        std::hint::black_box(sum);
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "decode from file: {n} events in {:.3} s = {:.1} M events/s",
        best,
        n as f64 / best / 1e6
    );
    assert_eq!(n, rstats.events);
}
