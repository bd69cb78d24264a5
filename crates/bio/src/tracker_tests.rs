//! Synthetic event sequences for the tracker: every path in the module docs.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::event::{Comm, Op, Rwbs};
use crate::testutil::{ev, LOOP0, ZRAM0};

fn tracker() -> Tracker {
    Tracker::new(Box::new(|d| d == ZRAM0))
}

/// Runs events through a tracker, returning completions in order.
fn run(t: &mut Tracker, events: &[BlockEvent]) -> Vec<BioRequest> {
    events.iter().filter_map(|e| t.on_event(e)).collect()
}

#[test]
fn scheduler_path_times_queue_and_device_and_keeps_the_submitter() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::IoStart, 1_000, LOOP0, 100, 8, "R", 42, "reader"),
            ev(EventKind::RqInsert, 1_500, LOOP0, 100, 8, "R", 42, "reader"),
            ev(
                EventKind::RqIssue,
                4_000,
                LOOP0,
                100,
                8,
                "R",
                7,
                "kworker/0:1H",
            ),
            ev(EventKind::RqComplete, 10_000, LOOP0, 100, 8, "R", 0, ""),
        ],
    );
    assert_eq!(done.len(), 1);
    let r = done[0];
    assert_eq!(r.comm.as_str(), "reader");
    assert_eq!((r.tid, r.origin), (42, Origin::IoStart));
    assert_eq!(
        (r.que_ns(), r.lat_ns(), r.total_ns()),
        (3_000, 6_000, 9_000)
    );
    assert_eq!((r.sector, r.nr_sector, r.bytes()), (100, 8, 4096));
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn direct_issue_without_insert_matches() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::IoStart, 100, LOOP0, 8, 8, "RS", 5, "fio"),
            ev(EventKind::RqIssue, 150, LOOP0, 8, 8, "RS", 5, "fio"),
            ev(EventKind::RqComplete, 400, LOOP0, 8, 8, "RS", 0, ""),
        ],
    );
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].que_ns(), done[0].lat_ns()), (50, 250));
}

#[test]
fn issue_only_requests_have_no_queue_time_and_the_issuer_as_owner() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::RqIssue, 150, LOOP0, 8, 8, "W", 9, "kworker"),
            ev(EventKind::RqComplete, 400, LOOP0, 8, 8, "W", 0, ""),
        ],
    );
    assert_eq!(done[0].origin, Origin::Issue);
    assert_eq!(done[0].queue_ns, None);
    assert_eq!((done[0].que_ns(), done[0].lat_ns()), (0, 250));
    assert_eq!(done[0].comm.as_str(), "kworker");
}

#[test]
fn interleaved_cpus_and_shared_sectors_match_first_in_first_out() {
    let mut t = tracker();
    // Two threads on two CPUs read the same block (sector 64) and another
    // one; the merged stream is time ordered but interleaved.
    let mut a = ev(EventKind::IoStart, 10, LOOP0, 64, 8, "R", 1, "a");
    a.cpu = 0;
    let mut b = ev(EventKind::IoStart, 11, LOOP0, 64, 8, "R", 2, "b");
    b.cpu = 1;
    let done = run(
        &mut t,
        &[
            a,
            b,
            ev(EventKind::IoStart, 12, LOOP0, 512, 8, "R", 2, "b"),
            ev(EventKind::RqIssue, 20, LOOP0, 64, 8, "R", 1, "a"),
            ev(EventKind::RqIssue, 21, LOOP0, 512, 8, "R", 2, "b"),
            ev(EventKind::RqIssue, 22, LOOP0, 64, 8, "R", 2, "b"),
            ev(EventKind::RqComplete, 30, LOOP0, 512, 8, "R", 0, ""),
            ev(EventKind::RqComplete, 31, LOOP0, 64, 8, "R", 0, ""),
            ev(EventKind::RqComplete, 40, LOOP0, 64, 8, "R", 0, ""),
        ],
    );
    let got: Vec<(u64, i32, u64)> = done.iter().map(|r| (r.sector, r.tid, r.lat_ns())).collect();
    assert_eq!(got, vec![(512, 2, 9), (64, 1, 11), (64, 2, 18)]);
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn back_merge_grows_the_request_and_keeps_its_key() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::IoStart, 1, LOOP0, 100, 8, "W", 3, "dd"),
            // block_bio_backmerge (bio 108+8) changes nothing the key needs:
            // the issue reports the grown size.
            ev(EventKind::RqIssue, 5, LOOP0, 100, 16, "W", 3, "dd"),
            ev(EventKind::RqComplete, 9, LOOP0, 100, 16, "W", 0, ""),
        ],
    );
    assert_eq!((done[0].nr_sector, done[0].bytes()), (16, 8192));
}

