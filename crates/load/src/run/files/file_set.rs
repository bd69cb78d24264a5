//! Several files per clone (fio's `filename=a:b:c` and `nrfiles`): one
//! offset pattern per file, fio's `file_service_type` choosing the file of
//! each I/O, and the offsets that name a file.
//!
//! Everything after the pattern (rate limits, verify maps, logs, the
//! engines' queues) keeps one `u64` offset per I/O: the file's index sits
//! above [`FILE_SHIFT`] and the offset in the file below it. With one file
//! the index is 0, so an offset is the file offset and nothing changes.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};

use crate::job::kinds::FileService;
use crate::run::files::pattern::{Next, Pattern, Shape};

/// Bits of the offset inside a file (256 TiB); the file index is above.
pub const FILE_SHIFT: u32 = 48;
const OFFSET_MASK: u64 = (1 << FILE_SHIFT) - 1;
// Job::validate keeps a clone's files within the indices above FILE_SHIFT.
const _: () = assert!(crate::job::value::MAX_FILES as u64 <= 1 << (64 - FILE_SHIFT));

/// The offset of byte `off` of file `k`.
#[inline]
pub fn virt(k: usize, off: u64) -> u64 {
    ((k as u64) << FILE_SHIFT) | off
}

/// The file index and the offset in that file.
#[inline]
pub fn split(v: u64) -> (usize, u64) {
    ((v >> FILE_SHIFT) as usize, v & OFFSET_MASK)
}

/// One pattern per file and the choice between them. A pass ends when
/// every file's pattern has ended its pass, as in fio, where a file
/// that is done leaves the rotation until the next loop.
pub struct FilePatterns {
    /// File 0's pattern, inline: one file (the usual case) costs one
    /// branch per I/O over a bare [`Pattern`].
    first: Pattern,
    /// The other files' patterns (empty with one file).
    more: Vec<Pattern>,
    done: Vec<bool>,
    left: usize,
    cur: usize,
    used: u32,
    service: FileService,
    rng: rand::rngs::SmallRng,
}

