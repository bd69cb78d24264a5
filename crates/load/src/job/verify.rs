//! `verify`: data written is checked when read back.
//!
//! Each `verify_interval` chunk of a written block (default: the whole
//! block) starts with a header of 64 bytes (88 for the 64-byte digests,
//! 72 for sha3-384): magic, method, chunk length, the
//! chunk's offset in the file, then the checksum of the header fields and
//! the rest of the chunk (fio's checksums: md5, crc64, crc32c, crc32, crc16,
//! crc7, xxhash, sha1, sha256, sha512, sha3-*). `meta` keeps only
//! the header (the offset proves the block landed where it was sent);
//! `pattern` (or a `verify_pattern` with `meta`) fills the chunk with the
//! pattern instead of random bytes and compares it byte for byte. The
//! header is iolab's own (fio's on-disk header also carries its random
//! seed and generation numbers): data written by fio is not checked by
//! iolab, nor the reverse.

/// Header bytes at the start of every chunk, at least.
const MIN_HEADER: usize = 64;
const MAGIC: u32 = 0x564c_4f49; // "IOLV"
const SUM_AT: usize = 24;
/// Longest chunk: the header holds its length in 32 bits. `Job::validate`
/// and the iolog parser keep every I/O within it; the cap makes the
/// header's length right whatever the caller.
const MAX_CHUNK: usize = u32::MAX as usize;

/// How blocks are checked: fio's verify types. The checksums are fio's
/// own algorithms (crc/*.c in fio 3.33), checked against its C code on
/// the standard input "123456789".
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyKind {
    /// CRC-32C (Castagnoli; hardware-accelerated where the CPU has it).
    Crc32c,
    /// CRC-32 (IEEE).
    Crc32,
    /// MD5.
    Md5,
    /// SHA-256.
    Sha256,
    /// Header only: magic, length, offset.
    Meta,
    /// The whole chunk is `verify_pattern`.
    Pattern,
    /// fio's crc64: Jones's polynomial, reflected, init 0 (CRC-64/REDIS).
    Crc64,
    /// fio's crc16: polynomial 0x8005 reflected, init 0 (CRC-16/ARC).
    Crc16,
    /// fio's crc7: polynomial 0x09, init 0 (CRC-7/MMC).
    Crc7,
    /// xxHash32 with seed 1, as fio seeds it.
    Xxhash,
    /// SHA-1.
    Sha1,
    /// SHA-512.
    Sha512,
    /// SHA3-224.
    #[serde(rename = "sha3-224")]
    Sha3_224,
    /// SHA3-256.
    #[serde(rename = "sha3-256")]
    Sha3_256,
    /// SHA3-384.
    #[serde(rename = "sha3-384")]
    Sha3_384,
    /// SHA3-512.
    #[serde(rename = "sha3-512")]
    Sha3_512,
    /// fio's `null`: written and read back, checked by nothing (CPU tests).
    Null,
}

impl VerifyKind {
    /// Every accepted spelling, for messages.
    pub const NAMES: &'static str = "md5, crc64, crc32c, crc32c-intel, crc32, crc16, crc7, xxhash, sha512, sha256, sha1, sha3-224, sha3-256, sha3-384, sha3-512, meta, pattern, null, 0";

