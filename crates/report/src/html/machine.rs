//! The machine's sections: per-request block latency, CPU and pressure
//! over time, and the environment the experiment ran in.

use std::fmt::Write as _;

use super::charts::{cdf_log, histogram_log, over_time, Dist, Layer};
use super::svg::esc;
use serde_json::Value;

use crate::view::ExperimentView;

pub(super) fn latency(v: &ExperimentView) -> String {
    let mut s = String::from("<h3>Per-request block latency (issue → complete)</h3><p class=\"note\">Every traced request of the cell's runs, log2 buckets as biolatency's; left: share per bucket, right: cumulative.</p>");
    for (i, l) in v.latency.iter().enumerate() {
        let dists: Vec<Dist> = l
            .series
            .iter()
            .map(|x| Dist {
                name: x.scheduler.clone(),
                buckets: x
                    .buckets
                    .iter()
                    .map(|(lo, hi, c)| (*lo as f64, *hi as f64, *c))
                    .collect(),
            })
            .collect();
        let what = match &l.owner {
            Some(o) => format!("{} {} ({o}'s)", l.workload, op_name(&l.op)),
            None => format!("{} {}", l.workload, op_name(&l.op)),
        };
        let open = if i < 2 { " open" } else { "" };
        let _ = write!(
            s,
            r#"<details{open}><summary>{}</summary><div class="charts">{}{}</div></details>"#,
            esc(&what),
            histogram_log(&format!("{what} histogram"), &dists),
            cdf_log(&format!("{what} CDF"), &dists)
        );
    }
    s
}

fn op_name(op: &str) -> &str {
    match op {
        "R" => "reads",
        "W" => "writes",
        "D" => "discards",
        "F" => "flushes",
        _ => op,
    }
}

pub(super) fn cpu(v: &ExperimentView) -> String {
    let mut s = String::from("<h3>CPU and pressure over time</h3><p class=\"note\">The first start of each cell: CPU utilisation of all CPUs (mpstat's columns, stacked), and the share of each interval some task stalled on I/O, CPU or memory (/proc/pressure).</p>");
    for (i, r) in v.cpu.iter().enumerate() {
        let layers = vec![
            Layer {
                name: "usr".into(),
                values: r.usr.clone(),
            },
            Layer {
                name: "sys".into(),
                values: r.sys.clone(),
            },
            Layer {
                name: "iowait".into(),
                values: r.iowait.clone(),
            },
            Layer {
                name: "other".into(),
                values: r.other.clone(),
            },
            Layer {
                name: "idle".into(),
                values: r.idle.clone(),
            },
        ];
        let mut charts = over_time(
            &format!("{} CPU", r.cell),
            "CPU [%]",
            &r.t_s,
            &layers,
            true,
            Some(100.0),
        );
        if !r.psi_io_some.is_empty() {
            let psi = vec![
                Layer {
                    name: "io some".into(),
                    values: r.psi_io_some.clone(),
                },
                Layer {
                    name: "io full".into(),
                    values: r.psi_io_full.clone(),
                },
                Layer {
                    name: "cpu some".into(),
                    values: r.psi_cpu_some.clone(),
                },
                Layer {
                    name: "memory some".into(),
                    values: r.psi_memory_some.clone(),
                },
            ];
            charts.push_str(&over_time(
                &format!("{} pressure", r.cell),
                "stalled [% of interval]",
                &r.t_s[..r.t_s.len().min(r.psi_io_some.len())],
                &psi,
                false,
                None,
            ));
        }
        let open = if i < 2 { " open" } else { "" };
        let _ = write!(
            s,
            r#"<details{open}><summary>{} (rep {})</summary><div class="charts">{charts}</div></details>"#,
            esc(&r.cell),
            r.rep
        );
    }
    s
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let items: Vec<String> = a.iter().map(scalar).collect();
            out.push((prefix.to_string(), items.join(", ")));
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        x => out.push((prefix.to_string(), scalar(x))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        x => x.to_string(),
    }
}

pub(super) fn environment(v: &ExperimentView) -> String {
    let mut s = String::from("<h3>Environment and configuration</h3>");
    for (name, val) in [
        ("environment", &v.environment),
        ("configuration", &v.config),
    ] {
        let mut rows = Vec::new();
        flatten("", val, &mut rows);
        let _ = write!(
            s,
            "<details><summary>{name} ({} values)</summary><table>",
            rows.len()
        );
        for (k, x) in rows {
            let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(&k), esc(&x));
        }
        s.push_str("</table></details>");
    }
    s
}
