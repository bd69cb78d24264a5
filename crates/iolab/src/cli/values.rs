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

/// `--ready-rss-stable SIZE[,GROWTH[,INTERVAL]]`: the memory the target
/// must reach, the change over INTERVAL that still counts as settled
/// (default 1M, the thesis's), and INTERVAL (default 1 s; 10 ms to 10 min).
pub fn settle(s: &str) -> Result<(u64, u64, f64), String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() > 3 || parts[0].is_empty() {
        return Err(format!(
            "{s}: expected SIZE[,GROWTH[,INTERVAL]], e.g. 54M or 54M,1M,1s (the thesis's)"
        ));
    }
    let size = |t: &str| iolab_sys::units::parse_size(t).map_err(|e| e.to_string());
    let min = size(parts[0])?;
    let growth = parts.get(1).map_or(Ok(1 << 20), |g| size(g))?;
    let interval = match parts.get(2) {
        Some(i) => parse_seconds_in(i, 0.01, 600.0, "a start-up settles within minutes")
            .map_err(|e| e.to_string())?,
        None => 1.0,
    };
    if min == 0 {
        return Err(format!("{s}: the size must be above 0"));
    }
    Ok((min, growth, interval))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn settle_reads_the_theses_form_and_refuses_nonsense() {
        assert_eq!(settle("54M").unwrap(), (54 << 20, 1 << 20, 1.0));
        assert_eq!(settle("54M,512K,0.5").unwrap(), (54 << 20, 512 << 10, 0.5));
        for bad in ["", "0", "54M,1M,0", "54M,1M,inf", "a,b", "1M,1M,1,1"] {
            assert!(settle(bad).is_err(), "{bad}");
        }
    }

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
