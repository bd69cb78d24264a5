//! (Also main's database from just before plan points: see the second
//! half of this file.)
//!
//! A results database written by the previous release (store v5, iolab at
//! a594ab6: `tests/fixtures/v5/results.db`) opens, shows, compares and
//! resumes under this one. The fixture holds one experiment of every kind
//! that finished and one that was interrupted (SIGINT mid-run): startup
//! with prefetch, block trace, CPU series and explain (3), sweep (6) and
//! sweep --max (7). Its JSON was recorded by that release
//! (`fixtures/v5/*.json`); what this version prints must be the same, and
//! a resumed experiment must end with exactly the runs its plan lacked,
//! in the cells it already had.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::path::Path;

use bench_env::{json_of, ok, text, Bench};

use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v5");

/// A copy of the v5 database in the bench's run directory.
fn v5_bench(test: &str) -> Bench {
    let b = Bench::new(test);
    std::fs::copy(Path::new(FIXTURE).join("results.db"), &b.db).unwrap();
    b
}

fn recorded(name: &str) -> Value {
    json_of(&std::fs::read(Path::new(FIXTURE).join(name)).unwrap())
}

/// runs per experiment id, from `results list --json`.
fn runs_of(b: &Bench, id: u64) -> u64 {
    let list = b.list();
    let e = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no experiment {id} in {list}"));
    e["runs"].as_u64().unwrap()
}

fn status_of(b: &Bench, id: u64) -> String {
    b.export(id)["experiment"]["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_v5_database_shows_and_compares_as_v5_did() {
    let b = v5_bench("compat-show");
    let list = b.list();
    let kinds: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "startup",
            "startup",
            "sweep",
            "sweep-max",
            "sweep",
            "sweep-max"
        ]
    );
    let out = b.results(&["show", "1", "--json"]);
    ok(&out);
    assert_eq!(json_of(&out.stdout), recorded("show-1.json"));
    for (a, bb) in [("1", "3"), ("5", "7")] {
        let out = b.results(&["compare", a, bb, "--json"]);
        ok(&out);
        assert_eq!(
            json_of(&out.stdout),
            recorded(&format!("compare-{a}-{bb}.json")),
            "compare {a} {bb}"
        );
    }
    // Every kind's tables, as text: the sweep's and max sweep's come from
    // the report's views now, not from the code that ran them.
    for (id, want) in [
        ("3", "Where the extra time went"),
        ("4", "sequential read, bs 1MiB: throughput [MiB/s]"),
        ("5", "random read, bs 4KiB, psync: IOPS"),
    ] {
        let out = b.results(&["show", id]);
        ok(&out);
        assert!(
            text(&out.stdout).contains(want),
            "show {id}: {}",
            text(&out.stdout)
        );
    }
}

