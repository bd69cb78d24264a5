//! The text of a boot experiment (`iolab boot`, seed 001), the same
//! whether it just ran or is read back: per variant, the boot time (kernel
//! start to the boot-done marker, the guest's CLOCK_BOOTTIME) as mean ±
//! 95 % CI and median, its ratio to the boot without prefetch (Fieller's
//! interval), whether it is faster or slower by Welch's test at 95 %, and
//! the smallest difference that comparison could have told with its boots;
//! then what each variant read from the boot disk, the prefetch's own
//! bytes and time, the recorded list's coverage and the outside clock.

use std::cmp::Ordering;

use iolab_stats::{ratio_of_means, summarize, two_sided_ci_of_difference, Sample, Summary};
use iolab_store::{ExperimentReport, RunRecord};
use iolab_sys::cast;
use iolab_sys::units::format_bytes;

use super::matrix::align_columns;

/// The variant with no prefetch, every other is compared with.
pub const NONE: &str = "none";

/// The variant a run belongs to (`none` for a plain boot).
pub fn variant_of(r: &RunRecord) -> &str {
    r.variant.as_deref().unwrap_or(NONE)
}

/// Every table of a boot experiment, in reading order.
pub fn render(report: &ExperimentReport) -> String {
    let mut variants: Vec<&str> = Vec::new();
    for r in &report.runs {
        let v = variant_of(r);
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    // none first, the recording boot last.
    variants.sort_by_key(|v| match *v {
        NONE => 0,
        "record" | "relayout-write" | "warmup" => 2,
        _ => 1,
    });
    let samples = |v: &str| -> Vec<&RunRecord> {
        report
            .runs
            .iter()
            .filter(|r| variant_of(r) == v && r.outcome.is_sample())
            .collect()
    };
    let secs = |runs: &[&RunRecord]| -> Vec<f64> {
        runs.iter().map(|r| r.duration_ns as f64 / 1e9).collect()
    };
    let summary = |runs: &[&RunRecord]| summarize(&Sample::all_exact(&secs(runs)));
    let base = summary(&samples(NONE));
    let mut rows = vec![[
        "variant",
        "n",
        "boot [s] mean ± 95% CI",
        "median",
        "×/none [95% CI]",
        "vs none (Welch 95%)",
        "can tell",
        "disk read",
        "prefetch read / took",
    ]
    .map(str::to_string)
    .to_vec()];
    for v in &variants {
        let runs = samples(v);
        let s = summary(&runs);
        let mean = match (s.mean, s.ci95) {
            (Some(m), Some(ci)) => format!("{m:.2} ± {:.2}", ci.half_width),
            (Some(m), None) => format!("{m:.2}"),
            _ => "-".into(),
        };
        let median = s.median.map_or("-".into(), |m| format!("{m:.2}"));
        let (ratio, verdict, tell) = if *v == NONE {
            ("1".into(), "-".into(), "-".into())
        } else {
            compare(&s, &base)
        };
        let read =
            mean_of(&runs, "read_bytes").map_or("-".into(), |b| format_bytes(cast::floor_u64(b)));
        let prefetch = match (
            mean_of(&runs, "prefetch_bytes"),
            mean_of(&runs, "prefetch_s"),
        ) {
            (Some(b), Some(t)) => format!("{} / {t:.2}s", format_bytes(cast::floor_u64(b))),
            (Some(b), None) => format_bytes(cast::floor_u64(b)),
            _ => "-".into(),
        };
        rows.push(vec![
            v.to_string(),
            s.n.to_string(),
            mean,
            median,
            ratio,
            verdict,
            tell,
            read,
            prefetch,
        ]);
    }
    let mut out = String::from(
        "boot time (kernel start to the boot-done marker) per variant, every boot a cold one:\n",
    );
    out.push_str(&align_columns(&rows));
    out.push_str(
        "can tell: the smallest difference from none this comparison would call real at 95 % \
         with its boots and spreads (the half-width of the difference's interval)\n",
    );
    for t in [
        phases(report, &variants),
        coverage(report),
        clock(report),
        not_samples(report),
    ]
    .into_iter()
    .flatten()
    {
        out.push('\n');
        out.push_str(&t);
    }
    out
}

/// Ratio with its interval, the verdict, and the smallest difference the
/// comparison can tell, for a variant against none.
fn compare(s: &Summary, base: &Summary) -> (String, String, String) {
    let ratio = ratio_of_means(s, base).map_or("-".into(), |r| match r.ci95 {
        Some(ci) => format!("×{:.3} [{:.3}, {:.3}]", r.value, ci.low, ci.high),
        None => format!("×{:.3}", r.value),
    });
    let Some(diff) = two_sided_ci_of_difference(s, base, iolab_stats::LEVEL_95) else {
        return (ratio, "-".into(), "-".into());
    };
    let d = s.mean.unwrap_or(0.0) - base.mean.unwrap_or(0.0);
    let verdict = match (diff.low > 0.0, diff.high < 0.0) {
        (true, _) => format!("slower by {:.2}s", d),
        (_, true) => format!("faster by {:.2}s", -d),
        _ => "no difference".to_string(),
    };
    let pct = base.mean.map_or(0.0, |m| 100.0 * diff.half_width / m);
    (
        ratio,
        verdict,
        format!("{:.2}s ({pct:.1}%)", diff.half_width),
    )
}

fn mean_of(runs: &[&RunRecord], key: &str) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(|r| r.extra[key].as_f64()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Where each variant's boot time went (means over its samples): the
/// kernel until userspace's first line, the initramfs and boot-init (a
/// prefetch held before init is here) until the root's init, and init
/// until the marker. The first is the same code in every variant, so its
/// spread is the machine's noise.
fn phases(report: &ExperimentReport, variants: &[&str]) -> Option<String> {
    let mut rows = vec![[
        "variant",
        "kernel [s]",
        "initramfs + boot-init [s]",
        "init → done [s]",
        "userspace ± 95% CI [s]",
    ]
    .map(str::to_string)
    .to_vec()];
    for v in variants {
        let runs: Vec<&RunRecord> = report
            .runs
            .iter()
            .filter(|r| variant_of(r) == *v && r.outcome.is_sample())
            .collect();
        let (mut k, mut i, mut u, mut user) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for r in &runs {
            let (Some(s), Some(init)) = (
                r.extra["userspace_start_s"].as_f64(),
                r.extra["init_s"].as_f64(),
            ) else {
                continue;
            };
            let done = r.duration_ns as f64 / 1e9;
            k.push(s);
            i.push(init - s);
            u.push(done - init);
            user.push(done - s);
        }
        if k.is_empty() {
            continue;
        }
        let m = |x: &[f64]| format!("{:.2}", x.iter().sum::<f64>() / x.len() as f64);
        let us = summarize(&Sample::all_exact(&user));
        let user_text = match (us.mean, us.ci95) {
            (Some(mean), Some(ci)) => format!("{mean:.2} ± {:.2}", ci.half_width),
            (Some(mean), None) => format!("{mean:.2}"),
            _ => "-".into(),
        };
        rows.push(vec![v.to_string(), m(&k), m(&i), m(&u), user_text]);
    }
    (rows.len() > 1).then(|| format!("phases (means):\n{}", align_columns(&rows)))
}

/// The recorded list against what its boot read.
fn coverage(report: &ExperimentReport) -> Option<String> {
    let rec = report.runs.iter().find(|r| variant_of(r) == "record")?;
    let list = rec.extra["list_bytes"].as_u64()?;
    let files = rec.extra["list_files"].as_u64().unwrap_or(0);
    let read = rec.extra["read_bytes"].as_u64()?;
    Some(format!(
        "prefetch list: {} in {files} file(s), recorded by the first boot, which read {} from the boot disk ({:.0} %)\n",
        format_bytes(list),
        format_bytes(read),
        100.0 * list as f64 / read.max(1) as f64
    ))
}

/// The boot time against the host's clock.
fn clock(report: &ExperimentReport) -> Option<String> {
    let diffs: Vec<f64> = report
        .runs
        .iter()
        .filter_map(|r| r.extra["clock_diff_s"].as_f64())
        .collect();
    let worst = diffs
        .iter()
        .map(|d| d.abs())
        .max_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal))?;
    let bound = report
        .runs
        .iter()
        .find_map(|r| r.extra["clock_bound_s"].as_f64())
        .unwrap_or(0.0);
    Some(format!(
        "outside clock: from userspace's first line to the marker, the guest's CLOCK_BOOTTIME and the host's clock (console lines) differ by at most {:.0} ms over {} boots (bound {:.0} ms)\n",
        worst * 1e3,
        diffs.len(),
        bound * 1e3
    ))
}

fn not_samples(report: &ExperimentReport) -> Option<String> {
    let bad: Vec<&RunRecord> = report
        .runs
        .iter()
        .filter(|r| !r.outcome.is_sample())
        .collect();
    if bad.is_empty() {
        return None;
    }
    let mut out = String::from("boots that are not samples (excluded from every statistic):\n");
    for r in bad {
        out.push_str(&format!(
            "  {} boot {} {}: {}\n",
            variant_of(r),
            r.rep,
            r.outcome.as_str(),
            r.reason.as_deref().unwrap_or("")
        ));
    }
    Some(out)
}
