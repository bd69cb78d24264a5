//! `results compare`'s terminal table: per pair seed 004's columns for A
//! and B, the ratio with its interval and the verdict.

use iolab_stats::Ratio;
use iolab_store::compare::Comparison;

/// The terminal table: per pair seed 004's columns for A and B, the
/// ratio with its interval and the verdict.
pub fn render(c: &Comparison, a: i64, b: i64) -> String {
    let unit = if c.metric.unit.is_empty() {
        String::new()
    } else {
        format!(" [{}]", c.metric.unit)
    };
    let dir = if c.metric.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    let mut out = format!(
        "{}{unit} of experiment {b} (B) against {a} (A), {dir}; ratio B/A with Fieller's 95 % interval (Welch)\n",
        c.metric.name
    );
    // `≥`: a bound, from runs cut off at the timeout.
    let f = |v: Option<f64>, lower: bool| {
        v.map_or_else(
            || "-".to_string(),
            |x| format!("{}{}", if lower { "≥" } else { "" }, number(x)),
        )
    };
    let mut rows = vec![[
        "cell",
        "",
        "n",
        "average",
        "median",
        "min",
        "max",
        "stddev",
        "diff %",
        "B/A [95% CI]",
        "verdict",
    ]
    .map(String::from)
    .to_vec()];
    for p in &c.pairs {
        for (label, s) in [("A", &p.a), ("B", &p.b)] {
            let st = &s.stats;
            let last = label == "B";
            rows.push(vec![
                if last { String::new() } else { p.key.clone() },
                label.to_string(),
                st.n.to_string(),
                f(st.mean, st.mean_is_lower_bound),
                f(st.median, st.median_is_lower_bound),
                f(st.min, st.min_is_lower_bound),
                f(st.max, st.max_is_lower_bound),
                f(st.stddev, false),
                if last {
                    p.diff_pct
                        .map_or_else(|| "-".into(), |d| format!("{d:+.1}"))
                } else {
                    String::new()
                },
                if last {
                    ratio_text(p.ratio.as_ref())
                } else {
                    String::new()
                },
                if last {
                    p.verdict.text().to_string()
                } else {
                    String::new()
                },
            ]);
        }
    }
    out.push_str(&iolab_sys::text::align_columns(&rows, 2));
    for (who, list) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !list.is_empty() {
            out.push_str(&format!("only in {who}: {}\n", list.join(", ")));
        }
    }
    out
}

/// Four significant digits, no exponent: `12.35`, `0.004321`, `128643`.
fn number(x: f64) -> String {
    #[allow(
        clippy::cast_possible_truncation,
        reason = "log10 of a non-zero f64 is in -324..=309 (NaN gives 0, infinity saturates); clamped below"
    )]
    let mag = if x == 0.0 {
        0
    } else {
        x.abs().log10().floor() as i32
    };
    let decimals = (3 - mag).clamp(0, 9) as usize;
    format!("{x:.decimals$}")
}

fn ratio_text(r: Option<&Ratio>) -> String {
    r.map_or_else(|| "-".into(), super::ratio_ci_text)
}
