//! biolatency-style log2 latency histograms per disk and operation, with
//! percentiles computed from the raw samples (not from the buckets).
//!
//! Buckets follow bcc's `print_log2_hist` (bcc/table.py): slot `i` holds
//! values in `[2^(i-1), 2^i - 1]` µs, printed `low -> high`, the first one
//! `0 -> 1`; bars are `*` scaled so the fullest slot has 40. Percentiles are
//! nearest-rank (the smallest sample with at least p % of samples ≤ it), so
//! every printed percentile is a latency that really happened.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use iolab_sys::cast;
use serde::{Deserialize, Serialize};

use crate::event::{Dev, Op};
use crate::request::BioRequest;

/// One log2 slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// Lowest latency in the slot, µs.
    pub low_us: u64,
    /// Highest latency in the slot, µs.
    pub high_us: u64,
    /// Requests in the slot.
    pub count: u64,
}

/// Percentiles of one latency, in µs (fractions kept).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Percentiles {
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p99_9_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl Percentiles {
    /// From samples in ns (any order); all zero when empty.
    pub fn of_ns(samples: &mut [u64]) -> Percentiles {
        if samples.is_empty() {
            return Percentiles::default();
        }
        samples.sort_unstable();
        let us = |ns: u64| ns as f64 / 1000.0;
        let sum: u128 = samples.iter().map(|&v| u128::from(v)).sum();
        Percentiles {
            mean_us: sum as f64 / samples.len() as f64 / 1000.0,
            p50_us: us(nearest_rank(samples, 50.0)),
            p90_us: us(nearest_rank(samples, 90.0)),
            p99_us: us(nearest_rank(samples, 99.0)),
            p99_9_us: us(nearest_rank(samples, 99.9)),
            max_us: us(samples[samples.len() - 1]),
        }
    }
}

/// Nearest-rank percentile of sorted, non-empty samples.
pub fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    let n = sorted.len();
    // The epsilon keeps 99.9 % of 1000 at rank 999 despite binary fractions.
    let rank = cast::floor_u64((p * n as f64 / 100.0 - 1e-9).ceil());
    sorted[cast::usize_of(rank).clamp(1, n) - 1]
}

/// Slot index of a latency in µs (0 and 1 share slot 1, as bcc prints).
fn slot(us: u64) -> usize {
    (64 - us.leading_zeros() as usize).max(1)
}

/// log2 buckets of samples in ns, from slot 1 up to the highest non-empty.
pub fn log2_buckets(samples_ns: &[u64]) -> Vec<Bucket> {
    let mut counts = [0u64; 65];
    for &ns in samples_ns {
        counts[slot(ns / 1000)] += 1;
    }
    buckets_of_slots(&counts)
}

/// Buckets from counts per slot (slot `i`: `[2^(i-1), 2^i - 1]` µs, 0 µs
/// counted in slot 1), from slot 1 up to the highest non-empty.
pub fn buckets_of_slots(counts: &[u64; 65]) -> Vec<Bucket> {
    let Some(top) = counts.iter().rposition(|&c| c > 0) else {
        return Vec::new();
    };
    (1..=top.max(1))
        .map(|i| {
            let high = if i == 64 { u64::MAX } else { (1u64 << i) - 1 };
            let low = if i == 1 { 0 } else { 1u64 << (i - 1) };
            Bucket {
                low_us: low,
                high_us: high,
                count: counts[i],
            }
        })
        .collect()
}

/// The latency histogram of one disk and operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyHist {
    /// Disk name (`vda`).
    pub disk: String,
    /// Its device number (`254:0`).
    pub dev: String,
    /// Operation letter: R, W, D (discard), F (flush), N (other).
    pub op: String,
    /// Requests.
    pub count: u64,
    /// Bytes they moved.
    pub bytes: u64,
    /// Device latency (issue → complete), log2 µs slots.
    pub buckets: Vec<Bucket>,
    /// Device latency (issue → complete), what biolatency measures.
    pub lat: Percentiles,
    /// Queue time (insert → issue), what biolatency -Q adds.
    pub que: Percentiles,
    /// Where the percentiles come from when not from every sample: the
    /// BPF collector's bins, and their resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentiles_from: Option<String>,
}

