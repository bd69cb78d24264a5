//! A small SVG writer: elements, scales and axis ticks.
//!
//! Why not plotters: its text layout needs a font backend (font-kit and the
//! system's fontconfig, or a bundled font file), and its output has no
//! hooks for what the report needs on every mark — a `<title>` tooltip
//! with the exact number and `data-*` attributes a test can read back.
//! The charts here are a few rectangles, paths and labels; the browser
//! lays out the text.

use std::fmt::Write as _;

/// Escapes text for XML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// One SVG document being written.
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

/// Attributes and tooltip of one mark.
#[derive(Default)]
pub struct Mark<'a> {
    /// CSS class.
    pub class: &'a str,
    /// Fill colour.
    pub fill: &'a str,
    /// Stroke colour.
    pub stroke: &'a str,
    /// Tooltip (`<title>`).
    pub title: String,
    /// `data-*` attributes: the numbers behind the mark.
    pub data: Vec<(&'a str, String)>,
}

impl Mark<'_> {
    fn attrs(&self) -> String {
        let mut a = String::new();
        if !self.class.is_empty() {
            let _ = write!(a, r#" class="{}""#, esc(self.class));
        }
        if !self.fill.is_empty() {
            let _ = write!(a, r#" fill="{}""#, esc(self.fill));
        }
        if !self.stroke.is_empty() {
            let _ = write!(a, r#" stroke="{}""#, esc(self.stroke));
        }
        for (k, v) in &self.data {
            let _ = write!(a, r#" data-{k}="{}""#, esc(v));
        }
        a
    }

    fn close(&self, tag: &str) -> String {
        if self.title.is_empty() {
            "/>".to_string()
        } else {
            format!("><title>{}</title></{tag}>", esc(&self.title))
        }
    }
}

impl Svg {
    /// An empty drawing of `width` × `height` user units.
    pub fn new(width: f64, height: f64) -> Svg {
        Svg {
            width,
            height,
            body: String::new(),
        }
    }

    /// A rectangle.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, m: &Mark) {
        let _ = write!(
            self.body,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}"{}{}"#,
            x,
            y,
            w.max(0.0),
            h.max(0.0),
            m.attrs(),
            m.close("rect")
        );
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, m: &Mark) {
        let _ = write!(
            self.body,
            r#"<line x1="{x1:.2}" y1="{y1:.2}" x2="{x2:.2}" y2="{y2:.2}"{}{}"#,
            m.attrs(),
            m.close("line")
        );
    }

    /// A circle.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, m: &Mark) {
        let _ = write!(
            self.body,
            r#"<circle cx="{cx:.2}" cy="{cy:.2}" r="{r:.2}"{}{}"#,
            m.attrs(),
            m.close("circle")
        );
    }

    /// A path from `d`.
    pub fn path(&mut self, d: &str, m: &Mark) {
        let _ = write!(
            self.body,
            r#"<path d="{d}"{}{}"#,
            m.attrs(),
            m.close("path")
        );
    }

    /// Text; `anchor` is start, middle or end.
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, class: &str, s: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{x:.2}" y="{y:.2}" text-anchor="{anchor}" class="{class}">{}</text>"#,
            esc(s)
        );
    }

    /// Text rotated −90° about its anchor (a y-axis label).
    pub fn vtext(&mut self, x: f64, y: f64, class: &str, s: &str) {
        let _ = write!(
            self.body,
            r#"<text transform="translate({x:.2},{y:.2}) rotate(-90)" text-anchor="middle" class="{class}">{}</text>"#,
            esc(s)
        );
    }

    /// The document.
    pub fn finish(self, aria_label: &str) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{l}">{b}</svg>"#,
            w = self.width,
            h = self.height,
            l = esc(aria_label),
            b = self.body
        )
    }
}

/// A linear map from data `[d0, d1]` to pixels `[r0, r1]`.
#[derive(Debug, Clone, Copy)]
pub struct Linear {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Linear {
    /// The map.
    pub fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Linear {
        let d1 = if d1 == d0 { d0 + 1.0 } else { d1 };
        Linear { d0, d1, r0, r1 }
    }