#[test]
fn interrupted_v5_experiments_resume_to_their_whole_plan() {
    if !iolab_testkit::root_or_skip(
        "interrupted_v5_experiments_resume_to_their_whole_plan",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = v5_bench("compat-resume");
    let db = b.db.to_string_lossy().into_owned();
    // startup 3: none,bfq × idle,1r × 3 reps, idle also with a prefetch
    // list read in first: 3 + 3 + 3 + 3 + 2 × 3 = 18 starts. Its stored
    // command was `iolab app --dir {dir}/app` (v5 stored no target).
    let (before3, before6, before7) = (runs_of(&b, 3), runs_of(&b, 6), runs_of(&b, 7));
    assert!(before3 < 18 && before6 < 32 && before7 < 16);
    for args in [
        &["startup", "--resume", "3"][..],
        &["sweep", "--resume", "6"],
        &["sweep", "--max", "--resume", "7"],
    ] {
        let out = b.cmd().args(args).args(["--db", &db]).output().unwrap();
        ok(&out);
    }
    assert_eq!(runs_of(&b, 3), 18);
    assert_eq!(runs_of(&b, 6), 2 * 2 * 2 * 4);
    assert_eq!(runs_of(&b, 7), 2 * 2 * 4);
    for id in [3, 6, 7] {
        assert_eq!(status_of(&b, id), "done", "experiment {id}");
    }
    let report = b.export(3);
    // The new starts landed in the v5 cells: one cell per scheduler,
    // workload and variant, the target's label unchanged.
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(
        cells.len(),
        6,
        "{:?}",
        cells.iter().map(|c| &c["target"]).collect::<Vec<_>>()
    );
    for c in cells {
        assert_eq!(c["target"], "iolab app --dir {dir}/app");
        let n = c["reps"].as_array().unwrap().len() as u64
            + c["failed"].as_u64().unwrap()
            + c["invalid"].as_u64().unwrap();
        assert_eq!(n, 3, "{}", c["workload"]);
    }
    // Each new start still carries what the v5 configuration asked for.
    let new_runs: Vec<&Value> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .skip(usize::try_from(before3).unwrap())
        .collect();
    let arts = report["artifacts"].as_array().unwrap();
    for r in new_runs.iter().filter(|r| r["variant"].is_null()) {
        let kinds: Vec<&str> = arts
            .iter()
            .filter(|a| {
                a["rep"] == r["rep"]
                    && a["scheduler"] == r["scheduler"]
                    && a["workload"] == r["workload"]
                    && a["variant"].is_null()
            })
            .map(|a| a["kind"].as_str().unwrap())
            .collect();
        for k in ["latency_hist", "cpu", "psi", "explain"] {
            assert!(kinds.contains(&k), "{k} missing for {r}");
        }
    }
    let out = b.results(&["compare", "1", "3"]);
    ok(&out);
}

// A database written by main just before plan points existed (iolab at
// 4966026; its store's `user_version` is 5, the issue tracker calls it
// the v6 store: `tests/fixtures/main-4966026/results.db`). Experiment 1 is
// a finished startup (none,bfq × idle,1r × 2, with CPU series), 2 the same
// plan at 3 reps, interrupted with SIGINT after 8 of its 12 starts. Its
// JSON and text were recorded by that build; this one must print the
// same, and resuming 2 must add exactly the starts its plan lacked, as
// plain runs (no point) in the cells it had.

const MAIN_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/main-4966026");

fn main_bench(test: &str) -> Bench {
    let b = Bench::new(test);
    std::fs::copy(Path::new(MAIN_FIXTURE).join("results.db"), &b.db).unwrap();
    b
}

fn main_recorded(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(MAIN_FIXTURE).join(name)).unwrap()
}

#[test]
fn mains_database_shows_and_compares_as_main_did() {
    let b = main_bench("compat-main-show");
    let out = b.results(&["show", "1", "--json"]);
    ok(&out);
    assert_eq!(json_of(&out.stdout), json_of(&main_recorded("show-1.json")));
    let out = b.results(&["compare", "1", "2", "--json"]);
    ok(&out);
    assert_eq!(
        json_of(&out.stdout),
        json_of(&main_recorded("compare-1-2.json"))
    );
    // The text, but for the line naming the database's path.
    let body = |t: String| -> String {
        t.lines()
            .filter(|l| !l.starts_with("database: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let out = b.results(&["show", "2"]);
    ok(&out);
    assert_eq!(
        body(text(&out.stdout)),
        body(text(&main_recorded("show-2.txt")))
    );
}

#[test]
fn mains_interrupted_experiment_resumes_to_its_whole_plan() {
    if !iolab_testkit::root_or_skip(
        "mains_interrupted_experiment_resumes_to_its_whole_plan",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = main_bench("compat-main-resume");
    let before = b.export(2)["runs"].as_array().unwrap().len();
    assert_eq!(before, 8);
    let db = b.db.to_string_lossy().into_owned();
    let out = b
        .cmd()
        .args(["startup", "--resume", "2", "--db", &db])
        .output()
        .unwrap();
    ok(&out);
    let e = b.export(2);
    assert_eq!(e["experiment"]["status"], "done");
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12, "2 schedulers × (idle + 1r) × 3 reps");
    assert!(
        runs.iter().all(|r| r["variant"].is_null()),
        "no point, no prefetch"
    );
    let cells = e["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    for c in cells {
        let n = c["reps"].as_array().unwrap().len() as u64
            + c["failed"].as_u64().unwrap()
            + c["invalid"].as_u64().unwrap();
        assert_eq!(n, 3, "{}", c["workload"]);
        assert!(c.get("variant").is_none(), "{c}");
    }
    // Experiment 1 still reads as it did, beside the resumed one.
    let out = b.results(&["show", "1", "--json"]);
    ok(&out);
    assert_eq!(json_of(&out.stdout), json_of(&main_recorded("show-1.json")));
}
