//! The option table: one function applies `key=value` to a [`Job`], for
//! job files and command-line flags alike, so both accept exactly the same
//! spellings and give the same errors. Values are read as fio reads them:
//! sizes with binary units (`4k` = 4096), times in seconds unless a unit is
//! given (`10`, `500ms`, `2m`), booleans as `0`/`1` (a bare option = 1).

mod data;
mod engine;
mod files;
pub mod iolog;
mod prelude;
mod rate;
pub mod refused;
mod reporting;
mod sizes;
mod timing;
mod workload;
pub mod zbd;

use crate::job::model::Job;

/// Each concern's options and how it applies them.
type Apply = fn(&mut Job, &str, Option<&str>) -> Result<(), String>;
const CONCERNS: &[(&[&str], Apply)] = &[
    (workload::NAMES, workload::apply),
    (sizes::NAMES, sizes::apply),
    (timing::NAMES, timing::apply),
    (rate::NAMES, rate::apply),
    (engine::NAMES, engine::apply),
    (files::NAMES, files::apply),
    (data::NAMES, data::apply),
    (reporting::NAMES, reporting::apply),
    (iolog::NAMES, iolog::apply),
    (zbd::NAMES, zbd::apply),
];

/// Every option iolab understands.
pub fn supported() -> impl Iterator<Item = &'static str> {
    CONCERNS.iter().flat_map(|(names, _)| names.iter().copied())
}

/// Applies one option. `value` is `None` for a bare option (`time_based`).
/// The error says what the value should look like; the caller adds where.
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    crate::job::value::KB1000.set(job.x.kb_base == 1000);
    match CONCERNS.iter().find(|(names, _)| names.contains(&key)) {
        Some((_, apply)) => apply(job, key, value)?,
        None => return Err(refused::unknown(key, supported())),
    }
    // fio lists the options given a value (`job options`); a bare one
    // (`stonewall`, `time_based`) is applied but not listed.
    let Some(shown) = value.map(str::to_string) else {
        return Ok(());
    };
    match job.options.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = shown,
        None => job.options.push((key.to_string(), shown)),
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::job::kinds::Rw;
    use crate::job::value::*;
    use std::time::Duration;

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
        // A bare flag is applied but not listed, as fio 3.33 lists options.
        assert!(j.time_based);
        assert_eq!(j.options, [("bs".to_string(), "8k".to_string())]);
    }
}
