//! The value parsers every option shares: fio's booleans, sizes, counts,
//! percentages, times and READ,WRITE pairs, each with an error that says
//! what the value should look like.

use std::time::Duration;

use crate::job::kinds::DirPair;

/// The option's value, trimmed; an error when it has none.
pub fn need<'a>(key: &str, value: Option<&'a str>) -> Result<&'a str, String> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v.trim()),
        _ => Err(format!("option {key} needs a value ({key}=...)")),
    }
}

/// The option's value as written (the core options keep their spaces);
/// an error when it has none.
pub fn need_raw<'a>(key: &str, value: Option<&'a str>) -> Result<&'a str, String> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(format!("option {key} needs a value ({key}=...)")),
    }
}

/// fio booleans: `1`/`0` (also true/false, yes/no, on/off); bare = true.
pub fn boolean(key: &str, value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.to_ascii_lowercase()).as_deref() {
        None | Some("1") | Some("true") | Some("yes") | Some("on") => Ok(true),
        Some("0") | Some("false") | Some("no") | Some("off") => Ok(false),
        Some(v) => Err(format!("{key}={v}: expected 0 or 1")),
    }
}

thread_local! {
    /// The job being parsed has `kb_base=1000` (set by
    /// [`crate::job::options::apply`] for each option).
    pub static KB1000: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A size with an optional binary unit (`4k` = 4096); with `kb_base=1000`,
/// fio's SI reading: k, m, g, t (and kB ...) are powers of 1000, KiB,
/// MiB ... of 1024.
pub fn size(key: &str, v: &str) -> Result<u64, String> {
    let bad = || {
        format!("{key}={v}: expected a size with an optional binary unit, e.g. 4k, 1m, 512MiB, 4g")
    };
    if KB1000.get() {
        let t = v.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, suffix) = t.split_at(split);
        let n: f64 = num.parse().map_err(|_| bad())?;
        let suffix = suffix.trim().to_ascii_lowercase();
        let (base, unit) = match suffix.strip_suffix("ib") {
            Some(u) => (1024f64, u.to_string()),
            None => (1000f64, suffix.trim_end_matches('b').to_string()),
        };
        let pow = match unit.as_str() {
            "" => 0,
            "k" => 1,
            "m" => 2,
            "g" => 3,
            "t" => 4,
            _ => return Err(bad()),
        };
        let bytes = n * base.powi(pow);
        if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
            return Err(bad());
        }
        // In range: checked just above.
        return Ok(iolab_sys::cast::round_u64(bytes));
    }
    iolab_sys::units::parse_size(v).map_err(|_| bad())
}

/// A whole number.
pub fn number(key: &str, v: &str) -> Result<u64, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("{key}={v}: expected a whole number"))
}

/// Most clones of one job: each is a thread, and beyond this the test
/// measures the CPU scheduler rather than the storage.
pub const MAX_NUMJOBS: u32 = 4096;
/// Most files per clone: an I/O's offset carries its file's index in the
/// 16 bits above 256 TiB (`run::files::file_set::FILE_SHIFT`).
pub const MAX_FILES: u32 = 1 << 16;
/// Deepest queue: io_uring's largest submission queue (IORING_MAX_ENTRIES).
pub const MAX_IODEPTH: u32 = 32_768;

/// `n`, unless it is above `max` (`why` says why that is the limit).
pub fn at_most(key: &str, n: u32, max: u32, why: &str) -> Result<u32, String> {
    if n > max {
        return Err(format!("{key}={n}: expected at most {max} ({why})"));
    }
    Ok(n)
}

/// A whole number of at least `min`.
pub fn count(key: &str, v: &str, min: u32) -> Result<u32, String> {
    let n: u32 = v
        .trim()
        .parse()
        .map_err(|_| format!("{key}={v}: expected a whole number >= {min}"))?;
    if n < min {
        return Err(format!("{key}={v}: expected a whole number >= {min}"));
    }
    Ok(n)
}

/// A percentage from 0 to 100.
pub fn percent(key: &str, v: &str) -> Result<u8, String> {
    match v.trim().parse::<u8>() {
        Ok(p) if p <= 100 => Ok(p),
        _ => Err(format!("{key}={v}: expected a percentage from 0 to 100")),
    }
}

/// fio times: a bare number is seconds; units ns, us, ms, s, m, h, d.
pub fn time(key: &str, v: &str) -> Result<Duration, String> {
    let t = v.trim();
    let bad = || format!("{key}={v}: expected a time, e.g. 30 (seconds), 500ms, 2m, 1h");
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map(Duration::from_secs).map_err(|_| bad());
    }
    if let Some(days) = t.strip_suffix('d') {
        let d: f64 = days.parse().map_err(|_| bad())?;
        return Duration::try_from_secs_f64(d * 86400.0).map_err(|_| bad());
    }
    iolab_sys::units::parse_duration(t).map_err(|_| bad())
}

/// `X` (both directions), `X,Y` (read, write), `,Y` (write only), `X,`
/// (read only).
pub fn pair(
    key: &str,
    v: &str,
    parse: impl Fn(&str) -> Result<u64, String>,
) -> Result<DirPair<Option<u64>>, String> {
    let one = |s: &str| -> Result<Option<u64>, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        match parse(s)? {
            0 => Ok(None),
            n => Ok(Some(n)),
        }
    };
    match v.split_once(',') {
        None => {
            let x = one(v)?;
            Ok(DirPair { read: x, write: x })
        }
        Some((r, w)) if !w.contains(',') => Ok(DirPair {
            read: one(r)?,
            write: one(w)?,
        }),
        // READ,WRITE,TRIM: iolab issues no trims, so a trim value limits
        // nothing that happens; it is checked and kept as written.
        Some((r, rest)) if rest.matches(',').count() == 1 => {
            let (w, t) = rest.split_once(',').unwrap_or((rest, ""));
            one(t)?;
            Ok(DirPair {
                read: one(r)?,
                write: one(w)?,
            })
        }
        Some(_) => Err(format!(
            "{key}={v}: expected one value, READ,WRITE or READ,WRITE,TRIM"
        )),
    }
}
