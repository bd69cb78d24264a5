//! Synthetic event sequences through the state machine: every interval
//! lands in exactly one bucket, and stalls carry their cause and waker.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::event::SchedEvent;

const MS: u64 = 1_000_000;

fn tracker(start: u64) -> Tracker {
    Tracker::new(
        RuleSet::builtin(),
        TrackerOptions {
            window_start_ns: start,
            min_stall_ns: MS,
            max_stalls: 100,
        },
    )
}

fn frames(names: &[&str]) -> Option<Vec<Frame>> {
    Some(names.iter().map(|s| Frame::from(*s)).collect())
}

fn sw(ts: u64, prev: i32, state: u64, next: i32, stack: Option<Vec<Frame>>) -> SchedEvent<'static> {
    SchedEvent::Switch {
        ts_ns: ts,
        prev_pid: prev,
        prev_comm: "p",
        prev_state: state,
        next_pid: next,
        next_comm: "n",
        stack,
    }
}

fn wake(ts: u64, pid: i32, waker: i32) -> SchedEvent<'static> {
    SchedEvent::Waking {
        ts_ns: ts,
        pid,
        waker_pid: waker,
        context: WakerContext::Task,
        waker_stack: frames(&[
            "try_to_wake_up",
            "__wake_up",
            "jbd2_journal_commit_transaction",
            "kjournald2",
        ]),
    }
}

const JOURNAL: &[&str] = &[
    "schedule",
    "wait_transaction_locked",
    "start_this_handle",
    "jbd2__journal_start",
    "ext4_dirty_inode",
];
const DIRTY: &[&str] = &[
    "schedule_timeout",
    "io_schedule_timeout",
    "balance_dirty_pages",
    "balance_dirty_pages_ratelimited_flags",
    "generic_perform_write",
];

#[test]
fn every_nanosecond_in_one_bucket() {
    let mut t = tracker(0);
    t.set_comm_lookup(Box::new(|pid| {
        (pid == 500).then(|| "jbd2/loop0-8".to_string())
    }));
    t.follow(10, "app", 0, Initial::Unknown);
    t.event(sw(0, 1, 1, 10, None)); // on CPU from 0
    t.event(sw(10 * MS, 10, 2, 1, frames(JOURNAL))); // 10 ms on CPU
    t.event(wake(60 * MS, 10, 500)); // 50 ms journal wait
    t.event(sw(63 * MS, 1, 0x100, 10, None)); // 3 ms runnable
    t.event(sw(70 * MS, 10, 0x100, 1, None)); // 7 ms on CPU, preempted
    t.event(sw(72 * MS, 1, 1, 10, None)); // 2 ms runnable (preempted)
    t.event(sw(80 * MS, 10, 2, 1, frames(DIRTY))); // 8 ms on CPU
    t.event(wake(100 * MS, 10, 0)); // 20 ms dirty throttling, woken from idle
    t.event(sw(100 * MS, 1, 1, 10, None));
    t.event(SchedEvent::Exit {
        ts_ns: 110 * MS,
        pid: 10,
    });
    t.event(sw(110 * MS, 10, 0x20, 1, None)); // 10 ms, then dead
    let a = t.into_attribution(10, 200 * MS);

    assert_eq!(a.on_cpu_ns, (10 + 7 + 8 + 10) * MS);
    assert_eq!(a.runnable_ns, 5 * MS);
    assert_eq!(a.preempted_ns, 2 * MS);
    assert_eq!(a.blocked_ns, 70 * MS);
    assert_eq!(a.untraced_ns, 0);
    assert_eq!(a.task_ns, 110 * MS, "the task's life ends at its exit");
    assert_eq!(
        a.on_cpu_ns + a.runnable_ns + a.blocked_ns + a.untraced_ns,
        a.task_ns
    );

    let journal = a
        .causes
        .iter()
        .find(|c| c.cause == "journal commit wait")
        .unwrap();
    assert_eq!(journal.blocked_ns, 50 * MS);
    assert_eq!(journal.runnable_ns, 3 * MS);
    assert_eq!(journal.wakers[0].waker, "jbd2/loop0-8");
    let dirty = a
        .causes
        .iter()
        .find(|c| c.cause == "dirty throttling")
        .unwrap();
    assert_eq!(dirty.blocked_ns, 20 * MS);
    assert_eq!(dirty.wakers[0].waker, "[idle]");

    assert_eq!(a.stalls.len(), 2);
    let s = &a.stalls[0];
    assert_eq!(
        (s.cause.as_str(), s.duration_ns, s.state.as_str()),
        ("journal commit wait", 53 * MS, "D")
    );
    assert_eq!(s.waker.as_deref(), Some("jbd2/loop0-8:500"));
    assert_eq!(
        s.waker_site.as_deref(),
        Some("jbd2_journal_commit_transaction")
    );
    assert_eq!(s.site.as_deref(), Some("wait_transaction_locked"));
}

