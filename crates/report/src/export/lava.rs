//! LAVA test results: one `<LAVA_SIGNAL_TESTCASE ...>` line per cell and
//! metric, the line LAVA's `lava-test-case` helper prints, which the LAVA
//! dispatcher reads from the device's console (KernelCI and Linaro device
//! farms run on it). A board's test job runs an experiment and then
//! `iolab results export ID --format lava`; no helper is needed.
//!
//! The dispatcher splits the line on whitespace and each part on `=`
//! (`lava_dispatcher.actions.test.shell.handle_testcase`), so ids hold
//! no space or `=`: `startup.<scheduler>.<workload>.<metric>`.
//! A cell passes when it has samples, none cut off at the timeout and no
//! more failed starts than the store flags; the measurements are then its
//! mean, min, median and max (a sweep's: median) in the unit given.
//!
//! Cases are grouped into one LAVA test set per workload (the
//! `<LAVA_SIGNAL_TESTSET START name>` / `STOP` lines `lava-test-set`
//! prints), so a lab's results page groups a board's cells as iolab's
//! matrix does; the ids stay whole (scheduler and workload in each), so a
//! case is found by the same id with or without its set.

use std::fmt::Write as _;

use iolab_stats::Summary;
use iolab_store::StoreError;

use super::Exporter;
use crate::view::ExperimentView;

/// Exports LAVA signal lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct LavaExporter;

/// One result.
struct Case {
    /// The test set (the workload; a max cell's access pattern).
    set: String,
    id: String,
    pass: bool,
    measurement: Option<f64>,
    units: &'static str,
}

