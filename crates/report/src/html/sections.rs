//! The page's sections, one function per view part.

use std::fmt::Write as _;

use serde_json::Value;

use iolab_store::compare::{Comparison, Verdict};

use super::charts::{
    cdf_log, grouped_bars, histogram_log, over_time, stacked_bars, Bar, Dist, GroupedBars, Layer,
    Point, PointKind, Stack,
};
use super::flame;
use super::svg::{esc, num};
use crate::text::ratio_ci_text as ratio_text;
use crate::view::startup::StartupView;
use crate::view::ExperimentView;

fn section(id: &str, title: &str, inner: &str) -> String {
    format!(
        r#"<section id="{id}"><h2>{}</h2>{inner}</section>"#,
        esc(title)
    )
}

/// One experiment: every part its view has data for.
pub fn experiment(v: &ExperimentView) -> String {
    let mut s = format!(
        r#"<p class="note">{kind} · {status} · created {created}</p><h3>Reproduce</h3><pre>{cmd}</pre>"#,
        kind = esc(v.kind.as_str()),
        status = esc(&v.status),
        created = esc(&v.created),
        cmd = esc(&v.command_line),
    );
    let mut part = |name: &str, html: String| {
        let _ = write!(s, r#"<div class="part" id="e{}-{name}">{html}</div>"#, v.id);
    };
    if let Some(st) = &v.startup {
        part("startup", startup(st));
    }
    if let Some(vd) = &v.verdict {
        let mut html = verdict(vd);
        if !v.applied.is_empty() {
            html.push_str("<h3>What the kernel held</h3><table><tr><th>scheduler</th><th>workload</th><th>settings as read back</th><th>groups / disk read [MiB]</th><th>groups / disk written [MiB]</th></tr>");
            let pair = |p: Option<(u64, u64)>| {
                p.map_or("-".to_string(), |(g, d)| {
                    format!(
                        "{:.1} / {:.1}",
                        g as f64 / 1_048_576.0,
                        d as f64 / 1_048_576.0
                    )
                })
            };
            for c in &v.applied {
                let _ = write!(
                    html,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&c.scheduler),
                    esc(&c.workload),
                    esc(&crate::text::verdict::applied_text(c)),
                    pair(c.read_bytes),
                    pair(c.write_bytes)
                );
            }
            html.push_str("</table>");
        }
        part("verdict", html);
    }
    if !v.prefetch.is_empty() {
        part("prefetch", prefetch(v));
    }
    if let Some(m) = &v.main_thread {
        part("main-thread", main_thread(m));
    }
    if !v.causes.is_empty() {
        part("causes", causes(v));
    }
    if !v.flames.is_empty() {
        part("flames", flames(v));
    }
    if v.kind == iolab_results::ExperimentKind::Boot {
        if let Some(b) = super::boot::part(v.stored) {
            part("boot", b);
        }
    }
    if let Some(t) = &v.sweep {
        part("sweep", sweep(t));
    }
    if let Some(t) = &v.max {
        part("max", max(t));
    }
    if !v.latency.is_empty() {
        part("latency", latency(v));
    }
    if !v.cpu.is_empty() {
        part("cpu", cpu(v));
    }
    if let Some(o) = &v.observed {
        part("observed", observed(o));
    }
    if !v.not_samples.is_empty() {
        let mut n = String::from("<h3>Runs that are not samples</h3><table><tr><th>cell</th><th>rep</th><th>outcome</th><th>reason</th></tr>");
        for x in &v.not_samples {
            let _ = write!(
                n,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&x.cell),
                x.rep,
                esc(&x.outcome),
                esc(&x.reason)
            );
        }
        n.push_str("</table>");
        part("not-samples", n);
    }
    part("environment", environment(v));
    section(
        &format!("e{}", v.id),
        &format!("Experiment {} ({})", v.id, v.kind),
        &s,
    )
}

