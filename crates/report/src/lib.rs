//! iolab's reports: what a stored experiment shows, as data
//! ([`view`]), and every way it is rendered — terminal text ([`text`]),
//! JSON (serde of the views and the store's report), CSV, and one
//! self-contained HTML file ([`html`]).
//!
//! A new output format is a new renderer here that walks
//! [`view::ExperimentView`] (which also holds the stored report it is a
//! view of, for formats that export the stored data as it is); a new kind
//! of data is a new view section in [`view`] that every renderer then
//! shows.
#![deny(missing_docs)]

pub mod export;
pub mod html;
pub mod text;
pub mod view;

use iolab_store::compare::Comparison;
use iolab_store::{ExperimentReport, StoreError};

pub use view::ExperimentView;

/// The HTML report of `reports`, with the comparison of the first two
/// when `comparison` is given.
pub fn html_report(
    reports: &[ExperimentReport],
    comparison: Option<&Comparison>,
) -> Result<String, StoreError> {
    let views: Vec<ExperimentView> = reports.iter().map(ExperimentView::of).collect();
    html::render(&html::HtmlInput {
        views: &views,
        comparison,
    })
    .map_err(|e| StoreError::Export {
        format: "html",
        why: e.to_string(),
    })
}
