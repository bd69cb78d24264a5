//! The report's charts, each a function from data to one inline SVG.
//! Every mark carries a `<title>` with its exact number and `data-*`
//! attributes (the test reads them back against `results show --json`).

use super::svg::{decades, esc, nice_max, num, tick, ticks, Linear, Log, Mark, Svg};

const W: f64 = 760.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 40.0;
const PLOT_H: f64 = 240.0;
const BOTTOM: f64 = 56.0;

/// Colours by series name: the schedulers keep theirs across every chart.
pub fn colour(name: &str, index: usize) -> &'static str {
    match name {
        "none" => "#4e79a7",
        "mq-deadline" => "#f28e2b",
        "kyber" => "#59a14f",
        "bfq" => "#e15759",
        _ => {
            const P: [&str; 10] = [
                "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#4e79a7",
                "#f28e2b", "#59a14f", "#e15759",
            ];
            P[index % P.len()]
        }
    }
}

fn legend(svg: &mut Svg, names: &[String], y: f64) {
    let mut x = LEFT;
    for (i, n) in names.iter().enumerate() {
        svg.rect(
            x,
            y - 10.0,
            10.0,
            10.0,
            &Mark {
                fill: colour(n, i),
                ..Default::default()
            },
        );
        svg.text(x + 14.0, y, "start", "legend", n);
        x += 24.0 + 7.0 * n.chars().count() as f64;
    }
}

fn y_axis_linear(svg: &mut Svg, y: &Linear, top: f64, label: &str, w: f64) {
    for t in ticks(0.0, top, 5) {
        let py = y.at(t);
        svg.line(
            LEFT,
            py,
            w - RIGHT,
            py,
            &Mark {
                class: "grid",
                ..Default::default()
            },
        );
        svg.text(LEFT - 6.0, py + 4.0, "end", "tick", &tick(t));
    }
    svg.vtext(14.0, TOP + PLOT_H / 2.0, "axis", label);
}

/// How a sample point is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// A measured value: a dot.
    Exact,
    /// Cut off at the timeout: an arrow up from the value (a lower bound).
    Censored,
    /// The target failed: a cross on the baseline (no value).
    Failed,
}

/// One sample drawn over its bar.
#[derive(Debug, Clone)]
pub struct Point {
    /// Its value (for failed starts, ignored).
    pub value: f64,
    /// How it is drawn.
    pub kind: PointKind,
    /// Tooltip.
    pub title: String,
}

/// One bar of a group.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Series (colour and legend), e.g. the scheduler.
    pub series: String,
    /// Height; `None` when there is nothing to draw (every start failed).
    pub value: Option<f64>,
    /// The height is a lower bound (censored samples): drawn hatched.
    pub lower_bound: bool,
    /// Whisker ends (95 % CI, or min–max).
    pub whisker: Option<(f64, f64)>,
    /// The samples, drawn as dots, arrows or crosses.
    pub points: Vec<Point>,
    /// Tooltip of the bar.
    pub title: String,
    /// `data-*` of the bar.
    pub data: Vec<(&'static str, String)>,
}

/// Bars grouped along x (e.g. workloads), one colour per series.
#[derive(Debug, Clone)]
pub struct GroupedBars {
    /// Accessible name.
    pub title: String,
    /// y axis label with unit.
    pub y_label: String,
    /// Series in legend order.
    pub series: Vec<String>,
    /// (group label, bars).
    pub groups: Vec<(String, Vec<Bar>)>,
    /// A dashed reference line (e.g. the timeout) and its label.
    pub reference: Option<(f64, String)>,
}

