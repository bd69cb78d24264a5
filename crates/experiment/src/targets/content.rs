//! Deterministic file content and access patterns.
//!
//! SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014) is written out here rather than taken from
//! `rand` because `rand` does not promise the same stream across versions:
//! a file set or launch pattern must stay byte-identical for results stored
//! today to stay comparable with tomorrow's.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use iolab_sys::SysError;

/// SplitMix64: 64 bits of state, passes BigCrush, one add and two
/// multiply-xorshifts per output.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// A generator for one named stream of a seed (one per file, one per
    /// launch phase), so adding a file does not shift every other stream.
    pub(crate) fn stream(seed: u64, name: &str) -> Self {
        let mut h = SplitMix64(seed);
        let mut x = h.next_u64();
        for b in name.bytes() {
            x = SplitMix64(x ^ u64::from(b)).next_u64();
        }
        SplitMix64(x)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (modulo bias is below 2^-40 for our ranges).
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// Creates `path` with `len` bytes of seeded pseudo-random content (like
/// compressed or compiled data: nothing a filesystem could shortcut),
/// starting with `magic`, and makes it durable so a later cache drop
/// really empties the cache of it.
pub(crate) fn write_file(path: &Path, len: u64, seed: u64, magic: &[u8]) -> Result<(), SysError> {
    const CHUNK: usize = 1 << 20;
    let io = |e| SysError::io(path, e);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| SysError::io(dir, e))?;
    }
    let mut f = File::create(path).map_err(io)?;
    let mut rng = SplitMix64::new(seed);
    let mut buf = vec![0u8; CHUNK];
    let mut left = len;
    let mut first = true;
    while left > 0 {
        let n = CHUNK.min(usize::try_from(left).unwrap_or(CHUNK));
        rng.fill(&mut buf[..n]);
        if first {
            let m = magic.len().min(n);
            buf[..m].copy_from_slice(&magic[..m]);
            first = false;
        }
        f.write_all(&buf[..n]).map_err(io)?;
        left -= n as u64;
    }
    f.sync_data().map_err(io)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // First outputs for seed 1234567, from the reference C code.
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }

    #[test]
    fn streams_differ_by_name_and_repeat_by_seed() {
        let a = SplitMix64::stream(7, "lib/a.so").next_u64();
        assert_eq!(a, SplitMix64::stream(7, "lib/a.so").next_u64());
        assert_ne!(a, SplitMix64::stream(7, "lib/b.so").next_u64());
        assert_ne!(a, SplitMix64::stream(8, "lib/a.so").next_u64());
    }

    #[test]
    fn written_file_has_magic_length_and_is_reproducible() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("sub/b"));
        write_file(&a, 3 << 19, 42, b"\x7fELF").unwrap();
        write_file(&b, 3 << 19, 42, b"\x7fELF").unwrap();
        let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(x.len(), 3 << 19);
        assert_eq!(&x[..4], b"\x7fELF");
        assert_eq!(x, y);
    }
}