    /// Pixel of `v`.
    pub fn at(&self, v: f64) -> f64 {
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// A log10 map from data `[d0, d1]` (both > 0) to pixels.
#[derive(Debug, Clone, Copy)]
pub struct Log {
    lin: Linear,
}

impl Log {
    /// The map; `d0` and `d1` are clamped to be positive.
    pub fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Log {
        let (a, b) = (d0.max(1e-12).log10(), d1.max(1e-12).log10());
        Log {
            lin: Linear::new(a, b, r0, r1),
        }
    }

    /// Pixel of `v`.
    pub fn at(&self, v: f64) -> f64 {
        self.lin.at(v.max(1e-12).log10())
    }
}

/// About `n` round tick values covering `[lo, hi]` (1, 2, 5 × 10^k steps).
pub fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    // Written positively so NaN ranges fall through too.
    let usable = hi > lo && lo.is_finite() && hi.is_finite();
    if !usable {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "log10 of a positive f64 is in -324..=309; float `as` saturates (an infinite range)"
    )]
    let e = raw.log10().floor() as i32;
    let m = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * 10f64.powi(e) >= raw)
        .unwrap_or(10.0);
    // k·m·10^e computed as an integer over a power of ten, so 3 × 0.1
    // prints 0.3, not 0.30000000000000004.
    let at = |k: f64| {
        if e < 0 {
            k * m / 10f64.powi(-e)
        } else {
            k * m * 10f64.powi(e)
        }
    };
    let step = at(1.0);
    let mut k = (lo / step).ceil();
    let mut out = Vec::new();
    while at(k) <= hi + step * 1e-9 {
        out.push(at(k));
        k += 1.0;
    }
    out
}

/// The top of a linear axis that starts at 0 and holds `max`: the first
/// tick at or above it.
pub fn nice_max(max: f64) -> f64 {
    if max.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return 1.0;
    }
    let t = ticks(0.0, max, 5);
    let step = t.get(1).copied().unwrap_or(max);
    (max / step).ceil() * step
}

/// Powers of ten covering `[lo, hi]`.
#[allow(
    clippy::cast_possible_truncation,
    reason = "log10 of an f64 at least 1e-12 is in -12..=309; float `as` saturates (an infinite bound)"
)]
pub fn decades(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (
        lo.max(1e-12).log10().floor() as i32,
        hi.max(1e-12).log10().ceil() as i32,
    );
    (a..=b).map(|e| 10f64.powi(e)).collect()
}

/// An axis tick: `150k`, `1.5M` (a y axis has room for few characters).
pub fn tick(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{}M", num(v / 1e6))
    } else if v.abs() >= 1e4 {
        format!("{}k", num(v / 1e3))
    } else {
        num(v)
    }
}

/// A number for a label: few digits, no float noise.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.3}", v)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 0.3, 3), vec![0.0, 0.1, 0.2, 0.3]);
        assert_eq!(nice_max(7.3), 8.0);
        assert_eq!(
            decades(3.0, 2000.0),
            vec![1.0, 10.0, 100.0, 1000.0, 10000.0]
        );
    }

    #[test]
    fn text_is_escaped() {
        let mut s = Svg::new(10.0, 10.0);
        s.text(0.0, 0.0, "start", "t", "a<b & \"c\"");
        let doc = s.finish("x");
        assert!(doc.contains("a&lt;b &amp; &quot;c&quot;"), "{doc}");
    }

    #[test]
    fn scales_map_ends_to_ends() {
        let l = Linear::new(0.0, 10.0, 100.0, 0.0);
        assert_eq!((l.at(0.0), l.at(10.0), l.at(5.0)), (100.0, 0.0, 50.0));
        let g = Log::new(1.0, 1000.0, 0.0, 300.0);
        assert!((g.at(10.0) - 100.0).abs() < 1e-9);
    }
}
