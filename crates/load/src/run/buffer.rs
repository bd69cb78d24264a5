//! I/O buffers: allocated once per worker, aligned to 4 KiB (what O_DIRECT
//! needs on any logical block size up to a page) and filled with random
//! bytes, so compressing devices such as zram see realistic data.

use std::alloc::Layout;
use std::ptr::NonNull;

use iolab_sys::cast;
use rand::{Rng, SeedableRng};

/// Alignment of every buffer.
pub const ALIGN: usize = 4096;

/// A zero-initialised, page-aligned heap buffer.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain owned memory, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` bytes (at least one page) filled with random data.
    pub fn random(len: usize, seed: u64) -> AlignedBuf {
        let mut b = AlignedBuf::zeroed(len);
        rand::rngs::SmallRng::seed_from_u64(seed).fill(b.as_mut_slice());
        b
    }

    /// Allocates `len` zeroed bytes (at least one page).
    pub fn zeroed(len: usize) -> AlignedBuf {
        let size = len.max(ALIGN).next_multiple_of(ALIGN);
        let layout = match Layout::from_size_align(size, ALIGN) {
            Ok(l) => l,
            Err(_) => std::alloc::handle_alloc_error(Layout::new::<u8>()),
        };
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        AlignedBuf { ptr, layout }
    }

    /// The whole buffer.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// Slot `i` of a buffer cut into slots of `bs` bytes (the queueing
    /// engines keep one slot per I/O in flight).
    pub fn slot(&mut self, i: usize, bs: usize) -> &mut [u8] {
        &mut self.as_mut_slice()[i * bs..(i + 1) * bs]
    }

    /// Where slot `i` starts, for an engine that hands the kernel a
    /// pointer (an iocb, an aiocb, an SQE); bounds-checked as `slot` is.
    pub fn slot_ptr(&mut self, i: usize, bs: usize) -> *mut u8 {
        self.slot(i, bs).as_mut_ptr()
    }

    /// Start of the buffer, for io_uring registration.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Fills a write buffer as `how` says (`refill_buffers`, `zero_buffers`,
/// `buffer_pattern`, `buffer_compress_percentage`).
pub fn fill(buf: &mut [u8], how: &crate::job::extra::BufferFill, rng: &mut impl Rng) {
    use crate::job::extra::BufferFill;
    match how {
        BufferFill::Random => rng.fill(buf),
        BufferFill::Zero => buf.fill(0),
        BufferFill::Pattern(p) => crate::job::verify::fill_pattern(buf, p),
        BufferFill::Compressible { percent, chunk } => {
            // Each chunk: the random part first, zeros after, so a
            // compressor saves about `percent` of it (fio does the same).
            for c in buf.chunks_mut((*chunk).max(1)) {
                let random = c.len() * (100 - usize::from(*percent)) / 100;
                rng.fill(&mut c[..random]);
                c[random..].fill(0);
            }
        }
    }
}

/// Which seed each write buffer is filled from, so that a deduplicable
/// buffer is byte for byte an earlier one (fio's `get_buf_state`).
#[derive(Debug, Clone)]
pub struct Dedupe {
    opts: crate::job::extra::Dedupe,
    /// Draws whether a buffer repeats, and which (fio's dedupe_state).
    rng: rand::rngs::SmallRng,
    /// Unique buffer k is filled from `base + k`.
    base: u64,
    unique: u64,
    prev: Option<u64>,
    /// `working_set`: how many unique buffers repeats choose from.
    working_set: u64,
    /// `dedupe_global`: every clone's first seed, and this clone's place
    /// among them.
    global: Option<(std::sync::Arc<Vec<u64>>, usize)>,
}

impl Dedupe {
    /// For a clone writing `size` bytes in blocks of at least `bs`.
    pub fn new(opts: crate::job::extra::Dedupe, seed: u64, size: u64, bs: u64) -> Dedupe {
        use rand::SeedableRng;
        Dedupe {
            opts,
            rng: rand::rngs::SmallRng::seed_from_u64(seed ^ 0x0ded_0ded_0ded_0ded),
            base: seed,
            unique: 0,
            prev: None,
            working_set: (size * u64::from(opts.working_set_percent) / 100 / bs.max(1)).max(1),
            global: None,
        }
    }

    /// `dedupe_global`: the working set runs through every clone's
    /// unique buffers in turn, a share each, starting with this clone's
    /// (fio's init_dedupe_working_set_seeds with global_dedup), so jobs
    /// repeat each other's buffers.
    pub fn global(mut self, bases: std::sync::Arc<Vec<u64>>, me: usize) -> Dedupe {
        if self.opts.working_set && !bases.is_empty() {
            self.global = Some((bases, me));
        }
        self
    }

    /// Working-set buffer `i`'s seed.
    fn working(&self, i: u64) -> u64 {
        match &self.global {
            None => self.base.wrapping_add(i),
            Some((bases, me)) => {
                let n = bases.len() as u64;
                let per = (self.working_set / n).max(1);
                let owner = (*me as u64 + i / per) % n;
                bases[cast::usize_of(owner)].wrapping_add(i % per)
            }
        }
    }

    /// The seed of the next buffer.
    pub fn next_seed(&mut self) -> u64 {
        let p = u32::from(self.opts.percent);
        let repeat = p >= 100 || self.rng.random_range(1..=100) <= p;
        match (repeat, self.prev) {
            (true, Some(prev)) if !self.opts.working_set => prev,
            (true, _) if self.opts.working_set => {
                let i = self.rng.random_range(0..self.working_set);
                self.working(i)
            }
            _ => {
                let s = self.base.wrapping_add(self.unique);
                self.unique += 1;
                self.prev = Some(s);
                s
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn dedupe_repeats_the_share_asked() {
        let o = crate::job::extra::Dedupe {
            percent: 50,
            working_set: false,
            working_set_percent: 5,
            global: false,
        };
        let mut d = Dedupe::new(o, 7, 4 << 20, 4096);
        let seeds: Vec<u64> = (0..10_000).map(|_| d.next_seed()).collect();
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        // About half are repeats (binomial: within 3 % here).
        assert!((4700..5300).contains(&distinct.len()), "{}", distinct.len());
        let o = crate::job::extra::Dedupe {
            working_set: true,
            percent: 100,
            ..o
        };
        let mut d = Dedupe::new(o, 7, 4 << 20, 4096);
        // 5 % of 1024 blocks: every buffer is one of the first 51 unique
        // ones, and most of them come up.
        let seeds: std::collections::BTreeSet<u64> = (0..10_000).map(|_| d.next_seed()).collect();
        assert!(seeds.iter().all(|s| (7..7 + 51).contains(s)), "{seeds:?}");
        assert!(seeds.len() > 45, "{}", seeds.len());
        let o = crate::job::extra::Dedupe {
            percent: 100,
            working_set: false,
            ..o
        };
        let mut d = Dedupe::new(o, 7, 4 << 20, 4096);
        assert!((0..100).map(|_| d.next_seed()).all(|s| s == 7));
    }

    #[test]
    fn aligned_and_filled() {
        let mut b = AlignedBuf::random(10_000, 1);
        assert_eq!(b.as_mut_ptr() as usize % ALIGN, 0);
        let s = b.as_mut_slice();
        assert_eq!(s.len(), 12288);
        assert!(s.iter().filter(|&&x| x != 0).count() > 12000);
        let mut z = AlignedBuf::zeroed(1);
        assert_eq!(z.as_mut_slice().len(), ALIGN);
    }
}
