//! sched.bpf.c's log-linear bins: below 8 ns one per nanosecond, then 8
//! per power of two up to 2^40 ns. A bin spans at most 1/8 of its lower
//! bound, so its middle is within 1/16 of any delay in it.

/// Bins per power of two (`SUB` in the C).
const SUB_BITS: u32 = 3;
const SUB: u64 = 1 << SUB_BITS;
/// Bins in all (`NBINS`).
pub const NBINS: usize = (40 - SUB_BITS as usize + 1) << SUB_BITS;

/// Where the report's median, p99 and stddev come from, as stored.
pub const BINS_SOURCE: &str =
    "counted in the kernel: log-linear bins, 8 per power of two (median and p99 within 1/16; stddev from the bins' middles); count, mean, min and max exact";

/// The range `[low, high)` of bin `i`, ns.
pub fn range(i: u16) -> (u64, u64) {
    let i = u64::from(i);
    if i < SUB {
        return (i, i + 1);
    }
    let group = i / SUB;
    let sub = i % SUB;
    let shift = group - 1;
    ((SUB + sub) << shift, (SUB + sub + 1) << shift)
}

/// The middle of bin `i`, ns.
pub fn mid(i: u16) -> f64 {
    let (lo, hi) = range(i);
    if hi - lo == 1 {
        lo as f64
    } else {
        (lo + hi) as f64 / 2.0
    }
}

/// The bin of `v` ns, as the C computes it (for the tests).
#[cfg(test)]
fn bin_of(v: u64) -> u16 {
    if v < SUB {
        return u16::try_from(v).unwrap_or(u16::MAX);
    }
    let msb = 63 - v.leading_zeros();
    if msb >= 40 {
        return u16::try_from(NBINS - 1).unwrap_or(u16::MAX);
    }
    let group = u64::from(msb - SUB_BITS + 1);
    u16::try_from(group * SUB + ((v >> (msb - SUB_BITS)) & (SUB - 1))).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lies_in_its_bin_and_near_its_middle() {
        let mut v = 0u64;
        while v < 1 << 40 {
            let i = bin_of(v);
            let (lo, hi) = range(i);
            assert!(lo <= v && v < hi, "{v} in bin {i} = [{lo}, {hi})");
            assert!((mid(i) - v as f64).abs() <= v as f64 / 16.0 + 0.5, "{v}");
            v = v * 9 / 8 + 1;
        }
        // Every edge: 2^k - 1, 2^k and 2^k + 1.
        for k in 0..41 {
            for v in [(1u64 << k) - 1, 1 << k, (1 << k) + 1] {
                let (lo, hi) = range(bin_of(v));
                assert!(lo <= v && (v < hi || v >= 1 << 40), "{v}: [{lo}, {hi})");
            }
        }
        assert_eq!(usize::from(bin_of(u64::MAX)), NBINS - 1);
        assert_eq!(range(u16::try_from(NBINS - 1).unwrap_or(0)).1, 1 << 40);
    }
}
