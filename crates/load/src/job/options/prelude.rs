//! What the option concerns share beyond value parsing: the types they
//! fill in and a few helpers of more than one concern.

pub use std::path::PathBuf;
pub use std::time::Duration;

pub use iolab_sys::ioprio::IoPrio;

pub use super::refused::unknown_engine;
pub use crate::job::distribution::Distribution;
pub use crate::job::extra::{BufferFill, ExitWhat, SsMetric, SteadyState};
pub use crate::job::kinds::{CpuMode, IoEngine, Rw};
pub use crate::job::model::Job;
pub(crate) use crate::job::sizes;
pub use crate::job::value::{number, time};
pub(crate) use crate::job::verify::{self, VerifyKind, VerifyOpts};

/// Adds a note to the job (said once).
pub fn note(job: &mut Job, text: String) {
    if !job.x.notes.contains(&text) {
        job.x.notes.push(text);
    }
}

/// The job's verify options, made on first use.
pub fn verify_opts(job: &mut Job) -> &mut VerifyOpts {
    job.x
        .verify
        .get_or_insert_with(|| VerifyOpts::new(VerifyKind::Crc32c))
}

pub fn make_prio(class: u8, level: u8) -> Result<IoPrio, String> {
    let s = match class {
        1 => format!("rt:{level}"),
        3 => "idle".to_string(),
        _ => format!("be:{level}"),
    };
    s.parse().map_err(|e| format!("prio: {e}"))
}

/// fio's thinktime: microseconds unless a unit is given.
pub fn micros(key: &str, v: &str) -> Result<Duration, String> {
    if v.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Duration::from_micros(number(key, v)?));
    }
    time(key, v)
}

/// A log's prefix; without a value, the job's name — resolved when the
/// job runs (`LogOpts::for_job`), because a bare `write_bw_log` in
/// [global] names each job's logs after that job (fio's t0023).
pub fn log_prefix(_name: &str, value: Option<&str>) -> String {
    match value.map(str::trim) {
        Some(v) if !v.is_empty() && v != "1" => v.to_string(),
        _ => String::new(),
    }
}

pub fn ss_mut(x: &mut crate::job::extra::Extra) -> &mut SteadyState {
    x.steadystate.get_or_insert_with(|| SteadyState {
        metric: SsMetric::Iops,
        slope: false,
        limit: 0.01,
        percent: true,
        dur: Duration::ZERO,
        ramp: Duration::ZERO,
        interval: Duration::from_secs(1),
    })
}

pub fn parse_ss(v: &str, prev: Option<SteadyState>) -> Result<SteadyState, String> {
    let bad = || {
        format!("steadystate={v}: expected METRIC:LIMIT with METRIC iops, iops_slope, bw, bw_slope, lat or lat_slope, e.g. iops:10%")
    };
    let (m, lim) = v.split_once(':').ok_or_else(bad)?;
    let (metric, slope) = match m {
        "iops" => (SsMetric::Iops, false),
        "iops_slope" => (SsMetric::Iops, true),
        "bw" => (SsMetric::Bw, false),
        "bw_slope" => (SsMetric::Bw, true),
        "lat" => (SsMetric::Lat, false),
        "lat_slope" => (SsMetric::Lat, true),
        _ => return Err(bad()),
    };
    let (num, percent) = match lim.strip_suffix('%') {
        Some(n) => (n, true),
        None => (lim, false),
    };
    let mut limit: f64 = num
        .trim()
        .parse()
        .ok()
        .filter(|f: &f64| f.is_finite() && *f >= 0.0)
        .ok_or_else(bad)?;
    if percent {
        limit /= 100.0;
    } else if metric == SsMetric::Bw {
        // fio reads an absolute bw limit with size units.
        limit = iolab_sys::units::parse_size(lim).map_err(|_| bad())? as f64;
    }
    let mut ss = prev.unwrap_or(SteadyState {
        metric,
        slope,
        limit,
        percent,
        dur: Duration::ZERO,
        ramp: Duration::ZERO,
        interval: Duration::from_secs(1),
    });
    ss.metric = metric;
    ss.slope = slope;
    ss.limit = limit;
    ss.percent = percent;
    Ok(ss)
}
