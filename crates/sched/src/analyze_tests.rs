//! Synthetic event sequences through the analyzer: each test is a small
//! scheduling story with a known answer.
#![allow(clippy::unwrap_used)]

use crate::analyze::{Analysis, Analyzer, WakeFrom};
use crate::event::{PrevState, SchedEvent, Tid, Timed};
use crate::task::{DelayKind, TaskStats};

const S: i64 = 1; // TASK_INTERRUPTIBLE
const R_PLUS: i64 = 0x100; // preempted
const X: i64 = 0x10; // dead

fn ev(ts: u64, cpu: u32, event: SchedEvent<'static>) -> Timed<'static> {
    Timed {
        ts_ns: ts,
        cpu,
        current: 0,
        event,
    }
}

fn comm(tid: Tid) -> &'static str {
    match tid {
        0 => "swapper/0",
        1 => "a",
        2 => "b",
        3 => "kworker/u8:1",
        _ => "other",
    }
}

fn switch(ts: u64, cpu: u32, prev: Tid, state: i64, next: Tid) -> Timed<'static> {
    ev(
        ts,
        cpu,
        SchedEvent::Switch {
            prev_tid: prev,
            prev_comm: comm(prev),
            prev_state: PrevState(state),
            next_tid: next,
            next_comm: comm(next),
        },
    )
}

fn wakeup(ts: u64, cpu: u32, tid: Tid) -> Timed<'static> {
    ev(
        ts,
        cpu,
        SchedEvent::Wakeup {
            tid,
            comm: comm(tid),
            new: false,
        },
    )
}

fn waking(ts: u64, cpu: u32, tid: Tid) -> Timed<'static> {
    ev(
        ts,
        cpu,
        SchedEvent::Waking {
            tid,
            comm: comm(tid),
        },
    )
}

