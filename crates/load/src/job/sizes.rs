//! Block sizes per I/O: one size (`bs=4k`, `bs=4k,64k` per direction), a
//! weighted split (`bssplit=4k/60:64k/40,1m/100`) or a range
//! (`bsrange=4k-64k`). Sizes in a range are multiples of the smallest
//! (`blocksize_unaligned` lifts that to any multiple of 512, like fio's
//! sector granularity); offsets of random I/O are multiples of
//! `blockalign` (default: the smallest size), as in fio.

use rand::Rng;

use crate::job::kinds::Dir;

/// How one direction picks its block size.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum SizeDist {
    /// Always this many bytes.
    Fixed(u64),
    /// `(bytes, weight in percent)`; weights sum to 100.
    Split(Vec<(u64, u32)>),
    /// Any size from `lo` to `hi`.
    Range(u64, u64),
}

impl SizeDist {
    /// Smallest size drawn.
    pub fn min(&self) -> u64 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Split(v) => v.iter().map(|x| x.0).min().unwrap_or(4096),
            SizeDist::Range(lo, _) => *lo,
        }
    }

    /// Largest size drawn.
    pub fn max(&self) -> u64 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Split(v) => v.iter().map(|x| x.0).max().unwrap_or(4096),
            SizeDist::Range(_, hi) => *hi,
        }
    }

    /// Every size that can be drawn is a multiple of `n`.
    fn all_multiples_of(&self, n: u64) -> bool {
        match self {
            SizeDist::Fixed(b) => b % n == 0,
            SizeDist::Split(v) => v.iter().all(|x| x.0 % n == 0),
            SizeDist::Range(lo, hi) => lo % n == 0 && hi % n == 0,
        }
    }
}

/// Block sizes of a job.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BlockSizes {
    /// Reads.
    pub read: SizeDist,
    /// Writes.
    pub write: SizeDist,
    /// `blockalign`: random offsets are multiples of this.
    pub align: Option<u64>,
    /// `blocksize_unaligned`: range sizes need not be multiples of the
    /// smallest.
    pub unaligned: bool,
}

impl Default for BlockSizes {
    fn default() -> Self {
        BlockSizes::fixed(4096)
    }
}

impl BlockSizes {
    /// One size for both directions.
    pub fn fixed(bs: u64) -> BlockSizes {
        BlockSizes {
            read: SizeDist::Fixed(bs),
            write: SizeDist::Fixed(bs),
            align: None,
            unaligned: false,
        }
    }

    /// The distribution of a direction.
    pub fn of(&self, dir: Dir) -> &SizeDist {
        match dir {
            Dir::Read => &self.read,
            // fio's bs=R,W,T third value is not taken: trims use the
            // write sizes.
            Dir::Write | Dir::Trim => &self.write,
        }
    }

    /// Largest size of either direction (buffers are this big).
    pub fn max(&self) -> u64 {
        self.read.max().max(self.write.max())
    }

    /// Smallest size of either direction.
    pub fn min(&self) -> u64 {
        self.read.min().min(self.write.min())
    }

    /// True when every I/O has the same size.
    pub fn is_fixed(&self) -> bool {
        matches!((&self.read, &self.write), (SizeDist::Fixed(a), SizeDist::Fixed(b)) if a == b)
    }

    /// Offsets of random I/O are multiples of this.
    pub fn alignment(&self) -> u64 {
        self.align.unwrap_or_else(|| self.min()).max(1)
    }

    /// Draws the size of the next I/O in `dir`.
    #[inline]
    pub fn draw(&self, dir: Dir, rng: &mut impl Rng) -> u64 {
        match self.of(dir) {
            SizeDist::Fixed(b) => *b,
            SizeDist::Split(v) => {
                let mut x = rng.random_range(0..100u32);
                for (b, w) in v {
                    if x < *w {
                        return *b;
                    }
                    x -= w;
                }
                v.last().map_or(4096, |l| l.0)
            }
            SizeDist::Range(lo, hi) => {
                let step = if self.unaligned { 512.min(*lo) } else { *lo };
                let steps = (hi - lo) / step;
                lo + step * rng.random_range(0..=steps)
            }
        }
    }

    /// Checks sizes against O_DIRECT's granularity.
    pub fn check_direct(&self, lbs: u64) -> Result<(), String> {
        for (name, d) in [("read", &self.read), ("write", &self.write)] {
            if !d.all_multiples_of(lbs) || (self.unaligned && lbs > 512 && d.min() != d.max()) {
                return Err(format!(
                    "direct=1 needs every {name} block size to be a multiple of the logical block size {lbs}, got {}",
                    describe(d)
                ));
            }
        }
        Ok(())
    }
}

/// fio's spelling of a distribution, for messages.
pub fn describe(d: &SizeDist) -> String {
    match d {
        SizeDist::Fixed(b) => b.to_string(),
        SizeDist::Split(v) => v
            .iter()
            .map(|(b, w)| format!("{b}/{w}"))
            .collect::<Vec<_>>()
            .join(":"),
        SizeDist::Range(lo, hi) => format!("{lo}-{hi}"),
    }
}