#[test]
fn an_exit_whose_dead_switch_was_lost_still_tiles_the_life() {
    // A child preempted after its exit event, whose final (dead)
    // switch-out the trace lost: its life runs to the last switch seen,
    // not back to the exit event (CI saw 62 µs counted twice).
    let mut t = tracker(0);
    t.follow(10, "sh", 0, Initial::Unknown);
    t.event(sw(0, 1, 1, 10, None));
    t.event(SchedEvent::Fork {
        ts_ns: MS,
        parent_pid: 10,
        child_pid: 11,
        child_comm: "sleep",
    });
    t.event(sw(2 * MS, 10, 1, 11, None));
    t.event(SchedEvent::Exit {
        ts_ns: 5 * MS,
        pid: 11,
    });
    t.event(sw(6 * MS, 11, 0, 1, None)); // preempted while exiting
    t.event(sw(7 * MS, 1, 1, 11, None)); // back on; its dead switch is lost
    let a = t.into_attribution(10, 20 * MS);
    let child = a.tasks.iter().find(|k| k.tid == 11).unwrap();
    assert!(child.exited);
    assert_eq!(child.end_ns, 7 * MS);
    assert_eq!(
        child.on_cpu_ns + child.runnable_ns + child.blocked_ns + child.untraced_ns,
        child.end_ns - child.start_ns,
        "{child:?}"
    );
}

#[test]
fn children_are_followed_from_fork() {
    let mut t = tracker(0);
    t.follow(10, "sh", 0, Initial::Unknown);
    t.event(sw(0, 1, 1, 10, None));
    t.event(SchedEvent::Fork {
        ts_ns: MS,
        parent_pid: 10,
        child_pid: 11,
        child_comm: "sh",
    });
    t.event(SchedEvent::WakeupNew { ts_ns: MS, pid: 11 });
    t.event(sw(
        2 * MS,
        10,
        1,
        11,
        frames(&["schedule", "do_wait", "kernel_wait4", "__do_sys_wait4"]),
    ));
    // Unrelated tasks' fork and wakeups are ignored.
    t.event(SchedEvent::Fork {
        ts_ns: 3 * MS,
        parent_pid: 1,
        child_pid: 99,
        child_comm: "x",
    });
    t.event(wake(3 * MS, 99, 1));
    t.event(sw(5 * MS, 11, 0x10, 10, None));
    assert!(!t.follows(99));
    let a = t.into_attribution(10, 5 * MS);
    let child = a.tasks.iter().find(|t| t.tid == 11).unwrap();
    assert_eq!(child.parent, Some(10));
    assert_eq!(child.runnable_ns, MS);
    assert_eq!(child.on_cpu_ns, 3 * MS);
    assert!(child.exited);
    let parent = a.tasks.iter().find(|t| t.tid == 10).unwrap();
    // The parent's wait for its child is idle, not a stall.
    assert_eq!(parent.idle_ns, 3 * MS);
    assert_eq!(a.idle_ns, 3 * MS);
    assert!(a.top_stall_cause().is_none());
}

#[test]
fn wakeup_racing_the_switch_out_is_used_unless_a_later_one_comes() {
    let mut t = tracker(0);
    t.follow(10, "a", 0, Initial::Unknown);
    t.event(sw(0, 1, 1, 10, None));
    // The waker runs before the switch-out is recorded.
    t.event(wake(5 * MS, 10, 500));
    t.event(sw(5 * MS + 10, 10, 2, 1, frames(JOURNAL)));
    t.event(sw(6 * MS, 1, 1, 10, None));
    // A stale early wakeup, then the real one.
    t.event(wake(7 * MS, 10, 500));
    t.event(sw(8 * MS, 10, 2, 1, frames(DIRTY)));
    t.event(wake(30 * MS, 10, 501));
    t.event(sw(31 * MS, 1, 1, 10, None));
    let a = t.into_attribution(10, 31 * MS);
    assert_eq!(a.trace.missing_wakeups, 0);
    let dirty = a
        .causes
        .iter()
        .find(|c| c.cause == "dirty throttling")
        .unwrap();
    assert_eq!(dirty.blocked_ns, 22 * MS);
    let journal = a
        .causes
        .iter()
        .find(|c| c.cause == "journal commit wait")
        .unwrap();
    assert_eq!(journal.blocked_ns, 0);
    assert_eq!(
        a.on_cpu_ns + a.runnable_ns + a.blocked_ns + a.untraced_ns,
        a.task_ns
    );
}

