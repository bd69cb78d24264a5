//! The prefetch table: per workload (and mode) a row, per scheduler
//! `without → with (×with/without) +seconds the prefetch took`.

use iolab_store::CellReport;

use super::matrix::{align_columns, table_decimals};
use crate::view::prefetch::PrefetchPair;

/// The table; `None` without prefetch runs.
pub fn render(pairs: &[PrefetchPair]) -> Option<String> {
    if pairs.is_empty() {
        return None;
    }
    let d = table_decimals(pairs.iter().flat_map(|p| [&p.without, &p.with]));
    let mut schedulers: Vec<&str> = Vec::new();
    let mut rows_keys: Vec<(&str, &str)> = Vec::new();
    for p in pairs {
        if !schedulers.contains(&p.with.scheduler.as_str()) {
            schedulers.push(&p.with.scheduler);
        }
        if !rows_keys.contains(&(p.with.workload.as_str(), p.mode.as_str())) {
            rows_keys.push((&p.with.workload, &p.mode));
        }
    }
    let mut rows = vec![["workload", "prefetch"]
        .into_iter()
        .chain(schedulers.iter().copied())
        .map(str::to_string)
        .collect::<Vec<_>>()];
    for (w, mode) in &rows_keys {
        let mut row = vec![w.to_string(), mode.to_string()];
        for s in &schedulers {
            let cell = pairs
                .iter()
                .find(|p| p.mode == *mode && p.with.workload == *w && p.with.scheduler == *s);
            row.push(cell.map_or_else(|| "-".into(), |p| pair_text(p, d)));
        }
        rows.push(row);
    }
    let mut out = String::from(
        "prefetch: start-up [s] without → with (×with/without) +seconds the prefetch took\n",
    );
    out.push_str(&align_columns(&rows));
    if pairs
        .iter()
        .any(|p| p.without.stats.censored + p.with.stats.censored > 0)
    {
        out.push_str("[censored]: some starts timed out; ×≤ or ×≥: the ratio is a bound\n");
    }
    for mode in ["before", "parallel"] {
        let of_mode: Vec<&PrefetchPair> = pairs.iter().filter(|p| p.mode == mode).collect();
        let Some(first) = of_mode.first() else {
            continue;
        };
        let res: Vec<f64> = of_mode.iter().filter_map(|p| p.residency_percent).collect();
        let what = if mode == "before" {
            "read in completely before the start, not counted in it"
        } else {
            "a helper reading it alongside the start"
        };
        out.push_str(&format!(
            "{mode} ({what}): list of {} files, {}, {:.0}% resident after\n",
            first.list_files.map_or("?".into(), |n| n.to_string()),
            iolab_sys::units::format_bytes(first.list_bytes.unwrap_or(0)),
            res.iter().sum::<f64>() / res.len().max(1) as f64,
        ));
    }
    Some(out)
}

fn pair_text(p: &PrefetchPair, d: usize) -> String {
    let (without, with): (&CellReport, &CellReport) = (&p.without, &p.with);
    let (Some(a), Some(b)) = (without.stats.mean, with.stats.mean) else {
        return "-".into();
    };
    // A mean over censored starts is only a lower bound.
    let gt = |lower: bool| if lower { ">" } else { "" };
    let mut s = format!(
        "{}{a:.d$} → {}{b:.d$}",
        gt(without.stats.mean_is_lower_bound),
        gt(with.stats.mean_is_lower_bound)
    );
    if let Some(r) = &p.ratio {
        let sign = super::bound_sign(r.bound);
        s.push_str(&format!(" (×{sign}{:.2})", r.value));
    }
    if let Some(t) = p.prefetch_s {
        s.push_str(&format!(" +{t:.2}"));
    }
    if without.stats.censored + with.stats.censored > 0 {
        s.push_str(" [censored]");
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iolab_results::prefetch::PrefetchMode;
    use iolab_store::ExperimentReport;
    use serde_json::{json, Value};

    fn run(
        variant: Option<&str>,
        workload: &str,
        rep: u32,
        secs: f64,
        censored: bool,
    ) -> iolab_store::RunRecord {
        iolab_store::RunRecord {
            scheduler: "bfq".into(),
            workload: workload.into(),
            rep,
            target: "app".into(),
            started_at: String::new(),
            duration_ns: iolab_sys::cast::floor_u64(secs * 1e9),
            censored,
            timeout_ns: 10_000_000_000,
            exit_code: Some(0),
            signal: None,
            overhead_ns: None,
            background: None,
            config: Value::Null,
            extra: Value::Null,
            outcome: if censored {
                iolab_store::RunOutcome::Censored
            } else {
                iolab_store::RunOutcome::Ok
            },
            reason: None,
            variant: variant.map(str::to_string),
        }
    }

    #[test]
    fn comparison_pairs_each_variant_with_its_plain_cell() {
        let exp = iolab_store::testutil::experiment(iolab_results::ExperimentKind::Startup);
        let before = PrefetchMode::Before.variant();
        let b = Some(before.as_str());
        let runs = vec![
            run(None, "idle", 1, 1.0, false),
            run(None, "idle", 2, 1.2, false),
            run(b, "idle", 1, 0.2, false),
            run(b, "idle", 2, 0.3, false),
            run(None, "1r", 1, 10.0, true),
            run(None, "1r", 2, 10.0, true),
            run(b, "1r", 1, 0.5, false),
            run(b, "1r", 2, 0.7, false),
        ];
        let mut report = ExperimentReport::new(exp, runs);
        report.artifacts = (1..=2)
            .map(|rep| iolab_store::Artifact {
                run_id: iolab_store::RunId(rep.into()),
                scheduler: "bfq".into(),
                workload: "idle".into(),
                target: "app".into(),
                variant: Some(before.clone()),
                rep,
                kind: iolab_results::ArtifactKind::Prefetch,
                json: json!({"mode": "before", "list_files": 3, "list_bytes": 4096,
                             "report": {"duration_s": 0.5 * f64::from(rep), "residency_percent": 100.0}}),
            })
            .collect();
        let text = render(&crate::view::prefetch::pairs(&report)).unwrap();
        let idle = text.lines().find(|l| l.starts_with("idle")).unwrap();
        assert!(idle.contains("1.100 → 0.250 (×0.23) +0.75"), "{text}");
        let load = text.lines().find(|l| l.starts_with("1r")).unwrap();
        assert!(
            load.contains(">10.000 → 0.600 (×≤0.06) [censored]"),
            "{text}"
        );
        assert!(text.contains("list of 3 files"), "{text}");
        let plain = ExperimentReport::new(report.experiment.clone(), report.runs[..2].to_vec());
        assert!(render(&crate::view::prefetch::pairs(&plain)).is_none());
    }
}
