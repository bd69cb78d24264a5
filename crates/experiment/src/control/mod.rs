//! Settings as experiment axes: what fixes a slow start, measured. A plan
//! crosses schedulers and workloads with points, each a value for every
//! setting varied ([`setting`], [`points`]); a cell applies its point
//! through the guard and reads every value back ([`apply`]); cgroup
//! settings run the target and the load in iolab's own groups
//! ([`cgroup`]); [`recipe`]s choose a small design from what the system
//! has. The verdict — start-up gain against background cost, per point —
//! is the report's (`iolab_report::view::verdict`).

pub mod android;
pub mod apply;
pub mod cgroup;
pub mod device;
pub mod mount;
pub mod points;
pub mod recipe;
pub mod setting;

pub use apply::{Applied, Overrides};
pub use cgroup::{Groups, Hierarchy};
pub use points::Point;
pub use recipe::Recipe;