/// Grouped bars with whiskers, dots, censored arrows and failure crosses.
pub fn grouped_bars(c: &GroupedBars) -> String {
    let h = TOP + PLOT_H + BOTTOM;
    let mut svg = Svg::new(W, h);
    let mut max: f64 = 0.0;
    for (_, bars) in &c.groups {
        for b in bars {
            max = max.max(b.value.unwrap_or(0.0));
            if let Some((_, hi)) = b.whisker {
                max = max.max(hi);
            }
            for p in &b.points {
                max = max.max(p.value);
            }
        }
    }
    if let Some((r, _)) = &c.reference {
        max = max.max(*r);
    }
    let top = nice_max(max * 1.05);
    let y = Linear::new(0.0, top, TOP + PLOT_H, TOP);
    y_axis_linear(&mut svg, &y, top, &c.y_label, W);
    legend(&mut svg, &c.series, 18.0);
    let n = c.groups.len().max(1) as f64;
    let gw = (W - LEFT - RIGHT) / n;
    let ns = c.series.len().max(1) as f64;
    let bw = (gw * 0.8 / ns).min(48.0);
    for (gi, (label, bars)) in c.groups.iter().enumerate() {
        let gx = LEFT + gw * gi as f64;
        let x0 = gx + (gw - bw * ns) / 2.0;
        svg.text(gx + gw / 2.0, TOP + PLOT_H + 18.0, "middle", "tick", label);
        for b in bars {
            let si = c.series.iter().position(|s| *s == b.series).unwrap_or(0);
            let x = x0 + bw * si as f64;
            let fill = colour(&b.series, si);
            if let Some(v) = b.value {
                svg.rect(
                    x + 1.0,
                    y.at(v),
                    bw - 2.0,
                    y.at(0.0) - y.at(v),
                    &Mark {
                        class: if b.lower_bound {
                            "bar lower-bound"
                        } else {
                            "bar"
                        },
                        fill,
                        title: b.title.clone(),
                        data: b.data.clone(),
                        ..Default::default()
                    },
                );
            }
            let cx = x + bw / 2.0;
            if let Some((lo, hi)) = b.whisker {
                let m = Mark {
                    class: "whisker",
                    stroke: "#222",
                    data: vec![("low", lo.to_string()), ("high", hi.to_string())],
                    ..Default::default()
                };
                svg.line(cx, y.at(lo), cx, y.at(hi), &m);
                let plain = Mark {
                    stroke: "#222",
                    ..Default::default()
                };
                svg.line(cx - 5.0, y.at(lo), cx + 5.0, y.at(lo), &plain);
                svg.line(cx - 5.0, y.at(hi), cx + 5.0, y.at(hi), &plain);
            }
            for (k, p) in b.points.iter().enumerate() {
                // Spread the dots across the bar so equal values stay visible.
                let spread = if b.points.len() > 1 {
                    (k as f64 / (b.points.len() - 1) as f64 - 0.5) * (bw * 0.5)
                } else {
                    0.0
                };
                let px = cx + spread;
                match p.kind {
                    PointKind::Exact => svg.circle(
                        px,
                        y.at(p.value),
                        3.0,
                        &Mark {
                            class: "dot",
                            title: p.title.clone(),
                            data: vec![("value", p.value.to_string())],
                            ..Default::default()
                        },
                    ),
                    PointKind::Censored => {
                        let py = y.at(p.value);
                        svg.path(
                            &format!(
                                "M{px:.2},{:.2} L{px:.2},{:.2} M{:.2},{:.2} L{px:.2},{:.2} L{:.2},{:.2}",
                                py,
                                py - 14.0,
                                px - 4.0,
                                py - 9.0,
                                py - 14.0,
                                px + 4.0,
                                py - 9.0
                            ),
                            &Mark {
                                class: "censored",
                                title: p.title.clone(),
                                data: vec![("value", p.value.to_string())],
                                ..Default::default()
                            },
                        );
                    }
                    PointKind::Failed => {
                        let py = y.at(0.0) - 6.0;
                        svg.path(
                            &format!(
                                "M{:.2},{:.2} L{:.2},{:.2} M{:.2},{:.2} L{:.2},{:.2}",
                                px - 4.0,
                                py - 4.0,
                                px + 4.0,
                                py + 4.0,
                                px - 4.0,
                                py + 4.0,
                                px + 4.0,
                                py - 4.0
                            ),
                            &Mark {
                                class: "failed",
                                title: p.title.clone(),
                                ..Default::default()
                            },
                        );
                    }
                }
            }
        }
    }
    if let Some((r, label)) = &c.reference {
        let py = y.at(*r);
        svg.line(
            LEFT,
            py,
            W - RIGHT,
            py,
            &Mark {
                class: "reference",
                ..Default::default()
            },
        );
        // At the left end: censored arrows rise above the line on the right.
        svg.text(LEFT + 4.0, py - 4.0, "start", "tick", label);
    }
    svg.line(
        LEFT,
        y.at(0.0),
        W - RIGHT,
        y.at(0.0),
        &Mark {
            stroke: "#444",
            ..Default::default()
        },
    );
    svg.finish(&c.title)
}