/// The plan's verdict: per workload, start-up time against the
/// background's throughput, one dot per scheduler × point (ringed: the
/// Pareto front), and the ranked table.
fn verdict(vd: &crate::view::verdict::VerdictView) -> String {
    use super::charts::{scatter, ScatterPoint};
    let mut s = format!(
        "<h3>Verdict</h3><p class=\"note\">baseline: {}. Down and to the right is better: a faster start-up, more left to the background.</p>",
        esc(&vd.baseline)
    );
    for (what, lines) in [
        ("Where the recipe's values come from", &vd.sources),
        (
            "Settings that do nothing there, run as the point without them",
            &vd.inert,
        ),
    ] {
        if !lines.is_empty() {
            let _ = write!(s, "<p class=\"note\">{what}:</p><ul>");
            for l in lines {
                let _ = write!(s, "<li>{}</li>", esc(l));
            }
            s.push_str("</ul>");
        }
    }
    for t in &vd.tables {
        let series = crate::view::first_seen(t.rows.iter().map(|r| r.scheduler.as_str()));
        let pts: Vec<ScatterPoint> = t
            .rows
            .iter()
            .filter_map(|r| {
                Some(ScatterPoint {
                    series: r.scheduler.clone(),
                    x: r.bg_bytes_per_s? / 1_048_576.0,
                    y: r.startup_s?,
                    y_err: r.startup_ci95_s,
                    marked: r.pareto,
                    label: format!("#{}", r.rank),
                    title: format!(
                        "#{} {} @ {}: {:.3} s, background at the disk {:.1} MiB/s",
                        r.rank,
                        r.scheduler,
                        r.point,
                        r.startup_s?,
                        r.bg_bytes_per_s? / 1_048_576.0
                    ),
                })
            })
            .collect();
        let _ = write!(
            s,
            "<h4>under {}</h4>{}",
            esc(&t.workload),
            scatter(
                &format!(
                    "start-up time against background throughput under {}",
                    t.workload
                ),
                "background at the disk [MiB/s] (diskstats over the cell)",
                "start-up [s]",
                &series,
                &pts
            )
        );
        s.push_str("<table><tr><th>rank</th><th>scheduler</th><th>point</th><th>start-up [s]</th><th>×idle</th><th>gain [s]</th><th>p (Holm)</th><th>bg at disk [MiB/s]</th><th>load's own [MiB/s]</th><th>bg cost</th><th>writes load/target</th><th>front</th></tr>");
        for r in &t.rows {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                r.rank,
                esc(&r.scheduler),
                esc(&r.point),
                r.startup_s.map_or("-".into(), |m| format!("{m:.3}")),
                r.slowdown.as_ref().map_or("-".into(), |x| format!("{:.2}", x.value)),
                if r.baseline {
                    "baseline".to_string()
                } else {
                    r.gain_s.map_or("-".into(), |g| {
                        format!("{g:+.3}{}", if r.distinguishable { "" } else { " ≈" })
                    })
                },
                r.p_holm.map_or("-".into(), |p| format!("{p:.3}")),
                r.disk_bytes_per_s
                    .map_or("-".into(), |d| format!("{:.1}", d / 1_048_576.0)),
                r.load_bytes_per_s.map_or("-".into(), |l| format!(
                    "{:.1}{}",
                    l / 1_048_576.0,
                    if r.cache_filling { " (page cache filling)" } else { "" }
                )),
                r.bg_cost.map_or("-".into(), |c| format!("{:+.0}%", c * 100.0)),
                match (r.load_write_share, r.target_write_share) {
                    (Some(l), Some(t)) => format!("{:.0}% / {:.0}%", l * 100.0, t * 100.0),
                    _ => "-".into(),
                },
                if r.pareto { "*" } else { "" }
            );
        }
        s.push_str("</table>");
        let _ = write!(
            s,
            "<p class=\"note\">{} comparisons with the baseline: told apart (no ≈) by Holm's adjusted p &lt; 0.05; the cost is the disk's rate against the baseline's.</p>",
            t.family
        );
        if let Some((a, b)) = &t.best_two_alike {
            let _ = write!(
                s,
                "<p class=\"note\">The two best are not distinguishable at 95 %: {} and {}; the first costs the background less.</p>",
                esc(a),
                esc(b)
            );
        }
    }
    s
}

