//! Value parsers for numeric flags: every number a user types is checked
//! here, with its range and the reason for the range, so infinity, NaN and
//! values a `Duration` cannot hold are a usage error (exit 2), never a
//! panic deep inside a run.

use iolab_sys::units::parse_seconds_in;

/// Longest `--timeout` of one start: a "start-up" of more than a day is
/// not one, and a matrix of such starts would hold the machine for weeks.
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
/// Longest warm-up of a cell.
pub const MAX_WARMUP_S: f64 = 3_600.0;
/// Longest recording.
pub const MAX_RECORD_S: f64 = 7.0 * 86_400.0;

/// `--timeout S`: above 0, at most a day.
pub fn timeout_secs(s: &str) -> Result<f64, String> {
    let v = parse_seconds_in(
        s,
        0.0,
        MAX_TIMEOUT_S,
        "a start-up longer than a day is not one",
    )
    .map_err(|e| e.to_string())?;
    if v <= 0.0 {
        return Err(format!("{s} s: expected a positive number of seconds"));
    }
    Ok(v)
}

/// `--warmup S`: 0 to an hour.
pub fn warmup_secs(s: &str) -> Result<f64, String> {
    parse_seconds_in(
        s,
        0.0,
        MAX_WARMUP_S,
        "a load settles in seconds; an hour is already generous",
    )
    .map_err(|e| e.to_string())
}

/// A recording's length (`--duration`, `--walk-timeout`): above 0, at most a week.
pub fn record_secs(s: &str) -> Result<f64, String> {
    let v = parse_seconds_in(
        s,
        0.0,
        MAX_RECORD_S,
        "longer recordings are split into several",
    )
    .map_err(|e| e.to_string())?;
    if v <= 0.0 {
        return Err(format!("{s} s: expected a positive number of seconds"));
    }
    Ok(v)
}

/// A scale factor of the synthetic app: above 0, at most 100 (a 100× app
/// is gigabytes; beyond that the lab, not the app, is the question).
pub fn scale(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(format!(
            "{s}: expected a factor above 0 and at most 100, e.g. 0.5 or 2"
        )),
    }
}

/// Milliseconds (`--min-stall`): 0 to an hour.
pub fn millis(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=3_600_000.0).contains(&v) => Ok(v),
        _ => Err(format!("{s}: expected milliseconds from 0 to 3600000")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hostile_numbers_are_refused() {
        for bad in ["inf", "1e20", "NaN", "-1", "0"] {
            assert!(timeout_secs(bad).is_err(), "timeout {bad}");
            assert!(record_secs(bad).is_err(), "record {bad}");
        }
        for bad in ["inf", "1e20", "NaN", "-1"] {
            assert!(warmup_secs(bad).is_err(), "warmup {bad}");
            assert!(scale(bad).is_err(), "scale {bad}");
            assert!(millis(bad).is_err(), "millis {bad}");
        }
        assert_eq!(timeout_secs("60").unwrap(), 60.0);
        assert_eq!(warmup_secs("0").unwrap(), 0.0);
        assert_eq!(warmup_secs("500ms").unwrap(), 0.5);
    }
}
