//! Conversions between the integer and float types sizes, offsets and
//! durations travel in, each with its range stated once.
//!
//! Why: an `as` cast of a byte count is silent truncation waiting for the
//! size nobody tested (the device model once answered no reads on a 4 GiB
//! image because `4 GiB as u32` is 0). The workspace denies
//! `clippy::cast_possible_truncation`; a conversion either goes through
//! `try_from` with an error naming the value, or through one of these,
//! whose range argument is written here and nowhere else.

use std::time::Duration;

/// A duration in nanoseconds, saturating at `u64::MAX` (584 years: no
/// clock reading, timeout or latency iolab handles comes near it).
pub fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A duration in microseconds, saturating at `u64::MAX`.
pub fn duration_us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A duration in milliseconds, saturating at `u64::MAX`.
pub fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A non-negative float rounded to the nearest integer, saturating: NaN
/// and negatives give 0, values beyond `u64::MAX` give `u64::MAX` (Rust's
/// float-to-int `as` is defined to saturate). For derived quantities —
/// rates, percentiles, means — whose exact value is a float anyway.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "float-to-int `as` saturates and maps NaN to 0, which is the documented result"
)]
pub fn round_u64(x: f64) -> u64 {
    x.round() as u64
}

/// A non-negative float truncated toward zero, saturating as
/// [`round_u64`] does. For a float that counts whole units (`floor`).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "float-to-int `as` saturates and maps NaN to 0, which is the documented result"
)]
pub fn floor_u64(x: f64) -> u64 {
    x as u64
}

/// A float rounded to the nearest `i64`, saturating (NaN gives 0).
#[allow(
    clippy::cast_possible_truncation,
    reason = "float-to-int `as` saturates and maps NaN to 0, which is the documented result"
)]
pub fn round_i64(x: f64) -> i64 {
    x.round() as i64
}

/// A count or length held in memory as a `u64` (a buffer, a slice index):
/// `usize` is 64 bits on every target iolab builds for (x86-64, aarch64);
/// on a 32-bit target a value past 4 GiB saturates, and the caller's
/// allocation or bounds check then fails loudly rather than wrapping.
pub fn usize_of(x: u64) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}

/// A `usize` (a length, an index) as a `u64`: never truncates on any
/// target Rust supports (`usize` is at most 64 bits).
pub fn u64_of(x: usize) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// `x` as a `u32`, saturating at `u32::MAX`. Only for values that are
/// bounded by the caller's own limit (a count shown in a table); a size
/// or an offset takes `u32::try_from` and an error instead.
pub fn u32_sat(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_saturate_instead_of_wrapping() {
        assert_eq!(duration_ns(Duration::from_secs(3)), 3_000_000_000);
        assert_eq!(duration_ns(Duration::MAX), u64::MAX);
        assert_eq!(duration_us(Duration::from_millis(2)), 2000);
        assert_eq!(duration_ms(Duration::MAX), u64::MAX);
    }

    #[test]
    fn floats_round_and_saturate() {
        assert_eq!(round_u64(2.5), 3);
        assert_eq!(round_u64(-1.0), 0);
        assert_eq!(round_u64(f64::NAN), 0);
        assert_eq!(round_u64(1e30), u64::MAX);
        assert_eq!(floor_u64(2.9), 2);
        assert_eq!(round_i64(-2.5), -3);
    }

    #[test]
    fn widths() {
        assert_eq!(usize_of(1 << 40), 1 << 40);
        assert_eq!(u64_of(7), 7);
        assert_eq!(u32_sat(1 << 32), u32::MAX);
        assert_eq!(u32_sat(5), 5);
    }
}