    /// Parses fio's spelling (`None` for `verify=0`/`none`).
    pub fn parse(v: &str) -> Result<Option<VerifyKind>, String> {
        Ok(Some(match v {
            "0" | "none" => return Ok(None),
            "crc32c" | "crc32c-intel" | "1" => VerifyKind::Crc32c,
            "crc32" => VerifyKind::Crc32,
            "md5" => VerifyKind::Md5,
            "sha256" => VerifyKind::Sha256,
            "meta" => VerifyKind::Meta,
            "pattern" => VerifyKind::Pattern,
            "crc64" => VerifyKind::Crc64,
            "crc16" => VerifyKind::Crc16,
            "crc7" => VerifyKind::Crc7,
            "xxhash" => VerifyKind::Xxhash,
            "sha1" => VerifyKind::Sha1,
            "sha512" => VerifyKind::Sha512,
            "sha3-224" => VerifyKind::Sha3_224,
            "sha3-256" => VerifyKind::Sha3_256,
            "sha3-384" => VerifyKind::Sha3_384,
            "sha3-512" => VerifyKind::Sha3_512,
            "null" => VerifyKind::Null,
            other => {
                return Err(format!(
                    "verify={other} is not supported: expected one of {}",
                    Self::NAMES
                ))
            }
        }))
    }

    fn id(self) -> u8 {
        self as u8 + 1
    }

    /// fio's name.
    pub fn as_str(self) -> &'static str {
        use VerifyKind::*;
        match self {
            Crc32c => "crc32c",
            Crc32 => "crc32",
            Md5 => "md5",
            Sha256 => "sha256",
            Meta => "meta",
            Pattern => "pattern",
            Crc64 => "crc64",
            Crc16 => "crc16",
            Crc7 => "crc7",
            Xxhash => "xxhash",
            Sha1 => "sha1",
            Sha512 => "sha512",
            Sha3_224 => "sha3-224",
            Sha3_256 => "sha3-256",
            Sha3_384 => "sha3-384",
            Sha3_512 => "sha3-512",
            Null => "null",
        }
    }

    /// The checksum's bytes, 0 for the kinds without one.
    fn digest_len(self) -> usize {
        use VerifyKind::*;
        match self {
            Meta | Pattern | Null => 0,
            Crc7 => 1,
            Crc16 => 2,
            Crc32c | Crc32 | Xxhash => 4,
            Crc64 => 8,
            Md5 => 16,
            Sha1 => 20,
            Sha3_224 => 28,
            Sha256 | Sha3_256 => 32,
            Sha3_384 => 48,
            Sha512 | Sha3_512 => 64,
        }
    }

    /// A chunk's header: the fixed fields and the checksum, 64 bytes or,
    /// for the longer digests, as many as they need.
    fn header(self) -> usize {
        (SUM_AT + self.digest_len())
            .next_multiple_of(8)
            .max(MIN_HEADER)
    }
}

/// `data`'s checksum by `kind`, as the header stores it (integers little
/// endian); empty for the kinds without one.
pub fn checksum(kind: VerifyKind, data: &[u8]) -> Vec<u8> {
    use sha3::Digest as _;
    const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);
    const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_ARC);
    const CRC7: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_7_MMC);
    match kind {
        VerifyKind::Crc32c => crc32c::crc32c(data).to_le_bytes().to_vec(),
        VerifyKind::Crc32 => crc32fast::hash(data).to_le_bytes().to_vec(),
        VerifyKind::Crc64 => CRC64.checksum(data).to_le_bytes().to_vec(),
        VerifyKind::Crc16 => CRC16.checksum(data).to_le_bytes().to_vec(),
        VerifyKind::Crc7 => vec![CRC7.checksum(data)],
        VerifyKind::Xxhash => xxhash_rust::xxh32::xxh32(data, 1).to_le_bytes().to_vec(),
        VerifyKind::Md5 => md5::Md5::digest(data).to_vec(),
        VerifyKind::Sha1 => sha1::Sha1::digest(data).to_vec(),
        VerifyKind::Sha256 => sha2::Sha256::digest(data).to_vec(),
        VerifyKind::Sha512 => sha2::Sha512::digest(data).to_vec(),
        VerifyKind::Sha3_224 => sha3::Sha3_224::digest(data).to_vec(),
        VerifyKind::Sha3_256 => sha3::Sha3_256::digest(data).to_vec(),
        VerifyKind::Sha3_384 => sha3::Sha3_384::digest(data).to_vec(),
        VerifyKind::Sha3_512 => sha3::Sha3_512::digest(data).to_vec(),
        VerifyKind::Meta | VerifyKind::Pattern | VerifyKind::Null => Vec::new(),
    }
}