#[test]
fn front_merge_moves_the_request_start() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::IoStart, 1, LOOP0, 108, 8, "W", 3, "dd"),
            ev(EventKind::BioFrontmerge, 2, LOOP0, 100, 8, "W", 4, "other"),
            ev(EventKind::RqInsert, 3, LOOP0, 100, 16, "W", 3, "dd"),
            ev(EventKind::RqIssue, 5, LOOP0, 100, 16, "W", 3, "dd"),
            ev(EventKind::RqComplete, 9, LOOP0, 100, 16, "W", 0, ""),
        ],
    );
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].sector, done[0].nr_sector), (100, 16));
    assert_eq!((done[0].tid, done[0].que_ns()), (3, 4));
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn request_merged_into_its_neighbour_disappears() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::IoStart, 1, LOOP0, 100, 8, "W", 3, "dd"),
            ev(EventKind::RqInsert, 2, LOOP0, 100, 8, "W", 3, "dd"),
            ev(EventKind::IoStart, 3, LOOP0, 108, 8, "W", 3, "dd"),
            ev(EventKind::RqInsert, 4, LOOP0, 108, 8, "W", 3, "dd"),
            ev(EventKind::RqMerge, 5, LOOP0, 108, 8, "W", 3, "dd"),
            ev(EventKind::RqIssue, 6, LOOP0, 100, 16, "W", 7, "kworker"),
            ev(EventKind::RqComplete, 9, LOOP0, 100, 16, "W", 0, ""),
        ],
    );
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].nr_sector, 16);
    assert_eq!(t.stats().merged_requests, 1);
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn requeued_request_is_timed_from_its_last_issue() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::IoStart, 1, LOOP0, 100, 8, "R", 3, "cat"),
            ev(EventKind::RqIssue, 2, LOOP0, 100, 8, "R", 3, "cat"),
            ev(EventKind::RqRequeue, 3, LOOP0, 100, 8, "R", 0, ""),
            ev(EventKind::RqInsert, 4, LOOP0, 100, 8, "R", 0, "kworker"),
            ev(EventKind::RqIssue, 10, LOOP0, 100, 8, "R", 0, "kworker"),
            ev(EventKind::RqComplete, 15, LOOP0, 100, 8, "R", 0, ""),
        ],
    );
    assert_eq!(done.len(), 1);
    let r = done[0];
    assert_eq!((r.requeues, r.que_ns(), r.lat_ns()), (1, 9, 5));
    assert_eq!(r.comm.as_str(), "cat");
    assert_eq!(t.stats().requeues, 1);
}

