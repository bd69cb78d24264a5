//! Offsets, sizes and directions, one pass at a time.
//!
//! A pass moves `io_size` bytes (default: the region's size) within the
//! region `[0, size)` (the caller adds the file offset). Sequential
//! patterns walk the region (a separate position per direction for `rw`,
//! as fio keeps one per data direction); `rw=read:8k` skips 8 KiB after
//! each I/O and `rw=read:-8k` walks backwards (fio's offset modifiers,
//! wrapping as fio's `get_next_seq_offset` does). Random patterns with one
//! block size visit every block exactly once per pass in a random order,
//! like fio's default random map, but without a bitmap: the order is a
//! keyed permutation of `0..n` (a four-round Feistel network over the
//! next power of four, cycle-walking values that fall outside `0..n`), so
//! it needs no memory and no allocation per I/O. With `norandommap`, a
//! non-uniform `random_distribution` or several block sizes, offsets are
//! drawn independently (fio turns its map off for distributions too).
//! `rw=randread:N` draws a new random offset every N I/Os and goes on
//! sequentially (or, with `rw_sequencer=identical`, repeats it) in
//! between. Mixed patterns pick each I/O's direction with probability
//! `rwmixread`.

use iolab_sys::cast;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::job::distribution::{Distribution, Sampler};
use crate::job::kinds::{Dir, Rw};
use crate::job::sizes::BlockSizes;

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// One I/O of `len` bytes at this byte offset.
    Io(Dir, u64, u64),
    /// The pass is complete.
    PassEnd,
}

/// What shapes a pattern (from the job).
#[derive(Debug, Clone)]
pub struct Shape {
    /// `rw`.
    pub rw: Rw,
    /// `rwmixread`.
    pub rwmixread: u8,
    /// Block sizes.
    pub sizes: BlockSizes,
    /// Bytes of the region.
    pub size: u64,
    /// Bytes per pass (`io_size`, default `size`).
    pub io_size: u64,
    /// Sequential offset modifier (`rw=read:-8k`).
    pub seq_add: i64,
    /// Random: a new offset every this many I/Os (`rw=randread:N`).
    pub rand_every: u32,
    /// `rw_sequencer=identical`.
    pub identical: bool,
    /// `norandommap`.
    pub norandommap: bool,
    /// `random_distribution`.
    pub distribution: Distribution,
    /// The pass goes on until `io_size` bytes were issued, its last I/O
    /// past them (zonemode=zbd, where fio issues while fewer bytes than
    /// io_size went out); else a pass of one block size ends at the last
    /// whole block.
    pub round_up: bool,
}

impl Shape {
    /// A plain shape: one block size, every block once.
    #[cfg(test)]
    pub fn simple(rw: Rw, rwmixread: u8, bs: u64, size: u64) -> Shape {
        Shape {
            rw,
            rwmixread,
            sizes: BlockSizes::fixed(bs),
            size,
            io_size: size,
            seq_add: 0,
            rand_every: 1,
            identical: false,
            norandommap: false,
            distribution: Distribution::Uniform,
            round_up: false,
        }
    }
}

/// The I/O sequence of one clone.
#[derive(Debug)]
pub struct Pattern {
    rw: Rw,
    mix_read: u32,
    sizes: BlockSizes,
    fixed: Option<u64>,
    size: u64,
    io_size: u64,
    align: u64,
    blocks: u64,
    units: u64,
    issued_bytes: u64,
    /// A forward skip ran off the end: the pass is over.
    ran_off: bool,
    issued: u64,
    seq: [u64; 2],
    seq_add: i64,
    rand_every: u32,
    identical: bool,
    /// Offsets are drawn independently rather than from the permutation.
    draw: Option<Sampler>,
    /// I/Os drawn per direction (fio's `io_issues`: a `sequence`
    /// distribution's position; not reset by a pass).
    drawn: [u64; 2],
    last: Option<(u64, u64)>,
    perm: Permutation,
    rng: SmallRng,
    /// Mixed block sizes with the random map: which `bs`-sized units were
    /// touched this pass, and how far through the permutation the search
    /// for a free one has come (fio's axmap).
    map: Option<(Vec<bool>, u64)>,
}

impl Pattern {
    /// A pattern over `size` bytes in blocks of `bs`; `seed` makes runs
    /// reproducible per clone.
    #[cfg(test)]
    pub fn new(rw: Rw, rwmixread: u8, bs: u64, size: u64, seed: u64) -> Pattern {
        Pattern::shaped(&Shape::simple(rw, rwmixread, bs, size), seed)
    }

