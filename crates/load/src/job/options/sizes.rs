//! Sizes and offsets: block sizes and their splits, the region (`size`, `offset`, `io_size`, `filesize`), how much to do (`number_ios`, `loops`, `fill_device`) and strided zones.

#![allow(clippy::wildcard_imports)]
use super::prelude::*;
use crate::job::value::*;

/// The options of this concern.
pub const NAMES: &[&str] = &[
    "bs",
    "blocksize",
    "size",
    "loops",
    "bssplit",
    "bsrange",
    "blocksize_range",
    "blockalign",
    "ba",
    "blocksize_unaligned",
    "bs_unaligned",
    "offset",
    "fileoffset",
    "offset_increment",
    "io_size",
    "io_limit",
    "number_ios",
    "filesize",
    "fill_device",
    "fill_fs",
    "zonemode",
    "zonerange",
    "zonesize",
    "zoneskip",
];

/// Applies one of [`NAMES`] (the registry only passes those).
pub fn apply(job: &mut Job, key: &str, value: Option<&str>) -> Result<(), String> {
    let sz = |v: &str| size(key, v);
    let x = &mut job.x;
    match key {
        "bs" | "blocksize" => {
            let v = need_raw(key, value)?;
            if v.contains('-') || v.contains(':') {
                return Err(format!(
                    "{key}={v}: a range or split is bsrange=LOW-HIGH or bssplit=SIZE/PCT:...; bs takes one size, or READ,WRITE"
                ));
            }
            let (r, w) = crate::job::sizes::per_dir(key, v)?;
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
            job.sizes.read = crate::job::sizes::SizeDist::Fixed(one(r)?);
            job.sizes.write = crate::job::sizes::SizeDist::Fixed(one(w)?);
            job.bs = job.sizes.max();
        }
        "size" => {
            let v = need_raw(key, value)?;
            x.zone_units.size = zones(key, v.trim())?;
            if x.zone_units.size.is_some() {
                job.size = None;
                return Ok(());
            }
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
        "loops" => job.loops = count(key, need_raw(key, value)?, 1)?,
        "bssplit" => {
            let v = need(key, value)?;
            let (r, w) = sizes::per_dir(key, v)?;
            job.sizes.read = sizes::parse_split(key, r, sz)?;
            job.sizes.write = sizes::parse_split(key, w, sz)?;
            job.bs = job.sizes.max();
        }
        "bsrange" | "blocksize_range" => {
            let v = need(key, value)?;
            let (r, w) = sizes::per_dir(key, v)?;
            job.sizes.read = sizes::parse_range(key, r, sz)?;
            job.sizes.write = sizes::parse_range(key, w, sz)?;
            job.bs = job.sizes.max();
        }
        "blockalign" | "ba" => {
            let v = need(key, value)?;
            let (r, w) = sizes::per_dir(key, v)?;
            let a = size(key, r)?.max(size(key, w)?);
            if a == 0 {
                return Err(format!("{key}=0: expected an alignment of at least 1 byte"));
            }
            job.sizes.align = Some(a);
        }
        "blocksize_unaligned" | "bs_unaligned" => job.sizes.unaligned = boolean(key, value)?,
        "offset" | "fileoffset" => {
            let v = need(key, value)?;
            x.zone_units.offset = zones(key, v)?;
            if v.ends_with('%') {
                return Err(format!("{key}={v}: give the offset in bytes, e.g. 1g, or in zones, e.g. 4z (percent offsets are not supported)"));
            }
            x.offset = if x.zone_units.offset.is_some() {
                0
            } else {
                size(key, v)?
            };
        }
        "offset_increment" => {
            let v = need(key, value)?;
            x.zone_units.offset_increment = zones(key, v)?;
            x.offset_increment = if x.zone_units.offset_increment.is_some() {
                0
            } else {
                size(key, v)?
            };
        }
        "io_size" | "io_limit" => {
            let v = need(key, value)?;
            x.zone_units.io_size = zones(key, v)?;
            let s = if x.zone_units.io_size.is_some() {
                0
            } else {
                size(key, v)?
            };
            x.io_size = (s > 0).then_some(s);
        }
        "number_ios" => {
            let n = number(key, need(key, value)?)?;
            x.number_ios = (n > 0).then_some(n);
        }
        "filesize" => {
            let v = need(key, value)?;
            let (lo, hi) = match v.split_once('-') {
                Some((a, b)) => (size(key, a)?, size(key, b)?),
                None => {
                    let s = size(key, v)?;
                    (s, s)
                }
            };
            if lo == 0 || hi < lo {
                return Err(format!(
                    "{key}={v}: expected SIZE or LOW-HIGH with 0 < LOW <= HIGH"
                ));
            }
            x.filesize = Some((lo, hi));
        }
        "fill_device" | "fill_fs" => x.fill_device = boolean(key, value)?,
        "zonemode" => match need(key, value)? {
            "none" => {
                x.zbd = false;
                x.zone_mode_given = Some("none");
            }
            "strided" => {
                x.strided.get_or_insert((0, 0, 0));
                x.zbd = false;
                x.zone_mode_given = Some("strided");
            }
            "zbd" => {
                x.zbd = true;
                x.zone_mode_given = Some("zbd");
            }
            v => return Err(format!("zonemode={v}: expected none, strided or zbd")),
        },
        // fio: zonerange defaults to zonesize and the reverse; giving
        // zonesize alone also means strided (fio's older spelling).
        "zonerange" | "zonesize" | "zoneskip" => {
            let n = size(key, need(key, value)?)?;
            let z = x.strided.get_or_insert((0, 0, 0));
            match key {
                "zonerange" => z.0 = n,
                "zonesize" => z.1 = n,
                _ => z.2 = n,
            }
        }
        // apply() let only NAMES in.
        _ => return Err(format!("option {key} is not in this table")),
    }
    Ok(())
}

/// fio's zone units (`size=8z`: eight zones), resolved once the zone size
/// is known (`zonesize`, or the zoned device's); `None` for a plain size.
fn zones(key: &str, v: &str) -> Result<Option<u64>, String> {
    let Some(n) = v.strip_suffix('z') else {
        return Ok(None);
    };
    n.parse::<u32>().map(|n| Some(u64::from(n))).map_err(|_| {
        format!("{key}={v}: unexpected zone value (expected a whole number of zones, e.g. 8z)")
    })
}
