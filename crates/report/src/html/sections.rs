//! The page's sections, one function per view part.

use std::fmt::Write as _;

use super::charts::{grouped_bars, stacked_bars, Bar, GroupedBars, Point, PointKind, Stack};
use super::flame;
use super::machine::{cpu, environment, latency};
use super::svg::{esc, num};
use crate::text::ratio_ci_text as ratio_text;
use crate::view::startup::StartupView;
use crate::view::ExperimentView;

pub(super) fn section(id: &str, title: &str, inner: &str) -> String {
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
