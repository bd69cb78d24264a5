//! I/O buffers: allocated once per worker, aligned to 4 KiB (what O_DIRECT
//! needs on any logical block size up to a page) and filled with random
//! bytes, so compressing devices such as zram see realistic data.

use std::alloc::Layout;
use std::ptr::NonNull;

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
