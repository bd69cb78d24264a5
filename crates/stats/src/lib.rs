//! Statistics for iolab: pure functions over raw samples, no I/O.
//!
//! Every number iolab prints is derived here from the raw samples the store
//! keeps, so a table, a JSON export and a recomputation from the database
//! always agree.
//!
//! Methods (each module's header cites its source):
//! - [`summary`]: n, censored count, mean, median, sample standard deviation
//!   (n − 1), min, max, with honest handling of censored (timed-out) runs.
//! - [`interval`]: the textbook 95 % confidence interval of the mean,
//!   `mean ± t(0.975, n−1) · s/√n` (Student, 1908). This is where iolab parts
//!   ways with the S suite, whose interval is about 4× too wide (see the
//!   module docs for the arithmetic).
//! - [`ratio`]: ratio of a cell's mean to the idle baseline's mean with
//!   Fieller's confidence interval (Fieller, 1954).
//! - [`welch`]: Welch's t-test of two means with unequal variances (Welch,
//!   1947), the verdict of `results compare`.
//! - [`outliers`]: modified z-scores from the median absolute deviation,
//!   |M| > 3.5 flags an outlier (Iglewicz & Hoaglin, 1993), as hyperfine does.
//!
//! Values are unit-agnostic `f64`s: the caller decides (the store feeds
//! seconds). All statistics scale with the data, ratios and outlier flags are
//! scale-free; the property tests check both.
#![deny(missing_docs)]

pub mod descriptive;
pub mod interval;
pub mod outliers;
pub mod power;
pub mod ratio;
pub mod sample;
pub mod student_t;
pub mod summary;
pub mod welch;

pub use interval::{mean_ci, ConfidenceInterval, LEVEL_95};
pub use outliers::{modified_z_scores, outlier_indices, OUTLIER_THRESHOLD};
pub use power::{detectable, holm, samples_needed, welch_p};
pub use ratio::{ratio_of_means, ratio_of_means_log, Bound, Ratio};
pub use sample::Sample;
pub use summary::{summarize, Summary};
pub use welch::{two_sided_ci_of_difference, welch_test, WelchTest};