/// One stacked bar.
#[derive(Debug, Clone)]
pub struct Stack {
    /// Label under the bar.
    pub label: String,
    /// (layer, value) from the bottom up.
    pub segments: Vec<(String, f64)>,
}

/// Stacked bars, layers coloured in `layers` order.
pub fn stacked_bars(title: &str, y_label: &str, layers: &[String], stacks: &[Stack]) -> String {
    let h = TOP + PLOT_H + BOTTOM + 8.0 + 16.0 * (layers.len() as f64 / 4.0).ceil();
    // Wider with many bars so a label like "mq-deadline" fits under its own.
    let w = W.max(LEFT + RIGHT + 68.0 * stacks.len() as f64);
    let mut svg = Svg::new(w, h);
    let max = stacks
        .iter()
        .map(|s| s.segments.iter().map(|x| x.1.max(0.0)).sum::<f64>())
        .fold(0.0, f64::max);
    let top = nice_max(max);
    let y = Linear::new(0.0, top, TOP + PLOT_H, TOP);
    y_axis_linear(&mut svg, &y, top, y_label, w);
    let n = stacks.len().max(1) as f64;
    let gw = (w - LEFT - RIGHT) / n;
    let bw = (gw * 0.7).min(60.0);
    for (i, s) in stacks.iter().enumerate() {
        let x = LEFT + gw * i as f64 + (gw - bw) / 2.0;
        let mut base = 0.0;
        for (layer, v) in &s.segments {
            let v = v.max(0.0);
            let li = layers.iter().position(|l| l == layer).unwrap_or(0);
            svg.rect(
                x,
                y.at(base + v),
                bw,
                y.at(base) - y.at(base + v),
                &Mark {
                    class: "segment",
                    fill: colour(layer, li + 4),
                    title: format!("{}: {layer} {}", s.label, num(v)),
                    data: vec![
                        ("stack", s.label.clone()),
                        ("layer", layer.clone()),
                        ("value", v.to_string()),
                    ],
                    ..Default::default()
                },
            );
            base += v;
        }
        // "scheduler workload" on two lines: sixteen bars fit side by side.
        let (l1, l2) = s.label.split_once(' ').unwrap_or((&s.label, ""));
        svg.text(
            x + bw / 2.0,
            TOP + PLOT_H + 14.0,
            "middle",
            "tick small",
            l1,
        );
        svg.text(
            x + bw / 2.0,
            TOP + PLOT_H + 26.0,
            "middle",
            "tick small",
            l2,
        );
    }
    // Legend under the plot, four per line.
    for (i, l) in layers.iter().enumerate() {
        let (row, col) = (i / 4, i % 4);
        let lx = LEFT + col as f64 * 170.0;
        let ly = TOP + PLOT_H + 46.0 + row as f64 * 16.0;
        svg.rect(
            lx,
            ly - 10.0,
            10.0,
            10.0,
            &Mark {
                fill: colour(l, i + 4),
                ..Default::default()
            },
        );
        svg.text(lx + 14.0, ly, "start", "legend small", l);
    }
    svg.finish(title)
}

/// A latency distribution: buckets `[low, high)` in µs with counts.
#[derive(Debug, Clone)]
pub struct Dist {
    /// Series name.
    pub name: String,
    /// (low µs, high µs, count).
    pub buckets: Vec<(f64, f64, u64)>,
}

