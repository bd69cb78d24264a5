//! Terminal renderers: they only read reports, never compute statistics.

pub mod keyvalue;
pub mod table;

pub use keyvalue::{key_values, render_key_values};
pub use table::{
    align_columns, cell_text, render_matrix, table_decimals, title_for_kind, workload_grid,
};