impl FilePatterns {
    /// `n` files shaped alike; file 0 gets `seed` (so one file draws what
    /// it always drew), the others seeds of their own.
    pub fn new(shape: &Shape, n: usize, seed: u64, service: FileService) -> FilePatterns {
        let n = n.max(1);
        let more = (1..n)
            .map(|k| Pattern::shaped(shape, seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .collect::<Vec<_>>();
        FilePatterns {
            first: Pattern::shaped(shape, seed),
            more,
            done: vec![false; n],
            left: n,
            cur: 0,
            used: 0,
            service,
            rng: rand::rngs::SmallRng::seed_from_u64(seed ^ 0xf11e),
        }
    }

    /// The next I/O (its offset names the file) or the end of the pass.
    #[inline]
    pub fn next(&mut self) -> Next {
        if self.more.is_empty() {
            return self.first.next();
        }
        self.next_of_several()
    }

    fn pattern(&mut self, k: usize) -> &mut Pattern {
        if k == 0 {
            &mut self.first
        } else {
            &mut self.more[k - 1]
        }
    }

    #[cold]
    fn next_of_several(&mut self) -> Next {
        while self.left > 0 {
            let k = self.pick();
            match self.pattern(k).next() {
                Next::Io(dir, off, len) => return Next::Io(dir, virt(k, off), len),
                Next::PassEnd => {
                    self.done[k] = true;
                    self.left -= 1;
                }
            }
        }
        Next::PassEnd
    }

    fn pick(&mut self) -> usize {
        let n = self.more.len() + 1;
        let limit = match self.service {
            FileService::RoundRobin(l) | FileService::Random(l) => l,
            FileService::Sequential => u32::MAX,
        };
        if self.done[self.cur] || self.used >= limit {
            self.used = 0;
            self.cur = match self.service {
                FileService::Random(_) => {
                    let nth = self.rng.random_range(0..self.left);
                    (0..n).filter(|&k| !self.done[k]).nth(nth).unwrap_or(0)
                }
                _ => (1..=n)
                    .map(|i| (self.cur + i) % n)
                    .find(|&k| !self.done[k])
                    .unwrap_or(0),
            };
        }
        self.used += 1;
        self.cur
    }

    /// zonemode=zbd moved file 0's last I/O ([`Pattern::moved`]; zbd
    /// jobs have one file).
    pub fn moved(&mut self, dir: crate::job::kinds::Dir, after: u64, was: u64, now: u64) {
        self.first.moved(dir, after, was, now);
    }

    /// Ends the current pass.
    pub fn end_pass(&mut self) {
        self.first.end_pass();
        for p in &mut self.more {
            p.end_pass();
        }
    }

    /// Starts the next pass over every file.
    pub fn new_pass(&mut self) {
        self.first.new_pass();
        for p in &mut self.more {
            p.new_pass();
        }
        self.done.iter_mut().for_each(|d| *d = false);
        self.left = self.more.len() + 1;
        self.cur = 0;
        self.used = 0;
    }
}

/// The names of a clone's files and the codec of its offsets: the one
/// place that knows how an I/O's offset names its file (everything else
/// asks here).
#[derive(Debug, Clone)]
pub struct Names {
    paths: Vec<PathBuf>,
}

impl Names {
    /// The clone's files, in the order their index names them.
    pub fn new(paths: Vec<PathBuf>) -> Names {
        Names { paths }
    }

    /// True with one file (or none): offsets are file offsets.
    #[inline]
    pub fn single(&self) -> bool {
        self.paths.len() <= 1
    }

    /// The offset in its file of an I/O's offset.
    #[inline]
    pub fn real(&self, v: u64) -> u64 {
        if self.single() {
            v
        } else {
            split(v).1
        }
    }

    /// The file an I/O's offset names (for messages; `-` when the clone
    /// has no file) and the offset in it.
    pub fn locate(&self, v: u64) -> (&Path, u64) {
        let (k, off) = if self.single() { (0, v) } else { split(v) };
        match self.paths.get(k).or(self.paths.first()) {
            Some(p) => (p, off),
            None => (Path::new("-"), off),
        }
    }

    /// The first file's name, for messages.
    pub fn first(&self) -> &Path {
        self.paths.first().map_or(Path::new("-"), PathBuf::as_path)
    }
}

/// Drops the file's cached pages (fio's `invalidate`), so reads reach the
/// device and dirty pages start their writeback.
pub fn drop_cache(file: &File) {
    // Advisory: a failure leaves the cache as it was, nothing worse.
    let _ = rustix::fs::fadvise(file.as_fd(), 0, None, rustix::fs::Advice::DontNeed);
}

/// A clone's open files, in the order their index names them.
pub struct Files {
    files: Vec<File>,
    fds: Vec<i32>,
    names: Names,
    /// One file: offsets are file offsets.
    single: bool,
}

/// Which file an I/O goes to, for the queueing engines: its index (io_uring's
/// registered file) and its descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Index among the clone's files.
    pub index: u32,
    /// Its file descriptor.
    pub fd: i32,
}

impl Files {
    /// Files opened from `paths` (one or more).
    pub fn new(files: Vec<File>, paths: Vec<PathBuf>) -> Files {
        use std::os::fd::AsRawFd;
        let fds = files.iter().map(AsRawFd::as_raw_fd).collect();
        let single = files.len() == 1;
        Files {
            files,
            fds,
            names: Names::new(paths),
            single,
        }
    }

