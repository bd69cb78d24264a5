//! The option table: one function applies `key=value` to a [`Job`], for
//! job files and command-line flags alike, so both accept exactly the same
//! spellings and give the same errors. Values are read as fio reads them:
//! sizes with binary units (`4k` = 4096), times in seconds unless a unit is
//! given (`10`, `500ms`, `2m`), booleans as `0`/`1` (a bare option = 1).

use std::path::PathBuf;
use std::time::Duration;

use crate::job::{CpuMode, DirPair, IoEngine, Job, Rw};

/// The core options iolab understands (see also [`crate::options_more`]).
pub const CORE: &[&str] = &[
    "name",
    "description",
    "filename",
    "directory",
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "size",
    "numjobs",
    "iodepth",
    "ioengine",
    "direct",
    "buffered",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "rate",
    "rate_iops",
    "fsync",
    "fdatasync",
    "end_fsync",
    "loops",
    "invalidate",
    "ioscheduler",
    "cpuload",
    "cpumode",
    "cpuchunks",
    "stonewall",
    "wait_for_previous",
    "randrepeat",
    "allrandrepeat",
    "scramble_buffers",
];

/// Every option iolab understands, for "did you mean" and help.
pub fn supported() -> impl Iterator<Item = &'static str> {
    CORE.iter()
        .chain(crate::options_more::MORE)
        .chain(crate::options_iolog::IOLOG)
        .copied()
}

/// Applies one option. `value` is `None` for a bare option (`time_based`).
/// The error says what the value should look like; the caller adds where.
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let need = || match value {
        Some(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(format!("option {key} needs a value ({key}=...)")),
    };
    match key {
        "name" => job.name = need()?.to_string(),
        "description" => job.description = Some(need()?.to_string()),
        "filename" => {
            // fio's list of files (`a:b:c`, a backslash before a colon keeps it in the name).
            let names = crate::file_set::split_names(need()?);
            job.filename = names.first().cloned();
            job.x.filenames = if names.len() > 1 { names } else { Vec::new() };
        }
        "directory" => {
            let v = need()?;
            if v.contains(':') {
                return Err(format!(
                    "directory={v:?}: several directories (':') are not supported"
                ));
            }
            job.directory = Some(PathBuf::from(v));
        }
        "rw" | "readwrite" => {
            let v = need()?;
            let (pat, modifier) = match v.split_once(':') {
                Some((p, m)) => (p.trim(), Some(m.trim())),
                None => (v, None),
            };
            job.rw =
                Rw::parse(pat).ok_or_else(|| format!("rw={v}: expected one of {}", Rw::NAMES))?;
            job.x.seq_add = 0;
            job.x.rand_every = 1;
            if let Some(m) = modifier {
                if job.rw.random() {
                    job.x.rand_every = m.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        format!("rw={v}: after a random pattern ':N' is a count of I/Os >= 1 (a new random offset every N)")
                    })?;
                } else {
                    let (neg, mag) = match m.strip_prefix('-') {
                        Some(r) => (true, r),
                        None => (false, m),
                    };
                    let n = i64::try_from(size(key, mag)?)
                        .map_err(|_| format!("rw={v}: the offset modifier is too large"))?;
                    job.x.seq_add = if neg { -n } else { n };
                }
            }
        }
        "rwmixread" => job.rwmixread = percent(key, need()?)?,
        "rwmixwrite" => job.rwmixread = 100 - percent(key, need()?)?,
        "bs" | "blocksize" => {
            let v = need()?;
            if v.contains('-') || v.contains(':') {
                return Err(format!(
                    "{key}={v}: a range or split is bsrange=LOW-HIGH or bssplit=SIZE/PCT:...; bs takes one size, or READ,WRITE"
                ));
            }
            let (r, w) = crate::sizes::per_dir(key, v)?;
            let one = |x: &str| -> Result<u64, String> {
                if x.trim().is_empty() {
                    return Ok(4096);
                }
                let b = size(key, x)?;
                if b == 0 {
                    return Err(format!("{key}={v}: the block size must be at least 1 byte"));
                }
                Ok(b)
            };
            job.sizes.read = crate::sizes::SizeDist::Fixed(one(r)?);
            job.sizes.write = crate::sizes::SizeDist::Fixed(one(w)?);
            job.bs = job.sizes.max();
        }
        "size" => {
            let v = need()?;
            if v.ends_with('%') {
                return Err(format!(
                    "size={v}: percentages are not supported; give bytes, e.g. 512m"
                ));
            }
            let s = size(key, v)?;
            if s == 0 {
                return Err("size=0: expected a size, e.g. 512m".into());
            }
            job.size = Some(s);
        }
        "numjobs" => {
            job.numjobs = at_most(
                key,
                count(key, need()?, 1)?,
                MAX_NUMJOBS,
                "each clone is a thread of this process",
            )?
        }
        "iodepth" => {
            job.iodepth = at_most(
                key,
                count(key, need()?, 1)?,
                MAX_IODEPTH,
                "io_uring's largest submission queue",
            )?
        }
        "ioengine" => {
            let v = need()?;
            job.ioengine = match IoEngine::parse(v) {
                Some(e) => e,
                None => return Err(crate::options_more::unknown_engine(v)),
            };
        }
        "direct" => job.direct = boolean(key, value)?,
        "buffered" => job.direct = !boolean(key, value)?,
        "runtime" | "timeout" => {
            let t = time(key, need()?)?;
            job.runtime = (!t.is_zero()).then_some(t);
        }
        "time_based" => job.time_based = boolean(key, value)?,
        "ramp_time" => job.ramp_time = time(key, need()?)?,
        "rate" => job.rate = pair(key, need()?, |v| size(key, v))?,
        "rate_iops" => job.rate_iops = pair(key, need()?, |v| number(key, v))?,
        "fsync" => job.fsync = count(key, need()?, 0)?,
        "fdatasync" => job.fdatasync = count(key, need()?, 0)?,
        "end_fsync" => job.end_fsync = boolean(key, value)?,
        "loops" => job.loops = count(key, need()?, 1)?,
        "invalidate" => job.invalidate = boolean(key, value)?,
        "ioscheduler" => job.ioscheduler = Some(need()?.to_string()),
        "cpuload" => {
            let p = percent(key, need()?)?;
            if p == 0 {
                return Err("cpuload=0: expected a percentage from 1 to 100".into());
            }
            job.cpuload = Some(p);
        }
        "cpumode" => {
            job.cpumode = match need()? {
                "noop" => CpuMode::Noop,
                "qsort" => CpuMode::Qsort,
                v => return Err(format!("cpumode={v}: expected noop or qsort")),
            }
        }
        "cpuchunks" => {
            let us = number(key, need()?)?;
            if us == 0 {
                return Err(
                    "cpuchunks=0: expected a cycle length in microseconds, e.g. 50000".into(),
                );
            }
            job.cpuchunks = Duration::from_micros(us);
        }
        "stonewall" | "wait_for_previous" => job.stonewall = boolean(key, value)?,
        "randrepeat" | "allrandrepeat" => job.randrepeat = boolean(key, value)?,
        // Write buffers are random bytes filled once and never scrambled
        // (fio's default scramble_buffers=1 stamps offsets and times into
        // every 512 bytes, which makes the data slightly compressible and
        // several times slower for zram to compress): 0 asks for what is
        // done; 1 cannot be honoured, so it is refused, not ignored.
        "scramble_buffers" => {
            if boolean(key, value)? {
                return Err(format!(
                    "{key}=1 is not supported: iolab writes random, unscrambled buffers; use {key}=0"
                ));
            }
        }
        _ => match crate::options_more::apply(job, key, value)
            .or_else(|| crate::options_iolog::apply(job, key, value))
        {
            Some(r) => r?,
            None => return Err(crate::options_more::unknown(key)),
        },
    }
    let shown = value.unwrap_or("1").to_string();
    match job.options.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = shown,
        None => job.options.push((key.to_string(), shown)),
    }
    Ok(())
}

