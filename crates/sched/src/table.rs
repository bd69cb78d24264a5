//! Text rendering of report rows, with `perf sched latency`'s column names
//! where the two overlap (Task, Runtime ms, Switches, Avg delay ms, Max
//! delay ms, Max delay start, Max delay end), then iolab's additions.

use crate::report::Row;
use crate::summary::DelaySummary;

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

fn ms_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), ms)
}

fn ms_u(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| ms(v as f64))
}

/// Seconds with µs precision, like perf's timestamps.
pub fn secs(ns: Option<u64>) -> String {
    ns.map_or_else(
        || "-".into(),
        |v| format!("{}.{:06}", v / 1_000_000_000, v % 1_000_000_000 / 1000),
    )
}

const HEADER: [&str; 16] = [
    "Task",
    "Runtime ms",
    "Switches",
    "Avg delay ms",
    "Max delay ms",
    "Max delay start",
    "Max delay end",
    "Median ms",
    "P99 ms",
    "Stddev ms",
    "Wakeups",
    "Wake avg ms",
    "Wake max ms",
    "Preempts",
    "Pre avg ms",
    "Pre max ms",
];

fn cells(
    task: String,
    runtime_ns: u64,
    switches: u64,
    r: Option<(&DelaySummary, &DelaySummary, &DelaySummary)>,
) -> Vec<String> {
    let mut v = vec![task, ms(runtime_ns as f64), switches.to_string()];
    if let Some((d, w, p)) = r {
        v.extend([
            ms_opt(d.avg_ns),
            ms_u(d.max_ns),
            secs(d.max_start_ns),
            secs(d.max_end_ns),
            ms_opt(d.median_ns),
            ms_u(d.p99_ns),
            ms_opt(d.stddev_ns),
            w.count.to_string(),
            ms_opt(w.avg_ns),
            ms_u(w.max_ns),
            p.count.to_string(),
            ms_opt(p.avg_ns),
            ms_u(p.max_ns),
        ]);
    }
    v
}

/// The per-task (or per-group) table with a TOTAL line.
pub fn render_rows(rows: &[Row]) -> String {
    let mut table = vec![HEADER.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    for r in rows {
        table.push(cells(
            r.task.clone(),
            r.runtime_ns,
            r.switches,
            Some((&r.delay, &r.wakeup, &r.preempt)),
        ));
    }
    table.push(cells(
        "TOTAL".into(),
        rows.iter().map(|r| r.runtime_ns).sum(),
        rows.iter().map(|r| r.switches).sum(),
        None,
    ));
    iolab_sys::text::align_columns(&table, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_render_with_perf_column_names_and_a_total() {
        let d = DelaySummary::of([(1_000_000_000, 1_000_250_000)]);
        let row = Row {
            task: "fio:42".into(),
            comm: "fio".into(),
            tid: Some(42),
            tasks: 1,
            runtime_ns: 12_345_678,
            switches: 3,
            delay: d.clone(),
            wakeup: d,
            preempt: DelaySummary::default(),
        };
        let text = render_rows(&[row]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("Task")
                && lines[0].contains("Avg delay ms")
                && lines[0].contains("Max delay end")
        );
        assert!(
            lines[1].contains("fio:42")
                && lines[1].contains("12.346")
                && lines[1].contains("0.250"),
            "{text}"
        );
        assert!(
            lines[1].contains("1.000000") && lines[1].contains("1.000250"),
            "{text}"
        );
        assert!(lines[2].starts_with("TOTAL"));
    }
}