fn startup(st: &StartupView) -> String {
    let mut s = String::new();
    // A plan's points stay apart: `WORKLOAD @ POINT` groups.
    let label = |c: &iolab_store::CellReport| {
        crate::view::plain_workload(&c.workload, c.variant.as_deref())
            .unwrap_or_else(|| c.workload.clone())
    };
    let labels: Vec<String> = st.cells.iter().map(|c| label(&c.cell)).collect();
    let labels = crate::view::first_seen(labels.iter().map(String::as_str));
    for target in &st.targets {
        let mut groups = Vec::new();
        let mut timeout: f64 = 0.0;
        for w in &labels {
            let mut bars = Vec::new();
            for sc in &st.schedulers {
                let Some(c) = st.cells.iter().find(|c| {
                    c.cell.target == *target && label(&c.cell) == *w && c.cell.scheduler == *sc
                }) else {
                    continue;
                };
                let cell = &c.cell;
                timeout = timeout.max(cell.timeout);
                let ci = cell
                    .stats
                    .ci95
                    .as_ref()
                    .map(|ci| (ci.low.max(0.0), ci.high));
                let lb = if cell.stats.mean_is_lower_bound {
                    "≥ "
                } else {
                    ""
                };
                let mut title = format!(
                    "{sc} / {w}: mean {lb}{} s over {} starts",
                    cell.stats.mean.map_or("-".into(), num),
                    cell.stats.n
                );
                if let Some(ci) = &cell.stats.ci95 {
                    let _ = write!(title, ", 95 % CI [{}, {}]", num(ci.low), num(ci.high));
                }
                // min / median / max, a bound marked ≥ (a timed-out start).
                let v = |x: Option<f64>, b: bool| {
                    x.map_or("-".to_string(), |x| {
                        format!("{}{}", if b { "≥ " } else { "" }, num(x))
                    })
                };
                let st = &cell.stats;
                let _ = write!(
                    title,
                    "; min {}, median {}, max {} s",
                    v(st.min, st.min_is_lower_bound),
                    v(st.median, st.median_is_lower_bound),
                    v(st.max, st.max_is_lower_bound)
                );
                if cell.stats.censored > 0 {
                    let _ = write!(title, ", {} timed out", cell.stats.censored);
                }
                if cell.failed + cell.invalid > 0 {
                    let _ = write!(title, ", {} failed, {} invalid", cell.failed, cell.invalid);
                }
                bars.push(Bar {
                    series: sc.clone(),
                    value: cell.stats.mean,
                    lower_bound: cell.stats.mean_is_lower_bound,
                    whisker: ci,
                    points: c
                        .starts
                        .iter()
                        .filter(|x| x.outcome != "invalid")
                        .map(|x| Point {
                            value: x.seconds,
                            kind: match x.outcome.as_str() {
                                "censored" => PointKind::Censored,
                                "failed" => PointKind::Failed,
                                _ => PointKind::Exact,
                            },
                            title: format!("rep {}: {} s ({})", x.rep, num(x.seconds), x.outcome),
                        })
                        .collect(),
                    title,
                    data: vec![
                        ("cell", format!("{sc}/{w}")),
                        (
                            "mean",
                            cell.stats.mean.map_or(String::new(), |m| m.to_string()),
                        ),
                        ("n", cell.stats.n.to_string()),
                        (
                            "min",
                            cell.stats.min.map_or(String::new(), |m| m.to_string()),
                        ),
                        (
                            "median",
                            cell.stats.median.map_or(String::new(), |m| m.to_string()),
                        ),
                        (
                            "max",
                            cell.stats.max.map_or(String::new(), |m| m.to_string()),
                        ),
                    ],
                });
            }
            groups.push((w.clone(), bars));
        }
        let chart = grouped_bars(&GroupedBars {
            title: format!("start-up time of {target}"),
            y_label: "start-up time [s]".into(),
            series: st.schedulers.clone(),
            groups,
            reference: (timeout > 0.0).then(|| (timeout, format!("timeout {} s", num(timeout)))),
        });
        let _ = write!(
            s,
            r#"<h3>Start-up time per scheduler × background workload</h3><p class="note">{}: bar = mean, whisker = 95 % CI of the mean (Student t), dot = one start, arrow = a start cut off at the timeout (the mean is then a lower bound, drawn pale), × = a failed start (not a sample).</p><div class="charts">{chart}</div>"#,
            esc(target)
        );
    }
    s
}

