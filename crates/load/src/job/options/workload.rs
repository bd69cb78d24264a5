//! What the job does: its name, its `rw` pattern and mix, its clones, its random stream, its CPU burner.

#![allow(clippy::wildcard_imports)]
use super::prelude::*;
use crate::job::value::*;

/// The options of this concern.
pub const NAMES: &[&str] = &[
    "name",
    "description",
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "numjobs",
    "cpuload",
    "cpumode",
    "cpuchunks",
    "stonewall",
    "wait_for_previous",
    "randrepeat",
    "allrandrepeat",
    "rw_sequencer",
    "norandommap",
    "softrandommap",
    "randseed",
    "random_generator",
    "random_distribution",
    "random_sequence_stride",
    "new_group",
    "thread",
    "threads",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let sz = |v: &str| size(key, v);
    let x = &mut job.x;
    match key {
        "name" => job.name = need_raw(key, value)?.to_string(),
        "description" => job.description = Some(need_raw(key, value)?.to_string()),
        "rw" | "readwrite" => {
            let v = need_raw(key, value)?;
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
        "rwmixread" => job.rwmixread = percent(key, need_raw(key, value)?)?,
        "rwmixwrite" => job.rwmixread = 100 - percent(key, need_raw(key, value)?)?,
        "numjobs" => {
            job.numjobs = at_most(
                key,
                count(key, need_raw(key, value)?, 1)?,
                MAX_NUMJOBS,
                "each clone is a thread of this process",
            )?
        }
        "cpuload" => {
            let p = percent(key, need_raw(key, value)?)?;
            if p == 0 {
                return Err("cpuload=0: expected a percentage from 1 to 100".into());
            }
            job.cpuload = Some(p);
        }
        "cpumode" => {
            job.cpumode = match need_raw(key, value)? {
                "noop" => CpuMode::Noop,
                "qsort" => CpuMode::Qsort,
                v => return Err(format!("cpumode={v}: expected noop or qsort")),
            }
        }
        "cpuchunks" => {
            let us = number(key, need_raw(key, value)?)?;
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
        "rw_sequencer" => {
            let v = need(key, value)?;
            x.identical = match v.split(':').next().unwrap_or("") {
                "sequential" => false,
                "identical" => true,
                _ => {
                    return Err(format!(
                        "rw_sequencer={v}: expected sequential or identical"
                    ))
                }
            };
        }
        "norandommap" => x.norandommap = boolean(key, value)?,
        // fio: go on without a random map when it cannot be allocated;
        // iolab's needs no memory (a keyed permutation), so it never fails.
        "softrandommap" => {
            boolean(key, value)?;
        }
        "randseed" => {
            x.randseed = Some(number(key, need(key, value)?)?);
        }
        "random_generator" => {
            let v = need(key, value)?;
            if !matches!(v, "tausworthe" | "lfsr" | "tausworthe64") {
                return Err(format!(
                    "random_generator={v}: expected tausworthe, lfsr or tausworthe64"
                ));
            }
            x.lfsr = v == "lfsr";
            note(job, format!(
                "job {}: random_generator={v}: iolab draws offsets with its own generator (every block once per pass, as lfsr guarantees; with norandommap too when lfsr is asked, as fio)",
                job.name
            ));
        }
        "random_distribution" => {
            let mut d = Distribution::parse(need(key, value)?, sz)?;
            if let Distribution::Sequence(_, stride) = &mut d {
                *stride = x.sequence_stride;
            }
            x.distribution = d;
        }
        "random_sequence_stride" => {
            x.sequence_stride = boolean(key, value)?;
            if let Distribution::Sequence(_, stride) = &mut x.distribution {
                *stride = x.sequence_stride;
            }
        }
        "new_group" => x.new_group = boolean(key, value)?,
        // Clones are always threads of this process: what thread asks.
        "thread" | "threads" => {
            boolean(key, value)?;
        }
        // apply() let only NAMES in.
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}
