//! Offsets and directions, one pass at a time.
//!
//! A pass is `size / bs` I/Os. Sequential patterns walk the file block by
//! block (a separate position per direction for `rw`, as fio keeps one per
//! data direction). Random patterns visit every block exactly once per
//! pass in a random order, like fio's default random map, but without a
//! bitmap: the order is a keyed permutation of `0..n` (a four-round Feistel
//! network over the next power of four, cycle-walking values that fall
//! outside `0..n`), so it needs no memory and no allocation per I/O. A new
//! key per pass gives a new order. Mixed patterns pick the direction of
//! each I/O at random with probability `rwmixread`.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::job::{Dir, Rw};

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// One I/O at this byte offset.
    Io(Dir, u64),
    /// The pass is complete.
    PassEnd,
}

/// The I/O sequence of one clone.
#[derive(Debug)]
pub struct Pattern {
    rw: Rw,
    mix_read: u32,
    bs: u64,
    blocks: u64,
    issued: u64,
    seq: [u64; 2],
    perm: Permutation,
    rng: SmallRng,
}

impl Pattern {
    /// A pattern over `size` bytes in blocks of `bs`; `seed` makes runs
    /// reproducible per clone.
    pub fn new(rw: Rw, rwmixread: u8, bs: u64, size: u64, seed: u64) -> Pattern {
        let blocks = (size / bs).max(1);
        let mut rng = SmallRng::seed_from_u64(seed);
        let perm = Permutation::new(blocks, rng.random());
        Pattern {
            rw,
            mix_read: u32::from(rwmixread),
            bs,
            blocks,
            issued: 0,
            seq: [0; 2],
            perm,
            rng,
        }
    }

    /// The next I/O, or the end of the pass.
    #[inline]
    pub fn next(&mut self) -> Next {
        if self.issued == self.blocks {
            return Next::PassEnd;
        }
        let dir = match self.rw {
            Rw::Read | Rw::RandRead => Dir::Read,
            Rw::Write | Rw::RandWrite => Dir::Write,
            Rw::ReadWrite | Rw::RandRw => {
                if self.rng.random_range(0..100) < self.mix_read {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let block = if self.rw.random() {
            self.perm.at(self.issued)
        } else {
            let pos = &mut self.seq[dir as usize];
            let b = *pos;
            *pos = (*pos + 1) % self.blocks;
            b
        };
        self.issued += 1;
        Next::Io(dir, block * self.bs)
    }

    /// Starts a new pass from the beginning (a new random order).
    pub fn new_pass(&mut self) {
        self.issued = 0;
        self.seq = [0; 2];
        self.perm = Permutation::new(self.blocks, self.rng.random());
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
        while let Next::Io(d, o) = p.next() {
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
        assert_eq!(p.next(), Next::Io(Dir::Read, 0));
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