#[test]
fn lost_events_become_untraced_not_invented() {
    let mut t = tracker(0);
    t.follow(10, "a", 0, Initial::Unknown);
    t.event(sw(0, 1, 1, 10, None));
    t.event(sw(10 * MS, 10, 2, 1, frames(JOURNAL)));
    // Its wakeup and switch-in were lost; the next event is a switch-out.
    t.event(sw(
        50 * MS,
        10,
        1,
        1,
        frames(&["schedule", "do_nanosleep", "hrtimer_nanosleep"]),
    ));
    t.event(wake(60 * MS, 10, 1));
    t.event(sw(60 * MS, 1, 1, 10, None));
    let a = t.into_attribution(10, 70 * MS);
    assert_eq!(a.trace.inconsistent, 1);
    assert_eq!(a.untraced_ns, 40 * MS);
    assert_eq!(a.on_cpu_ns, 20 * MS);
    assert_eq!(
        a.on_cpu_ns + a.runnable_ns + a.blocked_ns + a.untraced_ns,
        a.task_ns
    );
}

#[test]
fn window_start_clips_and_initial_sleep_is_named() {
    let mut t = tracker(100 * MS);
    t.follow(10, "a", 100 * MS, Initial::Blocked('D', frames(DIRTY)));
    t.event(wake(150 * MS, 10, 1));
    t.event(sw(150 * MS, 1, 1, 10, None));
    let a = t.into_attribution(10, 200 * MS);
    assert_eq!(a.causes[0].cause, "dirty throttling");
    assert_eq!(a.causes[0].blocked_ns, 50 * MS);
    assert_eq!(a.on_cpu_ns, 50 * MS);
    assert_eq!(a.task_ns, 100 * MS);
}

#[test]
fn still_asleep_at_the_end_is_an_open_stall() {
    let mut t = tracker(0);
    t.follow(10, "a", 0, Initial::Unknown);
    t.event(sw(0, 1, 1, 10, None));
    t.event(sw(MS, 10, 2, 1, None));
    let a = t.into_attribution(10, 20 * MS);
    assert_eq!(a.trace.missing_stacks, 1);
    assert_eq!(a.causes[0].cause, "other");
    assert!(a.stalls[0].open);
    assert_eq!(a.stalls[0].blocked_ns, 19 * MS);
}

#[test]
fn stall_list_keeps_the_longest() {
    let mut t = Tracker::new(
        RuleSet::builtin(),
        TrackerOptions {
            window_start_ns: 0,
            min_stall_ns: MS,
            max_stalls: 3,
        },
    );
    t.follow(10, "a", 0, Initial::Unknown);
    let mut ts = 0;
    t.event(sw(ts, 1, 1, 10, None));
    for i in 1..=200u64 {
        t.event(sw(ts + 1, 10, 2, 1, frames(DIRTY)));
        ts += 1 + i * MS;
        t.event(wake(ts, 10, 1));
        t.event(sw(ts, 1, 1, 10, None));
    }
    let a = t.into_attribution(10, ts + 1);
    assert_eq!(a.stalls_over_min, 200);
    let d: Vec<u64> = a.stalls.iter().map(|s| s.blocked_ns / MS).collect();
    assert_eq!(d, vec![200, 199, 198]);
}

#[test]
fn waker_groups_drop_pids_and_kworker_numbers() {
    assert_eq!(
        &*waker_group("kworker/u8:2-flush-7:0:812"),
        "kworker/flush-7:0"
    );
    assert_eq!(&*waker_group("jbd2/loop3-8:1234"), "jbd2/loop3-8");
    assert_eq!(&*waker_group("[softirq]"), "[softirq]");
}

