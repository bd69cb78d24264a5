//! The store against a real SQLite file in a temp dir.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::{run, seed};
use iolab_store::{ExperimentId, RunKey, Status, Store, StoreError};

fn temp_db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("results.db");
    (dir, path)
}

#[test]
fn round_trip_through_a_reopened_file() {
    let (_dir, path) = temp_db();
    let id = {
        let store = Store::open(&path).unwrap();
        seed(&store)
    };
    let store = Store::open(&path).unwrap();
    let runs = store.runs(id).unwrap();
    assert_eq!(runs.len(), 12);
    let mut want = run("bfq", "idle", 0, 6.2);
    want.started_at = runs[0].started_at.clone(); // stamped at seeding time
    assert_eq!(runs[0], want);
    let censored: Vec<_> = runs.iter().filter(|r| r.censored).collect();
    assert_eq!(censored.len(), 1, "the censored run is stored, not dropped");
    assert_eq!(censored[0].signal, Some(9));
    assert_eq!(runs[3].background.unwrap().write_bytes, 100 << 20);
    assert_eq!(runs[0].extra["slow_ops"][0]["lat_ms"], 412);

    let e = store.experiment(id).unwrap();
    assert_eq!((e.kind.as_str(), e.status), ("startup", Status::Running));
    assert_eq!(e.environment["kernel"], "6.18.0");
    assert_eq!(e.config["reps"], 3);
    assert!(e.command_line.starts_with("iolab startup"));

    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].cells, list[0].runs, list[0].censored), (4, 12, 1));
}

/// Dropping the store mid-experiment (what a crash does) keeps every
/// recorded run; once the owner process is gone the status reads
/// `interrupted`, and resuming takes it back.
#[test]
fn a_crash_loses_no_recorded_run() {
    let (_dir, path) = temp_db();
    let id = {
        let store = Store::open(&path).unwrap();
        let id = store
            .create_experiment(
                &iolab_results::ExperimentKind::Startup,
                "iolab startup",
                &serde_json::json!({}),
                &serde_json::json!({}),
            )
            .unwrap();
        store.record_run(id, &run("bfq", "1r", 0, 9.0)).unwrap();
        id
        // dropped here without set_status: no clean shutdown
    };
    let store = Store::open(&path).unwrap();
    assert_eq!(store.runs(id).unwrap().len(), 1);
    assert_eq!(store.experiment(id).unwrap().status, Status::Running);

    // The owner dies: point the row at a process that has exited.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE experiment SET owner_pid = ?1, owner_start = 1 WHERE id = ?2",
        rusqlite::params![pid, id.0],
    )
    .unwrap();
    assert_eq!(store.experiment(id).unwrap().status, Status::Interrupted);
    assert_eq!(store.list().unwrap()[0].status, Status::Interrupted);

    store.set_status(id, Status::Running).unwrap();
    assert_eq!(store.experiment(id).unwrap().status, Status::Running);
    store.set_status(id, Status::Done).unwrap();
    assert_eq!(store.experiment(id).unwrap().status, Status::Done);
}