    /// A pattern of any shape.
    pub fn shaped(s: &Shape, seed: u64) -> Pattern {
        let fixed = s.sizes.is_fixed().then(|| s.sizes.max());
        let bs = fixed.unwrap_or_else(|| s.sizes.min()).max(1);
        let blocks = (s.size / bs).max(1);
        let align = s.sizes.alignment();
        let units = (s.size.saturating_sub(s.sizes.min()) / align + 1).max(1);
        let mut rng = SmallRng::seed_from_u64(seed);
        let perm = Permutation::new(blocks, rng.random());
        // Mixed sizes keep a map of min-size units so that every unit is
        // touched once per pass, as fio's random map does (fio's t0023:
        // bsrange and bssplit cover all 2048 sectors).
        let mapped = fixed.is_none() && !s.norandommap && s.distribution.is_uniform();
        let independent =
            s.norandommap || !s.distribution.is_uniform() || fixed.is_none() && !mapped;
        let draw = independent.then(|| Sampler::new(&s.distribution, units, align, seed));
        Pattern {
            rw: s.rw,
            mix_read: u32::from(s.rwmixread),
            sizes: s.sizes.clone(),
            fixed,
            size: s.size,
            // A pass of one block size ends at the last whole block.
            io_size: match fixed {
                Some(b) if b > 0 && s.round_up => s.io_size.div_ceil(b) * b,
                Some(b) if b > 0 => (s.io_size / b * b).max(b),
                _ => s.io_size.max(1),
            },
            align,
            blocks,
            units,
            issued_bytes: 0,
            ran_off: false,
            issued: 0,
            seq: [0; 2],
            seq_add: s.seq_add,
            rand_every: s.rand_every.max(1),
            identical: s.identical,
            draw,
            drawn: [0; 2],
            last: None,
            perm,
            rng,
            map: mapped.then(|| (vec![false; cast::usize_of(blocks)], 0)),
        }
    }