/// `verify` and the options that go with it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VerifyOpts {
    /// The method.
    pub kind: VerifyKind,
    /// `do_verify`: read back and check after writing (default 1).
    pub do_verify: bool,
    /// `verify_fatal`: stop at the first bad block.
    pub fatal: bool,
    /// `verify_backlog=N`: check what was written every N writes.
    pub backlog: u64,
    /// `verify_interval`: bytes per header (default: the block).
    pub interval: Option<u64>,
    /// `verify_pattern`.
    pub pattern: Option<Vec<u8>>,
    /// `verify_dump`: write bad blocks to `FILE.OFFSET.received`.
    pub dump: bool,
    /// `verify_state_save`: at the end, save which blocks were written
    /// (`JOB-CLONE-verify.state`).
    pub state_save: bool,
    /// `verify_state_load`: check only the blocks a saved state lists.
    pub state_load: bool,
}

impl VerifyOpts {
    /// Defaults for a method.
    pub fn new(kind: VerifyKind) -> VerifyOpts {
        VerifyOpts {
            kind,
            do_verify: true,
            fatal: false,
            backlog: 0,
            interval: None,
            pattern: None,
            dump: false,
            state_save: false,
            state_load: false,
        }
    }

    fn chunk(&self, len: usize) -> usize {
        self.interval
            .map_or(len, |i| iolab_sys::cast::usize_of(i).min(len))
            .clamp(1, MAX_CHUNK)
    }

    /// Prepares a block about to be written at `offset`.
    pub fn stamp(&self, buf: &mut [u8], offset: u64) {
        let c = self.chunk(buf.len());
        for (i, chunk) in buf.chunks_mut(c).enumerate() {
            let off = offset + (i * c) as u64;
            if let Some(p) = &self.pattern {
                fill_pattern(chunk, p);
            }
            let header = self.kind.header();
            if matches!(self.kind, VerifyKind::Pattern | VerifyKind::Null) || chunk.len() < header {
                continue;
            }
            chunk[..4].copy_from_slice(&MAGIC.to_le_bytes());
            chunk[4] = self.kind.id();
            chunk[5..8].fill(0);
            #[allow(
                clippy::cast_possible_truncation,
                reason = "chunk() caps every chunk at MAX_CHUNK = u32::MAX"
            )]
            let len = chunk.len() as u32;
            chunk[8..12].copy_from_slice(&len.to_le_bytes());
            chunk[12..16].fill(0);
            chunk[16..24].copy_from_slice(&off.to_le_bytes());
            chunk[SUM_AT..header].fill(0);
            let sum = checksum(self.kind, chunk);
            chunk[SUM_AT..SUM_AT + sum.len()].copy_from_slice(&sum);
        }
    }

    /// Checks a block read back from `offset`; the error says what differs.
    pub fn check(&self, buf: &[u8], offset: u64) -> Result<(), String> {
        let c = self.chunk(buf.len());
        for (i, chunk) in buf.chunks(c).enumerate() {
            let off = offset + (i * c) as u64;
            self.check_chunk(chunk, off)?;
        }
        Ok(())
    }

    fn check_chunk(&self, chunk: &[u8], off: u64) -> Result<(), String> {
        let header = self.kind.header();
        if self.kind == VerifyKind::Null {
            return Ok(());
        }
        if self.kind == VerifyKind::Pattern || chunk.len() < header {
            let p = self.pattern.as_deref().unwrap_or(&[]);
            if let Some(at) = first_mismatch(chunk, p) {
                return Err(format!(
                    "verify: pattern mismatch at offset {} (byte {at} of the chunk at {off}): expected {:#04x}, got {:#04x}",
                    off + at as u64,
                    p[at % p.len()],
                    chunk[at]
                ));
            }
            return Ok(());
        }
        let magic = u32::from_le_bytes(le(chunk, 0));
        if magic != MAGIC {
            return Err(format!(
                "verify: no header at offset {off} (magic {magic:#010x}, expected {MAGIC:#010x}): the block was not written by this job or was overwritten"
            ));
        }
        let len = u32::from_le_bytes(le(chunk, 8)) as usize;
        let at = u64::from_le_bytes(le(chunk, 16));
        if len != chunk.len() || at != off {
            return Err(format!(
                "verify: header at offset {off} says offset {at}, length {len} (expected {off}, {}): misplaced write",
                chunk.len()
            ));
        }
        if let Some(p) = &self.pattern {
            if let Some(at) = first_mismatch(&chunk[header..], p).map(|a| a + header) {
                let mut expect = vec![0u8; chunk.len()];
                fill_pattern(&mut expect, p);
                return Err(format!(
                    "verify: pattern mismatch at offset {}: expected {:#04x}, got {:#04x}",
                    off + at as u64,
                    expect[at],
                    chunk[at]
                ));
            }
        }
        let mut copy = chunk.to_vec();
        copy[SUM_AT..header].fill(0);
        let want = checksum(self.kind, &copy);
        let got = &chunk[SUM_AT..SUM_AT + want.len()];
        if got != want.as_slice() {
            return Err(format!(
                "verify: {} mismatch in the {}-byte block at offset {off}: stored {}, computed {}",
                self.kind.as_str(),
                chunk.len(),
                hex(got),
                hex(&want)
            ));
        }
        Ok(())
    }
}

