//! A raw sample: one measured value, possibly censored.
//!
//! A run that hits its timeout T was stopped before it finished, so its true
//! value is unknown except that it is at least T ("right-censored" in
//! survival-analysis terms; Klein & Moeschberger, *Survival Analysis*, ch. 3).
//! Such a sample is kept with `censored = true` and `value` = the time it was
//! stopped at, a lower bound. It is never dropped and never averaged as if
//! it were exact.

use serde::{Deserialize, Serialize};

/// One measured value. When `censored`, `value` is only a lower bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The measured value, or the point at which measuring stopped.
    pub value: f64,
    /// True when the measurement was cut off (e.g. by a timeout): the true
    /// value is at least `value`.
    pub censored: bool,
}

impl Sample {
    /// A measurement that completed.
    pub fn exact(value: f64) -> Self {
        Sample {
            value,
            censored: false,
        }
    }

    /// A measurement cut off at `bound` (the true value is ≥ `bound`).
    pub fn censored_at(bound: f64) -> Self {
        Sample {
            value: bound,
            censored: true,
        }
    }

    /// Exact samples from plain values.
    pub fn all_exact(values: &[f64]) -> Vec<Sample> {
        values.iter().copied().map(Sample::exact).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_set_the_flag() {
        assert!(!Sample::exact(1.0).censored);
        assert!(Sample::censored_at(60.0).censored);
        assert_eq!(Sample::censored_at(60.0).value, 60.0);
        let v = Sample::all_exact(&[1.0, 2.0]);
        assert_eq!(v, vec![Sample::exact(1.0), Sample::exact(2.0)]);
    }
}