#[test]
fn completed_cells_drive_resume() {
    let (_dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    let id = store
        .create_experiment(
            &iolab_results::ExperimentKind::Startup,
            "x",
            &serde_json::json!({}),
            &serde_json::json!({}),
        )
        .unwrap();
    assert!(store.completed_cells(id).unwrap().is_empty());
    store.record_run(id, &run("bfq", "idle", 0, 6.0)).unwrap();
    store.record_run(id, &run("bfq", "1r", 1, 60.0)).unwrap();
    let want: BTreeSet<RunKey> =
        [RunKey::new("bfq", "idle", 0), RunKey::new("bfq", "1r", 1)].into();
    assert_eq!(store.completed_cells(id).unwrap(), want);
    // Another experiment's runs do not count.
    let other = seed(&store);
    assert_eq!(store.completed_cells(id).unwrap(), want);
    assert_eq!(store.completed_cells(other).unwrap().len(), 12);
}

#[test]
fn recording_twice_or_into_nothing_fails_loudly() {
    let (_dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    let id = seed(&store);
    let dup = store
        .record_run(id, &run("bfq", "idle", 0, 6.0))
        .unwrap_err();
    assert!(
        matches!(dup, StoreError::DuplicateRun { rep: 0, .. }),
        "{dup}"
    );
    let missing = store
        .record_run(ExperimentId(999), &run("bfq", "idle", 0, 6.0))
        .unwrap_err();
    assert!(
        iolab_sys::is_usage(&missing) && missing.to_string().contains("no experiment 999"),
        "{missing}"
    );
    let err = store.experiment(ExperimentId(999)).unwrap_err();
    assert!(
        iolab_sys::is_usage(&err) && err.to_string().contains("results list"),
        "{err}"
    );
    assert!(store.set_status(ExperimentId(999), Status::Done).is_err());
}

#[test]
fn reopening_is_idempotent_and_uses_wal() {
    let (_dir, path) = temp_db();
    let id = seed(&Store::open(&path).unwrap());
    for _ in 0..3 {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.runs(id).unwrap().len(), 12);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, iolab_store::schema::current_version());
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

/// A reader sees each run as soon as the writer recorded it.
#[test]
fn runs_are_visible_to_a_second_reader_at_once() {
    let (_dir, path) = temp_db();
    let writer = Store::open(&path).unwrap();
    let reader = Store::open(&path).unwrap();
    let id = writer
        .create_experiment(
            &iolab_results::ExperimentKind::Startup,
            "x",
            &serde_json::json!({}),
            &serde_json::json!({}),
        )
        .unwrap();
    for rep in 0..3 {
        writer
            .record_run(id, &run("kyber", "1w", rep, 7.0))
            .unwrap();
        assert_eq!(reader.runs(id).unwrap().len(), rep as usize + 1);
    }
}

#[test]
fn unusable_paths_are_usage_errors_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "not a directory").unwrap();
    let err = Store::open(file.join("results.db")).unwrap_err();
    assert!(iolab_sys::is_usage(&err), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("plain-file") && msg.contains("--db"), "{msg}");

    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let err = Store::open(&junk).unwrap_err();
    assert!(
        iolab_sys::is_usage(&err) && err.to_string().contains("junk.db"),
        "{err}"
    );
}

#[test]
fn newer_schema_is_refused() {
    let (_dir, path) = temp_db();
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(
        iolab_sys::is_usage(&err) && err.to_string().contains("schema version 99"),
        "{err}"
    );
}

#[test]
fn default_path_is_under_the_data_dir() {
    let p = iolab_store::default_db_path().unwrap();
    assert!(p.ends_with("iolab/results.db"), "{}", p.display());
}

#[test]
fn artifacts_attach_to_runs_and_replace_by_kind() {
    let (_dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    let id = store
        .create_experiment(
            &iolab_results::ExperimentKind::Startup,
            "iolab startup",
            &serde_json::json!({}),
            &serde_json::json!({}),
        )
        .unwrap();
    let a = store.record_run(id, &run("bfq", "1r", 0, 9.0)).unwrap();
    let b = store.record_run(id, &run("kyber", "1r", 0, 7.0)).unwrap();
    assert_ne!(a, b);
    store
        .add_artifact(
            a,
            &iolab_results::ArtifactDoc {
                kind: iolab_results::ArtifactKind::LatencyHist,
                json: serde_json::json!({"p99_us": 1}),
            },
        )
        .unwrap();
    store
        .add_artifact(
            a,
            &iolab_results::ArtifactDoc {
                kind: iolab_results::ArtifactKind::LatencyHist,
                json: serde_json::json!({"p99_us": 2}),
            },
        )
        .unwrap();
    store
        .add_artifact(
            b,
            &iolab_results::ArtifactDoc {
                kind: iolab_results::ArtifactKind::Cpu,
                json: serde_json::json!({"usr": 3.5}),
            },
        )
        .unwrap();
    let all = store.artifacts(id, None).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].scheduler, "bfq");
    assert_eq!(all[0].json["p99_us"], 2);
    let cpu = store
        .artifacts(id, Some(&iolab_results::ArtifactKind::Cpu))
        .unwrap();
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu[0].run_id, b);
    assert_eq!(cpu[0].json["usr"], 3.5);
}

/// Two processes starting experiments on one fresh database at the same
/// moment (the fault campaign's "two writers, one db"): both open it, both
/// record every run, and it stays intact. Before the fix the second open
/// failed with "database is locked" while the first switched it to WAL.
#[test]
fn concurrent_openers_of_a_fresh_database_all_succeed() {
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let store = Store::open(&path)?;
                    common::seed(&store);
                    Ok::<_, iolab_store::StoreError>(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .unwrap()
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
        let store = Store::open(&path).unwrap();
        let runs: usize = store
            .list()
            .unwrap()
            .iter()
            .map(|e| store.runs(e.id).unwrap().len())
            .sum();
        assert_eq!(runs, 4 * 12, "round {round}");
    }
}