fn dist_range(dists: &[Dist]) -> (f64, f64) {
    let lo = dists
        .iter()
        .flat_map(|d| d.buckets.iter().filter(|b| b.2 > 0).map(|b| b.0.max(1.0)))
        .fold(f64::INFINITY, f64::min);
    let hi = dists
        .iter()
        .flat_map(|d| d.buckets.iter().filter(|b| b.2 > 0).map(|b| b.1))
        .fold(0.0, f64::max);
    if lo.is_finite() && hi > lo {
        (lo, hi)
    } else {
        (1.0, 10.0)
    }
}

fn x_axis_log(svg: &mut Svg, x: &Log, lo: f64, hi: f64, label: &str) {
    for d in decades(lo, hi) {
        let px = x.at(d);
        if !(LEFT - 0.5..=W - RIGHT + 0.5).contains(&px) {
            continue;
        }
        svg.line(
            px,
            TOP,
            px,
            TOP + PLOT_H,
            &Mark {
                class: "grid",
                ..Default::default()
            },
        );
        let text = if d >= 1000.0 {
            format!("{} ms", num(d / 1000.0))
        } else {
            format!("{} µs", num(d))
        };
        svg.text(px, TOP + PLOT_H + 16.0, "middle", "tick", &text);
    }
    svg.text(
        (LEFT + W - RIGHT) / 2.0,
        TOP + PLOT_H + 36.0,
        "middle",
        "axis",
        label,
    );
}

/// Share of requests per log2 bucket, one step line per series, log x.
pub fn histogram_log(title: &str, dists: &[Dist]) -> String {
    dist_chart(title, dists, false)
}

/// Cumulative share of requests at each bucket's upper edge, log x.
pub fn cdf_log(title: &str, dists: &[Dist]) -> String {
    dist_chart(title, dists, true)
}

fn dist_chart(title: &str, dists: &[Dist], cumulative: bool) -> String {
    let mut svg = Svg::new(W, TOP + PLOT_H + BOTTOM);
    let (lo, hi) = dist_range(dists);
    let x = Log::new(decades(lo, hi)[0].max(lo / 2.0), hi, LEFT, W - RIGHT);
    let shares: Vec<Vec<(f64, f64, f64)>> = dists
        .iter()
        .map(|d| {
            let total: u64 = d.buckets.iter().map(|b| b.2).sum();
            let mut acc = 0u64;
            d.buckets
                .iter()
                .map(|b| {
                    acc += b.2;
                    let v = if cumulative { acc } else { b.2 };
                    (b.0, b.1, 100.0 * v as f64 / total.max(1) as f64)
                })
                .collect()
        })
        .collect();
    let top = if cumulative {
        100.0
    } else {
        nice_max(shares.iter().flatten().map(|s| s.2).fold(0.0, f64::max))
    };
    let y = Linear::new(0.0, top, TOP + PLOT_H, TOP);
    y_axis_linear(
        &mut svg,
        &y,
        top,
        if cumulative {
            "requests ≤ latency [%]"
        } else {
            "requests [%]"
        },
        W,
    );
    x_axis_log(
        &mut svg,
        &x,
        lo,
        hi,
        "latency (issue → complete), log scale",
    );
    let names: Vec<String> = dists.iter().map(|d| d.name.clone()).collect();
    legend(&mut svg, &names, 18.0);
    for (i, (d, s)) in dists.iter().zip(&shares).enumerate() {
        let mut p = String::new();
        for (k, (l, h, v)) in s.iter().enumerate() {
            let (xl, xh, yv) = (x.at(l.max(lo / 2.0)), x.at(*h), y.at(*v));
            if cumulative {
                let _ = std::fmt::Write::write_fmt(
                    &mut p,
                    format_args!("{}{xh:.2},{yv:.2} ", if k == 0 { "M" } else { "L" }),
                );
            } else {
                let _ = std::fmt::Write::write_fmt(
                    &mut p,
                    format_args!(
                        "{}{xl:.2},{:.2} L{xl:.2},{yv:.2} L{xh:.2},{yv:.2} L{xh:.2},{:.2} ",
                        if k == 0 { "M" } else { "L" },
                        y.at(0.0),
                        y.at(0.0)
                    ),
                );
            }
        }
        let total: u64 = d.buckets.iter().map(|b| b.2).sum();
        svg.path(
            &p,
            &Mark {
                class: "series",
                stroke: colour(&d.name, i),
                title: format!("{}: {total} requests", d.name),
                data: vec![("series", d.name.clone()), ("count", total.to_string())],
                ..Default::default()
            },
        );
    }
    svg.finish(title)
}