fn prefetch(v: &ExperimentView) -> String {
    let series = vec!["without prefetch".to_string(), "with prefetch".to_string()];
    let groups = v
        .prefetch
        .iter()
        .map(|p| {
            let bar = |name: &str, c: &iolab_store::CellReport| Bar {
                series: name.to_string(),
                value: c.stats.mean,
                lower_bound: c.stats.mean_is_lower_bound,
                whisker: c.stats.ci95.as_ref().map(|ci| (ci.low.max(0.0), ci.high)),
                points: c
                    .times
                    .iter()
                    .map(|t| Point {
                        value: *t,
                        kind: PointKind::Exact,
                        title: format!("{} s", num(*t)),
                    })
                    .collect(),
                title: format!("{name}: mean {} s", c.stats.mean.map_or("-".into(), num)),
                data: vec![
                    ("cell", format!("{}/{}/{name}", c.scheduler, c.workload)),
                    (
                        "mean",
                        c.stats.mean.map_or(String::new(), |m| m.to_string()),
                    ),
                ],
            };
            (
                format!("{} {} ({})", p.with.scheduler, p.with.workload, p.mode),
                vec![bar(&series[0], &p.without), bar(&series[1], &p.with)],
            )
        })
        .collect();
    let chart = grouped_bars(&GroupedBars {
        title: "prefetch".into(),
        y_label: "start-up time [s]".into(),
        series,
        groups,
        reference: None,
    });
    let mut rows = String::new();
    for p in &v.prefetch {
        let _ = write!(
            rows,
            "<tr><td>{} {}</td><td>{}</td><td class=num>{}</td><td class=num>{}</td><td>{}</td><td class=num>{}</td><td class=num>{}</td></tr>",
            esc(&p.with.scheduler),
            esc(&p.with.workload),
            esc(&p.mode),
            p.without.stats.mean.map_or("-".into(), num),
            p.with.stats.mean.map_or("-".into(), num),
            p.ratio.as_ref().map_or("-".into(), ratio_text),
            p.prefetch_s.map_or("-".into(), num),
            p.residency_percent.map_or("-".into(), |r| format!("{r:.0} %")),
        );
    }
    format!(
        r#"<h3>Prefetch: start-up with and without the recorded list</h3><div class="charts">{chart}</div><table><tr><th>cell</th><th>mode</th><th>without [s]</th><th>with [s]</th><th>with / without (95 % CI)</th><th>prefetch took [s]</th><th>resident after</th></tr>{rows}</table>"#
    )
}

fn causes(v: &ExperimentView) -> String {
    // Layers: causes by their total over every cell, the largest eight
    // named, the rest summed.
    let mut totals: Vec<(String, f64)> = Vec::new();
    for c in &v.causes {
        for (k, s) in &c.causes {
            match totals.iter_mut().find(|t| t.0 == *k) {
                Some(t) => t.1 += s,
                None => totals.push((k.clone(), *s)),
            }
        }
    }
    totals.sort_by(|a, b| b.1.total_cmp(&a.1));
    let named: Vec<String> = totals.iter().take(8).map(|t| t.0.clone()).collect();
    let mut layers = named.clone();
    if totals.len() > 8 {
        layers.push("other causes".into());
    }
    let stacks: Vec<Stack> = v
        .causes
        .iter()
        .map(|c| {
            let mut segs: Vec<(String, f64)> = named
                .iter()
                .map(|n| {
                    (
                        n.clone(),
                        c.causes.iter().find(|x| x.0 == *n).map_or(0.0, |x| x.1),
                    )
                })
                .collect();
            let rest: f64 = c
                .causes
                .iter()
                .filter(|x| !named.contains(&x.0))
                .map(|x| x.1)
                .sum();
            if totals.len() > 8 {
                segs.push(("other causes".into(), rest));
            }
            Stack {
                label: format!("{} {}", c.scheduler, c.workload),
                segments: segs,
            }
        })
        .collect();
    let chart = stacked_bars(
        "where the time of the starts went",
        "mean time per start [s]",
        &layers,
        &stacks,
    );
    format!(
        r#"<h3>Where the time went (iolab explain)</h3><p class="note">Mean per start over the start's tasks: on-CPU, runnable, untraced and every blocking cause that is not the app waiting on purpose (children, timers, input). Compare a loaded cell's bar with its scheduler's idle bar.</p><div class="charts">{chart}</div>"#
    )
}

