//! Flame graphs of explain's folded stacks, drawn by inferno (the Rust
//! port of flamegraph.pl): interactive (zoom, search) SVG with its own
//! script, embedded as a `srcdoc` iframe so each graph is its own document.

/// The iframe holding one flame graph; `None` without stacks.
pub fn iframe(title: &str, folded: &[String]) -> Option<String> {
    if folded.is_empty() {
        return None;
    }
    let mut o = inferno::flamegraph::Options::default();
    o.title = title.to_string();
    o.count_name = "µs blocked".to_string();
    o.name_type = "Frame:".to_string();
    // A fixed width: inferno's fluid mode measures the SVG at load, and a
    // graph inside a closed <details> measures 0 px wide (negative frame
    // widths, console errors).
    o.image_width = Some(1150);
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut o, folded.iter().map(String::as_str), &mut svg).ok()?;
    let svg = String::from_utf8(svg).ok()?;
    // The SVG document without its XML prolog, as the body of the frame's
    // own HTML document: a srcdoc frame renders in the page's process
    // (a data: frame is cross-origin, and browsers' page captures leave
    // those blank), and its scripts and ids stay its own.
    let body = &svg[svg.find("<svg")?..];
    let doc = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body style=\"margin:0\">{body}</body></html>"
    );
    Some(format!(
        r#"<iframe class="flame" title="{}" srcdoc="{}"></iframe>"#,
        super::svg::esc(title),
        super::svg::esc(&doc)
    ))
}