/// A time series layer or line.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Name (legend).
    pub name: String,
    /// One value per time point.
    pub values: Vec<f64>,
}

/// Layers stacked over time (`stacked`), or drawn as lines.
pub fn over_time(
    title: &str,
    y_label: &str,
    t_s: &[f64],
    layers: &[Layer],
    stacked: bool,
    y_max: Option<f64>,
) -> String {
    let mut svg = Svg::new(W, TOP + PLOT_H + BOTTOM);
    let t_end = t_s.last().copied().unwrap_or(1.0).max(1e-3);
    let x = Linear::new(0.0, t_end, LEFT, W - RIGHT);
    let mut sums = vec![0.0; t_s.len()];
    let tops: Vec<Vec<f64>> = layers
        .iter()
        .map(|l| {
            if stacked {
                for (s, v) in sums.iter_mut().zip(&l.values) {
                    *s += v;
                }
                sums.clone()
            } else {
                l.values.clone()
            }
        })
        .collect();
    let max = tops.iter().flatten().copied().fold(0.0, f64::max);
    let top = y_max.unwrap_or_else(|| nice_max(max));
    let y = Linear::new(0.0, top, TOP + PLOT_H, TOP);
    y_axis_linear(&mut svg, &y, top, y_label, W);
    for t in ticks(0.0, t_end, 8) {
        svg.text(x.at(t), TOP + PLOT_H + 16.0, "middle", "tick", &num(t));
    }
    svg.text(
        (LEFT + W - RIGHT) / 2.0,
        TOP + PLOT_H + 36.0,
        "middle",
        "axis",
        "time since the start [s]",
    );
    let names: Vec<String> = layers.iter().map(|l| l.name.clone()).collect();
    legend(&mut svg, &names, 18.0);
    let mut below = vec![0.0; t_s.len()];
    for (i, (l, up)) in layers.iter().zip(&tops).enumerate() {
        let mut d = String::new();
        for (k, (t, v)) in t_s.iter().zip(up).enumerate() {
            let _ = std::fmt::Write::write_fmt(
                &mut d,
                format_args!(
                    "{}{:.2},{:.2} ",
                    if k == 0 { "M" } else { "L" },
                    x.at(*t),
                    y.at(*v)
                ),
            );
        }
        let c = colour(&l.name, i);
        if stacked {
            for (t, v) in t_s.iter().zip(&below).rev() {
                let _ = std::fmt::Write::write_fmt(
                    &mut d,
                    format_args!("L{:.2},{:.2} ", x.at(*t), y.at(*v)),
                );
            }
            d.push('Z');
            svg.path(
                &d,
                &Mark {
                    class: "area",
                    fill: c,
                    title: l.name.clone(),
                    data: vec![("series", l.name.clone())],
                    ..Default::default()
                },
            );
            below.clone_from(up);
        } else {
            svg.path(
                &d,
                &Mark {
                    class: "series",
                    stroke: c,
                    title: l.name.clone(),
                    data: vec![("series", l.name.clone())],
                    ..Default::default()
                },
            );
        }
    }
    svg.finish(title)
}

