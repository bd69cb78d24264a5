//! fio's latency bins ("plat", `stat.h`): 29 groups of 64 bins, exact
//! below 128 ns and within 1/64 (1.6 %) above. json+ output and
//! `write_hist_log` files carry these bins, and fio's tools
//! (`fio_jsonplus_clat2csv`, `fiologparser_hist.py`) map indices back to
//! nanoseconds with the same arithmetic, so the bins must match fio's
//! exactly.

/// log2 of the bins per group.
pub const BITS: u32 = 6;
/// Bins per group.
pub const VAL: u64 = 1 << BITS;
/// Groups.
pub const GROUPS: usize = 29;
/// All bins (fio's FIO_IO_U_PLAT_NR).
pub const NR: usize = GROUPS << BITS;

/// The bin of a latency in nanoseconds (fio's `plat_val_to_idx`).
#[inline]
pub fn idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= BITS {
        return iolab_sys::cast::usize_of(val);
    }
    let error_bits = msb - BITS;
    let base = (error_bits as usize + 1) << BITS;
    let offset = ((VAL - 1) & (val >> error_bits)) as usize;
    (base + offset).min(NR - 1)
}

/// The value fio reports for a bin (`plat_idx_to_val`: the bin's middle).
pub fn val(idx: usize) -> u64 {
    if idx < 2 << BITS {
        return idx as u64;
    }
    #[allow(
        clippy::cast_possible_truncation,
        reason = "a bin index is below NR, so idx >> BITS is below GROUPS (29)"
    )]
    let error_bits = (idx >> BITS) as u32 - 1;
    let base = 1u64 << (error_bits + BITS);
    let k = (idx % (1 << BITS)) as f64;
    base + iolab_sys::cast::floor_u64((k + 0.5) * (1u64 << error_bits) as f64)
}

/// Number of latency buckets: 10 ns, 10 us, 12 ms.
pub const LAT_BUCKETS: usize = 32;

/// The bucket of a latency in nanoseconds.
#[inline]
pub fn lat_bucket(ns: u64) -> usize {
    const EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let (v, base) = if ns < 1000 {
        (ns, 0)
    } else if ns < 1_000_000 {
        (ns / 1000, 10)
    } else {
        let ms = ns / 1_000_000;
        if ms >= 2000 {
            return 31;
        }
        if ms >= 1000 {
            return 30;
        }
        (ms, 20)
    };
    base + EDGES.iter().position(|&e| v < e).unwrap_or(9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_bracket_their_values() {
        // Exact below 128 ns, as in fio.
        assert_eq!(val(idx(100)), 100);
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            1000,
            4095,
            65_536,
            1_000_000,
            5_000_000_000,
        ] {
            let i = idx(v);
            let mid = val(i) as f64;
            assert!(
                (mid - v as f64).abs() <= (v as f64) / 64.0 + 1.0,
                "{v} -> {i} -> {mid}"
            );
        }
        assert_eq!(idx(u64::MAX), NR - 1);
    }
}