fn run(from: WakeFrom, events: &[Timed<'static>]) -> Analysis {
    let mut a = Analyzer::new(from);
    for e in events {
        a.feed(e);
    }
    a.finish(0)
}

fn task(a: &Analysis, tid: Tid) -> &TaskStats {
    a.tasks.iter().rev().find(|t| t.tid == tid).unwrap()
}

fn delays(t: &TaskStats, kind: DelayKind) -> Vec<u64> {
    t.samples
        .iter()
        .filter(|s| s.kind == kind)
        .map(|s| s.delay_ns())
        .collect()
}

#[test]
fn wakeup_to_switch_in_is_one_wakeup_delay() {
    let a = run(
        WakeFrom::Wakeup,
        &[
            switch(100, 0, 1, S, 0), // a sleeps (first seen running)
            waking(1_000, 1, 1),
            wakeup(1_010, 0, 1),
            switch(1_500, 0, 0, 0, 1), // a runs
            switch(2_500, 0, 1, S, 0),
        ],
    );
    let t = task(&a, 1);
    assert_eq!(delays(t, DelayKind::Wakeup), vec![490]);
    assert_eq!(t.samples[0].waking_ns, 1_000);
    assert_eq!(t.switches, 1);
    // 100 ns from the CPU's first event (it was already running) + 1000.
    assert_eq!(t.runtime_ns, 1_000);
    assert_eq!(a.counters.unknown_start, 0);
}

#[test]
fn waking_mode_starts_the_delay_at_sched_waking() {
    let events = [
        switch(100, 0, 1, S, 0),
        waking(1_000, 1, 1),
        wakeup(1_010, 0, 1),
        switch(1_500, 0, 0, 0, 1),
    ];
    let a = run(WakeFrom::Waking, &events);
    assert_eq!(delays(task(&a, 1), DelayKind::Wakeup), vec![500]);
    assert_eq!(a.counters.wakeups_ignored, 0);
}

#[test]
fn preemption_is_a_separate_delay_kind() {
    let a = run(
        WakeFrom::Wakeup,
        &[
            switch(0, 0, 0, 0, 1),        // a first seen switching in: unknown
            switch(100, 0, 1, R_PLUS, 2), // a preempted by b
            switch(400, 0, 2, S, 1),      // b sleeps, a back
        ],
    );
    let t = task(&a, 1);
    assert_eq!(delays(t, DelayKind::Preempt), vec![300]);
    assert!(t.samples[0].kernel_preempt, "R+");
    assert!(delays(t, DelayKind::Wakeup).is_empty());
    assert_eq!(t.switches, 2);
    assert_eq!(
        a.counters.unknown_start, 2,
        "a and b, first seen switching in"
    );
    assert_eq!(t.runtime_ns, 100);
    assert_eq!(task(&a, 2).runtime_ns, 300);
}

#[test]
fn a_migrated_wait_is_measured_across_cpus_and_flagged() {
    let a = run(
        WakeFrom::Wakeup,
        &[
            switch(0, 0, 1, R_PLUS, 2), // a preempted on CPU 0
            ev(
                50,
                1,
                SchedEvent::Migrate {
                    tid: 1,
                    orig_cpu: 0,
                    dest_cpu: 1,
                },
            ),
            switch(80, 1, 0, 0, 1), // runs on CPU 1
        ],
    );
    let s = task(&a, 1).samples[0];
    assert_eq!((s.delay_ns(), s.cpu, s.migrated), (80, 1, true));
}

#[test]
fn a_wakeup_of_a_running_task_is_ignored() {
    let a = run(
        WakeFrom::Wakeup,
        &[
            switch(0, 0, 0, 0, 1),
            wakeup(10, 1, 1), // woken while still on CPU 0
            switch(20, 0, 1, S, 0),
            wakeup(30, 1, 1),
            switch(45, 0, 0, 0, 1),
        ],
    );
    assert_eq!(delays(task(&a, 1), DelayKind::Wakeup), vec![15]);
    assert_eq!(a.counters.wakeups_ignored, 1);
}

#[test]
fn exit_then_tid_reuse_makes_a_new_task() {
    let a = run(
        WakeFrom::Wakeup,
        &[
            switch(0, 0, 0, 0, 1),
            ev(10, 0, SchedEvent::Exit { tid: 1, comm: "a" }),
            switch(20, 0, 1, X, 0),
            ev(
                100,
                1,
                SchedEvent::Fork {
                    parent_tid: 2,
                    child_tid: 1,
                    child_comm: "a",
                },
            ),
            ev(
                110,
                1,
                SchedEvent::Wakeup {
                    tid: 1,
                    comm: "a",
                    new: true,
                },
            ),
            switch(150, 0, 0, 0, 1),
        ],
    );
    let lives: Vec<&TaskStats> = a.tasks.iter().filter(|t| t.tid == 1).collect();
    assert_eq!(lives.len(), 2);
    assert!(lives[0].exited && lives[0].samples.is_empty());
    assert_eq!(lives[0].runtime_ns, 20);
    assert_eq!(lives[1].first_ns, 100);
    assert_eq!(delays(lives[1], DelayKind::Wakeup), vec![40]);
    assert_eq!(a.counters.tid_reuses, 1);
}

#[test]
fn a_dead_tid_switched_in_without_a_fork_is_a_new_unknown_task() {
    let a = run(
        WakeFrom::Wakeup,
        &[
            switch(0, 0, 0, 0, 1),
            switch(20, 0, 1, X, 0),
            switch(50, 0, 0, 0, 1),
        ],
    );
    assert_eq!(a.tasks.iter().filter(|t| t.tid == 1).count(), 2);
    assert_eq!(a.counters.unknown_start, 2);
}

#[test]
fn missing_start_of_trace_gives_no_invented_samples() {
    // Trace starts with a wakeup of an unknown task (perf counts it too),
    // and a switch in of another never-seen task (perf books 0; iolab
    // books nothing).
    let a = run(
        WakeFrom::Wakeup,
        &[
            wakeup(10, 0, 1),
            switch(30, 0, 0, 0, 2),
            switch(60, 0, 2, S, 1),
        ],
    );
    assert_eq!(delays(task(&a, 1), DelayKind::Wakeup), vec![50]);
    assert!(task(&a, 2).samples.is_empty());
    assert_eq!(a.counters.unknown_start, 1);
}

#[test]
fn lost_events_drop_pending_delays_instead_of_overstating_them() {
    let mut an = Analyzer::new(WakeFrom::Wakeup);
    for e in [switch(0, 0, 1, S, 0), wakeup(10, 1, 1)] {
        an.feed(&e);
    }
    an.lost(); // the switch in of a may have been lost
    for e in [
        switch(5_000_000, 0, 0, 0, 1),
        switch(5_000_100, 0, 1, S, 0),
        wakeup(5_000_200, 1, 1),
        switch(5_000_300, 0, 0, 0, 1),
    ] {
        an.feed(&e);
    }
    let a = an.finish(7);
    assert_eq!(delays(task(&a, 1), DelayKind::Wakeup), vec![100]);
    assert_eq!((a.counters.loss_resets, a.lost_events), (1, 7));
    assert_eq!(a.counters.unknown_start, 1);
}

#[test]
fn a_sleeping_task_switched_in_without_wakeup_is_counted() {
    let a = run(
        WakeFrom::Wakeup,
        &[switch(0, 0, 1, S, 0), switch(10, 0, 0, 0, 1)],
    );
    assert!(task(&a, 1).samples.is_empty());
    assert_eq!(a.counters.missing_wakeup, 1);
}

#[test]
fn a_workers_delay_is_attributed_to_the_work_it_ran() {
    let kw = 3;
    let mut e = vec![
        switch(0, 0, kw, 0x80, 0), // kworker idle (I)
        ev(
            100,
            1,
            SchedEvent::WorkQueued {
                work: 0xdead,
                function: 0xf00,
                workqueue: "erofs_worker",
            },
        ),
        wakeup(105, 1, kw),
        switch(300, 0, 0, 0, kw),
    ];
    e.push(Timed {
        current: kw,
        ..ev(
            310,
            0,
            SchedEvent::WorkStart {
                work: 0xdead,
                function: 0xf00,
            },
        )
    });
    e.push(Timed {
        current: kw,
        ..ev(
            400,
            0,
            SchedEvent::WorkStart {
                work: 0xbeef,
                function: 0xbad,
            },
        )
    });
    let a = run(WakeFrom::Wakeup, &e);
    let t = task(&a, kw);
    let w = &a.works[t.samples[0].work.unwrap() as usize];
    assert_eq!(
        (w.function, w.workqueue.as_str()),
        (0xf00, "erofs_worker"),
        "first work after the switch in"
    );
    assert_eq!(t.samples[0].delay_ns(), 195);
    assert_eq!(a.works.len(), 2);
    assert!(
        a.works[1].samples.is_empty(),
        "unqueued work has no latency"
    );
    assert_eq!(a.works[0].samples[0].latency_ns(), 210);
    assert_eq!(a.works[0].samples[0].tid, kw);
}

#[test]
fn exec_by_a_non_leader_thread_takes_over_the_leader_tid() {
    let a = run(
        WakeFrom::Wakeup,
        &[
            switch(0, 0, 0, 0, 2),
            ev(10, 0, SchedEvent::Exec { tid: 1, old_tid: 2 }),
            switch(20, 0, 1, R_PLUS, 0),
            switch(30, 0, 0, 0, 1),
        ],
    );
    let t = task(&a, 1);
    assert_eq!(delays(t, DelayKind::Preempt), vec![10]);
    assert!(task(&a, 2).exited);
}

#[test]
fn an_untraced_switch_in_drops_the_pending_delay_and_is_counted() {
    // CPU 0 goes idle, a is woken onto it, the idle -> a switch is not
    // traced; a's switch out is the next event.
    let a = run(
        WakeFrom::Wakeup,
        &[
            switch(0, 0, 2, S, 0),
            wakeup(10, 0, 1),
            switch(50, 0, 1, S, 0),
            wakeup(60, 0, 1),
            switch(80, 0, 0, 0, 1),
        ],
    );
    let t = task(&a, 1);
    assert_eq!(
        delays(t, DelayKind::Wakeup),
        vec![20],
        "only the traced one"
    );
    assert_eq!(a.counters.untraced_switches, 1);
    assert_eq!(a.counters.inconsistent, 0);
    assert_eq!(t.runtime_ns, 0, "run time of the untraced stint is unknown");
}