/// Histograms of every disk and operation seen, in disk then R/W/D/F/N
/// order.
pub fn histograms(
    requests: &[BioRequest],
    name: &mut impl FnMut(Dev) -> String,
) -> Vec<LatencyHist> {
    let mut groups: BTreeMap<(Dev, Op), Vec<&BioRequest>> = BTreeMap::new();
    for r in requests {
        groups.entry((r.dev, r.op())).or_default().push(r);
    }
    let mut out: Vec<LatencyHist> = groups
        .into_iter()
        .map(|((dev, op), rs)| {
            let mut lat: Vec<u64> = rs.iter().map(|r| r.lat_ns()).collect();
            let mut que: Vec<u64> = rs.iter().map(|r| r.que_ns()).collect();
            LatencyHist {
                disk: name(dev),
                dev: dev.to_string(),
                op: op.letter().to_string(),
                count: rs.len() as u64,
                bytes: rs.iter().map(|r| r.bytes()).sum(),
                buckets: log2_buckets(&lat),
                lat: Percentiles::of_ns(&mut lat),
                que: Percentiles::of_ns(&mut que),
                percentiles_from: None,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.disk, op_rank(&a.op)).cmp(&(&b.disk, op_rank(&b.op))));
    out
}

fn op_rank(op: &str) -> usize {
    "RWDFN".find(op).unwrap_or(5)
}

/// Bar of `count` scaled to `width` for a slot maximum of `max` (bcc's
/// `_stars`: a `+` marks a bar cut at the width).
fn stars(count: u64, max: u64, width: usize) -> String {
    if max == 0 {
        return String::new();
    }
    let n = cast::usize_of(cast::floor_u64(count as f64 * width as f64 / max as f64));
    let mut s = "*".repeat(n.min(width));
    if n > width {
        s.pop();
        s.push('+');
    }
    s
}

/// Renders one histogram as biolatency prints it, then its percentiles.
pub fn render(h: &LatencyHist) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "disk = {}  op = {}  ({} requests, {})",
        h.disk,
        op_name(&h.op),
        h.count,
        iolab_sys::units::format_bytes(h.bytes)
    );
    let max = h.buckets.iter().map(|b| b.count).max().unwrap_or(0);
    let wide = h.buckets.len() > 32;
    if wide {
        let _ = writeln!(
            out,
            "               {:<29} : count     distribution",
            "usecs"
        );
    } else {
        let _ = writeln!(out, "     {:<19} : count     distribution", "usecs");
    }
    for b in &h.buckets {
        let line = if wide {
            format!(
                "{:>20} -> {:<20} : {:<8} |{:<20}|",
                b.low_us,
                b.high_us,
                b.count,
                stars(b.count, max, 20)
            )
        } else {
            format!(
                "{:>10} -> {:<10} : {:<8} |{:<40}|",
                b.low_us,
                b.high_us,
                b.count,
                stars(b.count, max, 40)
            )
        };
        let _ = writeln!(out, "{line}");
    }
    let p = |name: &str, v: &Percentiles| {
        format!(
            "{name} µs: p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  mean {:.1}",
            v.p50_us, v.p90_us, v.p99_us, v.p99_9_us, v.max_us, v.mean_us
        )
    };
    let _ = writeln!(out, "{}", p("lat", &h.lat));
    let _ = writeln!(out, "{}", p("que", &h.que));
    if let Some(from) = &h.percentiles_from {
        let _ = writeln!(out, "percentiles {from}");
    }
    out
}

fn op_name(letter: &str) -> &'static str {
    match letter {
        "R" => "read",
        "W" => "write",
        "D" => "discard",
        "F" => "flush",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::{Comm, Rwbs};
    use crate::request::Origin;
    use crate::testutil::{LOOP0, ZRAM0};

    fn req(dev: Dev, op: &str, lat_ns: u64) -> BioRequest {
        BioRequest {
            dev,
            sector: 0,
            nr_sector: 8,
            rwbs: Rwbs::parse(op.as_bytes()),
            comm: Comm::new(b"t"),
            tid: 1,
            pid: 1,
            queue_ns: Some(0),
            issue_ns: Some(1000),
            complete_ns: 1000 + lat_ns,
            requeues: 0,
            error: 0,
            origin: Origin::IoStart,
        }
    }

    #[test]
    fn slots_match_bcc_ranges() {
        let b = log2_buckets(&[0, 1_000, 1_999, 2_000, 3_999, 4_000, 100_000]);
        assert_eq!((b[0].low_us, b[0].high_us, b[0].count), (0, 1, 3));
        assert_eq!((b[1].low_us, b[1].high_us, b[1].count), (2, 3, 2));
        assert_eq!((b[2].low_us, b[2].high_us, b[2].count), (4, 7, 1));
        let last = b.last().unwrap();
        assert_eq!((last.low_us, last.high_us, last.count), (64, 127, 1));
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), 7);
        assert!(log2_buckets(&[]).is_empty());
    }

    #[test]
    fn nearest_rank_returns_real_samples() {
        let s: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&s, 50.0), 500);
        assert_eq!(nearest_rank(&s, 99.9), 999);
        assert_eq!(nearest_rank(&s, 100.0), 1000);
        assert_eq!(nearest_rank(&[7], 0.0), 7);
        let mut ns: Vec<u64> = (1..=100).map(|v| v * 1000).collect();
        let p = Percentiles::of_ns(&mut ns);
        assert_eq!(
            (p.p50_us, p.p90_us, p.p99_us, p.max_us),
            (50.0, 90.0, 99.0, 100.0)
        );
        assert!((p.mean_us - 50.5).abs() < 1e-9);
    }

    #[test]
    fn groups_by_disk_and_op_in_a_stable_order() {
        let rs = vec![
            req(ZRAM0, "W", 5_000),
            req(LOOP0, "W", 1_000),
            req(LOOP0, "R", 3_000),
            req(LOOP0, "R", 9_000),
        ];
        let mut name = |d: Dev| {
            if d == LOOP0 {
                "loop0".to_string()
            } else {
                "zram0".to_string()
            }
        };
        let h = histograms(&rs, &mut name);
        let keys: Vec<(String, String, u64)> = h
            .iter()
            .map(|h| (h.disk.clone(), h.op.clone(), h.count))
            .collect();
        assert_eq!(
            keys,
            [
                ("loop0".into(), "R".into(), 2),
                ("loop0".into(), "W".into(), 1),
                ("zram0".into(), "W".into(), 1)
            ]
        );
        assert_eq!(h[0].bytes, 8192);
        assert_eq!(h[0].lat.max_us, 9.0);
        assert_eq!(h[0].que.p50_us, 1.0);
    }

    #[test]
    fn renders_bars_like_biolatency() {
        let rs = vec![
            req(LOOP0, "R", 1_000),
            req(LOOP0, "R", 2_500),
            req(LOOP0, "R", 2_600),
        ];
        let h = histograms(&rs, &mut |_| "loop0".to_string());
        let text = render(&h[0]);
        assert!(
            text.contains("     usecs               : count     distribution"),
            "{text}"
        );
        assert!(
            text.contains(
                "         0 -> 1          : 1        |********************                    |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "         2 -> 3          : 2        |****************************************|"
            ),
            "{text}"
        );
        assert!(text.contains("p99.9"), "{text}");
    }
}
