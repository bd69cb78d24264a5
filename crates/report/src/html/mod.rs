//! The HTML renderer: one self-contained file (no network, no external
//! files): CSS inline, charts as inline SVG, flame graphs as inferno's
//! interactive SVG in `srcdoc` iframes (each its own document, so their
//! scripts and ids do not collide), and every view and stored report
//! embedded as JSON (`<script type="application/json" id="iolab-data">`).

mod boot;
pub mod charts;
mod compare;
mod flame;
mod machine;
mod sections;
pub mod svg;

use serde_json::json;

use iolab_store::compare::Comparison;
use iolab_store::ExperimentReport;

use crate::view::ExperimentView;
use svg::esc;

/// Everything one report file shows.
pub struct HtmlInput<'a> {
    /// The experiments' views, in the order given.
    pub views: &'a [ExperimentView<'a>],
    /// `results compare` of the first two, when asked for.
    pub comparison: Option<&'a Comparison>,
}

/// The page.
pub fn render(input: &HtmlInput) -> Result<String, serde_json::Error> {
    let ids: Vec<String> = input.views.iter().map(|v| v.id.to_string()).collect();
    let title = format!("iolab report: experiment {}", ids.join(", "));
    let mut body = String::new();
    let mut nav = String::new();
    if let Some(c) = input.comparison {
        nav.push_str(r##"<a href="#compare">comparison</a>"##);
        body.push_str(&compare::comparison(c, input.views));
    }
    for v in input.views {
        nav.push_str(&format!(r##"<a href="#e{0}">experiment {0}</a>"##, v.id));
        body.push_str(&sections::experiment(v));
    }
    let data = json!({
        "iolab_version": env!("CARGO_PKG_VERSION"),
        "views": input.views,
        "reports": input.views.iter().map(|v| v.stored).collect::<Vec<&ExperimentReport>>(),
        "comparison": input.comparison,
    });
    // `</` inside a script element would end it early; `<\/` is the same
    // JSON string.
    let data = serde_json::to_string(&data)?.replace("</", "<\\/");
    Ok(format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; frame-src 'self' data:">
<title>{t}</title><style>{css}</style></head>
<body><header><h1>{t}</h1><p>iolab {ver}: every number behind every chart is in this file (script#iolab-data); hover a mark for its value.</p></header>
<nav>{nav}</nav><main>{body}</main>
<script type="application/json" id="iolab-data">{data}</script>
</body></html>
"#,
        t = esc(&title),
        css = include_str!("page.css"),
        ver = env!("CARGO_PKG_VERSION"),
    ))
}
