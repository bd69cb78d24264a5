//! Exports: JSON statistics equal a recomputation from the stored raw
//! samples; CSV has one documented row per run.
#![allow(clippy::unwrap_used)]

#[path = "../../store/tests/common/mod.rs"]
mod common;

use iolab_report::export::{ExportFormat, Exporter, JsonExporter};
use iolab_stats::{ratio_of_means, summarize, Sample};
use iolab_store::{CellReport, RunRecord, Store};
use serde_json::Value;

fn seeded() -> (tempfile::TempDir, Store, iolab_store::ExperimentId) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("r.db")).unwrap();
    let id = common::seed(&store);
    (dir, store, id)
}

#[test]
fn json_statistics_equal_a_recomputation_from_raw_runs() {
    let (_dir, store, id) = seeded();
    let report = store.report(id).unwrap();
    let bytes = JsonExporter
        .serialize(&iolab_report::ExperimentView::of(&report))
        .unwrap();
    let json: Value = serde_json::from_slice(&bytes).unwrap();
    let runs: Vec<RunRecord> = serde_json::from_value(json["runs"].clone()).unwrap();
    assert_eq!(runs.len(), 12);
    let cells: Vec<CellReport> = serde_json::from_value(json["cells"].clone()).unwrap();
    assert_eq!(cells.len(), 4);
    let samples = |sched: &str, wl: &str| -> Vec<Sample> {
        let mut mine: Vec<&RunRecord> = runs
            .iter()
            .filter(|r| r.scheduler == sched && r.workload == wl)
            .collect();
        mine.sort_by_key(|r| r.rep);
        mine.iter()
            .map(|r| Sample {
                value: r.duration_ns as f64 / 1e9,
                censored: r.censored,
            })
            .collect()
    };
    for cell in &cells {
        let want = summarize(&samples(&cell.scheduler, &cell.workload));
        assert_eq!(cell.stats, want, "{} {}", cell.scheduler, cell.workload);
        if cell.workload != "idle" {
            let idle = summarize(&samples(&cell.scheduler, "idle"));
            assert_eq!(cell.ratio_to_idle, ratio_of_means(&want, &idle));
        }
    }
    // min / median / max (Macrobenchmark's figures), computed here from
    // the raw durations without iolab-stats: the JSON carries them.
    for (i, cell) in cells.iter().enumerate() {
        let mut v: Vec<f64> = samples(&cell.scheduler, &cell.workload)
            .iter()
            .map(|s| s.value)
            .collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let c = &json["cells"][i];
        let close = |k: &str, want: f64| {
            let got = c[k].as_f64().unwrap();
            assert!((got - want).abs() < 1e-9, "{k}: {got} vs {want} in {c}");
        };
        close("min", v[0]);
        close("max", v[n - 1]);
        if !c["median_is_lower_bound"].as_bool().unwrap() {
            close("median", median);
        }
    }
    // The censored cell is honest: a lower-bound mean, no interval.
    let none_load = &json["cells"][3];
    assert_eq!(none_load["workload"], "1r1w");
    assert_eq!(none_load["censored"], 1);
    assert_eq!(none_load["mean_is_lower_bound"], true);
    assert_eq!(none_load["ci95"], Value::Null);
    assert_eq!(none_load["ratio_to_idle"]["bound"], "lower");
    // Config and environment travel with the data.
    assert_eq!(json["experiment"]["environment"]["cpus"], 2);
    assert_eq!(json["experiment"]["config"]["timeout_s"], 60);
    assert_eq!(json["experiment"]["status"], "running");
}

#[test]
fn csv_has_the_header_and_one_row_per_run() {
    let (_dir, store, id) = seeded();
    let report = store.report(id).unwrap();
    let text = String::from_utf8(
        ExportFormat::Csv
            .exporter()
            .serialize(&iolab_report::ExperimentView::of(&report))
            .unwrap(),
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "experiment_id,scheduler,workload,target,rep,started_at,duration_s,censored,timeout_s,\
         exit_code,signal,harness_overhead_ns,bg_read_io_bytes,bg_write_io_bytes,bg_runtime_ms,\
         bg_read_bw_bytes,bg_write_bw_bytes,variant"
    );
    // Plain runs: an empty variant, the last column.
    assert!(lines[1..].iter().all(|l| l.ends_with(',')), "{text}");
    assert_eq!(lines.len(), 13);
    let censored: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains(",60.000000000,1,"))
        .collect();
    assert_eq!(censored.len(), 1, "{text}");
    assert!(
        censored[0].starts_with(&format!("{},none,1r1w,iolab app,1,", id.0)),
        "{}",
        censored[0]
    );
    // bfq 1r1w rep 0: 12.1 s with 200 MiB read → 200 MiB / 12.1 s.
    let row: Vec<&str> = lines[4].split(',').collect();
    assert_eq!(&row[1..5], ["bfq", "1r1w", "iolab app", "0"]);
    assert_eq!(row[6], "12.100000000");
    assert_eq!(row[12], (200u64 << 20).to_string());
    assert_eq!(row[15], format!("{:.0}", (200u64 << 20) as f64 / 12.1));
}