/// The main thread's states per cell, as stacked bars of the mean start,
/// and the slow-start reasons each cell's starts were flagged with.
fn main_thread(m: &crate::view::main_thread::MainThreadView) -> String {
    let mut layers = m.states.clone();
    layers.push("untraced / not yet forked".into());
    let stacks: Vec<Stack> = m
        .cells
        .iter()
        .map(|c| {
            let mut segments: Vec<(String, f64)> = m
                .states
                .iter()
                .cloned()
                .zip(c.mean_s.iter().copied())
                .collect();
            segments.push((layers[layers.len() - 1].clone(), c.other_s));
            Stack {
                label: match &c.variant {
                    Some(v) => format!("{} {} +{v}", c.scheduler, c.workload),
                    None => format!("{} {}", c.scheduler, c.workload),
                },
                segments,
            }
        })
        .collect();
    let chart = stacked_bars(
        "the main thread during the start, by state",
        "mean time per start [s]",
        &layers,
        &stacks,
    );
    let mut flags = String::new();
    for c in &m.cells {
        for (r, k) in &c.reasons {
            let _ = write!(
                flags,
                "<tr><td>{} {}</td><td>{}</td><td>{k} of {}</td></tr>",
                esc(&c.scheduler),
                esc(&c.workload),
                esc(r),
                c.n
            );
        }
    }
    let flags = if flags.is_empty() {
        "<p class=\"note\">No start crossed a slow-start threshold.</p>".to_string()
    } else {
        format!("<table><tr><th>cell</th><th>slow-start reason (Perfetto's threshold)</th><th>starts</th></tr>{flags}</table>")
    };
    format!(
        r#"<h3>The main thread by state</h3><p class="note">Mean per start, over the start's measured time: running, runnable (waiting for a CPU), uninterruptible sleep waiting for I/O (in io_schedule: the kernel's in_iowait, what delay accounting counts as blkio) or for anything else, and interruptible sleep. Perfetto's android_startup main_thread_by_task_state, from iolab's own trace of the thread.</p><div class="charts">{chart}</div>{flags}"#
    )
}

fn flames(v: &ExperimentView) -> String {
    let mut s = String::from(
        r#"<h3>Flame graphs of blocked time</h3><p class="note">Kernel stacks the starts slept in, summed over the cell's starts; the root frame is the cause. Click to zoom, Ctrl-F to search.</p>"#,
    );
    for (i, f) in v.flames.iter().enumerate() {
        let title = format!(
            "{} {}: blocked time over {} starts",
            f.scheduler, f.workload, f.n
        );
        if let Some(frame) = flame::iframe(&title, &f.folded) {
            let open = if i == 0 { " open" } else { "" };
            let _ = write!(
                s,
                "<details{open}><summary>{}</summary>{frame}</details>",
                esc(&title)
            );
        }
    }
    s
}

type Pick<C> = fn(&C) -> &iolab_stats::Summary;