/// `esc` for the page module's captions.
pub fn caption(s: &str) -> String {
    esc(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_carry_their_numbers() {
        let c = GroupedBars {
            title: "t".into(),
            y_label: "s".into(),
            series: vec!["bfq".into()],
            groups: vec![(
                "idle".into(),
                vec![Bar {
                    series: "bfq".into(),
                    value: Some(1.5),
                    lower_bound: false,
                    whisker: Some((1.0, 2.0)),
                    points: vec![
                        Point {
                            value: 1.2,
                            kind: PointKind::Exact,
                            title: "rep 0".into(),
                        },
                        Point {
                            value: 5.0,
                            kind: PointKind::Censored,
                            title: "rep 1".into(),
                        },
                    ],
                    title: "bfq idle".into(),
                    data: vec![("mean", "1.5".into())],
                }],
            )],
            reference: Some((5.0, "timeout".into())),
        };
        let s = grouped_bars(&c);
        assert!(s.contains(r#"data-mean="1.5""#), "{s}");
        assert!(s.contains(r#"data-low="1" data-high="2""#), "{s}");
        assert!(s.contains(r#"class="censored""#), "{s}");
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
    }

    #[test]
    fn cdf_ends_at_100_percent() {
        let d = Dist {
            name: "R".into(),
            buckets: vec![(1.0, 2.0, 3), (2.0, 4.0, 1)],
        };
        let s = cdf_log("c", &[d]);
        // The last point is at the top of the plot (y = TOP).
        assert!(s.contains(&format!(",{TOP:.2} ")), "{s}");
    }
}

/// One point of a scatter: x and y with 95 % whiskers, a colour series
/// and a label.
#[derive(Debug, Clone)]
pub struct ScatterPoint {
    /// Series (colour and legend), e.g. the scheduler.
    pub series: String,
    /// x value.
    pub x: f64,
    /// y value.
    pub y: f64,
    /// y's whisker half-width.
    pub y_err: Option<f64>,
    /// Drawn larger and ringed (a Pareto front member).
    pub marked: bool,
    /// Short label next to the dot (the rank).
    pub label: String,
    /// Tooltip.
    pub title: String,
}

/// A scatter of points with y whiskers (e.g. start-up time against the
/// background's throughput, one dot per plan point), both axes from zero.
pub fn scatter(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[String],
    pts: &[ScatterPoint],
) -> String {
    let h = TOP + PLOT_H + BOTTOM;
    let mut svg = Svg::new(W, h);
    let x_top = nice_max(pts.iter().map(|p| p.x).fold(0.0, f64::max).max(1e-9));
    let y_top = nice_max(
        pts.iter()
            .map(|p| p.y + p.y_err.unwrap_or(0.0))
            .fold(0.0, f64::max)
            .max(1e-9),
    );
    let x = Linear::new(0.0, x_top, LEFT, W - RIGHT);
    let y = Linear::new(0.0, y_top, TOP + PLOT_H, TOP);
    y_axis_linear(&mut svg, &y, y_top, y_label, W);
    for t in ticks(0.0, x_top, 6) {
        let px = x.at(t);
        svg.text(px, TOP + PLOT_H + 16.0, "middle", "tick", &tick(t));
    }
    svg.text(
        (LEFT + W - RIGHT) / 2.0,
        TOP + PLOT_H + 36.0,
        "middle",
        "axis",
        x_label,
    );
    for p in pts {
        let i = series.iter().position(|s| *s == p.series).unwrap_or(0);
        let c = colour(&p.series, i);
        let (px, py) = (x.at(p.x), y.at(p.y));
        if let Some(e) = p.y_err {
            svg.line(
                px,
                y.at((p.y - e).max(0.0)),
                px,
                y.at(p.y + e),
                &Mark {
                    stroke: c,
                    class: "whisker",
                    ..Default::default()
                },
            );
        }
        svg.circle(
            px,
            py,
            if p.marked { 6.0 } else { 4.0 },
            &Mark {
                fill: c,
                stroke: if p.marked { "#000" } else { "" },
                title: p.title.clone(),
                data: vec![("x", num(p.x)), ("y", num(p.y))],
                ..Default::default()
            },
        );
        svg.text(px + 8.0, py - 6.0, "start", "tick", &p.label);
    }
    legend(&mut svg, series, 18.0);
    svg.finish(title)
}
