//! `iolab results` against a database seeded through the store's API.
#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use iolab_store::{ExperimentId, RunRecord, Status, Store};
use predicates::prelude::*;
use serde_json::{json, Value};

fn run(scheduler: &str, workload: &str, rep: u32, secs: f64) -> RunRecord {
    let censored = secs >= 60.0;
    RunRecord {
        scheduler: scheduler.into(),
        workload: workload.into(),
        rep,
        target: "iolab app".into(),
        started_at: iolab_store::rfc3339_now(),
        duration_ns: iolab_sys::cast::round_u64(secs * 1e9),
        censored,
        timeout_ns: 60_000_000_000,
        exit_code: (!censored).then_some(0),
        signal: censored.then_some(9),
        overhead_ns: Some(200_000),
        background: None,
        config: json!({}),
        extra: json!({}),
        outcome: if censored {
            iolab_store::RunOutcome::Censored
        } else {
            iolab_store::RunOutcome::Ok
        },
        reason: None,
        variant: None,
    }
}

/// bfq and none × idle and 1r1w × 3 reps; two of none's 1r1w runs time out.
fn seeded() -> (tempfile::TempDir, std::path::PathBuf, ExperimentId) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let store = Store::open(&db).unwrap();
    let id = store
        .create_experiment(
            &iolab_results::ExperimentKind::Startup,
            "iolab startup --reps 3 -- iolab app",
            &json!({"reps": 3, "timeout_s": 60}),
            &json!({"kernel": "6.18.0", "device": {"model": "QEMU HARDDISK", "rotational": 0}}),
        )
        .unwrap();
    let cells = [
        ("bfq", "idle", [6.2, 6.4, 6.3]),
        ("bfq", "1r1w", [12.1, 12.9, 12.5]),
        ("none", "idle", [6.1, 6.3, 6.2]),
        ("none", "1r1w", [41.0, 60.0, 60.0]),
    ];
    for (s, w, secs) in cells {
        for (rep, t) in (0u32..).zip(secs) {
            store.record_run(id, &run(s, w, rep, t)).unwrap();
        }
    }
    store.set_status(id, Status::Done).unwrap();
    (dir, db, id)
}

fn iolab() -> Command {
    Command::cargo_bin("iolab").unwrap()
}

#[test]
fn list_shows_each_experiment() {
    let (_dir, db, id) = seeded();
    let out = iolab()
        .args(["results", "list", "--db"])
        .arg(&db)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("id  created"), "{text}");
    assert!(lines[0].ends_with("command"), "{text}");
    let row = lines[1];
    assert!(row.starts_with(&format!("{id} ")), "{text}");
    assert!(row.contains("startup") && row.contains("done"), "{text}");
    assert!(
        row.contains("12 (2 timed out)") && row.ends_with("-- iolab app"),
        "{text}"
    );
}

#[test]
fn list_json_is_machine_readable() {
    let (_dir, db, _id) = seeded();
    let out = iolab()
        .arg("results")
        .arg("--db")
        .arg(&db)
        .args(["list", "--json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v[0]["runs"], 12);
    assert_eq!(v[0]["cells"], 4);
    assert_eq!(v[0]["censored"], 2);
    assert_eq!(v[0]["status"], "done");
}

#[test]
fn show_prints_config_environment_and_the_matrix() {
    let (_dir, db, id) = seeded();
    let out = iolab()
        .args(["results", "show", &id.to_string(), "--db"])
        .arg(&db)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("experiment 1 (startup, done)"), "{text}");
    assert!(
        text.contains("device.model:") && text.contains("QEMU HARDDISK"),
        "{text}"
    );
    assert!(text.contains("timeout_s:"), "{text}");
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("start-up time [s]"))
        .collect();
    assert!(
        table[1].starts_with("workload") && table[1].contains("bfq"),
        "{text}"
    );
    // 1r1w row: bfq 12.50 ± 0.99 (×12.5/6.3 = 1.98); none: 2 of 3 timed
    // out, mean ≥ 161/3 = 53.67 s against idle 6.2 s → ×≥8.66.
    assert!(table[2].starts_with("1r1w"), "{text}");
    assert!(table[2].contains("12.50 ± 0.99 (×1.98)"), "{text}");
    assert!(table[2].contains(">60 (×≥8.66) [2/3]"), "{text}");
    assert!(table[3].starts_with("idle"), "{text}");
}

#[test]
fn show_json_carries_stats_and_raw_runs() {
    let (_dir, db, id) = seeded();
    let out = iolab()
        .args(["results", "--db"])
        .arg(&db)
        .args(["show", &id.to_string(), "--json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 12);
    assert_eq!(v["cells"].as_array().unwrap().len(), 4);
    assert_eq!(v["cells"][1]["mean"], 12.5);
    assert_eq!(v["cells"][3]["median_is_lower_bound"], true);
}

#[test]
fn export_csv_to_a_file_and_json_to_stdout() {
    let (dir, db, id) = seeded();
    let file = dir.path().join("out.csv");
    iolab()
        .args([
            "results",
            "export",
            &id.to_string(),
            "--format",
            "csv",
            "-o",
        ])
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .assert()
        .success()
        .stdout("");
    let csv = std::fs::read_to_string(&file).unwrap();
    assert!(
        csv.starts_with("experiment_id,scheduler,workload,target,rep,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 13);

    let out = iolab()
        .args([
            "results",
            "export",
            &id.to_string(),
            "--format",
            "json",
            "--db",
        ])
        .arg(&db)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["experiment"]["environment"]["kernel"], "6.18.0");

    iolab()
        .args(["results", "export", &id.to_string(), "-o"])
        .arg(dir.path().join("missing-dir").join("x.json"))
        .arg("--db")
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing-dir").and(predicate::str::contains("-o FILE")));
}

#[test]
fn unknown_experiment_is_a_usage_error() {
    let (_dir, db, _id) = seeded();
    iolab()
        .args(["results", "show", "99", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("no experiment 99")
                .and(predicate::str::contains("results list")),
        );
    iolab()
        .args(["results", "show", "abc", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("positive integer"));
}

#[test]
fn unwritable_db_is_a_usage_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let db = file.join("results.db");
    iolab()
        .args(["results", "list", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not-a-dir").and(predicate::str::contains("--db PATH")));
}

#[test]
fn empty_database_says_how_to_fill_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fresh.db");
    iolab()
        .args(["results", "list", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout("")
        .stderr(predicate::str::contains("no experiments"));
}
