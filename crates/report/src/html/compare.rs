//! `iolab report A B`: two experiments side by side.

use std::fmt::Write as _;

use super::charts::{grouped_bars, Bar, GroupedBars, Point, PointKind};
use super::svg::{esc, num};
use iolab_store::compare::{Comparison, Verdict};

use super::sections::section;
use crate::text::ratio_ci_text as ratio_text;
use crate::view::ExperimentView;

/// `iolab report A B`: the comparison table and A-vs-B bars.
pub fn comparison(c: &Comparison, views: &[ExperimentView]) -> String {
    let (a, b) = (
        views.first().map_or(0, |v| v.id),
        views.get(1).or(views.first()).map_or(0, |v| v.id),
    );
    let mut rows = String::new();
    for p in &c.pairs {
        let class = match p.verdict {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            _ => "same",
        };
        // `≥`: a bound, from starts cut off at the timeout.
        let v = |x: Option<f64>, lower: bool| {
            x.map_or("-".into(), |x| {
                format!("{}{}", if lower { "≥" } else { "" }, num(x))
            })
        };
        let st = |s: &iolab_stats::Summary| {
            format!(
                "<td class=num>{}</td><td class=num>{}</td><td class=num>{}</td><td class=num>{}</td><td class=num>{}</td>",
                v(s.mean, s.mean_is_lower_bound),
                v(s.median, s.median_is_lower_bound),
                v(s.min, s.min_is_lower_bound),
                v(s.max, s.max_is_lower_bound),
                v(s.stddev, false)
            )
        };
        let _ = write!(
            rows,
            r#"<tr><td>{}</td>{}{}<td class=num>{}</td><td>{}</td><td class="{class}">{}</td></tr>"#,
            esc(&p.key),
            st(&p.a.stats),
            st(&p.b.stats),
            p.diff_pct.map_or("-".into(), |d| format!("{d:+.1} %")),
            p.ratio.as_ref().map_or("-".into(), ratio_text),
            p.verdict.text()
        );
    }
    let series = vec![format!("A: {a}"), format!("B: {b}")];
    let groups = c
        .pairs
        .iter()
        .map(|p| {
            let bar = |name: &str, s: &iolab_store::compare::Side| Bar {
                series: name.to_string(),
                value: s.stats.mean,
                lower_bound: s.stats.mean_is_lower_bound,
                whisker: s.stats.ci95.as_ref().map(|ci| (ci.low.max(0.0), ci.high)),
                points: s
                    .values
                    .iter()
                    .map(|x| Point {
                        value: *x,
                        kind: PointKind::Exact,
                        title: num(*x),
                    })
                    .collect(),
                title: format!(
                    "{name} {}: mean {}",
                    s.cell,
                    s.stats.mean.map_or("-".into(), num)
                ),
                data: vec![
                    ("cell", s.cell.clone()),
                    (
                        "mean",
                        s.stats.mean.map_or(String::new(), |m| m.to_string()),
                    ),
                ],
            };
            (
                p.key.clone(),
                vec![bar(&series[0], &p.a), bar(&series[1], &p.b)],
            )
        })
        .collect();
    let chart = grouped_bars(&GroupedBars {
        title: "A against B".into(),
        y_label: format!("{} [{}]", c.metric.name, c.metric.unit),
        series,
        groups,
        reference: None,
    });
    let only = if c.only_a.is_empty() && c.only_b.is_empty() {
        String::new()
    } else {
        format!(
            r#"<p class="note">Only in A: {}. Only in B: {}.</p>"#,
            esc(&c.only_a.join(", ")),
            esc(&c.only_b.join(", "))
        )
    };
    section(
        "compare",
        &format!(
            "Comparison: experiment {a} (A) against {b} (B), {}",
            c.metric.name
        ),
        &format!(
            r#"<p class="note">Per matched cell: seed 004's table of A and B, diff % of the means, B/A with Fieller's 95 % interval, and the verdict of Welch's t-test at 95 % ({}: {}).</p><table><tr><th rowspan=2>cell</th><th colspan=5>A</th><th colspan=5>B</th><th rowspan=2>diff</th><th rowspan=2>B/A (95 % CI)</th><th rowspan=2>verdict</th></tr><tr><th>avg</th><th>median</th><th>min</th><th>max</th><th>stddev</th><th>avg</th><th>median</th><th>min</th><th>max</th><th>stddev</th></tr>{rows}</table>{only}<div class="charts">{chart}</div>"#,
            esc(&c.metric.name),
            if c.metric.higher_is_better {
                "higher is better"
            } else {
                "lower is better"
            }
        ),
    )
}
