//! Hostile and old results databases: a damaged database file is opened
//! and read or refused with an error, never a panic or a hang; a database
//! written before run outcomes existed (schema v2) is upgraded and its
//! failed starts are classified, not counted as samples.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use iolab_store::{RunOutcome, Store};
use proptest::prelude::*;
use rusqlite::Connection;

fn seeded_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.db");
    {
        let store = Store::open(&p).unwrap();
        common::seed(&store);
        common::seed(&store);
    }
    // Fold the WAL into the main file so the bytes are the whole database.
    let c = Connection::open(&p).unwrap();
    c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(c);
    std::fs::read(&p).unwrap()
}

/// Opens a copy of `bytes` and reads every experiment's report.
fn read_all(bytes: Vec<u8>) -> Result<usize, String> {
    iolab_testkit::within(Duration::from_secs(20), "results db", move || {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        std::fs::write(&p, &bytes).unwrap();
        let store = Store::open(&p).map_err(|e| e.to_string())?;
        let mut runs = 0;
        for e in store.list().map_err(|e| e.to_string())? {
            runs += store.report(e.id).map_err(|e| e.to_string())?.runs.len();
        }
        Ok(runs)
    })
}

#[test]
fn the_seeded_db_reads_back() {
    assert_eq!(read_all(seeded_bytes()).unwrap(), 24);
}

#[test]
fn a_v2_database_is_upgraded_and_its_failures_classified() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.db");
    {
        let c = Connection::open(&p).unwrap();
        for sql in &iolab_store::schema::MIGRATIONS[..2] {
            c.execute_batch(sql).unwrap();
        }
        c.pragma_update(None, "user_version", 2).unwrap();
        c.execute_batch(
            "INSERT INTO experiment VALUES (1, '2026-01-01T00:00:00Z', 'startup', 'iolab startup', '{}', '{}', 'done', 1, 1);
             INSERT INTO run (experiment_id, scheduler, workload, rep, target, started_at, duration_ns, censored, timeout_ns, exit_code, signal, config_json, extra_json) VALUES
              (1, 'bfq', 'idle', 1, 'app', 't', 500000000, 0, 60000000000, 0, NULL, '{}', '{\"exit_ns\": 500000000, \"ready_ns\": null}'),
              (1, 'bfq', 'idle', 2, 'app', 't', 0, 0, 60000000000, 0, NULL, '{}', '{\"exit_ns\": 10, \"ready_ns\": null}'),
              (1, 'bfq', 'idle', 3, 'app', 't', 20000000, 0, 60000000000, NULL, 11, '{}', '{\"exit_ns\": 20000000, \"ready_ns\": null}'),
              (1, 'bfq', 'idle', 4, 'app', 't', 60000000000, 1, 60000000000, NULL, 9, '{}', '{\"exit_ns\": null, \"ready_ns\": null}'),
              (1, 'bfq', 'idle', 5, 'app', 't', 700000000, 0, 60000000000, NULL, 9, '{}', '{\"exit_ns\": null, \"ready_ns\": 700000000}'),
              (1, 'bfq', 'idle', 6, 'app', 't', 30000000, 0, 60000000000, 1, NULL, '{}', '{\"exit_ns\": 30000000, \"ready_ns\": null}');",
        )
        .unwrap();
    }
    let store = Store::open(&p).unwrap();
    let runs = store.runs(iolab_store::ExperimentId(1)).unwrap();
    let outcomes: Vec<RunOutcome> = runs.iter().map(|r| r.outcome).collect();
    use RunOutcome::*;
    // ok; 0 s "start" (never ready); SIGSEGV; censored; killed by iolab
    // after its ready line (ok); exit 1.
    assert_eq!(outcomes, vec![Ok, Failed, Failed, Censored, Ok, Failed]);
    assert!(runs[2].reason.as_deref().unwrap().contains("signal 11"));
    let report = store.report(iolab_store::ExperimentId(1)).unwrap();
    assert_eq!((report.cells[0].stats.n, report.cells[0].failed), (3, 3));
}

/// A v3 database stored prefetch runs under the target `T +prefetch:MODE`;
/// the upgrade moves the mode to the run's variant, keeps every run's id
/// and therefore every artifact, and the plain and prefetch runs of one
/// repetition stay separate cells.
#[test]
fn a_v3_database_gets_variants_and_keeps_its_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v3.db");
    {
        let c = Connection::open(&p).unwrap();
        for sql in &iolab_store::schema::MIGRATIONS[..3] {
            c.execute_batch(sql).unwrap();
        }
        c.pragma_update(None, "user_version", 3).unwrap();
        c.execute_batch(
            "INSERT INTO experiment VALUES (1, '2026-01-01T00:00:00Z', 'startup', 'iolab startup', '{}', '{}', 'done', 1, 1);
             INSERT INTO run (id, experiment_id, scheduler, workload, rep, target, started_at, duration_ns, censored, timeout_ns, config_json, extra_json) VALUES
              (7, 1, 'bfq', 'idle', 1, 'app --dir x', 't', 500000000, 0, 60000000000, '{}', '{}'),
              (8, 1, 'bfq', 'idle', 1, 'app --dir x +prefetch:before', 't', 100000000, 0, 60000000000, '{}', '{}');
             INSERT INTO run_artifact (run_id, kind, json) VALUES (8, 'prefetch', '{\"mode\": \"before\"}');",
        )
        .unwrap();
    }
    let store = Store::open(&p).unwrap();
    let report = store.report(iolab_store::ExperimentId(1)).unwrap();
    let v: Vec<(&str, Option<&str>)> = report
        .runs
        .iter()
        .map(|r| (r.target.as_str(), r.variant.as_deref()))
        .collect();
    assert_eq!(
        v,
        [
            ("app --dir x", None),
            ("app --dir x", Some("prefetch:before"))
        ]
    );
    assert_eq!(report.cells.len(), 2);
    assert_eq!(report.artifacts.len(), 1);
    assert_eq!(
        report.artifacts[0].variant.as_deref(),
        Some("prefetch:before")
    );
    assert_eq!(report.artifacts[0].run_id, iolab_store::RunId(8));
    // A new plain run of another rep still goes in; a second plain rep 1 not.
    let mut again = report.runs[0].clone();
    assert!(store
        .record_run(iolab_store::ExperimentId(1), &again)
        .is_err());
    again.rep = 2;
    store
        .record_run(iolab_store::ExperimentId(1), &again)
        .unwrap();
    // Every artifact still points at a run of the rebuilt table.
    let fk: i64 = Connection::open(&p)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(fk, 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn damaged_databases_read_or_fail_cleanly(bytes in iolab_testkit::mutated(seeded_bytes())) {
        let _ = read_all(bytes);
    }
}
