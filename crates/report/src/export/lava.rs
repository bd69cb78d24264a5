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
            if many_targets {
                id = format!("{id}.{}", part(&cell.target));
            }
            let pass = s.n > 0 && s.censored == 0 && !cell.flagged;
            out.push(Case {
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
                    id: format!("{id}.{metric}"),
                    pass,
                    measurement: value,
                    units: "s",
                });
            }
            if let Some(r) = cell.ratio_to_idle.as_ref().filter(|_| s.censored == 0) {
                out.push(Case {
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
    let medians = |out: &mut Vec<Case>, id: &str, metrics: [(&str, &Summary, &'static str); 2]| {
        for (metric, s, units) in metrics {
            out.push(Case {
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

/// The lines for one experiment.
pub fn lines(view: &ExperimentView) -> String {
    let mut out = String::new();
    for c in cases(view) {
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
    out
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
        for l in text.lines() {
            let c = re.captures(l).unwrap();
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