/// fio booleans: `1`/`0` (also true/false, yes/no, on/off); bare = true.
pub fn boolean(key: &str, value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.to_ascii_lowercase()).as_deref() {
        None | Some("1") | Some("true") | Some("yes") | Some("on") => Ok(true),
        Some("0") | Some("false") | Some("no") | Some("off") => Ok(false),
        Some(v) => Err(format!("{key}={v}: expected 0 or 1")),
    }
}

pub(crate) fn size(key: &str, v: &str) -> Result<u64, String> {
    iolab_sys::units::parse_size(v).map_err(|_| {
        format!("{key}={v}: expected a size with an optional binary unit, e.g. 4k, 1m, 512MiB, 4g")
    })
}

pub(crate) fn number(key: &str, v: &str) -> Result<u64, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("{key}={v}: expected a whole number"))
}

/// Most clones of one job: each is a thread, and beyond this the test
/// measures the CPU scheduler rather than the storage.
const MAX_NUMJOBS: u32 = 4096;
/// Deepest queue: io_uring's largest submission queue (IORING_MAX_ENTRIES).
const MAX_IODEPTH: u32 = 32_768;

pub(crate) fn at_most(key: &str, n: u32, max: u32, why: &str) -> Result<u32, String> {
    if n > max {
        return Err(format!("{key}={n}: expected at most {max} ({why})"));
    }
    Ok(n)
}

