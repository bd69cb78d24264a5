//! Sizes and rates as users write them to fio and iolab (`4GiB`, `512k`,
//! `40MiB/s`). Like fio (kb_base=1024), a bare `k`/`m`/`g` is binary.

use crate::UsageError;

/// Parses a byte count: `4096`, `4k`, `4K`, `4KiB`, `1.5G`, `2t`.
/// Suffixes are powers of 1024, as fio reads them by default; `kB`/`MB` with
/// an explicit `B` after an upper-case letter pair are still binary, matching
/// fio, which only switches on `kb_base=1000`.
pub fn parse_size(text: &str) -> Result<u64, UsageError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let bad = || {
        UsageError::new(format!(
            "invalid size {text:?}: expected a number with an optional unit, e.g. 4096, 4k, 512MiB, 4G"
        ))
    };
    if num.is_empty() {
        return Err(bad());
    }
    let value: f64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    // Checked finite and in 0..=2^64 above; 2^64 itself saturates.
    Ok(crate::cast::round_u64(bytes))
}

/// Parses a bandwidth in bytes per second: `40MiB/s`, `40M`, `512k/s`.
pub fn parse_rate(text: &str) -> Result<u64, UsageError> {
    let t = text.trim();
    let t = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("ps"))
        .unwrap_or(t);
    parse_size(t).map_err(|_| {
        UsageError::new(format!(
            "invalid rate {text:?}: expected bytes per second, e.g. 40MiB/s, 512k"
        ))
    })
}

/// Parses a duration with a unit: `300ms`, `0.3s`, `500us`, `2m`, `1h`,
/// `250ns`; a bare `0` is zero. Other bare numbers are refused because
/// `300` is ambiguous (the thesis meant milliseconds, `sleep` means seconds).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, UsageError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        UsageError::new(format!(
            "invalid duration {text:?}: expected a number with a unit (ns, us, ms, s, m, h), e.g. 300ms, 0.3s, 5s"
        ))
    };
    let value: f64 = num.parse().map_err(|_| bad())?;
    let secs_per_unit = match unit.trim() {
        "" if value == 0.0 => 0.0,
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    std::time::Duration::try_from_secs_f64(value * secs_per_unit).map_err(|_| bad())
}

/// Parses a number of seconds given as a plain number (`5`, `0.25`, the
/// form `--timeout` and `--warmup` always took) or with a unit (`300ms`,
/// `2m`), and checks it lies in `min..=max`: infinity, NaN and values a
/// [`std::time::Duration`] cannot hold are refused here, never turned
/// into a panic later. `why_max` says why the upper limit is there.
pub fn parse_seconds_in(text: &str, min: f64, max: f64, why_max: &str) -> Result<f64, UsageError> {
    let t = text.trim();
    let value = match t.parse::<f64>() {
        Ok(v) if v.is_finite() => v,
        Ok(_) => {
            return Err(UsageError::new(format!(
                "{text:?} is not a finite number of seconds: expected {min}..{max} s"
            )))
        }
        Err(_) => parse_duration(t)
            .map_err(|_| {
                UsageError::new(format!(
                    "invalid number of seconds {text:?}: expected a number such as 5 or 0.5, or a duration such as 300ms or 2m"
                ))
            })?
            .as_secs_f64(),
    };
    if value < min {
        return Err(UsageError::new(format!(
            "{text} s is too small: expected at least {min} s"
        )));
    }
    if value > max {
        return Err(UsageError::new(format!(
            "{text} s is too large: expected at most {max} s ({why_max})"
        )));
    }
    Ok(value)
}

/// Formats bytes with a binary unit, as fio prints them (`4096MiB`, `1.5GiB`).
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 || (v.fract() == 0.0) {
        format!("{v:.0}{}", UNITS[i])
    } else {
        format!("{v:.1}{}", UNITS[i])
    }
}

/// Formats a rate in bytes per second (`38.1MiB/s`).
pub fn format_rate(bytes_per_sec: f64) -> String {
    format!("{}/s", format_bytes(crate::cast::round_u64(bytes_per_sec)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_bounded_and_never_infinite() {
        let p = |t| parse_seconds_in(t, 0.0, 86_400.0, "a day");
        assert_eq!(p("5").unwrap(), 5.0);
        assert_eq!(p("300ms").unwrap(), 0.3);
        assert_eq!(p("2m").unwrap(), 120.0);
        for bad in ["inf", "-inf", "NaN", "1e20", "-1", "abc", "1e400", ""] {
            assert!(p(bad).is_err(), "{bad} accepted");
        }
        assert!(p("1e20").unwrap_err().to_string().contains("a day"));
    }

    #[test]
    fn sizes_are_binary_like_fio() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
    }

    #[test]
    fn bad_sizes_say_what_is_expected() {
        let e = parse_size("4 parsecs").unwrap_err();
        assert!(e.0.contains("expected a number"), "{e}");
        assert!(parse_size("").is_err());
        assert!(parse_size("k").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("40MiB/s").unwrap(), 40 << 20);
        assert_eq!(parse_rate("40m").unwrap(), 40 << 20);
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn durations_need_a_unit() {
        use std::time::Duration;
        assert_eq!(parse_duration("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_duration("0.3s").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_duration("0ms").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("500us").unwrap(), Duration::from_micros(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        let e = parse_duration("300").unwrap_err();
        assert!(e.0.contains("e.g. 300ms"), "{e}");
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(1536 << 20), "1.5GiB");
        assert_eq!(format_bytes(12), "12B");
    }
}