/// One chart of medians per group (pattern, thread count) and scheduler;
/// `find(group, scheduler)` gives the cell and its name.
fn median_chart<'c, G, C: 'c>(
    title: String,
    schedulers: &[String],
    groups: &[G],
    group_label: impl Fn(&G) -> String,
    find: impl Fn(&G, &str) -> Option<(&'c C, String)>,
    pick: Pick<C>,
) -> String {
    let groups = groups
        .iter()
        .map(|g| {
            let bars = schedulers
                .iter()
                .filter_map(|sc| {
                    let (c, name) = find(g, sc)?;
                    Some(summary_bar(sc, &name, pick(c)))
                })
                .collect();
            (group_label(g), bars)
        })
        .collect();
    grouped_bars(&GroupedBars {
        y_label: title.clone(),
        title,
        series: schedulers.to_vec(),
        groups,
        reference: None,
    })
}

fn sweep(t: &crate::view::sweep::SweepTable) -> String {
    use crate::view::sweep::SweepCell;
    let mut s = String::from("<h3>Sweep: throughput and p99 latency per pattern × scheduler</h3><p class=\"note\">bar = median over repetitions, whisker = min–max.</p><div class=\"charts\">");
    let picks: [(Pick<SweepCell>, &str); 2] = [
        (|c| &c.bw_mib_s, "throughput [MiB/s]"),
        (|c| &c.clat_p99_ms, "completion latency p99 [ms]"),
    ];
    for kind in &t.kinds {
        for (pick, label) in picks {
            s.push_str(&median_chart(
                format!("{} {label}", kind.label()),
                &t.schedulers,
                &t.patterns,
                |p| p.label(),
                |p, sc| t.cell(*kind, *p, sc).map(|c| (c, c.workload.clone())),
                pick,
            ));
        }
    }
    s.push_str("</div>");
    s
}

fn max(t: &crate::view::max::MaxTable) -> String {
    use crate::view::max::MaxCell;
    let mut s = String::from("<h3>Maximum sustainable throughput (sweep --max)</h3><p class=\"note\">bar = median over repetitions, whisker = min–max.</p><div class=\"charts\">");
    let picks: [(Pick<MaxCell>, &str); 2] = [
        (|c| &c.iops, "IOPS"),
        (|c| &c.kernel_us_per_io, "kernel CPU per I/O [µs]"),
    ];
    for kind in &t.kinds {
        for (pick, label) in picks {
            s.push_str(&median_chart(
                format!("{} {label}", kind.label()),
                &t.schedulers,
                &t.threads,
                |n| format!("{n} thread{}", if *n == 1 { "" } else { "s" }),
                |n, sc| {
                    t.cell(*kind, *n, sc)
                        .map(|c| (c, format!("{}-{n}j", kind.label())))
                },
                pick,
            ));
        }
    }
    s.push_str("</div>");
    s
}

fn summary_bar(series: &str, cell: &str, st: &iolab_stats::Summary) -> Bar {
    Bar {
        series: series.to_string(),
        value: st.median,
        lower_bound: false,
        whisker: st.min.zip(st.max),
        points: Vec::new(),
        title: format!(
            "{series} {cell}: median {} (min {}, max {}, n {})",
            st.median.map_or("-".into(), num),
            st.min.map_or("-".into(), num),
            st.max.map_or("-".into(), num),
            st.n
        ),
        data: vec![
            ("cell", format!("{series}/{cell}")),
            ("median", st.median.map_or(String::new(), |m| m.to_string())),
        ],
    }
}

fn latency(v: &ExperimentView) -> String {
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
        let what = format!("{} {}", l.workload, op_name(&l.op));
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

fn cpu(v: &ExperimentView) -> String {
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

fn environment(v: &ExperimentView) -> String {
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

/// The collectors' headline numbers per cell (mean per start).
fn observed(o: &crate::view::observed::ObservedView) -> String {
    let mut t = String::from("<h3>Observed during the runs (mean per run)</h3><table><tr><th>scheduler</th><th>workload</th>");
    for c in &o.columns {
        let _ = write!(t, "<th>{} {}</th>", esc(&c.collector), esc(&c.field));
    }
    t.push_str("</tr>");
    for c in &o.cells {
        let _ = write!(
            t,
            "<tr><td>{}</td><td>{}{}</td>",
            esc(&c.scheduler),
            esc(&c.workload),
            c.variant
                .as_deref()
                .map_or_else(String::new, |v| format!(" +{}", esc(v)))
        );
        for m in &c.means {
            let _ = write!(t, "<td>{}</td>", m.map_or_else(|| "-".to_string(), num));
        }
        t.push_str("</tr>");
    }
    t.push_str("</table>");
    t
}