pub(crate) fn count(key: &str, v: &str, min: u32) -> Result<u32, String> {
    let n: u32 = v
        .trim()
        .parse()
        .map_err(|_| format!("{key}={v}: expected a whole number >= {min}"))?;
    if n < min {
        return Err(format!("{key}={v}: expected a whole number >= {min}"));
    }
    Ok(n)
}

pub(crate) fn percent(key: &str, v: &str) -> Result<u8, String> {
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
pub(crate) fn pair(
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn job_with(opts: &[(&str, Option<&str>)]) -> Result<Job, String> {
        let mut j = Job::new("t");
        for (k, v) in opts {
            apply(&mut j, k, *v)?;
        }
        Ok(j)
    }

    #[test]
    fn scramble_buffers_only_off() {
        assert!(job_with(&[("scramble_buffers", Some("0"))]).is_ok());
        let e = job_with(&[("scramble_buffers", None)]).unwrap_err();
        assert!(e.contains("scramble_buffers=1") && e.contains("=0"), "{e}");
    }

    #[test]
    fn times_default_to_seconds() {
        assert_eq!(time("runtime", "30").unwrap(), Duration::from_secs(30));
        assert_eq!(
            time("runtime", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(time("runtime", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(time("runtime", "1d").unwrap(), Duration::from_secs(86400));
        assert!(time("runtime", "soon")
            .unwrap_err()
            .contains("runtime=soon"));
    }

    #[test]
    fn rates_per_direction() {
        let j = job_with(&[("rate", Some("1m,512k")), ("rate_iops", Some(",100"))]).unwrap();
        assert_eq!(j.rate.read, Some(1 << 20));
        assert_eq!(j.rate.write, Some(512 << 10));
        assert_eq!(j.rate_iops.read, None);
        assert_eq!(j.rate_iops.write, Some(100));
        let both = job_with(&[("rate", Some("2m"))]).unwrap();
        assert_eq!(both.rate.read, both.rate.write);
        assert!(job_with(&[("rate", Some("1m,1m,1m"))]).is_ok());
        assert!(job_with(&[("rate", Some("1m,1m,1m,1m"))]).is_err());
    }

    #[test]
    fn bare_booleans_mean_one() {
        let j = job_with(&[
            ("time_based", None),
            ("direct", Some("1")),
            ("invalidate", Some("0")),
        ])
        .unwrap();
        assert!(j.time_based && j.direct && !j.invalidate);
        let b = job_with(&[("direct", None), ("buffered", Some("1"))]).unwrap();
        assert!(!b.direct);
        assert!(job_with(&[("direct", Some("maybe"))])
            .unwrap_err()
            .contains("0 or 1"));
    }

    #[test]
    fn values_are_required_where_meaningful() {
        let e = job_with(&[("bs", None)]).unwrap_err();
        assert!(e.contains("needs a value"), "{e}");
        let j = job_with(&[("bs", Some("4k,8k"))]).unwrap();
        assert_eq!(
            (j.sizes.read.max(), j.sizes.write.max(), j.bs),
            (4096, 8192, 8192)
        );
        assert!(job_with(&[("bs", Some("4k-8k"))])
            .unwrap_err()
            .contains("bsrange"));
        assert!(job_with(&[("size", Some("50%"))]).is_err());
        assert!(job_with(&[("numjobs", Some("0"))]).is_err());
        assert!(job_with(&[("rwmixread", Some("101"))]).is_err());
    }

    #[test]
    fn unknown_options_suggest_the_nearest() {
        let e = job_with(&[("norandmap", None)]).unwrap_err();
        assert!(e.contains("did you mean norandommap"), "{e}");
        let e = job_with(&[("ioengine", Some("libaoi"))]).unwrap_err();
        assert!(e.contains("did you mean libaio"), "{e}");
        let e = job_with(&[("ioengine", Some("rdma"))]).unwrap_err();
        assert!(e.contains("rdma") && e.contains("network"), "{e}");
    }

    #[test]
    fn offset_modifiers_parse() {
        let j = job_with(&[("rw", Some("read:-8k"))]).unwrap();
        assert_eq!(j.x.seq_add, -8192);
        let j = job_with(&[("rw", Some("randread:8"))]).unwrap();
        assert_eq!(j.x.rand_every, 8);
        assert!(job_with(&[("rw", Some("randread:0"))]).is_err());
        let j = job_with(&[("rw", Some("randtrim:4"))]).unwrap();
        assert_eq!((j.rw, j.x.rand_every), (Rw::RandTrim, 4));
    }

    #[test]
    fn options_are_remembered_as_written() {
        let j = job_with(&[("bs", Some("4k")), ("bs", Some("8k")), ("time_based", None)]).unwrap();
        assert_eq!(j.bs, 8192);
        assert_eq!(
            j.options,
            [
                ("bs".to_string(), "8k".to_string()),
                ("time_based".into(), "1".into())
            ]
        );
    }
}
