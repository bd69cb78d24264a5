//! `iolab report` on a real startup experiment (bio trace, CPU series and
//! explain on): the HTML embeds exactly what `results show --json` prints,
//! every bar drawn is a cell mean from it and every dot a stored start,
//! nothing in the file points outside it, the flame graphs, latency and
//! CPU charts are there, and `iolab report A B`'s comparison is
//! `results compare`'s. (That the page renders without errors or network
//! requests in a browser is bench/report_check.py's job: it needs
//! Chromium.)
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::collections::BTreeSet;
use std::process::Output;
use std::time::Duration;

use bench_env::{json_of, ok, Bench};

use serde_json::Value;

const PREPARE: &str = "dd if=/dev/urandom of={dir}/f bs=1M count=8 status=none";

fn report(b: &Bench, args: &[&str]) -> Output {
    b.cmd()
        .arg("report")
        .args(args)
        .arg("--db")
        .arg(&b.db)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// The JSON inside `<script type="application/json" id="iolab-data">`.
fn embedded(html: &str) -> Value {
    let start = html.find(r#"id="iolab-data">"#).unwrap() + r#"id="iolab-data">"#.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end].replace("<\\/", "</")).unwrap()
}

fn attrs<'h>(html: &'h str, class: &str, attr: &str) -> Vec<(String, &'h str)> {
    let re = regex::Regex::new(&format!(
        r#"<(?:rect|circle|path) [^>]*class="{class}"[^>]*>"#
    ))
    .unwrap();
    let a = regex::Regex::new(&format!(r#" data-{attr}="([^"]*)""#)).unwrap();
    re.find_iter(html)
        .filter_map(|m| {
            let tag = m.as_str();
            let v = a.captures(tag)?.get(1)?.as_str();
            Some((v.to_string(), tag))
        })
        .collect()
}

fn data_of(tag: &str, attr: &str) -> String {
    let a = regex::Regex::new(&format!(r#" data-{attr}="([^"]*)""#)).unwrap();
    a.captures(tag).unwrap()[1].to_string()
}

#[test]
fn report_draws_exactly_the_stored_numbers_and_is_self_contained() {
    if !iolab_testkit::root_or_skip(
        "report_draws_exactly_the_stored_numbers_and_is_self_contained",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("report");
    let out = b
        .cmd()
        .arg("startup")
        .args(["--lab-size", "256MiB", "--reps", "2", "--warmup", "0.5"])
        .args([
            "--load-option",
            "size=32M",
            "--schedulers",
            "none,mq-deadline",
        ])
        .args(["--workloads", "1r1w", "--prepare", PREPARE])
        .args(["--trace", "bio", "--cpu", "--explain", "--json", "--db"])
        .arg(&b.db)
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    ok(&out);
    // startup writes a report next to the database and says so on stderr.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("report: "), "{err}");
    let id = json_of(&out.stdout)["experiment"]["id"].as_u64().unwrap();
    let file = b.db.with_file_name("r.html");
    let r = report(&b, &[&id.to_string(), "-o", file.to_str().unwrap()]);
    ok(&r);
    let html = std::fs::read_to_string(&file).unwrap();
    let shown = json_of(&b.results(&["show", &id.to_string(), "--json"]).stdout);

    // The embedded data is exactly what `results show --json` prints.
    let data = embedded(&html);
    assert_eq!(data["reports"][0], shown);

    // Every bar is a cell's mean from `results show --json`; every cell
    // with a mean has its bar.
    let cells = shown["cells"].as_array().unwrap();
    let bars = attrs(&html, "bar[^\"]*", "mean");
    let mut drawn = BTreeSet::new();
    for (mean, tag) in &bars {
        let cell = data_of(tag, "cell");
        let c = cells
            .iter()
            .find(|c| {
                format!(
                    "{}/{}",
                    c["scheduler"].as_str().unwrap(),
                    c["workload"].as_str().unwrap()
                ) == cell
            })
            .unwrap_or_else(|| panic!("bar for unknown cell {cell}"));
        assert_eq!(
            mean.parse::<f64>().unwrap(),
            c["mean"].as_f64().unwrap(),
            "{cell}"
        );
        drawn.insert(cell);
    }
    assert_eq!(drawn.len(), cells.len(), "{drawn:?}");
    // Every dot is a stored start's time.
    let starts: Vec<f64> = shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["duration_ns"].as_u64().unwrap() as f64 / 1e9)
        .collect();
    let dots = attrs(&html, "dot", "value");
    assert!(dots.len() >= starts.len(), "{} dots", dots.len());
    for (v, _) in &dots {
        let v: f64 = v.parse().unwrap();
        assert!(starts.contains(&v), "dot {v} is no stored start");
    }
    // Latency series: per scheduler, the requests counted are those of
    // the stored histograms: all of them, and the app's and the rest's
    // apart (which add up to all).
    let series = attrs(&html, "series", "count");
    assert!(!series.is_empty(), "no latency chart");
    for sched in ["none", "mq-deadline"] {
        let hists = |path: &[&str]| -> u64 {
            shown["artifacts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|a| a["kind"] == "latency_hist" && a["scheduler"] == sched)
                .flat_map(|a| {
                    let v = path.iter().fold(&a["json"], |v, k| &v[*k]);
                    v.as_array().unwrap().clone()
                })
                .map(|h| h["count"].as_u64().unwrap())
                .sum()
        };
        let whole = hists(&["histograms"]);
        let split = hists(&["by_owner", "app"]) + hists(&["by_owner", "rest"]);
        assert_eq!(split, whole, "{sched}: app + rest");
        let stored = whole + split;
        let drawn: u64 = series
            .iter()
            .filter(|(_, t)| data_of(t, "series") == sched)
            .map(|(c, _)| c.parse::<u64>().unwrap())
            .sum();
        // Each (workload, op) chart is drawn once as histogram, once as CDF.
        assert_eq!(drawn, 2 * stored, "{sched}");
        assert!(stored > 0, "{sched}: no traced request");
    }
    assert!(html.contains(r#"class="area""#), "no CPU chart");
    assert!(html.contains(r#"<iframe class="flame""#), "no flame graph");
    // Nothing outside the file: no src/href but fragments and data: URLs.
    let ext = regex::Regex::new(r##"(?:src|href)="([^"#][^"]*)""##).unwrap();
    for c in ext.captures_iter(&html) {
        assert!(c[1].starts_with("data:"), "external reference {}", &c[1]);
    }
    assert!(!html.contains("<link"), "a <link> element");

    // Two cells compared: the section holds `results compare`'s numbers.
    let cells_arg = "none/1r1w,mq-deadline/1r1w";
    let id_s = id.to_string();
    let both = b.db.with_file_name("ab.html");
    ok(&report(
        &b,
        &[
            &id_s,
            &id_s,
            "--cells",
            cells_arg,
            "-o",
            both.to_str().unwrap(),
        ],
    ));
    let cmp = json_of(
        &b.results(&["compare", &id_s, &id_s, "--cells", cells_arg, "--json"])
            .stdout,
    );
    let html = std::fs::read_to_string(&both).unwrap();
    assert_eq!(embedded(&html)["comparison"], cmp);
    assert!(html.contains(r#"<section id="compare">"#));
}

#[test]
fn report_of_a_missing_experiment_is_one_line() {
    let b = Bench::new("report-missing");
    let r = report(&b, &["999", "-o", "/tmp/never.html"]);
    assert_ne!(r.status.code(), Some(0));
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("999"), "{err}");
    assert!(!std::path::Path::new("/tmp/never.html").exists());
}
