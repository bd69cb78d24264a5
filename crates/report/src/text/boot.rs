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

use iolab_results::boot as variant;
/// What `v` is compared with: the plain boot on the same boot-disk
/// scheduler (`idle@bfq` → `none@bfq`), by the one registry.
pub use iolab_results::boot::baseline as baseline_of;

/// The variant a run belongs to (`none` for a plain boot).
pub fn variant_of(r: &RunRecord) -> &str {
    r.variant.as_deref().unwrap_or(NONE)
}

/// Every table of a boot experiment, in reading order.
pub fn render(report: &ExperimentReport) -> String {
    let mut variants: Vec<&str> = Vec::new();
    for r in &report.runs {
        let v = variant_of(r);
        // An explained boot has its own table: the tracer's cost is in
        // its time.
        if !variants.contains(&v) && variant::explained(v).is_none() {
            variants.push(v);
        }
    }
    // Per boot-disk scheduler, none first; the recording boot last.
    variants.sort_by_key(|v| {
        let sched = variant::split(v).1.unwrap_or("").to_string();
        let rank = match *v {
            v if variant::is_made_once(v) => 2,
            v if baseline_of(v) == v => 0,
            _ => 1,
        };
        (rank == 2, sched, rank)
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
    let verdicts = holm_verdicts(&variants, &|v| summary(&samples(v)));
    let mut rows = vec![[
        "variant",
        "n",
        "boot [s] mean ± 95% CI",
        "median",
        "×/none [95% CI]",
        "vs none (Welch, Holm)",
        "can tell (80% power)",
        "disk read",
        "prefetch read / submitted / done",
        "I/O wait (PSI some)",
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
        let base_name = baseline_of(v);
        let (ratio, verdict, tell) = if *v == base_name {
            ("1".into(), "-".into(), "-".into())
        } else {
            let b = summary(&samples(&base_name));
            let (ratio, _, _) = compare(&s, &b);
            let (verdict, tell) = verdicts
                .iter()
                .find(|x| x.0 == *v)
                .map_or(("-".into(), "-".into()), |x| (x.1.clone(), x.2.clone()));
            (ratio, verdict, tell)
        };
        let read =
            mean_of(&runs, "read_bytes").map_or("-".into(), |b| format_bytes(cast::floor_u64(b)));
        let prefetch = match (
            mean_of(&runs, "prefetch_bytes"),
            mean_of(&runs, "prefetch_submit_s"),
            mean_of(&runs, "prefetch_s"),
        ) {
            (Some(b), Some(sub), Some(t)) => {
                format!("{} / {sub:.2}s / {t:.2}s", format_bytes(cast::floor_u64(b)))
            }
            (Some(b), None, Some(t)) => {
                format!("{} / - / {t:.2}s", format_bytes(cast::floor_u64(b)))
            }
            (Some(b), ..) => format_bytes(cast::floor_u64(b)),
            _ => "-".into(),
        };
        let psi = mean_of(&runs, "psi_io_some_share")
            .map_or("-".into(), |x| format!("{:.0} %", 100.0 * x));
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
            psi,
        ]);
    }
    let mut out = String::from(
        "boot time (kernel start to the boot-done marker) per variant, every boot a cold one:\n",
    );
    out.push_str(&align_columns(&rows));
    out.push_str(
        "vs none: Welch's test of each variant against none on its scheduler, p-values adjusted \
         by Holm's method across those comparisons, told at 5 % family-wise; \
         can tell: the difference from none this comparison would call real 4 times in 5 \
         (80 % power at Holm's strictest level) with its boots and spreads; \
         prefetch submitted / done: when its last read was asked for and when it completed; \
         I/O wait: PSI's io `some` share from init to the marker (time some task was stalled on I/O)\n",
    );
    for t in [
        phases(report, &variants),
        app_phases(report, &variants),
        explained(report),
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

/// Each variant's verdict against its baseline with Holm's correction
/// across the comparisons of one baseline, and the difference each could
/// tell at 80 % power at the strictest Holm level (α/m). (variant,
/// verdict, can tell)
pub fn holm_verdicts(
    variants: &[&str],
    summary: &dyn Fn(&str) -> Summary,
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut bases: Vec<String> = variants.iter().map(|v| baseline_of(v)).collect();
    bases.sort();
    bases.dedup();
    for base in bases {
        let b = summary(&base);
        let family: Vec<&str> = variants
            .iter()
            .copied()
            .filter(|v| baseline_of(v) == base && *v != base && !is_made_once(v))
            .collect();
        let sums: Vec<Summary> = family.iter().map(|v| summary(v)).collect();
        let ps: Vec<Option<f64>> = sums.iter().map(|s| iolab_stats::welch_p(s, &b)).collect();
        let known: Vec<f64> = ps.iter().flatten().copied().collect();
        let adjusted = iolab_stats::holm(&known);
        let m = known.len().max(1);
        let mut next = adjusted.iter();
        for ((v, s), p) in family.iter().zip(&sums).zip(&ps) {
            let verdict = match p {
                None => "-".to_string(),
                Some(_) => {
                    let adj = next.next().copied().unwrap_or(1.0);
                    let d = s.mean.unwrap_or(0.0) - b.mean.unwrap_or(0.0);
                    if adj < 0.05 && d > 0.0 {
                        format!("slower by {d:.2}s (p {adj:.3})")
                    } else if adj < 0.05 {
                        format!("faster by {:.2}s (p {adj:.3})", -d)
                    } else {
                        format!("no difference (p {adj:.2})")
                    }
                }
            };
            let tell = match (s.stddev, b.stddev) {
                (Some(x), Some(y)) => iolab_stats::detectable(x, y, s.n, b.n, 0.05 / m as f64, 0.8)
                    .map_or("-".into(), |d| {
                        let pct = b.mean.map_or(0.0, |mb| 100.0 * d / mb);
                        format!("{d:.2}s ({pct:.1}%)")
                    }),
                _ => "-".into(),
            };
            out.push((v.to_string(), verdict, tell));
        }
    }
    out
}

use variant::is_made_once;

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

/// The faulting boot's processes (androidboot's phases: services,
/// zygote, server, scan), each one's end after init started them (means;
/// not after the kernel's start: boot-init's own load before init is not
/// the processes' delay), and what a variant added against its baseline: the
/// delay a prefetch caused the boot's other processes (seed 001's +2.35 s
/// with idle).
fn app_phases(report: &ExperimentReport, variants: &[&str]) -> Option<String> {
    let names = ["services", "zygote", "server", "scan"];
    let ends = |v: &str| -> Vec<Option<f64>> {
        let runs: Vec<&RunRecord> = report
            .runs
            .iter()
            .filter(|r| variant_of(r) == v && r.outcome.is_sample())
            .collect();
        names
            .iter()
            .map(|n| {
                let x: Vec<f64> = runs
                    .iter()
                    .filter_map(|r| {
                        Some(
                            r.extra["phases"][*n]["end_s"].as_f64()?
                                - r.extra["init_s"].as_f64()?,
                        )
                    })
                    .collect();
                (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
            })
            .collect()
    };
    let mut header = vec!["variant".to_string()];
    header.extend(names.iter().map(|n| format!("{n} ends after init [s] (Δ)")));
    let mut rows = vec![header];
    for v in variants {
        let e = ends(v);
        if e.iter().all(Option::is_none) {
            continue;
        }
        let b = ends(&baseline_of(v));
        let mut row = vec![v.to_string()];
        for (x, y) in e.iter().zip(&b) {
            row.push(match (x, y) {
                (Some(x), Some(y)) if baseline_of(v) != *v => format!("{x:.2} ({:+.2})", x - y),
                (Some(x), _) => format!("{x:.2}"),
                _ => "-".into(),
            });
        }
        rows.push(row);
    }
    (rows.len() > 1).then(|| {
        format!(
            "the boot's processes (faults workload), when each ended (means; Δ against the plain boot on the same scheduler):\n{}",
            align_columns(&rows)
        )
    })
}

/// The explained boots (`--explain`): per variant, where the boot's
/// processes' time went by the guest kernel's own switch-out stacks, the
/// causes of their blocked time, and the heaviest stack of the first.
fn explained(report: &ExperimentReport) -> Option<String> {
    let runs: Vec<&RunRecord> = report
        .runs
        .iter()
        .filter(|r| variant::explained(variant_of(r)).is_some())
        .collect();
    if runs.is_empty() {
        return None;
    }
    let s = |v: &serde_json::Value| v.as_f64().map_or("-".into(), |x| format!("{x:.2}"));
    let mut rows = vec![[
        "variant",
        "boot [s]",
        "on CPU [s]",
        "blocked, Σ tasks [s]",
        "D-state I/O, Σ [s]",
        "blocked in (cause: s, stalls, longest ms)",
    ]
    .map(str::to_string)
    .to_vec()];
    let mut stacks = String::new();
    for r in &runs {
        let v = variant::explained(variant_of(r)).unwrap_or("?");
        let e = &r.extra["explain"];
        if e.is_null() {
            rows.push(vec![
                v.to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                r.reason
                    .clone()
                    .or_else(|| r.extra["explain_error"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "no report".into()),
            ]);
            continue;
        }
        // Absent from a report of no stall: none.
        let causes = e["causes"].as_array().map_or(&[][..], Vec::as_slice);
        let top: Vec<String> = causes
            .iter()
            .take(3)
            .map(|c| {
                format!(
                    "{}: {:.2}, {}, {:.0}",
                    c["cause"].as_str().unwrap_or("?"),
                    c["blocked_s"].as_f64().unwrap_or(0.0),
                    c["stalls"].as_u64().unwrap_or(0),
                    c["max_ms"].as_f64().unwrap_or(0.0)
                )
            })
            .collect();
        rows.push(vec![
            v.to_string(),
            format!("{:.2}", r.duration_ns as f64 / 1e9),
            s(&e["on_cpu_s"]),
            s(&e["blocked_s"]),
            s(&e["d_io_s"]),
            top.join("; "),
        ]);
        // Each cause of at least a tenth of the blocked time, by its
        // heaviest stack.
        let blocked = e["blocked_s"].as_f64().unwrap_or(0.0);
        for c in causes
            .iter()
            .filter(|c| c["blocked_s"].as_f64().unwrap_or(0.0) >= 0.1 * blocked)
        {
            let frames: Vec<&str> = c["stack"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str())
                .collect();
            if !frames.is_empty() {
                stacks.push_str(&format!(
                    "  {v}, {}: {}\n",
                    c["cause"].as_str().unwrap_or("?"),
                    frames.join(" ← ")
                ));
            }
        }
    }
    Some(format!(
        "where the boot's processes waited (iolab explain in the guest, one boot each; not timed with the others: the tracer's cost is in its time):\n{}{}",
        align_columns(&rows),
        if stacks.is_empty() {
            String::new()
        } else {
            format!("the heaviest stack of each cause of a tenth or more of it (innermost first):\n{stacks}")
        }
    ))
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
    super::not_samples::render(report, "boots", |r| {
        format!("{} boot {}", variant_of(r), r.rep)
    })
}
