//! RFC 3339 UTC timestamps (`2025-11-22T03:04:05.678Z`) for the `created`
//! and `started_at` columns: sortable as text, readable, and what JSON
//! consumers parse. The civil-date conversion is Howard Hinnant's
//! `civil_from_days` ("chrono-Compatible Low-Level Date Algorithms").

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as RFC 3339 UTC with milliseconds.
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// `t` as RFC 3339 UTC with milliseconds (times before 1970 clamp to it).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// (year, month 1-12, day 1-31) of the day `z` days after 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // date -u -d @951782400 → 2000-02-29 00:00:00 (a leap day).
        let leap = UNIX_EPOCH + Duration::from_millis(951_782_400_123);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.123Z");
        // date -u -d @1763780645 → 2025-11-22 03:04:05.
        let t = UNIX_EPOCH + Duration::from_secs(1_763_780_645);
        assert_eq!(rfc3339(t), "2025-11-22T03:04:05.000Z");
    }

    #[test]
    fn now_is_well_formed() {
        let s = rfc3339_now();
        assert_eq!(s.len(), 24, "{s}");
        assert!(s.ends_with('Z') && s.as_bytes()[10] == b'T');
    }
}