/// Fills `buf` with `p` repeated (from the buffer's start).
pub fn fill_pattern(buf: &mut [u8], p: &[u8]) {
    if p.is_empty() {
        return;
    }
    for (i, b) in buf.iter_mut().enumerate() {
        *b = p[i % p.len()];
    }
}

fn first_mismatch(buf: &[u8], p: &[u8]) -> Option<usize> {
    if p.is_empty() {
        return None;
    }
    buf.iter()
        .enumerate()
        .position(|(i, b)| *b != p[i % p.len()])
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Parses fio's pattern syntax (lib/pattern.c): elements joined with
/// nothing between them — `"text"`, `0xHEX` (bytes as written), a decimal
/// number (one byte when it fits, else its little-endian bytes; negative
/// numbers as 4-byte ints, so `-10` is `f6 ff ff ff`), and `'FILE'` (the
/// file's bytes). fio's examples: `"123"0xFFeeCC` is `31 32 33 ff ee cc`,
/// `-100xab` is `f6 ff ff ff ab`.
pub fn parse_pattern(key: &str, v: &str) -> Result<Vec<u8>, String> {
    let t = v.trim();
    let bad = |why: &str| {
        format!(
            "{key}={v}: {why}; expected \"text\", 0xHEX, a decimal number or 'FILE', joined without spaces"
        )
    };
    let b = t.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => {
                let end = t[i + 1..]
                    .find(q as char)
                    .ok_or_else(|| bad("a quote is not closed"))?;
                let inner = &t[i + 1..i + 1 + end];
                if q == b'"' {
                    out.extend_from_slice(inner.as_bytes());
                } else {
                    let data = std::fs::read(inner)
                        .map_err(|e| bad(&format!("cannot read pattern file {inner}: {e}")))?;
                    out.extend_from_slice(&data);
                }
                i += end + 2;
            }
            b'0' if matches!(b.get(i + 1), Some(b'x' | b'X')) => {
                let start = i + 2;
                let mut j = start;
                while j < b.len() && b[j].is_ascii_hexdigit() {
                    // A "0x" inside starts the next element (0xFF0X1).
                    if b[j] == b'0' && matches!(b.get(j + 1), Some(b'x' | b'X')) {
                        break;
                    }
                    j += 1;
                }
                let h = &t[start..j];
                if h.is_empty() {
                    return Err(bad("0x without hex digits"));
                }
                let h = if h.len() % 2 == 1 {
                    format!("0{h}")
                } else {
                    h.to_string()
                };
                for k in (0..h.len()).step_by(2) {
                    out.push(u8::from_str_radix(&h[k..k + 2], 16).map_err(|_| bad("bad hex"))?);
                }
                i = j;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                let mut j = if b[i] == b'-' { i + 1 } else { i };
                while j < b.len() && b[j].is_ascii_digit() {
                    if b[j] == b'0' && matches!(b.get(j + 1), Some(b'x' | b'X')) && j > start {
                        break;
                    }
                    j += 1;
                }
                let n: i64 = t[start..j]
                    .parse()
                    .ok()
                    .filter(|n| (i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(n))
                    .ok_or_else(|| bad(&format!("{} is not a 32-bit number", &t[start..j])))?;
                if n < 0 {
                    #[allow(
                        clippy::cast_possible_truncation,
                        reason = "n is in i32::MIN..0: the filter above keeps i32::MIN..=u32::MAX"
                    )]
                    let n = n as i32;
                    out.extend_from_slice(&n.to_le_bytes());
                } else {
                    let n = n as u64;
                    let used = 8 - (n.leading_zeros() / 8) as usize;
                    out.extend_from_slice(&n.to_le_bytes()[..used.max(1)]);
                }
                i = j;
            }
            b'%' => return Err(bad("%o (the block's offset) is not supported")),
            _ => return Err(bad(&format!("unexpected {:?}", &t[i..]))),
        }
    }
    if out.is_empty() {
        return Err(bad("empty"));
    }
    Ok(out)
}