proptest::proptest! {
    /// Whatever the event order (including nonsense), the buckets add up
    /// to each task's lifetime.
    #[test]
    fn buckets_always_add_up(ops in proptest::collection::vec((0u8..5, 1u64..5_000_000), 1..200)) {
        let mut t = tracker(1_000);
        t.follow(10, "a", 0, Initial::Unknown);
        let mut ts = 0;
        for (op, dt) in ops {
            ts += dt;
            match op {
                0 => t.event(sw(ts, 10, 2, 1, frames(JOURNAL))),
                1 => t.event(sw(ts, 10, 0x100, 1, None)),
                2 => t.event(sw(ts, 1, 1, 10, None)),
                3 => t.event(wake(ts, 10, 1)),
                _ => t.event(sw(ts, 10, 1, 1, frames(DIRTY))),
            }
        }
        let a = t.into_attribution(10, ts + 7);
        proptest::prop_assert_eq!(a.on_cpu_ns + a.runnable_ns + a.blocked_ns + a.untraced_ns, a.task_ns);
        let by_cause: u64 = a.causes.iter().map(|c| c.blocked_ns).sum();
        proptest::prop_assert_eq!(by_cause, a.blocked_ns);
    }
}

/// The main thread's intervals by state: D-state sleeps with
/// `io_schedule*` on the stack are I/O (dirty throttling is, as to the
/// kernel), other D-state sleeps are not, S is sleeping; they tile its
/// life, and `split` over a window sums to the window.
#[test]
fn the_main_thread_is_split_by_state_and_tiles_its_life() {
    let mut t = tracker(0);
    t.set_main(10);
    t.follow(10, "app", 0, Initial::Unknown);
    t.event(sw(0, 1, 1, 10, None)); // running from 0
    t.event(sw(10 * MS, 10, 2, 1, frames(DIRTY))); // D, io_schedule_timeout
    t.event(wake(30 * MS, 10, 500));
    t.event(sw(31 * MS, 1, 1, 10, None)); // 1 ms runnable
    t.event(sw(40 * MS, 10, 2, 1, frames(JOURNAL))); // D, not I/O
    t.event(wake(55 * MS, 10, 500));
    t.event(sw(55 * MS, 1, 1, 10, None));
    t.event(sw(60 * MS, 10, 1, 1, frames(&["schedule", "do_nanosleep"]))); // S
    t.event(wake(80 * MS, 10, 0));
    t.event(sw(82 * MS, 1, 1, 10, None));
    let a = t.into_attribution(10, 100 * MS);
    let m = a.main_thread.as_ref().unwrap();
    let s = m.split(0, 100 * MS);
    assert_eq!(s.running_dur_ns, (10 + 9 + 5 + 18) * MS);
    assert_eq!(s.runnable_dur_ns, 3 * MS);
    assert_eq!(s.uninterruptible_io_sleep_dur_ns, 20 * MS);
    assert_eq!(s.uninterruptible_non_io_sleep_dur_ns, 15 * MS);
    assert_eq!(s.interruptible_sleep_dur_ns, 20 * MS);
    assert_eq!(s.untraced_dur_ns + s.not_alive_dur_ns, 0);
    assert_eq!(s.total_ns(), 100 * MS);
    let task = &a.tasks[0];
    assert_eq!((task.d_io_ns, task.d_other_ns), (20 * MS, 15 * MS));
    // A window that begins before the thread: the gap is not alive.
    let w = m.split(0, 50 * MS);
    assert_eq!(w.total_ns(), 50 * MS);
}

/// A switch-in the trace did not record (a followed task's, from the idle
/// task, on some kernels): the CPU time the kernel reports as the task
/// runs dates it, instead of an inconsistent, untraced interval.
#[test]
fn a_missing_switch_in_is_dated_by_the_runtime_the_kernel_reports() {
    let mut t = tracker(0);
    t.follow(10, "app", 0, Initial::Unknown);
    t.event(sw(0, 1, 1, 10, None));
    t.event(sw(10 * MS, 10, 2, 1, frames(DIRTY)));
    t.event(wake(30 * MS, 10, 0));
    // Its switch-in at 32 ms is missing; at its switch-out at 40 ms the
    // kernel says it ran 8 ms.
    t.event(SchedEvent::Runtime {
        ts_ns: 40 * MS,
        pid: 10,
        runtime_ns: 8 * MS,
    });
    t.event(sw(40 * MS, 10, 1, 1, frames(&["schedule", "do_nanosleep"])));
    let a = t.into_attribution(10, 40 * MS);
    assert_eq!(a.trace.inconsistent, 0);
    assert_eq!(a.trace.inferred_switch_ins, 1);
    assert_eq!(a.trace.inferred_on_cpu_ns, 8 * MS);
    assert_eq!(a.on_cpu_ns, 18 * MS);
    assert_eq!(a.runnable_ns, 2 * MS);
    assert_eq!(a.untraced_ns, 0);
}