/// `X` or `R,W` (and a third, trim, value that must match nothing we do).
pub fn per_dir<'a>(key: &str, v: &'a str) -> Result<(&'a str, &'a str), String> {
    let parts: Vec<&str> = v.split(',').collect();
    match parts.as_slice() {
        [one] => Ok((one, one)),
        [r, w] => Ok((r, w)),
        [r, w, _trim] => Ok((r, w)),
        _ => Err(format!(
            "{key}={v}: expected one value, or READ,WRITE[,TRIM]"
        )),
    }
}

/// Parses one `bssplit` direction: `4k/60:64k/40`, weights may be left
/// out (they share what remains of 100 %).
pub fn parse_split(
    key: &str,
    v: &str,
    size: impl Fn(&str) -> Result<u64, String>,
) -> Result<SizeDist, String> {
    let mut out: Vec<(u64, Option<u32>)> = Vec::new();
    for part in v.split(':').filter(|p| !p.trim().is_empty()) {
        let (b, w) = match part.split_once('/') {
            Some((b, w)) if w.trim().is_empty() => (b, None),
            Some((b, w)) => {
                let w: u32 = w.trim().parse().map_err(|_| {
                    format!("{key}={v}: weight {w:?} is not a whole percentage (0-100)")
                })?;
                (b, Some(w))
            }
            None => (part, None),
        };
        let b = size(b.trim())?;
        if b == 0 {
            return Err(format!("{key}={v}: a block size must be at least 1 byte"));
        }
        out.push((b, w));
    }
    if out.is_empty() {
        return Err(format!(
            "{key}={v}: expected SIZE/PERCENT[:SIZE/PERCENT...], e.g. 4k/60:64k/40"
        ));
    }
    // Saturating: weights 4294967295 and 2 must not wrap to a sum of 1.
    let given = out
        .iter()
        .filter_map(|x| x.1)
        .fold(0u32, u32::saturating_add);
    if given > 100 {
        return Err(format!(
            "{key}={v}: the percentages add up to {given}, at most 100"
        ));
    }
    let open = u32::try_from(out.iter().filter(|x| x.1.is_none()).count())
        .map_err(|_| format!("{key}={v}: more than {} block sizes", u32::MAX))?;
    let rest = 100 - given;
    if open == 0 && rest != 0 {
        return Err(format!(
            "{key}={v}: the percentages add up to {given}, expected 100"
        ));
    }
    let mut filled: Vec<(u64, u32)> = Vec::new();
    let mut left = rest;
    let mut k = open;
    for (b, w) in out {
        let w = w.unwrap_or_else(|| {
            let share = left / k;
            left -= share;
            k -= 1;
            share
        });
        if w > 0 {
            filled.push((b, w));
        }
    }
    Ok(SizeDist::Split(filled))
}

/// Parses one `bsrange` direction: `LO-HI`.
pub fn parse_range(
    key: &str,
    v: &str,
    size: impl Fn(&str) -> Result<u64, String>,
) -> Result<SizeDist, String> {
    let (lo, hi) = v
        .split_once('-')
        .ok_or_else(|| format!("{key}={v}: expected LOW-HIGH, e.g. 4k-64k"))?;
    let (lo, hi) = (size(lo.trim())?, size(hi.trim())?);
    if lo == 0 || hi < lo {
        return Err(format!("{key}={v}: expected 0 < LOW <= HIGH"));
    }
    Ok(if lo == hi {
        SizeDist::Fixed(lo)
    } else {
        SizeDist::Range(lo, hi)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn sz(s: &str) -> Result<u64, String> {
        iolab_sys::units::parse_size(s).map_err(|e| e.to_string())
    }

    #[test]
    fn splits_fill_missing_weights_and_draw_in_proportion() {
        let d = parse_split("bssplit", "4k/50:8k:16k", sz).unwrap();
        assert_eq!(
            d,
            SizeDist::Split(vec![(4096, 50), (8192, 25), (16384, 25)])
        );
        let b = BlockSizes {
            read: d.clone(),
            write: d,
            align: None,
            unaligned: false,
        };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let n = 100_000;
        let small = (0..n)
            .filter(|_| b.draw(Dir::Read, &mut rng) == 4096)
            .count();
        assert!((48_000..52_000).contains(&small), "{small}");
        assert!(parse_split("bssplit", "4k/60:8k/60", sz)
            .unwrap_err()
            .contains("120"));
        assert!(parse_split("bssplit", "4k/60:8k/30", sz)
            .unwrap_err()
            .contains("90"));
    }

    #[test]
    fn split_weights_do_not_wrap() {
        // 4294967295 + 2 wraps to 1 in u32: the split must be refused,
        // not taken as 1 % for 8k and 99 % for 16k.
        let e = parse_split("bssplit", "4k/4294967295:8k/2:16k", sz).unwrap_err();
        assert!(e.contains("at most 100"), "{e}");
    }

    #[test]
    fn ranges_step_by_the_smallest_size() {
        let d = parse_range("bsrange", "4k-16k", sz).unwrap();
        let b = BlockSizes {
            read: d.clone(),
            write: d,
            align: None,
            unaligned: false,
        };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(2);
        for _ in 0..1000 {
            let s = b.draw(Dir::Write, &mut rng);
            assert!((4096..=16384).contains(&s) && s % 4096 == 0, "{s}");
        }
        assert_eq!(
            parse_range("bsrange", "4k-4k", sz).unwrap(),
            SizeDist::Fixed(4096)
        );
        assert!(parse_range("bsrange", "8k-4k", sz).is_err());
    }
}
