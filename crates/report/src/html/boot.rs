//! A boot experiment's part of the HTML report: the text tables, and the
//! boot chart — each variant's median boot, its root disk's read rate
//! over the guest's clock (qemu's counters every 100 ms), with the boot's
//! phases marked.

use iolab_store::{ExperimentReport, RunRecord};
use serde_json::Value;

use super::charts::{caption, over_time, Layer};
use super::svg::esc;
use crate::text::boot::variant_of;

/// Time step of the chart, s.
const STEP: f64 = 0.1;

/// The part, or `None` for a report without boots.
pub fn part(r: &ExperimentReport) -> Option<String> {
    if r.runs.is_empty() {
        return None;
    }
    let mut s = format!(
        "<h3>Boot time per variant</h3><pre>{}</pre>",
        esc(&crate::text::boot::render(r))
    );
    let medians = median_boots(r);
    if medians.is_empty() {
        return Some(s);
    }
    let end = medians
        .iter()
        .map(|(_, run)| run.duration_ns as f64 / 1e9)
        .fold(0.0, f64::max);
    #[allow(
        clippy::cast_possible_truncation,
        reason = "end <= u64::MAX ns in seconds (1.8e10 s), so at most 1.8e11 steps fit a 64-bit usize; float `as` saturates"
    )]
    let steps = (end / STEP).ceil() as usize;
    let t: Vec<f64> = (0..=steps).map(|i| i as f64 * STEP).collect();
    let layers: Vec<Layer> = medians
        .iter()
        .filter_map(|(v, run)| {
            Some(Layer {
                name: format!("{v} ({:.2} s)", run.duration_ns as f64 / 1e9),
                values: read_rate(&run.extra["disk_series"], &t)?,
            })
        })
        .collect();
    if !layers.is_empty() {
        s.push_str("<h3>Boot chart: the root disk's reads</h3>");
        s.push_str(&over_time(
            "each variant's median boot",
            "read [MiB/s]",
            &t,
            &layers,
            false,
            None,
        ));
        s.push_str(&caption(
            "From qemu's own counters of the root disk (query-blockstats, every 100 ms, read by the host: nothing runs in the guest for it), on the guest's clock from kernel start; each line ends at its boot's marker.",
        ));
    }
    Some(s)
}

/// Each variant's median boot (the lower middle one), in the order the
/// runs were stored.
fn median_boots(r: &ExperimentReport) -> Vec<(&str, &RunRecord)> {
    let mut variants: Vec<&str> = Vec::new();
    for run in &r.runs {
        // An explained boot carries the tracer's cost: not a median boot.
        let v = variant_of(run);
        if !variants.contains(&v) && iolab_results::boot::explained(v).is_none() {
            variants.push(v);
        }
    }
    variants
        .into_iter()
        .filter_map(|v| {
            let mut runs: Vec<&RunRecord> = r
                .runs
                .iter()
                .filter(|x| variant_of(x) == v && x.outcome.is_sample())
                .collect();
            runs.sort_by_key(|x| x.duration_ns);
            let m = *runs.get(runs.len().saturating_sub(1) / 2)?;
            Some((v, m))
        })
        .collect()
}

/// MiB/s read in each step of `t` (until the series ends: zero after).
fn read_rate(series: &Value, t: &[f64]) -> Option<Vec<f64>> {
    let ts: Vec<f64> = series["t_s"]
        .as_array()?
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    let bytes: Vec<f64> = series["read_bytes"]
        .as_array()?
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    if ts.len() < 2 || ts.len() != bytes.len() {
        return None;
    }
    // Cumulative bytes at any time, by linear interpolation.
    let at = |x: f64| -> f64 {
        match ts.iter().position(|&v| v >= x) {
            Some(0) => bytes[0] * (x / ts[0].max(1e-9)).clamp(0.0, 1.0),
            Some(i) => {
                let f = (x - ts[i - 1]) / (ts[i] - ts[i - 1]).max(1e-9);
                bytes[i - 1] + f * (bytes[i] - bytes[i - 1])
            }
            None => *bytes.last().unwrap_or(&0.0),
        }
    };
    Some(
        t.iter()
            .map(|&x| ((at(x + STEP) - at(x)) / STEP / (1 << 20) as f64).max(0.0))
            .collect(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_the_slope_of_the_counts() {
        let s = serde_json::json!({
            "t_s": [1.0, 2.0, 3.0],
            "read_bytes": [0, 10 << 20, 10 << 20],
        });
        let r = read_rate(&s, &[1.0, 1.5, 2.5]).unwrap();
        assert!((r[0] - 10.0).abs() < 1e-6, "{r:?}");
        assert!((r[1] - 10.0).abs() < 1e-6, "{r:?}");
        assert!(r[2].abs() < 1e-6, "{r:?}");
    }
}