#[test]
fn flushes_do_not_collide_with_data_at_sector_zero() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::IoStart, 1, LOOP0, 0, 8, "R", 3, "blkid"),
            ev(EventKind::RqInsert, 2, LOOP0, 0, 0, "FF", 4, "jbd2/loop0-8"),
            ev(EventKind::RqIssue, 3, LOOP0, 0, 0, "FF", 4, "jbd2/loop0-8"),
            ev(EventKind::RqIssue, 4, LOOP0, 0, 8, "R", 3, "blkid"),
            ev(EventKind::RqComplete, 6, LOOP0, 0, 8, "R", 0, ""),
            ev(EventKind::RqComplete, 8, LOOP0, 0, 0, "FF", 0, ""),
        ],
    );
    assert_eq!(done.len(), 2);
    assert_eq!((done[0].op(), done[0].lat_ns()), (Op::Read, 2));
    assert_eq!(
        (done[1].op(), done[1].lat_ns(), done[1].bytes()),
        (Op::Flush, 5, 0)
    );
}

#[test]
fn empty_preflush_write_completes_with_its_flush() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::IoStart, 1, LOOP0, 0, 0, "FWS", 4, "sync"),
            ev(EventKind::RqInsert, 2, LOOP0, 0, 0, "FF", 4, "sync"),
            ev(EventKind::RqIssue, 3, LOOP0, 0, 0, "FF", 4, "sync"),
            // The kernel prints the flush's missing sector as -1 here.
            ev(EventKind::RqComplete, 8, LOOP0, u64::MAX, 0, "FF", 0, ""),
            ev(EventKind::RqComplete, 9, LOOP0, 0, 0, "FWS", 0, ""),
        ],
    );
    assert_eq!(done.len(), 2);
    let w = done[1];
    assert_eq!((w.op(), w.issue_ns, w.lat_ns()), (Op::Write, None, 8));
    assert_eq!(w.comm.as_str(), "sync");
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn partial_completions_finish_the_request_once() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::RqIssue, 1, LOOP0, 100, 16, "R", 3, "cat"),
            ev(EventKind::RqComplete, 5, LOOP0, 100, 8, "R", 0, ""),
            ev(EventKind::RqComplete, 7, LOOP0, 108, 8, "R", 0, ""),
        ],
    );
    assert_eq!(done.len(), 1);
    assert_eq!(
        (done[0].sector, done[0].nr_sector, done[0].complete_ns),
        (100, 16, 7)
    );
    assert_eq!(t.stats().partial_completions, 1);
}

#[test]
fn bio_based_devices_use_bio_events_and_request_devices_ignore_them() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[
            ev(EventKind::BioQueue, 1, ZRAM0, 40, 8, "R", 3, "fio"),
            ev(EventKind::BioQueue, 2, LOOP0, 40, 8, "R", 3, "fio"),
            ev(EventKind::BioComplete, 3, ZRAM0, 40, 8, "R", 3, "fio"),
        ],
    );
    assert_eq!(done.len(), 1);
    let r = done[0];
    assert_eq!(
        (r.dev, r.origin, r.que_ns(), r.lat_ns()),
        (ZRAM0, Origin::BioQueue, 0, 2)
    );
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn completions_of_unseen_requests_are_counted_not_invented() {
    let mut t = tracker();
    let done = run(
        &mut t,
        &[ev(EventKind::RqComplete, 5, LOOP0, 100, 8, "R", 0, "")],
    );
    assert!(done.is_empty());
    assert_eq!(t.stats().unmatched_completions, 1);
    assert_eq!(t.stats().unmatched_sectors, 8);
}

#[test]
fn errors_are_kept() {
    let mut t = tracker();
    let mut c = ev(EventKind::RqComplete, 5, LOOP0, 100, 8, "R", 0, "");
    c.error = -5;
    let done = run(
        &mut t,
        &[ev(EventKind::RqIssue, 1, LOOP0, 100, 8, "R", 3, "cat"), c],
    );
    assert_eq!(done[0].error, -5);
}

#[test]
fn rwbs_and_comm_helpers_work_in_fixtures() {
    let e = ev(EventKind::RqIssue, 1, LOOP0, 1, 1, "WS", 1, "x");
    assert_eq!(e.rwbs, Rwbs::parse(b"WS"));
    assert_eq!(e.comm, Comm::new(b"x"));
}