    /// The next I/O, or the end of the pass.
    #[inline]
    pub fn next(&mut self) -> Next {
        if self.issued_bytes >= self.io_size || self.ran_off {
            return Next::PassEnd;
        }
        let dir = match self.rw {
            // Trim patterns come here as the reads or writes whose offsets
            // they follow (Rw::offsets_as); the worker makes them trims.
            Rw::Read | Rw::RandRead | Rw::Trim | Rw::RandTrim => Dir::Read,
            Rw::Write | Rw::RandWrite | Rw::TrimWrite | Rw::RandTrimWrite => Dir::Write,
            Rw::ReadWrite | Rw::RandRw => {
                if self.rng.random_range(0..100) < self.mix_read {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let mut len = match self.fixed {
            Some(b) => b,
            None => self.sizes.draw(dir, &mut self.rng),
        }
        .min(self.size);
        let offset = if self.rw.random() && self.map.is_some() {
            let (o, l) = self.mapped_offset(len);
            len = l;
            o
        } else if self.rw.random() {
            match self.random_offset(dir, len) {
                Some(o) => o,
                None => {
                    self.ran_off = true;
                    return Next::PassEnd;
                }
            }
        } else {
            // The last I/O before the end is cut to fit, as fio cuts it,
            // instead of leaving the tail untouched.
            let pos = self.seq[dir as usize];
            let min = self.sizes.min().max(1);
            if self.fixed.is_none() && pos < self.size && pos + len > self.size {
                let rest = (self.size - pos) / min * min;
                if rest > 0 {
                    len = rest;
                }
            }
            self.seq_offset(dir, len)
        };
        self.issued += 1;
        self.issued_bytes += len;
        self.last = Some((offset, len));
        Next::Io(dir, offset, len)
    }

    fn seq_offset(&mut self, dir: Dir, len: u64) -> u64 {
        let pos = &mut self.seq[dir as usize];
        let mut off = *pos;
        if off + len > self.size {
            off = 0;
        }
        // Where the next I/O of this direction goes.
        let after = off + len;
        let next = if self.seq_add == 0 {
            after
        } else {
            // Inside the file, or None: before its start or past its end.
            let n = u64::try_from(i128::from(after) + i128::from(self.seq_add))
                .ok()
                .filter(|n| n.checked_add(len).is_some_and(|end| end <= self.size));
            match n {
                Some(n) => n,
                // Skipping forward off the end ends the pass (fio's
                // t0007: rw=read:512k, bs=1m over 128 MiB reads 85
                // MiB, not 128); a time-based job starts another.
                None if self.seq_add > 0 => {
                    self.ran_off = true;
                    0
                }
                None => self.size.saturating_sub(self.seq_add.unsigned_abs()),
            }
        };
        *pos = if next >= self.size { 0 } else { next };
        off
    }

    /// A random free unit and the length that fits in the free run from
    /// it (at most `len`); marks what it covers. A full map starts over.
    fn mapped_offset(&mut self, len: u64) -> (u64, u64) {
        let unit = self.sizes.min().max(1);
        let n = self.blocks;
        let Some((used, cursor)) = self.map.as_mut() else {
            return (0, len);
        };
        if *cursor >= n {
            used.iter_mut().for_each(|u| *u = false);
            *cursor = 0;
        }
        let mut start = self.perm.at(*cursor);
        while used[cast::usize_of(start)] {
            *cursor += 1;
            if *cursor >= n {
                used.iter_mut().for_each(|u| *u = false);
                *cursor = 0;
            }
            start = self.perm.at(*cursor);
        }
        let want = len.div_ceil(unit);
        let mut run = 0;
        while run < want && start + run < n && !used[cast::usize_of(start + run)] {
            used[cast::usize_of(start + run)] = true;
            run += 1;
        }
        (start * unit, len.min(run * unit))
    }

    /// A random I/O's offset; `None` when a `sequence` distribution ran
    /// past the file.
    fn random_offset(&mut self, dir: Dir, len: u64) -> Option<u64> {
        if self.rand_every > 1 && self.issued % u64::from(self.rand_every) != 0 {
            if let Some((o, l)) = self.last {
                let next = if self.identical { o } else { o + l };
                if next + len <= self.size {
                    return Some(next);
                }
            }
        }
        Some(match &self.draw {
            None => {
                let n = self.issued / u64::from(self.rand_every) % self.blocks;
                self.perm.at(n) * self.fixed.unwrap_or(self.align)
            }
            Some(s) => {
                let d = (dir as usize).min(1);
                let nth = self.drawn[d];
                self.drawn[d] += 1;
                let unit = s.draw(&mut self.rng, nth)?.min(self.units - 1);
                let max_start = self.size.saturating_sub(len) / self.align * self.align;
                (unit * self.align).min(max_start)
            }
        })
    }

    /// zonemode=zbd moved the last I/O of `dir`: a sequential pattern
    /// goes on at `after` (fio's last_pos; past the region, the pass is
    /// over), and the pass counts `now` bytes instead of `was`.
    pub fn moved(&mut self, dir: Dir, after: u64, was: u64, now: u64) {
        self.issued_bytes = (self.issued_bytes + now).saturating_sub(was);
        if self.rw.random() {
            return;
        }
        // Trims walk their blocks as reads do (Rw::offsets_as).
        let d = match dir {
            Dir::Write => 1,
            Dir::Read | Dir::Trim => 0,
        };
        if after >= self.size {
            self.ran_off = true;
            self.seq[d] = 0;
        } else {
            self.seq[d] = after;
        }
    }

    /// Ends the pass: nothing more can be done in it.
    pub fn end_pass(&mut self) {
        self.ran_off = true;
    }

    /// Starts a new pass from the beginning (a new random order).
    pub fn new_pass(&mut self) {
        self.issued = 0;
        self.issued_bytes = 0;
        self.ran_off = false;
        self.seq = [0; 2];
        self.last = None;
        self.perm = Permutation::new(self.blocks, self.rng.random());
        if let Some((used, cursor)) = self.map.as_mut() {
            used.iter_mut().for_each(|u| *u = false);
            *cursor = 0;
        }
    }
}

/// A keyed bijection of `0..n`.
#[derive(Debug, Clone)]
struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    fn new(n: u64, key: u64) -> Permutation {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut k = key;
        let keys = [(); 4].map(|_| {
            k = splitmix(k);
            k
        });
        Permutation { n, half_bits, keys }
    }

    #[inline]
    fn at(&self, i: u64) -> u64 {
        let mut x = i;
        // Cycle-walking: the domain is at most 4n, so this loops ~4 times
        // at worst, and ends because a bijection's orbit from i < n must
        // return below n.
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }

    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = splitmix(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }
}

#[inline]
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pass(p: &mut Pattern) -> Vec<(Dir, u64)> {
        let mut v = Vec::new();
        while let Next::Io(d, o, _) = p.next() {
            v.push((d, o));
        }
        v
    }

    #[test]
    fn permutations_cover_every_block_once() {
        for n in [1u64, 2, 3, 5, 16, 17, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let mut seen: Vec<u64> = (0..n).map(|i| p.at(i)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n}");
        }
    }

    #[test]
    fn sequential_reads_walk_the_file() {
        let mut p = Pattern::new(Rw::Read, 50, 4096, 4 * 4096 + 100, 1);
        let offs: Vec<u64> = pass(&mut p).into_iter().map(|(_, o)| o).collect();
        assert_eq!(offs, [0, 4096, 8192, 12288]);
        assert_eq!(p.next(), Next::PassEnd);
        p.new_pass();
        assert_eq!(p.next(), Next::Io(Dir::Read, 0, 4096));
    }

    #[test]
    fn random_passes_differ_but_cover_the_same_blocks() {
        let mut p = Pattern::new(Rw::RandWrite, 50, 512, 512 * 64, 7);
        let a = pass(&mut p);
        p.new_pass();
        let b = pass(&mut p);
        assert_ne!(a, b);
        let mut sa: Vec<u64> = a.iter().map(|x| x.1).collect();
        let mut sb: Vec<u64> = b.iter().map(|x| x.1).collect();
        sa.sort_unstable();
        sb.sort_unstable();
        assert_eq!(sa, sb);
        assert!(a.iter().all(|(d, o)| *d == Dir::Write && o % 512 == 0));
    }

    #[test]
    fn mixes_follow_rwmixread() {
        let mut p = Pattern::new(Rw::RandRw, 70, 4096, 4096 * 10_000, 3);
        let v = pass(&mut p);
        let reads = v.iter().filter(|(d, _)| *d == Dir::Read).count();
        assert!((6500..7500).contains(&reads), "{reads}");
        let mut seq = Pattern::new(Rw::ReadWrite, 0, 4096, 4096 * 8, 3);
        assert!(pass(&mut seq).iter().all(|(d, _)| *d == Dir::Write));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod shape_tests {
    use super::*;

    fn offsets(s: &Shape, n: usize) -> Vec<u64> {
        let mut p = Pattern::shaped(s, 9);
        (0..n)
            .map(|_| match p.next() {
                Next::Io(_, o, _) => o,
                Next::PassEnd => {
                    p.new_pass();
                    u64::MAX
                }
            })
            .collect()
    }

    #[test]
    fn backwards_reads_as_fio() {
        // fio's examples/backwards-read.fio: bs=4k rw=read:-8k.
        let mut s = Shape::simple(Rw::Read, 50, 4096, 16 * 4096);
        s.seq_add = -8192;
        assert_eq!(offsets(&s, 4), [0, 14 * 4096, 13 * 4096, 12 * 4096]);
    }

    #[test]
    fn holes_skip_and_wrap() {
        let mut s = Shape::simple(Rw::Write, 50, 16384, 1 << 20);
        s.seq_add = 112 * 1024;
        let o = offsets(&s, 3);
        assert_eq!(o, [0, 128 * 1024, 256 * 1024]);
    }

    /// fio's t0007: rw=read:512k with bs=1m over 128 MiB reads at 0, 1.5,
    /// 3, ... 126 MiB, 85 MiB in all, then the pass ends.
    #[test]
    fn a_forward_skip_that_runs_off_the_end_ends_the_pass() {
        let mut s = Shape::simple(Rw::Read, 50, 1 << 20, 128 << 20);
        s.seq_add = 512 * 1024;
        let mut p = Pattern::shaped(&s, 1);
        let mut n = 0u64;
        while let Next::Io(_, off, len) = p.next() {
            assert_eq!(off, n * 1536 * 1024);
            assert!(off + len <= 128 << 20);
            n += 1;
        }
        assert_eq!(n, 85);
        p.new_pass();
        assert!(matches!(p.next(), Next::Io(_, 0, _)));
    }

    #[test]
    fn random_every_n_goes_on_sequentially_or_repeats() {
        let mut s = Shape::simple(Rw::RandRead, 50, 4096, 4096 * 1024);
        s.rand_every = 4;
        let o = offsets(&s, 8);
        assert_eq!(o[1], o[0] + 4096);
        assert_eq!(o[3], o[0] + 3 * 4096);
        s.identical = true;
        let o = offsets(&s, 4);
        assert!(o.iter().all(|x| *x == o[0]));
    }

    #[test]
    fn varying_sizes_stay_inside_and_end_the_pass_by_bytes() {
        let mut s = Shape::simple(Rw::RandWrite, 50, 4096, 1 << 20);
        s.sizes = BlockSizes {
            read: crate::job::sizes::SizeDist::Split(vec![(4096, 50), (65536, 50)]),
            write: crate::job::sizes::SizeDist::Split(vec![(4096, 50), (65536, 50)]),
            align: None,
            unaligned: false,
        };
        let mut p = Pattern::shaped(&s, 1);
        let mut bytes = 0;
        while let Next::Io(_, o, l) = p.next() {
            assert!(o + l <= 1 << 20 && o % 4096 == 0);
            bytes += l;
        }
        assert!((1 << 20..(1 << 20) + 65536).contains(&bytes));
    }
}