    /// The file an offset names, as a [`Target`], and the offset in it.
    #[inline]
    pub fn target(&self, v: u64) -> (Target, u64) {
        let (k, off) = if self.single {
            (0, v)
        } else {
            let (k, off) = split(v);
            (k.min(self.fds.len() - 1), off)
        };
        #[allow(
            clippy::cast_possible_truncation,
            reason = "k is 0 or split()'s file index, the 16 bits above FILE_SHIFT"
        )]
        let index = k as u32;
        (
            Target {
                index,
                fd: self.fds[k],
            },
            off,
        )
    }

    /// The file an offset names, and the offset in it.
    #[inline]
    pub fn at(&self, v: u64) -> (&File, u64) {
        if self.single {
            return (&self.files[0], v);
        }
        let (k, off) = split(v);
        (&self.files[k.min(self.files.len() - 1)], off)
    }

    /// The path an offset names, and the offset in it (for messages).
    pub fn path_at(&self, v: u64) -> (&Path, u64) {
        self.names.locate(v)
    }

    /// True with one file (offsets are its offsets).
    #[inline]
    pub fn single(&self) -> bool {
        self.single
    }

    /// The first file.
    pub fn first(&self) -> &File {
        &self.files[0]
    }

    /// Every file.
    pub fn all(&self) -> &[File] {
        &self.files
    }

    /// The descriptors, in index order (io_uring registers them).
    pub fn raw_fds(&self) -> &[i32] {
        &self.fds
    }
}

/// fio's `filename_format`: `$jobname`, `$jobnum` (the clone) and
/// `$filenum` replaced (default `$jobname.$jobnum.$filenum`).
pub fn format_name(format: Option<&str>, job: &str, clone: u32, file: usize) -> String {
    format
        .unwrap_or("$jobname.$jobnum.$filenum")
        .replace("$jobname", job)
        .replace("$jobnum", &clone.to_string())
        .replace("$filenum", &file.to_string())
        .replace("$clientuid", "0")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::job::kinds::{Dir, Rw};

    fn offsets(service: FileService, n: usize, rw: Rw) -> Vec<(usize, u64)> {
        let shape = Shape::simple(rw, 50, 4096, 4 * 4096);
        let mut p = FilePatterns::new(&shape, n, 7, service);
        let mut out = Vec::new();
        while let Next::Io(d, v, len) = p.next() {
            assert_eq!(
                (d, len),
                (
                    if rw == Rw::Write {
                        Dir::Write
                    } else {
                        Dir::Read
                    },
                    4096
                )
            );
            out.push(split(v));
        }
        out
    }

    #[test]
    fn roundrobin_takes_files_in_turn_and_each_to_its_end() {
        let got = offsets(FileService::RoundRobin(1), 3, Rw::Read);
        // fio's default: file 0, 1, 2, 0, 1, 2, ... each file sequential.
        let want: Vec<(usize, u64)> = (0..4u64)
            .flat_map(|b| (0..3).map(move |k| (k, b * 4096)))
            .collect();
        assert_eq!(got, want);
        let by2 = offsets(FileService::RoundRobin(2), 2, Rw::Write);
        assert_eq!(&by2[..4], &[(0, 0), (0, 4096), (1, 0), (1, 4096)]);
        assert_eq!(by2.len(), 8);
    }

    #[test]
    fn sequential_finishes_a_file_before_the_next() {
        let got = offsets(FileService::Sequential, 2, Rw::Read);
        let files: Vec<usize> = got.iter().map(|(k, _)| *k).collect();
        assert_eq!(files, [0, 0, 0, 0, 1, 1, 1, 1]);
    }

    #[test]
    fn random_service_covers_every_block_of_every_file_once() {
        let mut got = offsets(FileService::Random(1), 3, Rw::RandRead);
        assert_eq!(got.len(), 12);
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), 12, "a block twice in one pass: {got:?}");
    }

    #[test]
    fn one_file_is_the_plain_pattern() {
        let shape = Shape::simple(Rw::RandRead, 50, 4096, 64 * 4096);
        let mut one = FilePatterns::new(&shape, 1, 99, FileService::RoundRobin(1));
        let mut plain = Pattern::shaped(&shape, 99);
        for _ in 0..70 {
            assert_eq!(one.next(), plain.next());
        }
    }

    #[test]
    fn names_split_and_format_as_fio() {
        assert_eq!(format_name(None, "job", 2, 3), "job.2.3");
        assert_eq!(format_name(Some("f.$filenum"), "job", 2, 3), "f.3");
        assert!(FileService::parse("zipf:1.2")
            .unwrap_err()
            .contains("--with-fio"));
        assert_eq!(
            FileService::parse("random:4").unwrap(),
            FileService::Random(4)
        );
        assert!(FileService::parse("roundrobin:0").is_err());
    }
}
