//! fio's latency bins as the BPF programs fill them (stat.c
//! `plat_val_to_idx`, 6 bits): values below 128 ns exactly, above that 64
//! bins per power of two, so a bin's midpoint is within 1/128 of any value
//! in it and a percentile read from the bins within 1.6 % of the sample's.

use std::collections::BTreeMap;

use crate::hist::Percentiles;

/// Stored with percentiles read from these bins.
pub const SOURCE: &str =
    "counted in the kernel: fio's latency bins (within 1.6 %); mean and max exact";

const BITS: u32 = 6;
const VAL: u64 = 1 << BITS;

/// The value a bin stands for, ns (fio's `plat_idx_to_val`: its midpoint).
pub fn value(idx: u16) -> f64 {
    let idx = u64::from(idx);
    if idx < (VAL << 1) {
        return idx as f64;
    }
    let error_bits = (idx >> BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(BITS));
    let k = idx % VAL;
    base as f64 + (k as f64 + 0.5) * (1u64 << error_bits) as f64
}

/// The bin of a value in ns, as bio.bpf.c's `plat_slot` computes it (the
/// unit tests pin the two together through [`value`]).
#[cfg(test)]
pub fn index(ns: u64) -> u16 {
    let msb = if ns == 0 { 0 } else { 63 - ns.leading_zeros() };
    if msb <= BITS {
        return u16::try_from(ns).unwrap_or(u16::MAX);
    }
    let error_bits = msb - BITS;
    let base = (u64::from(error_bits) + 1) << BITS;
    let offset = (VAL - 1) & (ns >> error_bits);
    u16::try_from((base + offset).min(29 * VAL - 1)).unwrap_or(u16::MAX)
}

/// Nearest-rank percentiles from bins (the bin holding the rank, at its
/// value), the mean from the exact sum, the max exact when known.
pub fn percentiles(
    bins: &BTreeMap<u16, u64>,
    sum_ns: u128,
    n: u64,
    max_ns: Option<u64>,
) -> Percentiles {
    let total: u64 = bins.values().sum();
    if total == 0 || n == 0 {
        return Percentiles::default();
    }
    let at = |p: f64| -> f64 {
        // The same rank as hist::nearest_rank.
        let rank =
            iolab_sys::cast::floor_u64((p * total as f64 / 100.0 - 1e-9).ceil()).clamp(1, total);
        let mut seen = 0;
        for (&i, &c) in bins {
            seen += c;
            if seen >= rank {
                return value(i) / 1000.0;
            }
        }
        0.0
    };
    let top = bins.keys().next_back().map_or(0.0, |&i| value(i) / 1000.0);
    Percentiles {
        mean_us: sum_ns as f64 / n as f64 / 1000.0,
        p50_us: at(50.0),
        p90_us: at(90.0),
        p99_us: at(99.0),
        p99_9_us: at(99.9),
        max_us: max_ns.map_or(top, |m| m as f64 / 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value up to 2^34 ns (17 s: the bins' range; above, the last
    /// bin holds it) is within 1/128 of its bin's value (exact below 128 ns),
    /// as fio's bins promise.
    #[test]
    fn a_bins_value_is_within_its_resolution() {
        for ns in (0..200u64).chain((1..34).map(|s| (1u64 << s) + 12345 % (1u64 << s))) {
            let v = value(index(ns));
            let err = (v - ns as f64).abs();
            assert!(
                err <= ns as f64 / 128.0 + 0.5,
                "{ns} ns → bin {} = {v}",
                index(ns)
            );
        }
    }

    /// Percentiles of known samples, read from their bins, are within the
    /// bins' resolution of the samples' own (hist's nearest rank).
    #[test]
    fn percentiles_from_bins_match_the_samples() {
        let mut samples: Vec<u64> = (1..=10_000u64).map(|i| i * 997 % 3_000_000 + 50).collect();
        let mut bins = BTreeMap::new();
        for &s in &samples {
            *bins.entry(index(s)).or_insert(0u64) += 1;
        }
        let sum: u128 = samples.iter().map(|&s| u128::from(s)).sum();
        let got = percentiles(&bins, sum, samples.len() as u64, None);
        let want = Percentiles::of_ns(&mut samples);
        for (g, w) in [
            (got.p50_us, want.p50_us),
            (got.p90_us, want.p90_us),
            (got.p99_us, want.p99_us),
            (got.p99_9_us, want.p99_9_us),
        ] {
            assert!((g - w).abs() <= w * 0.016, "{got:?} vs {want:?}");
        }
        assert!((got.mean_us - want.mean_us).abs() < 1e-9);
    }
}