/// A test-case id part: LAVA's parser allows no whitespace, `=` or `>`.
fn part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | ':') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn cases(v: &ExperimentView) -> Vec<Case> {
    let mut out = Vec::new();
    if let Some(st) = &v.startup {
        let many_targets = st.targets.len() > 1;
        for c in &st.cells {
            let cell = &c.cell;
            let s = &cell.stats;
            let mut id = format!("startup.{}.{}", part(&cell.scheduler), part(&cell.workload));
            // A plan point: its settings as `name:value+name:value` (the
            // baseline: `baseline`), so every point's cases stay apart.
            if let Some(p) = iolab_results::variant::point_of(cell.variant.as_deref()) {
                let set: Vec<String> = iolab_results::variant::settings_of(&p)
                    .into_iter()
                    .filter(|(_, v)| *v != "-")
                    .map(|(n, v)| format!("{}:{}", part(n), part(v)))
                    .collect();
                id = format!(
                    "{id}.{}",
                    if set.is_empty() {
                        "baseline".to_string()
                    } else {
                        set.join("+")
                    }
                );
            }
            if many_targets {
                id = format!("{id}.{}", part(&cell.target));
            }
            let pass = s.n > 0 && s.censored == 0 && !cell.flagged;
            let set = part(&cell.workload);
            out.push(Case {
                set: set.clone(),
                id: format!("{id}.mean"),
                pass,
                measurement: s.mean,
                units: "s",
            });
            // Macrobenchmark's min / median / max beside the mean; a value
            // that is a bound (a start cut off at the timeout) fails with
            // its cell.
            for (metric, value) in [("min", s.min), ("median", s.median), ("max", s.max)] {
                out.push(Case {
                    set: set.clone(),
                    id: format!("{id}.{metric}"),
                    pass,
                    measurement: value,
                    units: "s",
                });
            }
            if let Some(r) = cell.ratio_to_idle.as_ref().filter(|_| s.censored == 0) {
                out.push(Case {
                    set: set.clone(),
                    id: format!("{id}.ratio_to_idle"),
                    pass,
                    measurement: Some(r.value),
                    units: "x",
                });
            }
        }
    }
    for p in &v.prefetch {
        let s = &p.with.stats;
        out.push(Case {
            set: part(&p.with.workload),
            id: format!(
                "startup.{}.{}.prefetch_{}.mean",
                part(&p.with.scheduler),
                part(&p.with.workload),
                part(&p.mode)
            ),
            pass: s.n > 0 && s.censored == 0 && !p.with.flagged,
            measurement: s.mean,
            units: "s",
        });
    }
    // Sweeps: the median over repetitions of each cell's metrics.
    let medians = |out: &mut Vec<Case>,
                   set: String,
                   id: &str,
                   metrics: [(&str, &Summary, &'static str); 2]| {
        for (metric, s, units) in metrics {
            out.push(Case {
                set: set.clone(),
                id: format!("{id}.{metric}"),
                pass: s.median.is_some(),
                measurement: s.median,
                units,
            });
        }
    };
    if let Some(t) = &v.sweep {
        for c in &t.cells {
            let id = format!("sweep.{}.{}", part(&c.scheduler), part(&c.workload));
            medians(
                &mut out,
                part(&c.workload),
                &id,
                [
                    ("bw", &c.bw_mib_s, "MiB/s"),
                    ("clat_p99", &c.clat_p99_ms, "ms"),
                ],
            );
        }
    }
    if let Some(t) = &v.max {
        for c in &t.cells {
            let id = format!("max.{}.{}-{}j", part(&c.scheduler), c.rw.label(), c.threads);
            medians(
                &mut out,
                c.rw.label().to_string(),
                &id,
                [
                    ("iops", &c.iops, "iops"),
                    ("kernel_us_per_io", &c.kernel_us_per_io, "us"),
                ],
            );
        }
    }
    out
}

/// The lines for one experiment: each test set's cases together, sets in
/// the order their first case comes.
pub fn lines(view: &ExperimentView) -> String {
    let all = cases(view);
    let mut sets: Vec<&str> = Vec::new();
    for c in &all {
        if !sets.contains(&c.set.as_str()) {
            sets.push(&c.set);
        }
    }
    let mut out = String::new();
    for set in sets {
        let _ = writeln!(out, "<LAVA_SIGNAL_TESTSET START {set}>");
        for c in all.iter().filter(|c| c.set == set) {
            case_line(&mut out, c);
        }
        out.push_str("<LAVA_SIGNAL_TESTSET STOP>\n");
    }
    out
}

fn case_line(out: &mut String, c: &Case) {
    {
        let result = if c.pass { "pass" } else { "fail" };
        let _ = write!(
            out,
            "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID={} RESULT={result}",
            c.id
        );
        if let Some(m) = c.measurement.filter(|m| m.is_finite()) {
            let _ = write!(out, " UNITS={} MEASUREMENT={m:.6}", c.units);
        }
        out.push_str(">\n");
    }
}

impl Exporter for LavaExporter {
    fn serialize(&self, view: &ExperimentView) -> Result<Vec<u8>, StoreError> {
        Ok(lines(view).into_bytes())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iolab_store::testutil::run;
    use iolab_store::ExperimentReport;

    fn report() -> ExperimentReport {
        let e = iolab_store::testutil::experiment(iolab_results::ExperimentKind::Startup);
        let runs = vec![
            run("bfq", "idle", 0, 0.6),
            run("bfq", "idle", 1, 0.7),
            run("mq-deadline", "1r 1w", 0, 2.0),
            run("mq-deadline", "1r 1w", 1, 60.0),
        ];
        ExperimentReport::new(e, runs)
    }

    /// What LAVA's dispatcher does with a line: `<LAVA_SIGNAL_(\S+) ([^>]+)>`,
    /// then whitespace-split `KEY=VALUE` pairs (exactly one `=` each).
    #[test]
    fn lines_parse_as_lava_does_one_per_cell_and_metric() {
        let text = lines(&ExperimentView::of(&report()));
        let re = regex::Regex::new(r"<LAVA_SIGNAL_(\S+) ([^>]+)>").unwrap();
        let mut ids = Vec::new();
        let mut sets = Vec::new();
        for l in text.lines() {
            let c = re.captures(l).unwrap();
            if &c[1] == "TESTSET" {
                sets.push(c[2].to_string());
                continue;
            }
            assert_eq!(&c[1], "TESTCASE");
            let kv: Vec<(&str, &str)> = c[2]
                .split_whitespace()
                .map(|p| {
                    let v: Vec<&str> = p.split('=').collect();
                    assert_eq!(v.len(), 2, "{p}");
                    (v[0], v[1])
                })
                .collect();
            ids.push(kv[0].1.to_string());
        }
        assert_eq!(
            ids,
            [
                "startup.bfq.idle.mean",
                "startup.bfq.idle.min",
                "startup.bfq.idle.median",
                "startup.bfq.idle.max",
                "startup.mq-deadline.1r_1w.mean",
                "startup.mq-deadline.1r_1w.min",
                "startup.mq-deadline.1r_1w.median",
                "startup.mq-deadline.1r_1w.max",
            ]
        );
        // lava-test-set's lines: one set per workload around its cases.
        assert_eq!(sets, ["START idle", "STOP", "START 1r_1w", "STOP"]);
        // The cell with a timed-out start fails; its mean is a bound.
        assert!(text.contains(
            "TEST_CASE_ID=startup.bfq.idle.mean RESULT=pass UNITS=s MEASUREMENT=0.650000"
        ));
        for (metric, v) in [
            ("min", "0.600000"),
            ("median", "0.650000"),
            ("max", "0.700000"),
        ] {
            assert!(
                text.contains(&format!(
                    "TEST_CASE_ID=startup.bfq.idle.{metric} RESULT=pass UNITS=s MEASUREMENT={v}"
                )),
                "{text}"
            );
        }
        assert!(text.contains("TEST_CASE_ID=startup.mq-deadline.1r_1w.mean RESULT=fail"));
    }
}