/// `N` bytes of `chunk` from `at`, for a little-endian header field: a
/// header is only read from a chunk at least its length.
fn le<const N: usize>(chunk: &[u8], at: usize) -> [u8; N] {
    std::array::from_fn(|i| chunk[at + i])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_fios_algorithms() {
        // fio 3.33's crc/crc64.c, crc16.c, crc7.c and xxhash.c (seed 1, as
        // verify.c seeds it), compiled and run on "123456789".
        let d = b"123456789";
        let le = |k| checksum(k, d);
        assert_eq!(
            le(VerifyKind::Crc64),
            0xe9c6_d914_c4b8_d9ca_u64.to_le_bytes()
        );
        assert_eq!(le(VerifyKind::Crc16), 0xbb3d_u16.to_le_bytes());
        assert_eq!(le(VerifyKind::Crc7), [0x75]);
        assert_eq!(le(VerifyKind::Xxhash), 0xf261_918c_u32.to_le_bytes());
        // The standard check values of the others (Python hashlib agrees).
        assert_eq!(le(VerifyKind::Crc32c), 0xe306_9283_u32.to_le_bytes());
        assert_eq!(
            hex(&le(VerifyKind::Sha1)),
            "f7c3bc1d808e04732adf679965ccc34ca7ae3441"
        );
        assert_eq!(&hex(&le(VerifyKind::Sha3_256))[..16], "87cd084d190e436f");
    }

    #[test]
    fn every_kind_catches_a_flipped_byte_and_passes_a_clean_block() {
        for name in VerifyKind::NAMES.split(", ") {
            let Some(kind) = VerifyKind::parse(name).unwrap() else {
                continue;
            };
            let mut v = VerifyOpts::new(kind);
            if kind == VerifyKind::Pattern {
                v.pattern = Some(vec![0xab, 0xcd]);
            }
            let mut buf: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
            v.stamp(&mut buf, 8192);
            assert!(v.check(&buf, 8192).is_ok(), "{name}");
            buf[3000] ^= 1;
            let caught = v.check(&buf, 8192).is_err();
            assert_eq!(
                caught,
                !matches!(kind, VerifyKind::Meta | VerifyKind::Null),
                "{name}"
            );
        }
    }

    fn roundtrip(kind: VerifyKind) {
        let mut v = VerifyOpts::new(kind);
        if kind == VerifyKind::Pattern {
            v.pattern = Some(vec![0xaa, 0x55]);
        }
        let mut buf: Vec<u8> = (0..8192u32).map(|i| (i * 7).to_le_bytes()[0]).collect();
        v.stamp(&mut buf, 1 << 20);
        v.check(&buf, 1 << 20).unwrap();
        // A block read from the wrong place is caught.
        if kind != VerifyKind::Pattern {
            assert!(v.check(&buf, 2 << 20).unwrap_err().contains("misplaced"));
        }
        // So is one flipped bit, for every method that looks at the data.
        if kind != VerifyKind::Meta {
            buf[5000] ^= 1;
            let e = v.check(&buf, 1 << 20).unwrap_err();
            assert!(e.contains("mismatch"), "{kind:?}: {e}");
        }
    }

    #[test]
    fn every_method_catches_a_flipped_bit() {
        for k in [
            VerifyKind::Crc32c,
            VerifyKind::Crc32,
            VerifyKind::Md5,
            VerifyKind::Sha256,
            VerifyKind::Meta,
            VerifyKind::Pattern,
        ] {
            roundtrip(k);
        }
    }

    #[test]
    fn intervals_stamp_each_chunk() {
        let mut v = VerifyOpts::new(VerifyKind::Meta);
        v.interval = Some(512);
        v.pattern = Some(parse_pattern("verify_pattern", "0xaa555aa5").unwrap());
        let mut buf = vec![0u8; 4096];
        v.stamp(&mut buf, 0);
        assert_eq!(&buf[512..516], &MAGIC.to_le_bytes());
        v.check(&buf, 0).unwrap();
        buf[4000] = 0;
        assert!(v.check(&buf, 0).unwrap_err().contains("pattern mismatch"));
    }

    #[test]
    fn patterns_parse_like_fio() {
        assert_eq!(
            parse_pattern("p", "0xaa555aa5").unwrap(),
            [0xaa, 0x55, 0x5a, 0xa5]
        );
        assert_eq!(parse_pattern("p", "\"ab\"").unwrap(), b"ab");
        assert_eq!(parse_pattern("p", "255").unwrap(), [255]);
        assert!(parse_pattern("p", "0xzz").is_err());
        // fio's own examples (lib/pattern.c) and t0028's compound pattern.
        assert_eq!(
            parse_pattern("p", "-1024").unwrap(),
            [0x00, 0xfc, 0xff, 0xff]
        );
        assert_eq!(parse_pattern("p", "66").unwrap(), [0x42]);
        assert_eq!(parse_pattern("p", "0xFF0X1").unwrap(), [0xff, 0x01]);
        assert_eq!(
            parse_pattern("p", "\"123\"0xFFeeCC").unwrap(),
            [0x31, 0x32, 0x33, 0xff, 0xee, 0xcc]
        );
        assert_eq!(
            parse_pattern("p", "-100xab").unwrap(),
            [0xf6, 0xff, 0xff, 0xff, 0xab]
        );
        assert_eq!(
            parse_pattern("p", "\"abcd\"-120xdeadface").unwrap(),
            [b'a', b'b', b'c', b'd', 0xf4, 0xff, 0xff, 0xff, 0xde, 0xad, 0xfa, 0xce]
        );
        assert!(parse_pattern("p", "%o").is_err());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pat");
        std::fs::write(&f, [1u8, 2, 3]).unwrap();
        assert_eq!(
            parse_pattern("p", &format!("'{}'", f.display())).unwrap(),
            [1, 2, 3]
        );
        assert!(VerifyKind::parse("crc65")
            .unwrap_err()
            .contains("crc64, crc32c"));
    }
}
